"""The differential oracle end to end where a test must go through the public API: private helpers, stateful
objects driven by a helper from the test suite, endless iterators; and an equivalent change, whose miss is classified."""

from __future__ import annotations

import pytest

from repo2rlenv.pipelines.test_synthesis.oracle.differential import NoOracle, synthesize_differential
from repo2rlenv.pipelines.test_synthesis.oracle.differential.misses import MissClass, classify_miss

TEST_PATH = "tests/test_r2e_reach.py"
SEQ = "lib/seq.py"

@pytest.fixture
def synthesize(make_pair, runner_for, seq_lib):
    def run(old: str, new: str, qualname: str, test: str):
        pair = make_pair(seq_lib, SEQ, old, new)
        result = synthesize_differential(
            runner=runner_for(pair), target_file=SEQ, module="lib.seq", qualname=qualname,
            function_source_a=(pair[0] / SEQ).read_text(), covering_tests=[f"tests/test_seq.py::{test}"],
            test_path=TEST_PATH,
        )
        return result, pair

    return run


def test_a_private_helper_is_tested_through_its_public_caller(synthesize, separates):
    result, pair = synthesize("if len(window) > n:", "if len(window) >= n:", "_sums", "test_window")
    separates(result, pair, TEST_PATH)
    assert result.diagnosis.entries == ["lib.seq:window_sums"]
    source = result.test_source
    assert "from lib.seq import window_sums\n" in source
    assert " _sums(" not in source and "import _sums" not in source


def test_a_method_of_an_object_the_library_builds_itself_is_tested_through_the_function_that_builds_it(
        synthesize, separates):
    # A parser's handler: a private class made inside a public function, its method registered as a callback
    # (xmltodict's _DictSAXHandler, built by parse): no test makes the object, so parse is what a test calls.
    result, pair = synthesize("x * 3 if x > 3 else x", "x * 3 if x >= 3 else x", "_Tally._weight", "test_tally")
    separates(result, pair, TEST_PATH)
    assert result.diagnosis.entries == ["lib.seq:tally"]
    assert "from lib.seq import tally\n" in result.test_source
    assert "_Tally(" not in result.test_source and "._weight(" not in result.test_source


def test_a_stateful_object_is_rebuilt_with_the_test_suites_helper_and_driven_as_the_test_did(synthesize, separates):
    result, pair = synthesize("self.clock.now - self._start[key] >= self.limit", "self.clock.now - self._start[key] > self.limit",
                              "Meter.expired", "test_meter")
    separates(result, pair, TEST_PATH)
    source = result.test_source
    assert "from tests.helpers import Clock" in source
    assert "    clock = Clock()\n    meter = Meter(clock" in source and "clock.tick()" in source


def test_an_endless_iterator_is_asserted_by_a_short_head(synthesize, separates):
    result, pair = synthesize("n += k", "n += k + 1", "multiples", "test_multiples")
    separates(result, pair, TEST_PATH)
    assert "list(itertools.islice(multiples(3), 5)) == [0, 3, 6, 9, 12]" in result.test_source


def test_an_equivalent_change_is_dropped_with_a_diagnosis(synthesize):
    result, _ = synthesize("return x * 2", "return x + x", "double", "test_double")
    assert not result.found and result.reason == NoOracle.NO_DISTINGUISHING_INPUT
    assert result.test_source is None
    kind, note = classify_miss(result.reason, result.detail)
    assert kind is MissClass.NO_DIFFERENCE and note == f"1 recorded, {result.tried} tried"


def test_a_function_drawing_random_numbers_is_tested_under_a_fixed_seed(synthesize, separates):
    result, pair = synthesize("return random.sample(items, k)", "return random.sample(items, k)[::-1]", "pick", "test_pick")
    separates(result, pair, TEST_PATH)
    assert "import random" in result.test_source
    assert all(body.lstrip().startswith("random.seed(0)") for body in result.test_source.split("():")[1:])


def test_an_exception_raised_while_a_generator_runs_is_asserted_around_its_consumption(synthesize, separates):
    result, pair = synthesize("if n < 1:", "if n < 0:", "groups", "test_groups")
    separates(result, pair, TEST_PATH)
    assert "list(groups(" in result.test_source and "pytest.raises(ValueError" in result.test_source


def test_a_probe_that_runs_out_of_time_fails_this_candidate_only():
    def slow_runner(variant, argv, files):
        raise TimeoutError("the probe did not finish within 1s")

    result = synthesize_differential(
        runner=slow_runner, target_file=SEQ, module="lib.seq", qualname="double", function_source_a="",
        covering_tests=[], test_path=TEST_PATH,
    )
    assert not result.found and result.reason == NoOracle.PROBE_FAILED
    assert "harvest on A" in (result.detail or "") and "1s" in (result.detail or "")
