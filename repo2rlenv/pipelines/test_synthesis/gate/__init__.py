"""Gating: the repo's own tests decide which candidates survive (the covering tests pass on B, the whole
suite still passes on A); `batch` runs them for many candidates through the shipped in-sandbox `worker/`."""
