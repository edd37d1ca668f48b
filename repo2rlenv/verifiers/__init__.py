"""Verifiers: the in-task verifier of each pipeline, a shipped folder (`test_synthesis/`, copied whole into
a task's `tests/` dir; it imports nothing of this package), and the host side that installs it (`bundle`)
and models its configuration (`config_model`)."""
