"""The probe, a shipped payload (`repo2rlenv.payload`): `probe.py` and its siblings are copied whole into a
sandbox scratch dir and run there (stdlib + pytest only). This file is not shipped."""
