"""Publish a generated dataset on the Hugging Face Hub and bring it back, byte for byte.

`export` builds the folder a push uploads (task trees, a parquet table, a dataset card, a Harbor
registry); `push` uploads it in commits; `pull` rebuilds it on disk. `datasets` and `huggingface_hub`
are imported inside the functions that need them, so importing this package (and `repo2rlenv --help`)
stays cheap.
"""
