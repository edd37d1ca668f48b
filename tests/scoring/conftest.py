"""The scoring tests' dataset (`scored_dataset`) and `oracle_of` live in tests/conftest.py: the audit
tests grade the same generated dataset, so it is made once per session."""
