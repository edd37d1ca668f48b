"""`export`: the published folder (task trees, table, card, registry) built from hand-made datasets."""

from __future__ import annotations

import base64
import json
import os
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Callable

import pytest
import yaml
from click.testing import CliRunner

from repo2rlenv.hub.card import NO_MUTATION_KIND, STATS_TABLES
from repo2rlenv.cli.hub import export
from repo2rlenv.hub.errors import NotADataset, UnvalidatedTasks
from repo2rlenv.hub.export import export_dataset
from repo2rlenv.hub.layout import TABLE_GLOB, TABLE_PATH, is_managed, list_files
from repo2rlenv.hub.license import detect_license
from repo2rlenv.hub.registry import RegistryDataset, publish_target
from repo2rlenv.hub.table import TableRow
from repo2rlenv.dataset.manifest import read_manifest
from repo2rlenv.dataset.taskdir import DatasetPaths

LOCAL = publish_target(None, fallback_name="ds")




def card_tables(card: str) -> dict[str, dict[str, int]]:
    """The card's statistics tables, keyed by their first column's header."""
    tables: dict[str, dict[str, int]] = {}
    current: dict[str, int] | None = None
    for line in card.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else None
        if cells is None:
            current = None
        elif current is None and cells[-1] == "tasks":
            current = tables.setdefault(cells[0], {})
        elif current is not None and not set(cells[0]) <= {"-", ":"}:
            current[cells[0]] = int(cells[1])
    return tables


def front_matter(card: str) -> dict:
    assert card.startswith("---\n")
    return yaml.safe_load(card.split("\n---\n", 1)[0][4:])


def test_export_copies_every_task_file_byte_for_byte_with_modes(make_dataset: Callable[..., Path],
                                                                 tmp_path: Path, hub_kit: ModuleType) -> None:
    src = make_dataset()
    result = export_dataset(src, tmp_path / "out", LOCAL)
    out = tmp_path / "out"
    assert hub_kit.tree_state(out / "tasks") == hub_kit.tree_state(src / "tasks")
    assert hub_kit.tree_state(out / "validation") == hub_kit.tree_state(src / "validation")
    assert (out / "manifest.jsonl").read_bytes() == (src / "manifest.jsonl").read_bytes()
    assert os.access(out / "tasks/acme__widgets-ts-aaaa1111/tests/test.sh", os.X_OK)
    assert set(list_files(out)) - set(list_files(src)) == {"README.md", "registry.json", TABLE_PATH}
    assert (out / "tasks/acme__widgets-ts-aaaa1111/environment/repo/.benchmarks").is_dir()
    assert all(is_managed(rel) for rel in list_files(out))
    assert result.tasks == 3 and result.files == len(list_files(out))
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")], "staging dir left behind"


def test_table_loads_with_datasets_and_rebuilds_each_task(make_dataset: Callable[..., Path], tmp_path: Path,
                                                         hub_kit: ModuleType) -> None:
    import datasets

    src = make_dataset()
    export_dataset(src, tmp_path / "out", LOCAL)
    table = datasets.load_dataset("parquet", data_files={"train": str(tmp_path / "out" / TABLE_GLOB)},
                                  split="train", cache_dir=str(tmp_path / "hf-cache"))
    rows = read_manifest(src / "manifest.jsonl")
    assert table.num_rows == len(rows) == 3
    assert set(table.column_names) == set(TableRow.model_fields)
    assert {"task_id", "repo", "ref", "strategy", "touched_function", "mutation_kind", "instruction", "broken_patch",
            "oracle_test", "reward_mode", "coverage_weight", "baseline_coverage", "validation", "content_hash",
            "files"} <= set(table.column_names)
    for record, row in zip(table, rows):
        assert record["task_id"] == row.task_id and record["content_hash"] == row.content_hash
        assert record["validation"]["ok"] is True and record["validation_status"] == "passed"
        task_root = DatasetPaths(src).task(row.task_id).root
        assert record["instruction"] == (task_root / "instruction.md").read_text()
        assert record["broken_patch"].startswith("--- a/src/widgets/core.py")
        assert record["oracle_test"] == (task_root / "solution" / Path(record["oracle_test_path"]).name).read_text()
        rebuilt = {f["path"]: (f["content"].encode() if f["encoding"] == "utf-8" else base64.b64decode(f["content"]),
                               f["executable"]) for f in record["files"]}
        rebuilt.update({f"{rel}/": (b"", False) for rel in record["empty_dirs"]})
        assert rebuilt == hub_kit.tree_state(task_root)
        assert record["empty_dirs"] == ["environment/repo/.benchmarks"]
        assert {f["encoding"] for f in record["files"]} == {"utf-8", "base64"}


