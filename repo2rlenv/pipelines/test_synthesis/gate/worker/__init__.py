"""The in-sandbox gate worker, a shipped payload (`repo2rlenv.payload`): `gate_worker.py` and its `gate_*.py`
siblings are copied whole into the sandbox and run there (stdlib + pytest only). This file is not shipped."""
