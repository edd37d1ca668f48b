"""A failed stage as a user meets it: one line with the stage and a cause they can act on, and the raw tool
output (pip's build log, pytest's tail, the traceback) in a log file whose path the line gives.

The cause is read from the tool's output through `CAUSES`, a table of patterns in what pip and pytest
print → the words a user needs; an output no pattern knows falls back to its most telling line.
"""

from __future__ import annotations

import re
import traceback
from pathlib import Path

from repo2rlenv import atomic

_MAX_CAUSE = 240

_NO_DATA = re.compile(r"No data (?:was collected|to report)", re.I)
# Messages saying no test ran: coverage then always finds no data.
_NOTHING_RAN = re.compile(r"no tests? (?:pytest can collect|passes|ran|collected)|collected 0", re.I)
# (pattern in the message or raw output, cause). The first match wins; `{0}` is the pattern's first group.
CAUSES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"setuptools[-_]scm was unable to detect version|Error getting the version from source .vcs."
                r"|unable to detect version|LookupError: .*version", re.I),
     "the build backend reads the version from git, and the snapshot has no .git history"),
    (re.compile(r"No matching distribution found for ([^\s|]+)", re.I), "pip found no distribution for {0}"),
    (re.compile(r"requires a different Python: ([^|]+?)(?: \||$)", re.I), "the project requires a different Python: {0}"),
    (re.compile(r"Could not find a version that satisfies the requirement ([^\s|]+)", re.I),
     "pip found no version of {0} that fits"),
    (re.compile(r"(?:ModuleNotFoundError|ImportError): No module named '?([\w.]+)'?", re.I),
     "a module is missing: {0} (a test or build dependency not installed)"),
    # A C extension built with no compiler or headers in the image (a --base-image without apt, say).
    (re.compile(r"command '[^']*(?:gcc|cc|clang)' failed: No such file|Python\.h: No such file"
                r"|error: command '[^']*(?:gcc|cc)' failed with exit code|unable to execute '[^']*gcc'", re.I),
     "the project builds a C extension and the image has no C compiler or Python headers "
     "(use a base image with gcc and python3-dev)"),
    (_NO_DATA, "coverage recorded no data (the repo's own coverage settings, e.g. --cov in addopts, may take over)"),
    (re.compile(r"(?:Temporary failure in name resolution|Network is unreachable|Name or service not known)", re.I),
     "the network is unreachable from the sandbox"),
]
# pip's summaries of a failed build: they say that it failed, not why — the build's own exception line, when
# there is one, is added to them.
GENERIC: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"metadata-generation-failed", re.I), "pip could not build the project's metadata"),
    (re.compile(r"subprocess-exited-with-error", re.I), "a build step of the project failed inside pip"),
]
_NAMED = re.compile(r"^\w+(?:Error|Exception)\b:?.*")
_TELLING = re.compile(r"^(?:error|ERROR|E  |\w+Error:|fatal:)")
# Colour codes pip and pytest write even into logs ("\x1b[91merror: …", or "[91m" once the escape is lost).
_ANSI = re.compile(r"(?:\x1b)?\[[0-9;]*m")


def cause_of(message: str, output: str = "") -> str:
    """One readable cause for a failure whose message is `message` and whose raw output is `output`."""
    message, output = _ANSI.sub("", message), _ANSI.sub("", output)
    text = f"{message}\n{output}"
    head = message.strip().splitlines()[0] if message.strip() else ""
    for pattern, cause in CAUSES:
        if pattern is _NO_DATA and _NOTHING_RAN.search(message):
            continue  # coverage's "no data" is then a symptom of the message, not a second cause
        match = pattern.search(text)
        if match:
            found = cause.format(*(g.strip() for g in match.groups()))
            # Found only in the tool's output: our own message says what failed, the output why.
            return _short(found if pattern.search(message) or not head else f"{head.split(' | ')[0]}: {found}")
    lines = [ln.strip() for ln in re.split(r"\n| \| ", output) if ln.strip()]
    named = [ln for ln in lines if _NAMED.match(ln)]
    for pattern, cause in GENERIC:
        if pattern.search(text):
            return _short(f"{cause}: {named[-1]}" if named else cause)
    telling = [ln for ln in lines if _TELLING.match(ln)]
    if telling and not re.search(r"\w+(?:Error|Exception)\b", head):
        # Messages that embed a tool's tail ("… failed: line | line | line") keep their own words and the
        # tool's last error line instead of the whole tail.
        what = head.split(": ")[0] if head else "failed"
        return _short(f"{what}: {telling[-1]}")
    return _short(head.split(" | ")[0] or (telling[-1] if telling else "failed without a message"))


def raw_output(exc: BaseException) -> str:
    """Everything an error carries that a user may need to read: for each error of the chain, its text and
    the tool output attached to it (its `output`, a docker build log)."""
    return "\n\n".join(part for cur in _chain(exc) for part in (f"{type(cur).__name__}: {cur}", *_tool_parts(cur)))


def tool_output(exc: BaseException) -> str:
    """Only the tools' own output along the chain (what `cause_of` reads besides the message)."""
    return "\n".join(part for cur in _chain(exc) for part in _tool_parts(cur))


def _chain(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and all(cur is not seen for seen in chain):
        chain.append(cur)
        cur = cur.__cause__ or cur.__context__
    return chain


def _tool_parts(exc: BaseException) -> list[str]:
    parts = []
    output = getattr(exc, "output", "")
    if isinstance(output, str) and output:
        parts.append(output)
    log = getattr(exc, "build_log", None)
    if isinstance(log, (list, tuple)):
        # docker's BuildError carries the build log; a generator is already consumed by whoever raised.
        lines = [str(item.get("stream", item.get("error", ""))).rstrip() for item in log if isinstance(item, dict)]
        parts.append("\n".join(line for line in lines if line))
    return parts


def write_log(exc: BaseException, stage: str, log_dir: Path) -> Path:
    """Write the failure's raw output and traceback to LOG_DIR/<stage>.log; returns the path."""
    path = log_dir / f"{stage}.log"
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    atomic.write_text(path, f"stage: {stage}\n\n{raw_output(exc)}\n\n--- traceback\n{tb}")
    return path


def failure_line(stage: str, exc: BaseException, log: Path | None = None) -> str:
    """`error: STAGE: cause (full output: LOG)`."""
    message = str(exc)
    if not isinstance(exc, _known()):
        # A defect, not a failure we foresaw: say so, so nobody hunts for a cause in their repo.
        message = f"internal error ({type(exc).__name__}: {message})"
    cause = cause_of(message, tool_output(exc))
    tail = f" (full output: {log})" if log is not None else ""
    return f"error: {stage}: {cause}{tail}"


def _known() -> type:
    from repo2rlenv.errors import Repo2RLEnvError

    return Repo2RLEnvError


def _short(text: str) -> str:
    """At most about `_MAX_CAUSE` characters, cut between words: a URL or a path is kept whole, since
    half of one is worse than none (a user copies it)."""
    words = text.split()
    text = " ".join(words)
    if len(text) <= _MAX_CAUSE:
        return text
    kept: list[str] = []
    for word in words:
        if len(" ".join([*kept, word])) <= _MAX_CAUSE - 2:
            kept.append(word)
            continue
        if "/" in word and len(word) <= _MAX_CAUSE:  # a URL or path that crosses the limit stays whole
            kept.append(word)
        break
    if not kept:  # one word longer than the limit, and no URL: cut it
        return text[: _MAX_CAUSE - 1] + "…"
    return " ".join(kept) + " …"
