"""The test_synthesis verifier, a shipped payload (`repo2rlenv.payload`): its `verifier*.py` modules are
copied whole into every task's `tests/` dir. Stdlib + pytest + coverage only; this file is not shipped."""
