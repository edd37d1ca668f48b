"""Object identities in outcomes (issue 34): reprs that embed ``id()`` (``<Step('go')@140234>``) and dicts
keyed by ``id(obj)`` differ between two runs of the same code. The probe numbers each identity by first
appearance in a call, so such facets compare equal across runs of A; a test never asserts them as the probe
wrote them (the number is not the id), but what it can write of them instead: a mapping's keys or size."""

from __future__ import annotations

import probe_values
from probe_replay import observe

from repo2rlenv.pipelines.test_synthesis.oracle.differential.judging import judge, run_specific
from repo2rlenv.pipelines.test_synthesis.oracle.differential.records import Outcome, OutcomeKind
from repo2rlenv.pipelines.test_synthesis.oracle.differential.values import Value, host_specific

TEST_PATH = "tests/test_r2e_board.py"
BOARD = "board/core.py"

BOARD_LIB = {
    "board/__init__.py": "from board.core import Board, Step\n",
    "board/core.py": '''
        class Step:
            def __init__(self, name):
                self.name = name

            def __repr__(self):
                return "<Step(%r)@%s>" % (self.name, id(self))


        class Board:
            def __init__(self):
                self.steps = {}
                self.watchers = {}

            def add(self, name, *aliases):
                step = Step(name)
                self.steps[name] = step
                for alias in aliases:
                    self.steps[alias] = step

            def watch(self, *watchers):
                for watcher in watchers:
                    self.watchers[id(watcher)] = watcher
    ''',
    "tests/__init__.py": "",
    "tests/test_board.py": '''
        from board import Board


        def test_add():
            board = Board()
            board.add("go", "run")
            assert "go" in board.steps


        def test_watch():
            board = Board()
            board.watch(Board(), Board())
            assert board.watchers
    ''',
}


class _Thing:
    def __repr__(self):
        return "<Thing@%s>" % id(self)


def _outputs():
    """What the probe writes of a fresh world: a repr with ids, a dict keyed by id, a message."""
    probe_values.reset_identities()
    a, b = _Thing(), _Thing()
    keyed = probe_values.encode_output({id(a): "a", id(b): "b"})
    shown = probe_values.opaque([a, b, a])
    text = probe_values.encode_output("made %r" % a)
    return keyed, shown, text, (a, b)


def test_identities_are_numbered_by_first_appearance_so_two_runs_agree():
    first, second = _outputs(), _outputs()
    assert first[:3] == second[:3]
    keyed, _, text, _ = first
    assert [k for k, _ in keyed["pairs"]] == [{"t": "opaque", "type": "id", "v": "<id:1>"},
                                             {"t": "opaque", "type": "id", "v": "<id:2>"}]
    assert text == {"t": "str", "v": "made <Thing@<id:1>>"}


def test_numbers_that_are_not_identities_stay():
    probe_values.reset_identities()
    assert probe_values.encode_output(1234567) == {"t": "int", "v": 1234567}
    assert probe_values.encode_output("order 1234567 at 0x1f") == {"t": "str", "v": "order 1234567 at 0x1f"}


def test_a_marked_identity_is_compared_but_never_asserted():
    marked = Value(t="str", v="<Step('go')@<id:1>>")
    assert host_specific(marked)
    a = Outcome(kind=OutcomeKind.RETURN, value=Value(t="none"), state={"self.attr:label": marked})
    b = Outcome(kind=OutcomeKind.RETURN, value=Value(t="none"), state={"self.attr:label": Value(t="str", v="<Step('run')@<id:1>>")})
    assert judge(a, a, b).differing == []
    assert run_specific(a, a, b) == ["self.attr:label"]


def test_a_mapping_of_unwritable_values_is_observed_by_its_keys_or_its_size():
    probe_values.reset_identities()
    board = type("Board", (), {})()
    board.steps = {"go": _Thing(), "run": _Thing()}
    board.watchers = {id(x): x for x in (_Thing(), _Thing(), _Thing())}
    facets = observe(board, "self.")
    assert facets["self.attr:steps.keys"] == {"t": "list", "items": [{"t": "str", "v": "go"}, {"t": "str", "v": "run"}]}
    assert facets["self.attr:watchers.len"] == {"t": "int", "v": 3}
    assert "self.attr:steps.len" not in facets and "self.attr:watchers.keys" not in facets


def test_an_object_whose_repr_embeds_ids_gets_an_oracle_on_its_keys(make_pair, separating_oracle):
    pair = make_pair(BOARD_LIB, BOARD, "for alias in aliases:", "for alias in aliases[1:]:")
    source = separating_oracle(pair, BOARD, "board.core", "Board.add", ["tests/test_board.py::test_add"], TEST_PATH)
    assert "assert list(board.steps) == ['go', 'run']" in source
    assert "<id:" not in source and "@" not in source


def test_a_dict_keyed_by_ids_gets_an_oracle_on_its_size(make_pair, separating_oracle):
    pair = make_pair(BOARD_LIB, BOARD, "for watcher in watchers:", "for watcher in watchers[1:]:")
    source = separating_oracle(pair, BOARD, "board.core", "Board.watch", ["tests/test_board.py::test_watch"], TEST_PATH)
    assert "assert len(board.watchers) == 2" in source
