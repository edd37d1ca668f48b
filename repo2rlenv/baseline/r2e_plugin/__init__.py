"""Payload (`payload.py`): the pytest plugin every baseline and gate run loads in the sandbox, shipped by
`baseline.runner.PLUGIN_PACKAGE`. Stdlib, pytest and coverage only."""
