"""`repo2rlenv audit DATASET`: what an agent could learn of B or the oracle, duplicates, stats, a browser."""
