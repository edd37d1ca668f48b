"""The differential oracle: tests that pass on version A and fail on version B, found without a model.

`synthesize_differential` is the entry point; it runs `probe.py` inside the sandbox through a `Runner`.
"""

from repo2rlenv.pipelines.test_synthesis.oracle.differential.differential import (
    Diagnosis,
    DifferentialResult,
    Distinguishing,
    Limits,
    NoOracle,
    Origin,
    Runner,
    synthesize_differential,
)

__all__ = ["Diagnosis", "DifferentialResult", "Distinguishing", "Limits", "NoOracle", "Origin", "Runner", "synthesize_differential"]
