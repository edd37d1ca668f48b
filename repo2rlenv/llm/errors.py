"""Errors of model calls, all within the tool's one hierarchy (`repo2rlenv.errors`).

Callers tell them apart because each asks for a different reaction: a spend ceiling stops model use
cleanly and keeps what is done; a failed call costs one candidate; a refused key or unknown model is the
user's to fix, so it ends the run with one line (exit code 2); a cassette miss means a replayed run
diverged from the recorded one.
"""

from __future__ import annotations

from repo2rlenv.errors import ConfigError, Repo2RLEnvError


class SpendLimitReached(Repo2RLEnvError):
    """The ledger's spend reached `max_spend_usd`; the call was not sent."""


class LLMCallFailed(Repo2RLEnvError):
    """A model call failed for good: retries exhausted, a timeout, or a request the server refuses (400)."""


class ModelUnavailable(Repo2RLEnvError):
    """Several calls in a row failed for good (the endpoint died mid-run): the run stops with the cause
    (exit code 1) and keeps what it finished, so a rerun resumes."""


class LLMConfigError(ConfigError):
    """The model cannot be used as configured: missing or refused key (401/403), unknown model (404), bad price."""


class CassetteMiss(Repo2RLEnvError):
    """A replayed run asked for a reply the cassette does not hold (the run diverged from the recording)."""
