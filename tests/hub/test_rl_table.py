"""`repo2rlenv export --format rl` on hand-built datasets: the table's shape, what a prompt holds and
never holds, and bad input (hub/rl_table.py). The end-to-end path with real scoring is in tests/scoring."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from click.testing import CliRunner

from repo2rlenv.cli.hub import export
from repo2rlenv.hub.rl_table import RL_MARKER, RL_TABLE, RlExport


def _rows(out: Path) -> list[dict]:
    import datasets

    return list(datasets.load_dataset("parquet", data_files=str(out / RL_TABLE))["train"])


def test_the_table_has_one_prompt_per_task_and_no_hidden_column(make_dataset: Callable[..., Path],
                                                                 tmp_path: Path) -> None:
    src = make_dataset()
    result = CliRunner().invoke(export, [str(src), str(tmp_path / "rl"), "--format", "rl", "--json"])
    assert result.exit_code == 0, result.output
    info = RlExport.model_validate_json(result.stdout)
    assert info.tasks == 3 and info.dataset_dir == str(src.resolve())
    assert json.loads((tmp_path / "rl" / RL_MARKER).read_text())["tasks"] == 3
    rows = _rows(tmp_path / "rl")
    assert [r["task_id"] for r in rows] == sorted(r["task_id"] for r in rows)
    for row in rows:
        (message,) = row["prompt"]
        text = message["content"]
        assert message["role"] == "user" and text.startswith("Write tests for `price`.")
        # The function's source as the agent's version has it, and how to answer.
        assert "def price(n):\n    return n * 2 if n < 10 else n" in text
        assert f"saved as `{row['test_path']}`" in text and "```python" in text
        assert row["reward_model"] == {"style": "rule", "ground_truth": row["task_id"]}
        assert row["extra_info"]["task_id"] == row["task_id"] and row["data_source"] == "repo2rlenv/test_synthesis"
        assert "n <= 10" not in repr(row) and "lt_to_le" not in repr(row)  # B and its operator stay hidden


def test_an_rl_export_can_be_replaced_but_nothing_else(make_dataset: Callable[..., Path], tmp_path: Path) -> None:
    src = make_dataset()
    out = tmp_path / "rl"
    assert CliRunner().invoke(export, [str(src), str(out), "--format", "rl"]).exit_code == 0
    again = CliRunner().invoke(export, [str(src), str(out), "--format", "rl"])
    assert again.exit_code == 0 and "exported 3 RL prompts" in again.stderr
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "no staging dir left"
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "mine.txt").write_text("x")
    busy = CliRunner().invoke(export, [str(src), str(tmp_path / "busy"), "--format", "rl"])
    assert busy.exit_code == 2 and busy.stderr.count("\n") == 1 and "not an earlier `export --format rl`" in busy.stderr
    inside = CliRunner().invoke(export, [str(src), str(src / "rl"), "--format", "rl"])
    assert inside.exit_code == 2 and "must lie outside the dataset" in inside.stderr


def test_unvalidated_tasks_are_refused_unless_asked(make_dataset: Callable[..., Path], hub_kit, tmp_path: Path) -> None:
    src = make_dataset([hub_kit.FakeTask("acme__widgets-ts-aaaa1111"),
                        hub_kit.FakeTask("acme__widgets-ts-dddd4444", validation=None)])
    refused = CliRunner().invoke(export, [str(src), str(tmp_path / "rl"), "--format", "rl"])
    assert refused.exit_code == 2 and "did not pass validation" in refused.stderr
    assert not (tmp_path / "rl").exists()
    taken = CliRunner().invoke(export, [str(src), str(tmp_path / "rl"), "--format", "rl", "--include-unvalidated"])
    assert taken.exit_code == 0 and len(_rows(tmp_path / "rl")) == 2
