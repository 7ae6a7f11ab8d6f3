"""What users hand us, read within limits: bounded YAML/JSON loading, thread files, and the
file pointers a thread names (read only inside the configured roots).
"""
