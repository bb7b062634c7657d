"""The execution kernel: scheduling, executors, commits and run state (see docs/architecture.md)."""
