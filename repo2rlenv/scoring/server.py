"""The scoring service over HTTP, on the standard library's `ThreadingHTTPServer` (no new dependency).

    POST /score    {"task_id": ..., "source": ...}  ->  200 Score as JSON (reward null: no verdict)
    GET  /health   ->  200 {"ok": true, "api_version": 2, ...}
    GET  /metrics  ->  200 scores/s, queue depth, p50/p99 latency, failures and rejections by kind

Every other answer is `{"error": "<one line>"}`: 400 bad JSON, fields or task; 401 without the bearer token
(when one is set); 404 unknown path; 405 wrong method; 411/413 missing or oversized body; 429 queue full
(Retry-After header); 503 shutting down. This module only reads, authorises and answers; what a score
request does is `repo2rlenv.scoring.service.ScoringService`.
"""

from __future__ import annotations

import hmac
import json
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

from pydantic import BaseModel, ValidationError

from repo2rlenv.errors import UserError
from repo2rlenv.scoring.service import Busy, Closing, ScoringService
from repo2rlenv.scoring.wire import ErrorBody, ScoreRequest

LOOPBACK = "127.0.0.1"
DEFAULT_PORT = 8765


class ScoringServer(ThreadingHTTPServer):
    """One thread per connection; `daemon_threads` so a client holding a keep-alive socket open cannot
    keep the process alive after shutdown."""

    daemon_threads = True
    # The listen backlog. socketserver's default of 5 is too few for a trainer's burst: connections beyond
    # it were reset by the kernel before the server could accept them, and a reset tells the client nothing,
    # where a 429 tells it when to come back. The kernel caps it at net.core.somaxconn.
    request_queue_size = 1024

    def __init__(self, address: tuple[str, int], service: ScoringService, *, token: str | None = None,
                 log: Callable[[str], None] | None = None):
        self.service = service
        self.token = token
        self.log = log
        super().__init__(address, _Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def request_stop(self) -> None:
        """Ask `serve_forever` to return, without waiting: safe from a signal handler, which runs on the very
        thread `serve_forever` blocks (`shutdown()` from there would wait for itself)."""
        threading.Thread(target=self.shutdown, name="r2e-serve-stop", daemon=True).start()

    def close(self) -> None:
        """After `serve_forever` returned: release the port, let admitted scores finish, close the warm pools."""
        self.server_close()
        self.service.close()


def _one_line(text: str) -> str:
    return " ".join(str(text).split())[:500]


def _validation_line(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "body"
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where}: {first['msg']}{more}"


class _Handler(BaseHTTPRequestHandler):
    server: ScoringServer
    # Keep-alive: a trainer posts thousands of scores; a new TCP connection each time is waste.
    protocol_version = "HTTP/1.1"
    server_version = "repo2rlenv-serve"

    def setup(self) -> None:
        # StreamRequestHandler applies `timeout` to the socket: a stalled client is dropped, not waited on.
        self.timeout = self.server.service.limits.read_timeout_sec
        super().setup()

    # -- routing -------------------------------------------------------------------------------------------

    def do_GET(self) -> None:  # noqa: N802 - the name http.server dispatches to
        service = self.server.service
        if self.path == "/health":
            self._send(HTTPStatus.OK, service.health())
        elif self.path == "/metrics":
            if self._authorised():
                self._send(HTTPStatus.OK, service.snapshot())
        elif self.path == "/score":
            self._error(HTTPStatus.METHOD_NOT_ALLOWED, "use POST /score", "bad_request", Allow="POST")
        else:
            self._error(HTTPStatus.NOT_FOUND, f"no such endpoint: {_one_line(self.path)}", "not_found")

    def do_POST(self) -> None:  # noqa: N802
        if self.path != "/score":
            self._drop_body_and(HTTPStatus.NOT_FOUND, f"no such endpoint: {_one_line(self.path)}", "not_found")
            return
        if not self._authorised():
            return
        request = self._read_request()
        if request is None:
            return
        try:
            score = self.server.service.score(request)
        except Busy as exc:
            self._error(HTTPStatus.TOO_MANY_REQUESTS, str(exc), None, retry_after=exc.retry_after_sec)
        except Closing as exc:
            self._error(HTTPStatus.SERVICE_UNAVAILABLE, str(exc), None)
        except UserError as exc:  # a task the dataset lacks
            self._error(HTTPStatus.BAD_REQUEST, _one_line(str(exc)), "bad_request")
        else:
            self._send(HTTPStatus.OK, score)

    # -- reading -------------------------------------------------------------------------------------------

    def _authorised(self) -> bool:
        token = self.server.token
        if token is None:
            return True
        given = self.headers.get("Authorization", "")
        scheme, _, value = given.partition(" ")
        # compare_digest: the time taken must not tell how many leading characters were right.
        if scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), token.encode()):
            return True
        self._drop_body_and(HTTPStatus.UNAUTHORIZED, "missing or wrong bearer token", "unauthorized",
                            **{"WWW-Authenticate": 'Bearer realm="repo2rlenv"'})
        return False

    def _length(self) -> int | None:
        raw = self.headers.get("Content-Length")
        try:
            return int(raw) if raw is not None else None
        except ValueError:
            return -1

    def _read_request(self) -> ScoreRequest | None:
        length, limit = self._length(), self.server.service.limits.max_body_bytes
        if self.headers.get("Transfer-Encoding") or length is None:
            self.close_connection = True  # a body we will not read would be taken for the next request
            self._error(HTTPStatus.LENGTH_REQUIRED, "POST /score needs a Content-Length body", "bad_request")
            return None
        if length < 0:
            self.close_connection = True
            self._error(HTTPStatus.BAD_REQUEST, "Content-Length is not a number", "bad_request")
            return None
        if length > limit:
            self.close_connection = True
            self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"body of {length} bytes is over the limit of {limit}",
                        "too_large")
            return None
        try:
            body = self.rfile.read(length)
        except OSError:  # the read timed out: the client stalled
            self.close_connection = True
            return None
        try:
            return ScoreRequest.model_validate(json.loads(body))
        except json.JSONDecodeError as exc:
            self._error(HTTPStatus.BAD_REQUEST, f"body is not JSON: {exc.msg} at character {exc.pos}",
                        "bad_request")
        except UnicodeDecodeError:
            self._error(HTTPStatus.BAD_REQUEST, "body is not UTF-8", "bad_request")
        except ValidationError as exc:
            self._error(HTTPStatus.BAD_REQUEST, _validation_line(exc), "bad_request")
        return None

    def _drop_body_and(self, status: HTTPStatus, message: str, reason: str | None, **headers: str) -> None:
        """Answer a request whose body will not be used. A body within the limit is read and dropped, so the
        connection stays usable; closing with unread bytes makes the kernel reset it, and the client may
        lose the answer. A larger one is not read: the connection closes."""
        length = self._length()
        if length and 0 < length <= self.server.service.limits.max_body_bytes:
            try:
                self.rfile.read(length)
            except OSError:
                self.close_connection = True
        elif length:
            self.close_connection = True
        self._error(status, message, reason, **headers)

    # -- writing -------------------------------------------------------------------------------------------

    def _error(self, status: HTTPStatus, message: str, reason: str | None, retry_after: int | None = None,
               **headers: str) -> None:
        if reason is not None:
            self.server.service.metrics.rejected(reason)
        if retry_after is not None:
            headers["Retry-After"] = str(retry_after)
        self._send(status, ErrorBody(error=message, retry_after_sec=retry_after), **headers)

    def _send(self, status: HTTPStatus, model: BaseModel, **headers: str) -> None:
        body = model.model_dump_json(exclude_none=isinstance(model, ErrorBody)).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's signature
        if self.server.log is not None:
            self.server.log(f"{self.address_string()} {format % args}")


def make_server(service: ScoringService, host: str = LOOPBACK, port: int = DEFAULT_PORT, *,
                token: str | None = None, log: Callable[[str], None] | None = None) -> ScoringServer:
    """Bind (port 0: any free port; `server.url` says which). Serve with `serve_forever()`; `shutdown()` (or
    `request_stop()` from a signal handler) ends it, then `close()`."""
    try:
        return ScoringServer((host, port), service, token=token, log=log)
    except OSError as exc:
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
