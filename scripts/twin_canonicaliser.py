"""How many twins a fixed normaliser maps back to A, per twin kind (issue 31, item 5).

An attacker who could read a changed function's code would not compare it with A directly (the twins
move every structural fact) but normalise first. This is such a normaliser, written without knowledge of
the twin's edits: it works on the function's AST only (what the bytecode holds too; comments, blank lines
and spaces are gone already) and
  - drops `pass`, expression statements of a short-circuited `None is not None and …`, and stores of a
    constant to a local that nothing reads;
  - folds `x = e` / `return x` (x read nowhere else) into `return e`, `if not (c): <nothing> else: X` into
    `if c: X`, and `(name, k, …)[0]` into `name`;
  - renames every local by order of first appearance (parameters keep their names).
For every task given (a dataset's tasks dir, or task dirs), it makes N twins of A and of B per kind (each
kind alone, as the verifier would with only that kind on) and reports how many normalise equal to A: a
good twin kind keeps A′ ≠ A after normalising while B′ ≠ A as well (then a pin on the normal form tells
nothing); a kind whose A′ all normalise back to A adds no defence once the code can be read.

    python3 scripts/twin_canonicaliser.py DATASET_OR_TASK_DIR [...] [--twins 50]
"""

from __future__ import annotations

import argparse
import ast
import io
import random
import sys
import tarfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from repo2rlenv.verifiers.config_model import VerifierConfig  # noqa: E402
from repo2rlenv.verifiers.test_synthesis import verifier_patch as vpatch  # noqa: E402
from repo2rlenv.verifiers.test_synthesis import verifier_twins as vtwins  # noqa: E402

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


class Normal(ast.NodeTransformer):
    """The attacker's normal form of one function (see the module docstring)."""

    def __init__(self, fn: ast.AST):
        loads = Counter(n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))
        self.unread = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
                       and not loads[n.id]}
        self.once = {name for name, count in loads.items() if count == 1}
        params = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}  # type: ignore[attr-defined]
        self.names: dict[str, str] = {}
        self.params = params

    def _body(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out, i = [], 0
        while i < len(stmts):
            stmt, nxt = stmts[i], stmts[i + 1] if i + 1 < len(stmts) else None
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                    and stmt.targets[0].id in self.once and isinstance(nxt, ast.Return) \
                    and isinstance(nxt.value, ast.Name) and nxt.value.id == stmt.targets[0].id:
                out.append(ast.Return(value=stmt.value))
                i += 2
                continue
            if isinstance(stmt, ast.Pass):
                i += 1
                continue
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.BoolOp) and isinstance(stmt.value.op, ast.And) \
                    and isinstance(stmt.value.values[0], ast.Compare) \
                    and all(isinstance(x, ast.Constant) and x.value is None
                            for x in (stmt.value.values[0].left, *stmt.value.values[0].comparators)):
                i += 1
                continue
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                    and stmt.targets[0].id in self.unread and isinstance(stmt.value, ast.Constant):
                i += 1
                continue
            out.append(stmt)
            i += 1
        return out

    def generic_visit(self, node: ast.AST) -> ast.AST:
        for field in ("body", "orelse", "finalbody"):
            value = getattr(node, field, None)
            if isinstance(value, list) and (not value or isinstance(value[0], ast.stmt)):
                setattr(node, field, self._body(value))
        super().generic_visit(node)
        if isinstance(node, ast.If) and not node.body and isinstance(node.test, ast.UnaryOp) \
                and isinstance(node.test.op, ast.Not):
            node.test, node.body, node.orelse = node.test.operand, node.orelse, []
        return node

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        value, key = node.value, node.slice
        if isinstance(value, ast.Tuple) and value.elts and isinstance(key, ast.Constant) and key.value == 0 \
                and all(isinstance(e, ast.Constant) for e in value.elts[1:]):
            return self.visit(value.elts[0])
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id not in self.params and (isinstance(node.ctx, ast.Store) or node.id in self.names):
            node.id = self.names.setdefault(node.id, f"v{len(self.names)}")
        return node


def normal_form(source: str, qualname: str) -> str | None:
    """The normal form of the function `qualname` of `source` (None when it is not found)."""
    tree = ast.parse(source)
    parts = qualname.split(".")
    scope: list[ast.stmt] = tree.body
    node = None
    for part in parts:
        node = next((n for n in scope if isinstance(n, (*_FUNCS, ast.ClassDef)) and n.name == part), None)
        if node is None:
            return None
        scope = node.body
    if not isinstance(node, _FUNCS):
        return None
    return ast.dump(Normal(node).visit(node), include_attributes=False)


def task_sources(task: Path) -> tuple[str, str, str] | None:
    """(A's text, B's text, qualname) of the task's target file."""
    cfg = VerifierConfig.model_validate_json((task / "tests" / "verifier_config.json").read_text())
    a_path = task / "environment" / "repo" / cfg.target_file
    if not a_path.is_file():
        archive = task / "tests" / (cfg.pristine_archive or "")
        if not archive.is_file():
            return None
        with tarfile.open(archive) as tar:
            member = tar.extractfile(cfg.target_file)
            if member is None:
                return None
            a_text = io.TextIOWrapper(member, encoding="utf-8").read()
    else:
        a_text = a_path.read_text(encoding="utf-8")
    b_text = vpatch.apply_diff((task / "tests" / cfg.variants.broken).read_text(), {cfg.target_file: a_text})
    return a_text, b_text[cfg.target_file] or "", cfg.target_qualname


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--twins", type=int, default=50)
    args = parser.parse_args()
    tasks = []
    for path in args.paths:
        tasks += [p for p in sorted(path.glob("*")) if (p / "tests" / "verifier_config.json").is_file()] \
            if not (path / "tests").is_dir() else [path]
    rows: dict[str, Counter] = {kind: Counter() for kind in (*vtwins.KINDS, "all")}
    rng = random.Random(0)
    for task in tasks:
        found = task_sources(task)
        if found is None:
            continue
        a_text, b_text, qualname = found
        plan = vtwins.plan_file("target.py", [a_text, b_text])
        a_normal = normal_form(a_text, qualname)
        for kind in (*vtwins.KINDS, "all"):
            kinds = frozenset(vtwins.KINDS) if kind == "all" else frozenset({kind})
            for side, text, units, refs in (("A′", a_text, plan.units[0], plan.references[0]),
                                             ("B′", b_text, plan.units[1], plan.references[1])):
                for _ in range(args.twins):
                    twin = vtwins.twin_source(text, units, refs, rng=rng, kinds=kinds)
                    rows[kind][side + " total"] += 1
                    if normal_form(twin, qualname) == a_normal:
                        rows[kind][side + " ≡ A"] += 1
    print(f"{len(tasks)} task(s), {args.twins} twins per side and kind; the normaliser maps back to A:")
    print(f"{'kind':12} {'A′ ≡ A':>12} {'B′ ≡ A':>12}")
    for kind, c in rows.items():
        print(f"{kind:12} {c['A′ ≡ A']:>5}/{c['A′ total']:<6} {c['B′ ≡ A']:>5}/{c['B′ total']:<6}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
