"""How this tool reaches the Hub: endpoint, token, repo id, and turning the Hub's failures into one line.

The token is only ever handed to `huggingface_hub`; every message this module builds passes through
`redact`, so a token that a server or library echoes back never reaches the terminal or a log.
"""

from __future__ import annotations

import os
import re
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from repo2rlenv.hub.errors import BadRepoId, HubError, MissingToken

REPO_TYPE = "dataset"
# The Hub's rule for each half of org/name (huggingface_hub's REPO_ID_REGEX, minus the single-part form).
_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
# Failures from these libraries mean the Hub could not be reached (DNS, refused, reset, timeout, TLS).
_TRANSPORT_MODULES = ("httpx", "httpx2", "requests", "urllib3", "httpcore", "ssl", "socket")


def resolve_endpoint(endpoint: str | None = None) -> str:
    """The Hub's base URL: the argument, else HF_ENDPOINT, else huggingface_hub's default."""
    if endpoint:
        return endpoint.rstrip("/")
    # huggingface_hub reads HF_ENDPOINT once, at import; reading it here too honours a value set later
    # in the same process (a notebook, a test), which the user would expect to be obeyed.
    if os.environ.get("HF_ENDPOINT"):
        return os.environ["HF_ENDPOINT"].rstrip("/")
    from huggingface_hub import constants

    return constants.ENDPOINT


def git_url(endpoint: str, repo_id: str) -> str:
    """The git URL of a dataset repo (what Harbor clones)."""
    return f"{endpoint}/datasets/{repo_id}"


def check_repo_id(repo_id: str) -> str:
    """`repo_id` if it is `org/name` in the Hub's alphabet, else `BadRepoId`."""
    parts = repo_id.split("/")
    ok = len(parts) == 2 and all(_PART.match(p) and "--" not in p and ".." not in p and not p.endswith((".", "-"))
                                 for p in parts)
    if not ok:
        raise BadRepoId(f"bad repo id {repo_id!r}: expected org/name (letters, digits, '-', '_', '.'; "
                        "each part at most 96 characters, no '--' or '..')")
    return repo_id


def resolve_token(token: str | None = None) -> str:
    """The token to write with: the argument, else HF_TOKEN, else huggingface_hub's stored login."""
    if token:
        return token
    if os.environ.get("HF_TOKEN"):
        return os.environ["HF_TOKEN"]
    from huggingface_hub import get_token

    found = get_token()
    if not found:
        raise MissingToken("no Hugging Face token: set HF_TOKEN or log in with `hf auth login` (a write token)")
    return found


def redact(text: str, token: str | None) -> str:
    return text.replace(token, "***") if token else text


def describe_failure(exc: BaseException, endpoint: str) -> str:
    """One line saying why a Hub operation failed (HTTP status and the server's words, or why unreachable)."""
    from huggingface_hub.utils import HfHubHTTPError  # also where 0.2x keeps it

    for cause in _chain(exc):
        if isinstance(cause, HfHubHTTPError):
            status = cause.response.status_code if cause.response is not None else "?"
            detail = cause.server_message or str(cause).splitlines()[0]
            return f"the Hub answered HTTP {status}: {_one_line(detail)}"
    for cause in _chain(exc):
        if type(cause).__module__.split(".")[0] in _TRANSPORT_MODULES or isinstance(cause, ConnectionError):
            return f"cannot reach the Hub at {endpoint}: {_one_line(str(cause)) or type(cause).__name__}"
    return f"{type(exc).__name__}: {_one_line(str(exc))}"


def is_hub_failure(exc: BaseException) -> bool:
    """Whether `exc` came from talking to the Hub (as opposed to a bug in this tool)."""
    from huggingface_hub.utils import HfHubHTTPError  # also where 0.2x keeps it

    return any(isinstance(c, (HfHubHTTPError, OSError, ValueError))
               or type(c).__module__.split(".")[0] in _TRANSPORT_MODULES + ("huggingface_hub",)
               for c in _chain(exc))


@contextmanager
def reported_as(error: type[HubError], message: Callable[[str], str], *, endpoint: str,
                token: str | None) -> Iterator[None]:
    """Turn a Hub failure inside the block into `error(message(reason))`: one line, the token redacted."""
    try:
        yield
    except Exception as exc:
        if not is_hub_failure(exc):
            raise
        raise error(redact(message(describe_failure(exc, endpoint)), token)) from None


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _one_line(text: str) -> str:
    return " ".join(text.split())[:300]


def hf_api(endpoint: str, token: str | None) -> Any:
    from huggingface_hub import HfApi

    return HfApi(endpoint=endpoint, token=token)
