"""Containers of one task image, started before a score needs one.

Every container serves exactly one score and is then removed, so each score starts from the image as
built — the state a fresh Harbor verifier container has — and nothing one submission did (files, processes,
a poisoned site-packages) can reach the next. What the pool saves is the start-up: a background thread
keeps `size` containers running idle (tethered to this process: they go if it dies, sandbox/owners.py), so
a score takes one that is already up and the replacement starts while the verifier runs.
"""

from __future__ import annotations

import queue
import threading
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from repo2rlenv.errors import SandboxError
from repo2rlenv.sandbox.base import Limits
from repo2rlenv.sandbox.docker import DockerSession


class PoolClosed(SandboxError):
    """The pool was closed (its scorer released it) between being looked up and asked for a container."""


class WarmPool:
    """`size` idle, never-used containers of `image`; `take` hands one over and starts its replacement."""

    def __init__(self, client: Any, image: str, limits: Limits, size: int = 2):
        if size < 1:
            raise ValueError("a warm pool holds at least one container")
        self._client = client
        self._image = image
        self._limits = limits
        self._ready: queue.Queue[DockerSession | BaseException] = queue.Queue()
        self._lock = threading.Lock()
        self._closed = False
        # One starter: the Docker daemon starts containers one at a time anyway, and a burst of starts
        # while verifiers run would only slow those down.
        self._starter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="r2e-pool")
        self._first = [self._starter.submit(self._start_one) for _ in range(size)]
        # Idle containers go when the pool does, also when its owner forgets `close()` or the interpreter
        # exits (a trainer's reward object lives as long as the process).
        self._finalizer = weakref.finalize(self, _remove_idle, self._ready)

    def wait(self) -> None:
        """Return once the first `size` containers are up (or failed to start)."""
        for future in self._first:
            future.result()

    def _start_one(self) -> None:
        if self._closed:
            return
        try:
            session: DockerSession | BaseException = DockerSession(self._client, self._image, self._limits,
                                                                    harden=False)
        except Exception as exc:  # handed to the taker, who turns it into an error kind
            session = exc
        with self._lock:
            if self._closed:
                if isinstance(session, DockerSession):
                    session.close()
                return
            self._ready.put(session)

    def take(self, timeout: float = 300.0) -> DockerSession:
        """A container nothing has run in yet. The caller owns it and must close it."""
        deadline = time.monotonic() + timeout
        while True:
            # Short waits, so a taker waiting when the pool is closed learns it at once.
            if self._closed:
                raise PoolClosed("the warm pool is closed")
            try:
                item = self._ready.get(timeout=0.5)
                break
            except queue.Empty:
                if time.monotonic() > deadline:
                    raise SandboxError(f"no container of {self._image} started within {timeout:.0f}s") from None
        try:
            self._starter.submit(self._start_one)
        except RuntimeError:  # closed meanwhile: the container taken is still the taker's to use
            pass
        if isinstance(item, BaseException):
            raise SandboxError(f"starting a container of {self._image} failed: {item}") from item
        return item

    def close(self) -> None:
        """Remove every idle container; containers already taken are their takers' to close."""
        with self._lock:
            self._closed = True
        self._starter.shutdown(wait=True, cancel_futures=True)
        self._finalizer()


def _remove_idle(ready: queue.Queue) -> None:
    while True:
        try:
            item = ready.get_nowait()
        except queue.Empty:
            return
        if isinstance(item, DockerSession):
            item.close()
