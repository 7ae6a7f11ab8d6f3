"""What a deployment configures: settings (the one source of defaults), render options, the
envelope secret and nonce deriver, and the JSON Schemas of thread and configuration files.
"""
