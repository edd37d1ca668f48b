"""Model calls: a litellm client with timeouts, retries and a spend ceiling; the call ledger; record/replay.

Importing this package does not import litellm (that happens at the first call).
"""

from repo2rlenv.llm.base import ChatClient, Completion, Message, Usage, request_key
from repo2rlenv.llm.client import CircuitBreaker, LLMClient, RetryPolicy
from repo2rlenv.llm.errors import CassetteMiss, LLMCallFailed, LLMConfigError, ModelUnavailable, SpendLimitReached
from repo2rlenv.llm.ledger import CallSource, Ledger, LedgerEntry, LedgerTotals
from repo2rlenv.llm.prices import ModelPrice, Prices
from repo2rlenv.llm.replay import CassetteEntry, RecordingClient, ReplayClient

__all__ = [
    "CallSource", "CassetteEntry", "CassetteMiss", "ChatClient", "CircuitBreaker", "ModelUnavailable", "Completion", "LLMCallFailed", "LLMClient",
    "LLMConfigError", "Ledger", "LedgerEntry", "LedgerTotals", "Message", "ModelPrice", "Prices",
    "RecordingClient", "ReplayClient", "RetryPolicy", "SpendLimitReached", "Usage", "request_key",
]
