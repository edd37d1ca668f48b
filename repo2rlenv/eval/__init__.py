"""`repo2rlenv eval`: run the reference solver on every task of a dataset, grade each with its verifier,
and write results.json, results.md and a self-contained report.html. Resumable."""
