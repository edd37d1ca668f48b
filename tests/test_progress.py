"""The reporter tracks which stage runs, so a failure that does not name its stage is reported as it."""

from __future__ import annotations

import pytest

from repo2rlenv.progress import Reporter


def test_stage_names_and_nesting():
    rep = Reporter(quiet=True)
    assert rep.current_stage is None
    rep.stage("preparing the docker sandbox", "environment")
    assert rep.current_stage == "environment"
    rep.stage("a header that names no stage")
    assert rep.current_stage == "environment"
    with rep.in_stage("gates"):
        assert rep.current_stage == "gates"
    assert rep.current_stage == "environment"


def test_a_failing_stage_stays_current():
    rep = Reporter(quiet=True)
    rep.stage("mining", "mining")
    with pytest.raises(RuntimeError):
        with rep.in_stage("synthesis"):
            raise RuntimeError("oracle crashed")
    assert rep.current_stage == "synthesis"


def test_lines_with_brackets_are_printed_as_written(capsys):
    Reporter().warn("pip install -e .[tests] failed")
    assert "pip install -e .[tests] failed" in capsys.readouterr().err


def test_a_narrow_terminal_folds_table_cells_instead_of_cutting_them(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    ids = [f"pallets__click-{n:02d}-{'a' * 20}{n}" for n in range(3)]
    Reporter().table("eval", ["task", "reward", "cov", "stop", "rounds", "tokens", "cost"],
                     [[i, "1.000", "0.500", "round_limit", 4, 123456, "$0.0123"] for i in ids])
    err = capsys.readouterr().err
    # A folded cell spans lines: the task column's pieces, read down, spell every id in full.
    first_column = "".join(line.split("│")[1].strip() for line in err.splitlines() if line.startswith("│"))
    assert first_column == "".join(ids) and "…" not in err


def test_the_reporter_charges_wall_time_to_the_stage_that_ran():
    import time as _time

    from repo2rlenv.progress import Reporter

    rep = Reporter(quiet=True)
    rep.stage("b", "baseline")
    _time.sleep(0.3)
    with rep.in_stage("gates"):
        _time.sleep(0.6)
    seconds = rep.seconds_by_stage()
    assert rep.current_stage == "baseline"  # restored after the block
    assert seconds["gates"] >= 0.6 and 0.3 <= seconds["baseline"] < 0.6
