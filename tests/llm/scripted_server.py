"""A scripted OpenAI-compatible chat server for tests: stdlib ``http.server`` on 127.0.0.1, a random port.

Each ``POST /v1/chat/completions`` takes the next step of a script: a reply (with or without ``usage``),
an HTTP error (429 with ``Retry-After``, 500 …), or a stall that outlives the client's timeout. Every
request is recorded (path, headers, JSON body) before it is answered, so a test can assert both what
was sent and what never was. A step may also be computed from the request (``responder``).

The commands' model check (`repo2rlenv/llm/preflight.py`: one call asking for one token) is answered
"OK" outside the script and kept in ``preflights``, not ``requests``, so a test scripts only the run's
own calls; ``answer_preflight=False`` puts it through the script like any other call.

No package imports it: conftest files load it by path (``load_scripted_server``), so any test directory
(the oracle's, the solver's) can reuse it without ``__init__.py`` files.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

CHAT_PATH = "/v1/chat/completions"
PREFLIGHT_MARK = "repo2rlenv preflight"
STREAM_PIECE = 5  # characters per streamed chunk


@dataclass(frozen=True)
class Step:
    """One scripted answer. Build it with `reply`, `error` or `stall`."""

    kind: Literal["reply", "error", "stall", "garbage"]
    content: str = ""
    usage: dict[str, int] | None = None
    status: int = 200
    retry_after: str | None = None
    seconds: float = 0.0


def reply(content: str, *, prompt_tokens: int = 100, completion_tokens: int = 50, usage: bool = True) -> Step:
    """A 200 reply whose assistant message is ``content``; ``usage=False`` leaves the usage object out."""
    counts = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
              "total_tokens": prompt_tokens + completion_tokens}
    return Step("reply", content=content, usage=counts if usage else None)


def error(status: int, *, retry_after: str | None = None) -> Step:
    """An HTTP error in OpenAI's error shape (429 may carry a Retry-After header)."""
    return Step("error", status=status, retry_after=retry_after)


def garbage(text: str = "<html>502 Bad Gateway</html>") -> Step:
    """A 200 whose body is not a completion (a proxy's page, a server that speaks another API)."""
    return Step("garbage", content=text)


def stall(seconds: float) -> Step:
    """Hold the request for ``seconds`` before replying: a client with a shorter timeout gives up first."""
    return Step("stall", content="(too late)", seconds=seconds)


@dataclass
class Recorded:
    """One request as the server received it."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float = field(default_factory=time.monotonic)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))

    def text(self) -> str:
        """All message contents joined, for `in` assertions."""
        return "\n".join(str(m.get("content", "")) for m in self.messages)


class ScriptedServer:
    """The server; use as a context manager or call `start`/`stop`."""

    def __init__(self, steps: list[Step] | None = None, *, responder: Callable[[Recorded], Step] | None = None,
                 answer_preflight: bool = True) -> None:
        self._steps: deque[Step] = deque(steps or [])
        self.responder = responder
        self.answer_preflight = answer_preflight
        self.requests: list[Recorded] = []
        self.preflights: list[Recorded] = []
        self.streamed = 0  # replies sent as server-sent events
        self.unscripted = 0  # requests that found the script empty
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- script ---------------------------------------------------------------------------------

    def push(self, *steps: Step) -> None:
        with self._lock:
            self._steps.extend(steps)

    def _next(self, request: Recorded) -> Step | None:
        if self.responder is not None:
            return self.responder(request)
        with self._lock:
            if not self._steps:
                self.unscripted += 1
                return None
            return self._steps.popleft()

    def _record(self, request: Recorded) -> None:
        with self._lock:
            self.requests.append(request)

    # --- lifecycle ------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ScriptedServer:
        server = self

        class Handler(_Handler):
            owner = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        # A short poll interval: `stop` returns within 50 ms instead of the default half second.
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), name="scripted-llm",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; stalled handlers wake up and drop their connections."""
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Handler(BaseHTTPRequestHandler):
    owner: ScriptedServer

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        return

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b"{}"
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {"unparsable": raw.decode("utf-8", "replace")}
        request = Recorded(path=self.path, headers={k.lower(): v for k, v in self.headers.items()}, body=body)
        if self.owner.answer_preflight and PREFLIGHT_MARK in request.text():
            self.owner.preflights.append(request)
            return self._send(200, _completion(body, reply("OK", prompt_tokens=12, completion_tokens=1)))
        self.owner._record(request)
        if self.path.rstrip("/") != CHAT_PATH:
            return self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
        step = self.owner._next(request)
        if step is None:
            # 400 is not retried, so a test that sends more than it scripted fails fast and clearly.
            return self._send(400, {"error": {"message": "script exhausted", "type": "invalid_request_error"}})
        if step.kind == "error":
            headers = {"Retry-After": step.retry_after} if step.retry_after is not None else {}
            kind = "rate_limit_error" if step.status == 429 else "server_error"
            return self._send(step.status, {"error": {"message": f"scripted {step.status}", "type": kind}}, headers)
        if step.kind == "stall" and self.owner._stopping.wait(step.seconds):
            return
        if step.kind == "garbage":
            return self._send_raw(200, step.content.encode(), "text/html")
        if body.get("stream"):
            return self._send_stream(body, step)
        self._send(200, _completion(body, step))

    def _send_stream(self, body: dict[str, Any], step: Step) -> None:
        """The reply as server-sent events, a few characters a chunk, the usage in a last chunk."""
        base = _completion(body, step)
        events = []
        for i in range(0, len(step.content), STREAM_PIECE):
            events.append({**base, "object": "chat.completion.chunk", "usage": None, "choices": [
                {"index": 0, "delta": {"content": step.content[i:i + STREAM_PIECE]}, "finish_reason": None}]})
        events.append({**base, "object": "chat.completion.chunk", "usage": None,
                       "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        if step.usage is not None:
            events.append({**base, "object": "chat.completion.chunk", "choices": [], "usage": step.usage})
        data = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
        self.owner.streamed += 1
        self._send_raw(200, data.encode(), "text/event-stream")

    def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        self._send_raw(status, json.dumps(payload).encode(), "application/json", headers)

    def _send_raw(self, status: int, data: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeouts)
            pass


def _completion(body: dict[str, Any], step: Step) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": f"chatcmpl-scripted-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": str(body.get("model", "scripted")),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": step.content}, "finish_reason": "stop"}],
    }
    if step.usage is not None:
        out["usage"] = step.usage
    return out
