"""Objects their owner builds: a model whose constructor makes its own machine and gives it the half-built
model (``self.machine = Machine(self)``, as transitions' test helper ``Stuff`` does). Calling the machine's
class again on a fresh owner would build a second machine on it (transitions raises "Model already has a
get_graph attribute"), so the machine is re-created as the owner's public attribute: ``Light().machine``."""

from __future__ import annotations

import json

from repo2rlenv.pipelines.test_synthesis.oracle.differential.differential import probe_sources
from repo2rlenv.pipelines.test_synthesis.oracle.differential.records import HarvestReport
from repo2rlenv.pipelines.test_synthesis.oracle.differential.values import Imports, render

TEST_PATH = "tests/test_r2e_owned.py"
FLOW = "flow/machine.py"

FLOW_LIB = {
    "flow/__init__.py": "from flow.machine import Machine\n",
    "flow/machine.py": '''
        class Machine:
            def __init__(self, model, states=("idle",)):
                if getattr(model, "bound", False):
                    raise AttributeError("model already has a machine")
                model.bound = True
                self.states = list(states)

            def add_state(self, name):
                self.states.append(name)

            def remove_state(self, name):
                if name in self.states:
                    self.states.remove(name)
                    return True
                return False
    ''',
    "tests/__init__.py": "",
    # A helper of the suite: its constructor builds the machine on itself, then adds a state to it.
    "tests/helpers.py": '''
        from flow import Machine


        class Light:
            def __init__(self, states=("off", "on")):
                self.machine = Machine(self, states)
                self.machine.add_state("dim")
    ''',
    "tests/test_flow.py": '''
        from tests.helpers import Light


        def test_remove():
            light = Light(states=("off", "on", "blink"))
            light.machine.add_state("strobe")
            light.machine.remove_state("blink")
            assert "strobe" in light.machine.states
    ''',
}


def harvest_spec(qualname: str) -> dict:
    return {"target_file": FLOW, "module": "flow.machine", "qualname": qualname, "tests": ["tests/test_flow.py"]}


def test_an_object_built_by_its_owner_is_written_as_the_owners_attribute(make_pair, runner_for):
    pair = make_pair(FLOW_LIB, FLOW, "            return True\n", "            return False\n")
    argv = ["{scratch}/probe.py", "harvest", "--spec", "{scratch}/spec.json", "--out", "{scratch}/out.json"]
    files = {**probe_sources(), "spec.json": json.dumps(harvest_spec("Machine.remove_state"))}
    report = HarvestReport.model_validate(json.loads(runner_for(pair)("A", argv, files)))
    (record,) = report.entries[0].calls
    call = record.call
    assert render(call.receiver, Imports()) == "Light(states=('off', 'on', 'blink')).machine"
    # `add_state("dim")` ran inside Light's constructor, which the re-created Light runs again: not a step.
    assert [(s.name, [a.v for a in s.args]) for s in call.steps] == [("add_state", ["strobe"])]
    assert not report.skipped


def test_an_object_built_by_its_owner_gets_an_oracle(make_pair, separating_oracle):
    pair = make_pair(FLOW_LIB, FLOW, "            return True\n", "            return False\n")
    source = separating_oracle(pair, FLOW, "flow.machine", "Machine.remove_state", ["tests/test_flow.py::test_remove"],
                               TEST_PATH)
    assert "machine = Light(states=('off', 'on', 'blink')).machine" in source
    assert "machine.add_state('strobe')" in source
    assert "._" not in source  # never a private attribute
