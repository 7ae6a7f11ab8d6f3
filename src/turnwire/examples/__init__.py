"""Example tool handlers used by the example threads and the offline demo."""
