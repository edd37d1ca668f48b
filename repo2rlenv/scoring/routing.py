"""Which scoring node takes a request: the bookkeeping of `RayDatasetScorer`, with no Ray in it.

Each node runs `slots` scores at once and accepts `capacity` (slots plus a queue); the driver counts what
it sent to each node and has not had back. A request goes to, in order of preference,

1. a node that holds the task's image and has a free slot;
2. another node with a free slot (it builds the image once, and holds it from then on);
3. a holder with room in its queue;
4. any node with room in its queue;

the least loaded within each group. Why free slots before images: waiting in a holder's queue costs a
whole grading per request ahead, every time, while a build costs once and adds a node's slots to the
task's for the rest of the run. A node is "holder" from the moment a request for the task is sent to it,
so a burst for one task does not make every node build it at the same time.

When no node has room the caller waits (`acquire` blocks): the library's backpressure. A node that was
lost is removed; its requests come back to the caller, which asks again excluding it.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Iterable


class NoNode(Exception):
    """No live node can take the task (none has it, or every one that has it was excluded or lost)."""


@dataclass
class _Node:
    slots: int
    capacity: int
    tasks: frozenset[str]
    in_flight: int = 0
    holds: set[str] = field(default_factory=set)


class Router:
    """Thread-safe: every request's thread acquires and releases here."""

    def __init__(self) -> None:
        self._nodes: dict[str, _Node] = {}
        self._changed = threading.Condition()

    # -- membership ----------------------------------------------------------------------------------------

    def add(self, node: str, *, slots: int, capacity: int, tasks: set[str] | frozenset[str],
            images: set[str] | frozenset[str] = frozenset()) -> None:
        if slots < 1 or capacity < slots:
            raise ValueError(f"node {node}: slots {slots} and capacity {capacity} (at least the slots)")
        with self._changed:
            self._nodes[node] = _Node(slots, capacity, frozenset(tasks), holds=set(images) & set(tasks))
            self._changed.notify_all()

    def remove(self, node: str) -> None:
        """A lost node: later requests avoid it; the ones waiting re-check whether any node is left."""
        with self._changed:
            self._nodes.pop(node, None)
            self._changed.notify_all()

    def nodes(self) -> list[str]:
        with self._changed:
            return list(self._nodes)

    def tasks(self) -> set[str]:
        with self._changed:
            return set().union(*(n.tasks for n in self._nodes.values())) if self._nodes else set()

    def slots(self) -> int:
        with self._changed:
            return sum(n.slots for n in self._nodes.values())

    def capacity(self) -> int:
        with self._changed:
            return sum(n.capacity for n in self._nodes.values())

    def holders(self, task: str) -> set[str]:
        with self._changed:
            return {name for name, n in self._nodes.items() if task in n.holds}

    def in_flight(self) -> dict[str, int]:
        with self._changed:
            return {name: n.in_flight for name, n in self._nodes.items()}

    # -- requests ------------------------------------------------------------------------------------------

    def acquire(self, task: str, exclude: set[str] | frozenset[str] = frozenset(),
                timeout: float | None = None) -> str:
        """The node to send a request for `task` to, counted in flight until `release`. Blocks while every
        candidate is at capacity; raises `NoNode` when there is no candidate at all (or `TimeoutError`)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._changed:
            while True:
                candidates = {name: n for name, n in self._nodes.items() if task in n.tasks and name not in exclude}
                if not candidates:
                    raise NoNode(task)
                open_ = [(name, n) for name, n in candidates.items() if n.in_flight < n.capacity]
                if open_:
                    name, node = min(open_, key=lambda item: _rank(task, item[1]))
                    node.in_flight += 1
                    node.holds.add(task)
                    return name
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise TimeoutError(f"no scoring node had room for {task} within {timeout:g}s")
                # Woken by a release, a node added or one lost; the timeout only bounds a caller's wait.
                self._changed.wait(left)

    def hold(self, node: str, tasks: Iterable[str]) -> None:
        """`node` has built these tasks' images (a warm-up did)."""
        with self._changed:
            if node in self._nodes:
                self._nodes[node].holds |= set(tasks) & self._nodes[node].tasks

    def release(self, node: str) -> None:
        with self._changed:
            if node in self._nodes:
                self._nodes[node].in_flight -= 1
            self._changed.notify_all()


def _rank(task: str, node: _Node) -> tuple[bool, bool, float]:
    """Smaller is better: a free slot first, then the image held, then the load per slot."""
    return node.in_flight >= node.slots, task not in node.holds, node.in_flight / node.slots
