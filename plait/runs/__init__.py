"""The use cases every surface calls: start, execute, correct, read, compare and replay runs."""