def test_card_front_matter_and_stats_match_the_manifest(make_dataset: Callable[..., Path], tmp_path: Path,
                                                        hub_kit: ModuleType) -> None:
    FakeTask = hub_kit.FakeTask
    src = make_dataset([FakeTask("acme__widgets-ts-aaaa1111"),
                        FakeTask("acme__widgets-ts-bbbb2222", mutation_kind="arith", validation=False),
                        FakeTask("acme__widgets-ts-dddd4444", strategy="commit_pair", mutation_kind=None,
                                 validation=None),
                        FakeTask("zeta__gears-ts-cccc3333", repo="zeta/gears", license_text=None)])
    export_dataset(src, tmp_path / "out", publish_target("org/name", endpoint="http://hub.test"),
                   include_unvalidated=True)
    card = (tmp_path / "out/README.md").read_text()
    meta = front_matter(card)
    assert meta["license"] == ["mit", "unknown"]
    assert {"reinforcement-learning", "harbor", "test-generation"} <= set(meta["tags"])
    assert meta["task_categories"] and meta["size_categories"] == ["n<1K"]
    assert meta["configs"] == [{"config_name": "default", "data_files": [{"split": "train", "path": TABLE_GLOB}]}]

    rows = read_manifest(src / "manifest.jsonl")
    tables = card_tables(card)
    assert tables[STATS_TABLES["per_repo"]] == Counter(r.repo for r in rows)
    assert tables[STATS_TABLES["per_strategy"]] == Counter(r.strategy for r in rows)
    assert tables[STATS_TABLES["per_mutation_kind"]] == Counter(r.mutation_kind or NO_MUTATION_KIND for r in rows)
    assert tables[STATS_TABLES["per_validation"]] == {"passed": 2, "failed": 1, "missing": 1}
    assert tables[STATS_TABLES["per_difficulty"]] == Counter(r.difficulty for r in rows)
    assert tables[STATS_TABLES["per_oracle_inputs"]] == Counter(r.oracle_inputs or "unknown" for r in rows)
    assert tables[STATS_TABLES["per_oracle_origin"]] == Counter(r.oracle_origin or "unknown" for r in rows)
    typed = sum(r.oracle_inputs in ("recorded", "perturbed", "generated") for r in rows)
    assert f"{typed} of {len(rows)} reference test files call the function only with inputs that keep" in card
    assert "validation pass rate **50.0%**" in card
    assert 'load_dataset("org/name"' in card and "harbor run --repo http://hub.test/datasets/org/name -d name@head" in card


def test_registry_is_in_harbors_format(make_dataset: Callable[..., Path], tmp_path: Path) -> None:
    src = make_dataset()
    export_dataset(src, tmp_path / "out", publish_target("org/name", endpoint="http://hub.test", version="1.0"))
    raw = json.loads((tmp_path / "out/registry.json").read_text())
    # Harbor's registry.json: a list of DatasetSpec {name, version, description, tasks, metrics}, each task a
    # RegistryTaskId {name, git_url, git_commit_id, path} (harbor/models/registry.py, 0.26).
    assert isinstance(raw, list) and len(raw) == 1
    assert set(raw[0]) == {"name", "version", "description", "tasks", "metrics"}
    spec = RegistryDataset.model_validate(raw[0])
    assert (spec.name, spec.version) == ("name", "1.0") and "/" not in spec.name
    assert [t.path for t in spec.tasks] == [f"tasks/{i}" for i in DatasetPaths(src).task_ids()]
    for task in raw[0]["tasks"]:
        assert set(task) == {"name", "git_url", "git_commit_id", "path"}
        assert task["git_url"] == "http://hub.test/datasets/org/name" and task["git_commit_id"] is None
        assert (tmp_path / "out" / task["path"] / "task.toml").is_file()


def test_export_is_deterministic_and_may_replace_an_earlier_export(make_dataset: Callable[..., Path],
                                                                   tmp_path: Path, hub_kit: ModuleType) -> None:
    src = make_dataset()
    export_dataset(src, tmp_path / "a", LOCAL)
    export_dataset(src, tmp_path / "b", LOCAL)
    assert hub_kit.tree_state(tmp_path / "a") == hub_kit.tree_state(tmp_path / "b")
    (src / "tasks/acme__widgets-ts-aaaa1111/instruction.md").write_text("changed\n")
    export_dataset(src, tmp_path / "a", LOCAL, include_unvalidated=True)
    assert (tmp_path / "a/tasks/acme__widgets-ts-aaaa1111/instruction.md").read_text() == "changed\n"


@pytest.mark.parametrize("validation, word", [(False, "failed validation"), (None, "never validated"),
                                              ("edit", "changed since validation")])
