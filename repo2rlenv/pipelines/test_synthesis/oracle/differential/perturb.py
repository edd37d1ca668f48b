"""New inputs to try when no recorded call tells the two versions apart.

Two sources, both deterministic for a given seed and bounded in count:
- perturbations of recorded calls, one value at a time: the boundary constants written in the function
  (and each ±1), ints ±1 / 0 / 1 / -1 (then small sizes 2..5, -2, doubled, halved), floats ×(1±ε), flipped
  booleans, None where the annotation is Optional, shorter strings, containers and iterators; defaulted
  parameters the call left out are tried too;
- when nothing was recorded, small grids built from the parameters' annotations.
Perturbations come in tiers (boundaries first, since comparisons against a constant are what a one-token
change most often breaks); a tier that does not fit the remaining budget is sampled with the seed.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from dataclasses import dataclass

from repo2rlenv.pipelines.test_synthesis.oracle.differential.grids import (
    MAX_GRID,
    Literals,
    allows_none,
    annotation_grid,
    int_value,
    scalar_grid,
    unique,
)
from repo2rlenv.pipelines.test_synthesis.oracle.differential.records import CallSpec, ParamInfo, ParamKind, TargetInfo
from repo2rlenv.pipelines.test_synthesis.oracle.differential.values import Value, ValueKind, as_float, float_value

EPSILON = 1e-6
# Containers are perturbed item by item only this deep; deeper values are kept as they are.
MAX_PATH_DEPTH = 2
MAX_RECEIVERS = 8


def _nudged(x: float) -> list[float]:
    step = max(abs(x), 1.0) * EPSILON
    return [x - step, x + step]


# ---------------------------------------------------------------------------------- perturbations

Tiered = list[list[Value]]  # replacement values per tier (0 = most promising)


def _replacements(value: Value, lits: Literals, optional: bool, annotation_grid: list[Value]) -> Tiered:
    tiers: Tiered = [[], [], []]
    kind = value.t
    if kind is ValueKind.INT:
        v = int(value.v)  # type: ignore[arg-type]
        tiers[0] = [int_value(x) for lit in lits.ints for x in (lit - 1, lit, lit + 1)]
        tiers[1] = [int_value(x) for x in (v - 1, v + 1, 0, 1, -1)]
        # Sizes and counts: a chunking or window size often matters only at a small exact value.
        tiers[2] = [int_value(x) for x in (2, 3, 4, 5, -2, 2 * v, v // 2)]
    elif kind is ValueKind.FLOAT:
        v = as_float(value)
        bounds = [float(x) for x in lits.floats + lits.ints]
        tiers[0] = [float_value(x) for b in bounds for x in (b, *_nudged(b))]
        tiers[1] = [float_value(x) for x in (*_nudged(v), 0.0, -v, v + 1, v - 1)]
    elif kind is ValueKind.BOOL:
        tiers[1] = [Value(t=ValueKind.BOOL, v=not value.v)]
    elif kind is ValueKind.STR:
        text = str(value.v)
        tiers[0] = [Value(t=ValueKind.STR, v=s) for s in lits.strs]
        tiers[2] = [Value(t=ValueKind.STR, v=s) for s in ("", text[:1])]
    elif kind is ValueKind.BYTES:
        tiers[2] = [Value(t=ValueKind.BYTES, v=str(value.v)[:2]), Value(t=ValueKind.BYTES, v="")]
    elif kind in (ValueKind.LIST, ValueKind.TUPLE, ValueKind.SET, ValueKind.FROZENSET, ValueKind.ITER):
        items = list(value.items or [])
        tiers[2] = [value.model_copy(update={"items": part}) for part in ([], items[:1], items[:-1])]
    elif kind is ValueKind.DICT:
        pairs = list(value.pairs or [])
        tiers[2] = [value.model_copy(update={"pairs": part}) for part in ([], pairs[:1])]
    elif kind is ValueKind.NONE:
        tiers[1] = list(annotation_grid)
    if optional and kind is not ValueKind.NONE:
        tiers[1].append(Value(t=ValueKind.NONE))
    return tiers


Path = tuple[object, ...]


def _leaves(value: Value, path: Path = (), depth: int = 0) -> Iterator[tuple[Path, Value]]:
    """Every (path, value) inside ``value`` that a perturbation may replace, outermost first."""
    yield path, value
    if depth >= MAX_PATH_DEPTH:
        return
    kind = value.t
    if kind in (ValueKind.LIST, ValueKind.TUPLE, ValueKind.ITER):
        for i, item in enumerate((value.items or [])[:3]):
            yield from _leaves(item, (*path, "items", i), depth + 1)
    elif kind is ValueKind.DICT:
        for i, (_key, item) in enumerate((value.pairs or [])[:3]):
            yield from _leaves(item, (*path, "pairs", i), depth + 1)
    elif kind in (ValueKind.DATACLASS, ValueKind.NAMEDTUPLE):
        for name, item in (value.fields or {}).items():
            yield from _leaves(item, (*path, "fields", name), depth + 1)
    elif kind is ValueKind.OBJECT:
        for i, item in enumerate(value.args or []):
            yield from _leaves(item, (*path, "args", i), depth + 1)
        for name, item in (value.kw or {}).items():
            yield from _leaves(item, (*path, "kw", name), depth + 1)


def _replace(value: Value, path: Path, new: Value) -> Value:
    if not path:
        return new
    attr, key, rest = path[0], path[1], path[2:]
    container = getattr(value, str(attr))
    if attr == "pairs":
        pairs = list(container)
        k, v = pairs[key]  # type: ignore[index]
        pairs[key] = (k, _replace(v, rest, new))  # type: ignore[index]
        return value.model_copy(update={"pairs": pairs})
    if isinstance(container, dict):
        return value.model_copy(update={attr: {**container, key: _replace(container[key], rest, new)}})
    items = list(container)
    items[key] = _replace(items[key], rest, new)  # type: ignore[index]
    return value.model_copy(update={str(attr): items})


def _with_defaults(values: dict[str, Value], n_positional: int, params: list[ParamInfo]) -> dict[str, Value]:
    """Keyword arguments plus every defaulted parameter the call left out, at its default."""
    out = dict(values)
    for i, p in enumerate(params):
        named = p.kind in (ParamKind.POSITIONAL_OR_KEYWORD, ParamKind.KEYWORD_ONLY)
        if named and i >= n_positional and p.name not in out and p.default is not None:
            out[p.name] = p.default
    return out


def _without_defaults(values: dict[str, Value], params: list[ParamInfo]) -> dict[str, Value]:
    defaults = {p.name: p.default for p in params if p.default is not None}
    return {k: v for k, v in values.items() if defaults.get(k) != v}


@dataclass(frozen=True)
class _Slot:
    """One top-level argument position in a call: where it is, and what its parameter says."""

    where: tuple[str, object]  # ("args", i) | ("kwargs", name) | ("receiver.args", i) | ("receiver.kw", name)
    param: ParamInfo | None


def _slots(call: CallSpec, target: TargetInfo) -> list[_Slot]:
    positional = [p for p in target.params if p.kind in (ParamKind.POSITIONAL_ONLY, ParamKind.POSITIONAL_OR_KEYWORD)]
    by_name = {p.name: p for p in target.params}
    out = [_Slot(where=("args", i), param=positional[i] if i < len(positional) else None) for i in range(len(call.args))]
    out += [_Slot(where=("kwargs", k), param=by_name.get(k)) for k in call.kwargs]
    receiver = call.receiver
    if receiver is not None and receiver.t is ValueKind.OBJECT:
        init = target.init_params or []
        init_pos = [p for p in init if p.kind in (ParamKind.POSITIONAL_ONLY, ParamKind.POSITIONAL_OR_KEYWORD)]
        init_names = {p.name: p for p in init}
        out += [
            _Slot(where=("receiver.args", i), param=init_pos[i] if i < len(init_pos) else None)
            for i in range(len(receiver.args or []))
        ]
        out += [_Slot(where=("receiver.kw", k), param=init_names.get(k)) for k in receiver.kw or {}]
    elif receiver is not None and receiver.t is ValueKind.DATACLASS:
        out += [_Slot(where=("receiver.fields", k), param=None) for k in receiver.fields or {}]
    return out


def _get(call: CallSpec, where: tuple[str, object]) -> Value:
    part, key = where
    if part == "args":
        return call.args[key]  # type: ignore[index]
    if part == "kwargs":
        return call.kwargs[key]  # type: ignore[index]
    container = getattr(call.receiver, part.split(".")[1])
    return container[key]


def _set(call: CallSpec, where: tuple[str, object], new: Value) -> CallSpec:
    part, key = where
    if part == "args":
        args = list(call.args)
        args[key] = new  # type: ignore[index]
        return call.model_copy(update={"args": args})
    if part == "kwargs":
        return call.model_copy(update={"kwargs": {**call.kwargs, key: new}})
    assert call.receiver is not None
    return call.model_copy(update={"receiver": _replace(call.receiver, (part.split(".")[1], key), new)})


def _expanded(call: CallSpec, target: TargetInfo) -> CallSpec:
    kwargs = _with_defaults(call.kwargs, len(call.args), target.params)
    receiver = call.receiver
    if receiver is not None and receiver.t is ValueKind.OBJECT and target.init_params:
        kw = _with_defaults(receiver.kw or {}, len(receiver.args or []), target.init_params)
        receiver = receiver.model_copy(update={"kw": kw})
    return call.model_copy(update={"kwargs": kwargs, "receiver": receiver})


def _compacted(call: CallSpec, target: TargetInfo) -> CallSpec:
    kwargs = _without_defaults(call.kwargs, target.params)
    receiver = call.receiver
    if receiver is not None and receiver.t is ValueKind.OBJECT and target.init_params:
        receiver = receiver.model_copy(update={"kw": _without_defaults(receiver.kw or {}, target.init_params)})
    return call.model_copy(update={"kwargs": kwargs, "receiver": receiver})


def perturbations(calls: list[CallSpec], target: TargetInfo, lits: Literals) -> list[list[CallSpec]]:
    """One-value perturbations of each call, grouped by tier (duplicates and the originals removed)."""
    tiers: list[list[CallSpec]] = [[], [], []]
    for base in calls:
        full = _expanded(base, target)
        for slot in _slots(full, target):
            annotation = slot.param.annotation if slot.param else None
            optional = allows_none(annotation)
            for path, leaf in _leaves(_get(full, slot.where)):
                grid = annotation_grid(annotation, lits) if not path else []
                for tier, values in enumerate(_replacements(leaf, lits, optional and not path, grid)):
                    for new in values:
                        top = _replace(_get(full, slot.where), path, new)
                        tiers[tier].append(_compacted(_set(full, slot.where, top), target))
    return _unique_tiers(tiers, exclude={c.key() for c in calls})


def _unique_tiers(tiers: list[list[CallSpec]], exclude: set[str]) -> list[list[CallSpec]]:
    seen = set(exclude)
    return [unique(tier, CallSpec.key, seen) for tier in tiers]


def take_budget(tiers: list[list[CallSpec]], budget: int, seed: int) -> list[CallSpec]:
    """Whole tiers in order while they fit; the first that does not is sampled (order kept) to fill the budget."""
    out: list[CallSpec] = []
    rng = random.Random(seed)
    for tier in tiers:
        room = budget - len(out)
        if room <= 0:
            break
        if len(tier) <= room:
            out += tier
        else:
            picked = sorted(rng.sample(range(len(tier)), room))
            out += [tier[i] for i in picked]
    return out


# ------------------------------------------------------------------------------ annotation grids


def _param_grid(param: ParamInfo, lits: Literals) -> list[Value]:
    grid = annotation_grid(param.annotation, lits)
    if param.default is not None:
        grid = unique([param.default, *grid], Value.model_dump_json)
    elif not grid:
        grid = scalar_grid("int", lits)[:8] + [Value(t=ValueKind.NONE), Value(t=ValueKind.STR, v="")]
    return grid[:MAX_GRID]


def _generated_params(params: list[ParamInfo]) -> list[ParamInfo]:
    """Parameters to fill in a generated call: not *args/**kwargs, nor one whose default cannot be written
    down (a module-level object: the call keeps it rather than passing some unrelated value)."""
    skipped = (ParamKind.VAR_POSITIONAL, ParamKind.VAR_KEYWORD)
    return [p for p in params if p.kind not in skipped and not (p.has_default and p.default is None)]


def _combinations(params: list[ParamInfo], lits: Literals, budget: int, rng: random.Random) -> list[dict[str, Value]]:
    """Assignments of grid values to parameters: all of them when few, else a base, one-at-a-time, then samples."""
    grids = [_param_grid(p, lits) for p in params]
    names = [p.name for p in params]
    if not params:
        return [{}]
    total = 1
    for g in grids:
        total *= len(g)
    if total <= budget:
        return [dict(zip(names, combo)) for combo in itertools.product(*grids)]
    base = [g[0] for g in grids]
    out = [dict(zip(names, base))]
    for i, g in enumerate(grids):
        for v in g[1:]:
            out.append(dict(zip(names, [*base[:i], v, *base[i + 1 :]])))
    while len(out) < budget:
        out.append(dict(zip(names, [rng.choice(g) for g in grids])))
    return out[:budget]


def _as_call_parts(params: list[ParamInfo], values: dict[str, Value]) -> tuple[list[Value], dict[str, Value]]:
    """Positional arguments up to the first defaulted parameter, keywords after it (as a person writes calls)."""
    args: list[Value] = []
    kwargs: dict[str, Value] = {}
    for p in params:
        positional = p.kind is ParamKind.POSITIONAL_ONLY or (
            p.kind is ParamKind.POSITIONAL_OR_KEYWORD and not p.has_default and not kwargs
        )
        if positional:
            args.append(values[p.name])
        else:
            kwargs[p.name] = values[p.name]
    return args, kwargs


def generated_calls(target: TargetInfo, module: str, lits: Literals, *, budget: int, seed: int) -> list[CallSpec]:
    """Calls built from annotation grids, for a target no existing test called (receivers too, for methods)."""
    rng = random.Random(seed)
    params = _generated_params(target.params)
    receivers: list[Value | None] = [None]
    if target.owner and target.kind.value in ("method", "property"):
        if target.init_params is None:
            return []
        init = _generated_params(target.init_params)
        receivers = []
        for values in _combinations(init, lits, MAX_RECEIVERS, rng):
            args, kw = _as_call_parts(init, values)
            receivers.append(Value(t=ValueKind.OBJECT, module=module, qualname=target.owner, args=args, kw=kw))
    per_receiver = max(1, budget // len(receivers))
    calls = []
    for receiver in receivers:
        for values in _combinations(params, lits, per_receiver, rng):
            args, kwargs = _as_call_parts(params, values)
            calls.append(_compacted(CallSpec(receiver=receiver, args=args, kwargs=kwargs), target))
    return unique(calls, CallSpec.key)[:budget]


def candidate_calls(
    recorded: list[CallSpec], target: TargetInfo, module: str, lits: Literals, *, budget: int = 300, seed: int = 0
) -> list[CallSpec]:
    """Perturbations of the recorded calls, or annotation-grid calls when there are none."""
    if recorded:
        return take_budget(perturbations(recorded, target, lits), budget, seed)
    return generated_calls(target, module, lits, budget=budget, seed=seed)
