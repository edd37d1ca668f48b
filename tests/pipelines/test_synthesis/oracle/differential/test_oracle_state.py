"""Objects and state (issue 34): a receiver the suite's fixture fills from a generator expression, and a
store whose own methods call its backend, are re-created as the suite built them and driven through the
public API; the oracle asserts what a method returns and what later public calls see."""

from __future__ import annotations

import json

import pytest

from repo2rlenv.pipelines.test_synthesis.oracle.differential.differential import probe_sources
from repo2rlenv.pipelines.test_synthesis.oracle.differential.records import HarvestReport
from repo2rlenv.pipelines.test_synthesis.oracle.differential.values import Imports, render

TEST_PATH = "tests/test_r2e_state.py"
STORE = "shelf/store.py"

# A small document store: `Store` keeps rows in a backend it is given; the suite's fixture fills it from a
# generator expression (the pattern of a document database's `insert_multiple(... for c in 'abc')`).
STORE_LIB = {
    "shelf/__init__.py": "from shelf.store import Memory, Store\n",
    "shelf/store.py": '''
        class Memory:
            def __init__(self):
                self.rows = {}

            def put(self, key, row):
                self.rows[key] = dict(row)

            def drop(self, key):
                return self.rows.pop(key, None) is not None


        class Store:
            def __init__(self, backend, name="default"):
                self.backend = backend
                self.name = name
                self._next = 1

            def add_many(self, rows):
                ids = []
                for row in rows:
                    self.backend.put(self._next, row)
                    ids.append(self._next)
                    self._next += 1
                return ids

            def remove(self, ids):
                removed = [key for key in ids if self.backend.drop(key)]
                return removed

            def __len__(self):
                return len(self.backend.rows)
    ''',
    "tests/__init__.py": "",
    "tests/conftest.py": '''
        import pytest

        from shelf import Memory, Store


        @pytest.fixture
        def store():
            store = Store(Memory())
            store.add_many({"n": n, "c": c} for n, c in enumerate("abc"))
            return store
    ''',
    "tests/test_store.py": '''
        def test_remove(store):
            store.remove([1, 2])
            assert len(store) == 1
    ''',
}


@pytest.fixture
def store_pair(make_pair):
    return make_pair(STORE_LIB, STORE, "        return removed\n", "        return None\n")


def test_a_generator_given_to_a_recorded_step_is_written_as_the_items_it_yielded(store_pair, runner_for):
    argv = ["{scratch}/probe.py", "harvest", "--spec", "{scratch}/spec.json", "--out", "{scratch}/out.json"]
    spec = {"target_file": STORE, "module": "shelf.store", "qualname": "Store.remove", "tests": ["tests/test_store.py"]}
    report = HarvestReport.model_validate(json.loads(runner_for(store_pair)("A", argv, {**probe_sources(), "spec.json": json.dumps(spec)})))
    (record,) = report.entries[0].calls
    call = record.call
    assert render(call.receiver, Imports()) == "Store(Memory())"
    # The backend's `put` calls run inside `add_many`: part of that step, not steps of their own.
    assert [(s.name, s.on) for s in call.steps] == [("add_many", None)]
    (rows,) = call.steps[0].args
    assert render(rows, Imports()) == "iter([{'n': 0, 'c': 'a'}, {'n': 1, 'c': 'b'}, {'n': 2, 'c': 'c'}])"


def test_a_method_of_an_object_the_fixture_filled_from_a_generator_gets_an_oracle(store_pair, separating_oracle):
    source = separating_oracle(store_pair, STORE, "shelf.store", "Store.remove", ["tests/test_store.py::test_remove"],
                               TEST_PATH)
    assert "store = Store(memory)" in source or "Store(Memory())" in source
    assert "store.add_many(iter([{'n': 0, 'c': 'a'}, {'n': 1, 'c': 'b'}, {'n': 2, 'c': 'c'}]))" in source
    assert "store.remove([1, 2]) == [1, 2]" in source
    assert "._" not in source  # never a private attribute


def test_a_helper_module_named_for_the_suite_is_the_suites_own():
    from probe_names import is_test_module  # the probe's sibling files are on sys.path (conftest)

    assert is_test_module("bidict_test_fixtures") and is_test_module("tests.helpers") and is_test_module("conftest")
    assert is_test_module("my_testing") and not is_test_module("attestation") and not is_test_module("shelf.store")
