"""The LLM oracle: a model writes the test file, the verifier's checks judge it, its feedback drives retries.

`synthesize_llm` is the entry point for the model's part; the oracle stage's own entry point, which
tries the differential oracle first, is `oracle/search.py`. `context_for_candidate` builds the
`OracleContext` of a gated candidate. Importing this package does not import litellm.
"""

from repo2rlenv.pipelines.test_synthesis.oracle.llm.check import Judgement, Verdict
from repo2rlenv.pipelines.test_synthesis.oracle.llm.context import OracleContext, context_for_candidate
from repo2rlenv.pipelines.test_synthesis.oracle.llm.extract import NoCodeBlock, extract_code
from repo2rlenv.pipelines.test_synthesis.oracle.llm.llm_oracle import (
    Attempt,
    LLMNoOracle,
    LLMOracleResult,
    synthesize_llm,
)

__all__ = [
    "Attempt", "Judgement", "LLMNoOracle", "LLMOracleResult", "NoCodeBlock", "OracleContext", "Verdict",
    "context_for_candidate", "extract_code", "synthesize_llm",
]
