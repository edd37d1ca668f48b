"""The router's choices, without Ray: image holders with free slots first, then free slots anywhere, then
queues; blocking at capacity until a release; a lost node's waiters told there is none left."""

from __future__ import annotations

import threading
import time

import pytest

from repo2rlenv.scoring.routing import NoNode, Router

TASKS = {"t1", "t2"}


def _router(**nodes: tuple[int, int, set[str]]) -> Router:
    router = Router()
    for name, (slots, capacity, images) in nodes.items():
        router.add(name, slots=slots, capacity=capacity, tasks=TASKS, images=images)
    return router


def test_a_holder_with_a_free_slot_is_chosen_over_an_idle_node():
    router = _router(a=(2, 4, set()), b=(2, 4, {"t1"}))
    assert router.acquire("t1") == "b"
    assert router.acquire("t1") == "b"  # still a free slot there


def test_past_the_holders_slots_another_node_takes_it_and_holds_it_from_then_on():
    router = _router(a=(1, 2, set()), b=(1, 2, {"t1"}))
    assert router.acquire("t1") == "b"
    assert router.acquire("t1") == "a"  # b's slot is busy, a's is free: a builds the image once
    assert router.holders("t1") == {"a", "b"}
    assert router.acquire("t1") in {"a", "b"}  # both full of slots now: a holder's queue


def test_queues_fill_before_anyone_waits_and_then_the_caller_blocks_until_a_release():
    router = _router(a=(1, 2, set()))
    assert [router.acquire("t1") for _ in range(2)] == ["a", "a"]
    with pytest.raises(TimeoutError):
        router.acquire("t1", timeout=0.2)
    got: list[str] = []
    waiter = threading.Thread(target=lambda: got.append(router.acquire("t2")))
    waiter.start()
    time.sleep(0.2)
    assert not got  # still blocked
    router.release("a")
    waiter.join(5)
    assert got == ["a"] and router.in_flight() == {"a": 2}


def test_only_nodes_that_have_the_task_and_are_not_excluded_are_candidates():
    router = Router()
    router.add("a", slots=1, capacity=1, tasks={"t1"})
    router.add("b", slots=1, capacity=1, tasks={"t2"})
    assert router.acquire("t2") == "b"
    with pytest.raises(NoNode):
        router.acquire("t1", exclude={"a"})
    with pytest.raises(NoNode):
        router.acquire("t3")
    assert router.tasks() == {"t1", "t2"} and router.slots() == 2


def test_a_waiter_learns_at_once_when_its_last_node_is_lost():
    router = _router(a=(1, 1, set()))
    router.acquire("t1")
    errors: list[BaseException] = []

    def wait() -> None:
        try:
            router.acquire("t1")
        except NoNode as exc:
            errors.append(exc)

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.2)
    router.remove("a")
    waiter.join(5)
    assert len(errors) == 1
    router.release("a")  # the lost node's request coming back is harmless


def test_the_least_loaded_per_slot_wins_within_a_group():
    router = _router(a=(1, 4, set()), b=(4, 8, set()))
    router.acquire("t1")  # a: 1 of 1 slot
    assert router.acquire("t1") == "b"
    assert router.acquire("t2") == "b"  # b is at 2 of 4, a has no free slot


def test_a_node_needs_a_slot_and_capacity_at_least_its_slots():
    with pytest.raises(ValueError):
        Router().add("a", slots=0, capacity=1, tasks=TASKS)
    with pytest.raises(ValueError):
        Router().add("a", slots=2, capacity=1, tasks=TASKS)