def test_tasks_without_a_passing_validation_are_refused(make_dataset: Callable[..., Path], tmp_path: Path,
                                                        hub_kit: ModuleType, validation: bool | None | str,
                                                        word: str) -> None:
    specs = [hub_kit.FakeTask("acme__widgets-ts-aaaa1111"),
             hub_kit.FakeTask("acme__widgets-ts-bbbb2222", validation=validation if validation != "edit" else True)]
    src = make_dataset(specs)
    if validation == "edit":
        (src / "tasks/acme__widgets-ts-bbbb2222/instruction.md").write_text("edited after validation\n")
    with pytest.raises(UnvalidatedTasks, match=f"1 of 2 tasks .*1 {word} \\(acme__widgets-ts-bbbb2222\\)"):
        export_dataset(src, tmp_path / "out", LOCAL)
    assert not (tmp_path / "out").exists()
    export_dataset(src, tmp_path / "out", LOCAL, include_unvalidated=True)
    assert (tmp_path / "out/tasks/acme__widgets-ts-bbbb2222").is_dir()


def _no_tasks(root: Path) -> None:
    (root / "tasks").mkdir(parents=True)


def _bad_toml(root: Path) -> None:
    (root / "tasks/x").mkdir(parents=True)
    (root / "tasks/x/task.toml").write_text("[task]\nname = 'not ours'\n")


def _no_toml(root: Path) -> None:
    (root / "tasks/x/tests").mkdir(parents=True)


@pytest.mark.parametrize("build, reason", [
    (lambda root: None, "is not a directory"),
    (_no_tasks, "has no tasks/<task_id>/ directories"),
    (_no_toml, "task.toml is missing"),
    (_bad_toml, "is not a repo2rlenv task"),
])
def test_a_directory_that_is_not_a_dataset_is_refused(tmp_path: Path, build: Callable[[Path], None],
                                                      reason: str) -> None:
    root = tmp_path / "notads"
    build(root)
    with pytest.raises(NotADataset, match="not a repo2rlenv dataset") as info:
        export_dataset(root, tmp_path / "out", LOCAL)
    assert reason in str(info.value) and "\n" not in str(info.value)


def test_a_symbolic_link_in_a_task_is_refused(make_dataset: Callable[..., Path], tmp_path: Path) -> None:
    src = make_dataset()
    (src / "tasks/acme__widgets-ts-aaaa1111/environment/repo/secret").symlink_to("/etc/hostname")
    with pytest.raises(NotADataset, match="environment/repo/secret is a symbolic link"):
        export_dataset(src, tmp_path / "out", LOCAL)


def test_export_command_refuses_a_non_empty_folder_in_one_line(make_dataset: Callable[..., Path],
                                                               tmp_path: Path) -> None:
    src = make_dataset()
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy/notes.txt").write_text("mine\n")
    result = CliRunner().invoke(export, [str(src), str(tmp_path / "busy")])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: the output folder") and result.stderr.count("\n") == 1
    assert (tmp_path / "busy/notes.txt").read_text() == "mine\n"
    inside = CliRunner().invoke(export, [str(src), str(src / "pub")])
    assert inside.exit_code == 2 and "must lie outside the dataset" in inside.stderr


def test_export_command_writes_the_folder(make_dataset: Callable[..., Path], tmp_path: Path) -> None:
    src = make_dataset()
    result = CliRunner().invoke(export, [str(src), str(tmp_path / "out"), "--repo-id", "org/name", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["tasks"] == 3
    assert "exported 3 tasks" in result.stderr
    assert (tmp_path / "out" / TABLE_PATH).is_file()
    bad = CliRunner().invoke(export, [str(src), str(tmp_path / "o2"), "--repo-id", "no-slash"])
    assert bad.exit_code == 2 and "bad repo id 'no-slash'" in bad.stderr


@pytest.mark.parametrize("files, expected", [
    ({"pyproject.toml": '[project]\nlicense = "Apache-2.0"\n'}, "apache-2.0"),
    ({"pyproject.toml": '[project]\nlicense = {text = "MIT"}\n'}, "mit"),
    ({"pyproject.toml": '[project]\nclassifiers = ["License :: OSI Approved :: BSD License"]\n'}, "bsd-3-clause"),
    ({"LICENSE": "Permission is hereby granted, free of charge, to any person"}, "mit"),
    ({"LICENSE.txt": "Redistribution and use in source and binary forms ... Neither the name of"}, "bsd-3-clause"),
    ({"COPYING": "GNU LESSER GENERAL PUBLIC LICENSE\n Version 3, 29 June 2007 ... GNU General Public License"},
     "lgpl-3.0"),
    ({"LICENSE": "GNU GENERAL PUBLIC LICENSE\nVersion 2, June 1991"}, "gpl-2.0"),
    ({"LICENSE": "All rights reserved."}, "unknown"),
    ({}, "unknown"),
])
def test_license_detection(tmp_path: Path, files: dict[str, str], expected: str) -> None:
    for rel, text in files.items():
        (tmp_path / rel).write_text(text)
    assert detect_license(tmp_path) == expected
