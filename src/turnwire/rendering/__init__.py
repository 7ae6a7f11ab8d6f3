"""A thread in, exact request bytes out: the cold pipeline, the pairing sweep, windows,
compaction, tokens, the request body and its preflight, the container that wires the stages,
and the plugin manager. ``_incremental`` is the warm path, a layer over the cold rules.
"""
