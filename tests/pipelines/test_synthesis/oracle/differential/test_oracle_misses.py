"""Classifying why the differential oracle found nothing, from a dropped candidate's reason and detail."""

from __future__ import annotations

import pytest

from repo2rlenv.pipelines.test_synthesis.oracle.differential.differential import Diagnosis, NoOracle
from repo2rlenv.pipelines.test_synthesis.oracle.differential.misses import MissClass, classify_miss, parse_diagnosis

NONE_FOUND = NoOracle.NO_DISTINGUISHING_INPUT.value
ENTRY = ["pkg.mod:f"]


def detail(**fields) -> str:
    return Diagnosis(**fields).as_detail()


@pytest.mark.parametrize(
    ("reason", "text", "expected", "note"),
    [
        (NoOracle.PROBE_FAILED.value, "harvest on A: ImportError", MissClass.PROBE_FAILED, "harvest on A: ImportError"),
        (NoOracle.NOT_SEPARATED.value, "test_f_1: passed on A, passed on B", MissClass.NOT_SEPARATED,
         "test_f_1: passed on A, passed on B"),
        (NoOracle.TOO_LONG.value, None, MissClass.TOO_LONG, ""),
        (NONE_FOUND, detail(), MissClass.NO_PUBLIC_ENTRY, ""),
        (NONE_FOUND, detail(entries=ENTRY, skipped={"builtins.generator": 3, "lambda": 1}), MissClass.NOT_RECREATABLE,
         "builtins.generator×3, lambda×1"),
        (NONE_FOUND, detail(entries=ENTRY), MissClass.NO_CALLS, ""),
        (NONE_FOUND, detail(entries=ENTRY, harvested=4, tried=10, outcomes={"error": 9, "return": 1}, errors=["TypeError: x"]),
         MissClass.REPLAY_ERRORS, "TypeError: x"),
        (NONE_FOUND, detail(entries=ENTRY, harvested=4, tried=10, outcomes={"return": 10},
                            opaque_differences={"pkg.mod.Thing": 2}), MissClass.OPAQUE_ONLY, "pkg.mod.Thing×2"),
        (NONE_FOUND, detail(entries=ENTRY, harvested=4, tried=10, unstable=3), MissClass.UNSTABLE_ONLY, "3 call(s)"),
        (NONE_FOUND, detail(entries=ENTRY, harvested=4, tried=10, b_not_returning=2), MissClass.B_BREAKS_ONLY, "2 call(s)"),
        (NONE_FOUND, detail(entries=ENTRY, harvested=4, tried=10), MissClass.NO_DIFFERENCE, "4 recorded, 10 tried"),
        (NONE_FOUND, detail(entries=ENTRY, harvested=0, tried=12), MissClass.NO_CALLS, "0 recorded, 12 tried"),
        (NONE_FOUND, "free text from an older run", MissClass.OTHER, f"{NONE_FOUND}: free text from an older run"),
        ("covering tests time out on B", "", MissClass.OTHER, "covering tests time out on B: "),
    ],
)
def test_classify_miss(reason, text, expected, note):
    assert classify_miss(reason, text) == (expected, note)


def test_every_class_has_a_distinct_label_and_details_round_trip():
    assert len({m.value for m in MissClass}) == len(MissClass)
    diag = Diagnosis(entries=ENTRY, harvested=2, tried=5, skipped={"x": 1})
    assert parse_diagnosis(diag.as_detail()) == diag
    assert parse_diagnosis("diagnosis: {not json") is None and parse_diagnosis(None) is None


def test_a_diagnosis_fits_the_detail_a_candidate_keeps():
    big = Diagnosis(entries=[f"pkg.m:f{i}" for i in range(9)], skipped={f"pkg.m.Type{i}": i + 1 for i in range(40)},
                    errors=["x" * 900, "y"])
    text = big.as_detail()
    assert len(text) <= 500
    kind, note = classify_miss(NONE_FOUND, text)
    assert kind is MissClass.NOT_RECREATABLE and note.startswith("pkg.m.Type39×40, pkg.m.Type38×39")


def test_a_diagnosis_with_long_skip_reasons_still_reads_back_with_its_counts():
    # transitions' reasons name whole classes and their builders; cutting the text mid-JSON lost every count.
    skipped = {f"receiver transitions.extensions.diagrams.Graph{i}Machine (built by tests.utils.Stuff, still in its "
               f"constructor)": 100 + i for i in range(6)}
    diag = Diagnosis(entries=ENTRY, harvested=200, tried=500, skipped=skipped, outcomes={"return": 480, "raise": 20},
                     opaque_differences={"text naming the run": 7, "collections.OrderedDict": 3}, unstable=2)
    back = parse_diagnosis(diag.as_detail())
    assert back is not None
    assert (back.harvested, back.tried, back.unstable, back.outcomes) == (200, 500, 2, {"return": 480, "raise": 20})
    assert back.opaque_differences["text naming the run"] == 7
