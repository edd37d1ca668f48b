"""The mutation miner: functions of A → libcst mutants → candidates, in a seeded, spread-out order."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from repo2rlenv.baseline.runner import BaselineReport
from repo2rlenv.pipelines.test_synthesis.candidates import Candidate, candidate_id
from repo2rlenv.pysource.functions import FunctionRecord, discover_functions
from repo2rlenv.pipelines.test_synthesis.mine.mutants import ModuleMutator, sample_mutants
from repo2rlenv.pipelines.test_synthesis.mine.operators import OPERATORS, MutationError
from repo2rlenv.pipelines.test_synthesis.options import TestSynthesisOptions

# Mutants enumerated per function are cut here so one huge function cannot swamp the sampler.
_MAX_MUTANTS_PER_FUNCTION = 200


def mine_mutations(a_dir: Path, baseline: BaselineReport, options: TestSynthesisOptions,
                   import_roots: list[str]) -> tuple[list[Candidate], Counter[str], list[FunctionRecord]]:
    """All mutation candidates of A in the order they should be tried, the skip counts, the functions."""
    unknown = sorted(set(options.operators or ()) - set(OPERATORS))
    if unknown:
        from repo2rlenv.errors import ConfigError

        raise ConfigError(f"pipeline option 'operators': unknown operator(s) {', '.join(unknown)} "
                          f"(known: {', '.join(sorted(OPERATORS))})")
    roots = [r for r in import_roots if r] or None
    functions, skips = discover_functions(a_dir, import_roots=roots, min_loc=options.min_loc,
                                          max_loc=options.max_loc)
    skipped: Counter[str] = Counter({f"function: {k}": v for k, v in skips.items()})
    # coverage.py lists files nothing imported too (with no executed line); those are not reachable.
    imported = {path for path, fc in baseline.coverage.files.items() if fc.executed}
    by_function: dict[str, list] = {}
    records: dict[str, FunctionRecord] = {}
    kept_functions = []
    mutators: dict[str, ModuleMutator | None] = {}
    for func in functions:
        if func.path not in imported:
            skipped["function: module not imported by the suite"] += 1
            continue
        if func.path not in mutators:
            # One parse per file, not per function.
            try:
                mutators[func.path] = ModuleMutator((a_dir / func.path).read_text(encoding="utf-8"), func.path)
            except MutationError:
                mutators[func.path] = None
        mutator = mutators[func.path]
        if mutator is None:
            skipped["function: module cannot be parsed for mutation"] += 1
            continue
        kept_functions.append(func)
        mutants = mutator.mutants(func, operators=options.operators)[:_MAX_MUTANTS_PER_FUNCTION]
        key = func.key
        if mutants:
            by_function[key] = mutants
            records[key] = func
        else:
            skipped["function: no mutation site"] += 1
    order = sample_mutants(by_function, seed=options.seed, max_per_function=_MAX_MUTANTS_PER_FUNCTION, limit=None)
    candidates = []
    for mutant in order:
        func = records[f"{mutant.path}::{mutant.qualname}"]
        candidates.append(Candidate(
            candidate_id=candidate_id("mutation", mutant.mutant_id),
            strategy="mutation", function=func, operator=mutant.operator, mutation_kind=mutant.kind.value,
            line=mutant.line, files_b={mutant.path: mutant.mutated_source}, diff=mutant.diff,
        ))
    return candidates, skipped, kept_functions


def mutants_of(func: FunctionRecord, tree: Path, options: TestSynthesisOptions) -> list[Candidate]:
    """Mutation candidates of one function of `tree`, in the run's seeded order: the siblings of a task
    whose B is not a mutant (a real change, judged in its commit's tree)."""
    try:
        mutator = ModuleMutator((tree / func.path).read_text(encoding="utf-8"), func.path)
    except (MutationError, OSError, UnicodeDecodeError):
        return []
    mutants = mutator.mutants(func, operators=options.operators)[:_MAX_MUTANTS_PER_FUNCTION]
    order = sample_mutants({func.key: mutants}, seed=options.seed, max_per_function=_MAX_MUTANTS_PER_FUNCTION)
    return [Candidate(candidate_id=candidate_id("mutation", mutant.mutant_id), strategy="mutation", function=func,
                      operator=mutant.operator, mutation_kind=mutant.kind.value, line=mutant.line,
                      files_b={mutant.path: mutant.mutated_source}, diff=mutant.diff) for mutant in order]
