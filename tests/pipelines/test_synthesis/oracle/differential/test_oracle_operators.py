"""Objects a test builds with operators and from the library's named objects, as construct's suite does
(``"x" / Int8ub``, ``Int8ub[3]``, ``this.x``) and tinydb's (``Query().f == 1``): the receiver of the call
is written the way the test built it. Before, ``Int8ub`` (a module-level instance made at import) had no
recorded constructor, so nothing built from it could be written, and an operator's result whose
constructor was given a closure (tinydb's ``QueryInstance(lambda value: ...)``) could not be either: on
construct every call of ``parse`` was dropped and no mutant got an oracle."""

from __future__ import annotations

import json

from repo2rlenv.pipelines.test_synthesis.oracle.differential.differential import probe_sources
from repo2rlenv.pipelines.test_synthesis.oracle.differential.records import HarvestReport
from repo2rlenv.pipelines.test_synthesis.oracle.differential.values import Imports, Value, ValueKind, render

TEST_PATH = "tests/test_r2e_operators.py"
CORE = "packer/core.py"

PACKER_LIB = {
    "packer/__init__.py": "from packer.core import *\n",
    "packer/core.py": '''
        __all__ = ["Construct", "Int", "Renamed", "Array", "Byte", "Word", "Flag", "Query"]


        class Construct:
            def __rtruediv__(self, name):
                return Renamed(self, name)

            def __getitem__(self, count):
                return Array(count, self)

            def parse(self, data):
                return self._parse(data)


        class Int(Construct):
            def __init__(self, width):
                self.width = width

            def _parse(self, data):
                return int.from_bytes(data[:self.width], "big")


        class Renamed(Construct):
            def __init__(self, sub, name):
                self.sub = sub
                self.name = name

            def _parse(self, data):
                return {self.name: self.sub.parse(data)}


        class Array(Construct):
            def __init__(self, count, sub):
                self.count = count
                self.sub = sub

            def _parse(self, data):
                width = self.sub.width
                return [self.sub.parse(data[i * width:(i + 1) * width]) for i in range(self.count)]


        Byte = Int(1)
        Word = Int(2)


        def singleton(cls):
            return cls()


        @singleton
        class Flag(Construct):
            """construct's `@singleton class VarInt`: the name holds the class's one instance."""

            def _parse(self, data):
                return data[:1] != b"\\x00"


        class Query:
            """tinydb's shape: the test made by `==` holds a closure, which no constructor call can write."""

            def __init__(self):
                self.path = ()

            def __getattr__(self, name):
                query = Query()
                query.path = self.path + (name,)
                return query

            def __eq__(self, value):
                path = self.path
                return Test(lambda doc: _resolve(doc, path) == value)

            __hash__ = None


        class Test:
            def __init__(self, check):
                self.check = check

            def __call__(self, doc):
                return bool(self.check(doc))


        def _resolve(doc, path):
            for part in path:
                doc = doc[part]
            return doc
    ''',
    "tests/__init__.py": "",
    "tests/test_packer.py": '''
        from packer import Byte, Flag, Query, Word


        def test_renamed():
            assert ("x" / Word).parse(b"\\x00\\x01") == {"x": 1}


        def test_array():
            assert Byte[3].parse(b"\\x01\\x02\\x03") == [1, 2, 3]


        def test_flag():
            assert Flag.parse(b"\\x01") is True


        def test_query():
            assert (Query().f == 1)({"f": 1})
    ''',
}


def harvest(make_pair, runner_for, qualname: str, old: str, new: str) -> HarvestReport:
    pair = make_pair(PACKER_LIB, CORE, old, new)
    spec = {"target_file": CORE, "module": "packer.core", "qualname": qualname, "tests": ["tests/test_packer.py"]}
    argv = ["{scratch}/probe.py", "harvest", "--spec", "{scratch}/spec.json", "--out", "{scratch}/out.json"]
    files = {**probe_sources(), "spec.json": json.dumps(spec)}
    return HarvestReport.model_validate(json.loads(runner_for(pair)("A", argv, files)))


def test_receivers_built_by_operators_and_named_objects_are_written_as_the_test_built_them(make_pair, runner_for):
    report = harvest(make_pair, runner_for, "Construct.parse", "return self._parse(data)", "return self._parse(data[::-1])")
    written = {render(record.call.receiver, Imports()) for record in report.entries[0].calls}
    # The library's named objects by name, an operator's result as the operator on its operands.
    assert written == {"'x' / Word", "Word", "Byte[3]", "Byte", "Flag"}
    assert not report.skipped


def test_an_operator_result_whose_constructor_was_given_a_closure_is_written_as_the_operator(make_pair, runner_for):
    report = harvest(make_pair, runner_for, "Test.__call__", "return bool(self.check(doc))", "return not self.check(doc)")
    (record,) = report.entries[0].calls
    assert render(record.call.receiver, Imports()) == "Query().f == 1"
    assert [a.to_probe() for a in record.call.args] == [{"t": "dict", "pairs": [[{"t": "str", "v": "f"}, {"t": "int", "v": 1}]]}]


def test_a_method_of_a_singleton_class_is_reached_through_its_instance(make_pair, runner_for):
    report = harvest(make_pair, runner_for, "Flag._parse", 'return data[:1] != b"\\x00"', 'return data[:1] == b"\\x00"')
    assert [e.qualname for e in report.entries] == ["Construct.parse"]
    assert "Flag" in {render(record.call.receiver, Imports()) for record in report.entries[0].calls}


def test_operations_render_with_their_operators():
    word = Value(t=ValueKind.REF, module="packer", qualname="Word")
    name = Value(t=ValueKind.STR, v="x")
    renamed = Value(t=ValueKind.OP, v="__rtruediv__", items=[word, name], kw={})
    imports = Imports()
    assert render(renamed, imports) == "'x' / Word"
    assert render(Value(t=ValueKind.OP, v="__getattr__", items=[renamed, Value(t=ValueKind.STR, v="sub")], kw={}),
                  imports) == "('x' / Word).sub"
    assert render(Value(t=ValueKind.OP, v="__rshift__", items=[renamed, word], kw={}), imports) == "('x' / Word) >> Word"
    assert render(Value(t=ValueKind.OP, v="compile", items=[word], kw={"fast": Value(t=ValueKind.BOOL, v=True)}),
                  imports) == "Word.compile(fast=True)"
    assert "from packer import Word" in "\n".join(imports.lines())


def test_a_receiver_built_by_an_operator_gets_an_oracle(make_pair, separating_oracle):
    pair = make_pair(PACKER_LIB, CORE, "return {self.name: self.sub.parse(data)}",
                     "return {self.name: self.sub.parse(data[:1])}")
    source = separating_oracle(pair, CORE, "packer.core", "Renamed._parse", ["tests/test_packer.py::test_renamed"],
                               TEST_PATH)
    assert "renamed = 'x' / Word" in source
    assert "._" not in source.split('"""')[-1]  # never a private attribute (the docstring names the target)
