"""Oracles: the test file that scores exactly 1.0 on a candidate, found by differential testing
(`differential/`, no model), by a model (`llm/`), or both (`hybrid`)."""
