"""Emitting: a validated candidate becomes a Harbor task directory (the emitter, the twin kinds it grades
with); the task format itself is `repo2rlenv.dataset`."""
