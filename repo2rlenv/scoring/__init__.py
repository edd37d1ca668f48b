"""Scoring agent-written tests for RL loops: `TaskScorer`, `DatasetScorer`, `RayDatasetScorer` (the same
interface over a Ray cluster's nodes), the trainers' adapters.

Heavy parts (the Docker SDK, Ray) load on first use, so importing this package costs little."""

from repo2rlenv.scoring.cluster import RayDatasetScorer
from repo2rlenv.scoring.completion import completion_text, extract_test_file
from repo2rlenv.scoring.models import Score, ScoreError
from repo2rlenv.scoring.scorer import DatasetScorer, TaskScorer
from repo2rlenv.scoring.staleness import StaleVerifierWarning

__all__ = ["DatasetScorer", "RayDatasetScorer", "Score", "ScoreError", "StaleVerifierWarning", "TaskScorer",
           "completion_text", "extract_test_file"]
