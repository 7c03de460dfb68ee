"""The auxiliary-buffer registry: every buffer beyond the base KV/conv/SSM states is declared here.

`register(key, estimator)` adds an estimator, a function `RankContext -> list[BufferDecl]`;
registering the same function again is a no-op, a different one under a taken key raises.
The speculative buffers, replay bookkeeping, per-slot seeds, snapshot slots and the spec's own
`aux_buffers` are registered below, through the same door a user extension would use; each declares its
`Role` (a declaration without one is `Role.AUXILIARY`), and the key only names the estimator.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from math import prod

from mcache.core.errors import LayoutError
from mcache.core.kinds.base import Role
from mcache.core.numbers import shown
from mcache.core.sizing.buffers import BufferDecl
from mcache.core.sizing.rank import RankContext
from mcache.core.spec import dtypes
from mcache.core.spec.model import MAX_INT

Estimator = Callable[[RankContext], list[BufferDecl]]
_REGISTRY: dict[str, Estimator] = {}


def register(key: str, estimator: Estimator) -> None:
    """Register `estimator` under `key`; the same one again is a no-op, another one raises `ValueError`."""
    existing = _REGISTRY.get(key)
    if existing is estimator:
        return
    if existing is not None:
        raise ValueError(f"auxiliary buffer {key!r} is already registered by {existing.__qualname__}")
    _REGISTRY[key] = estimator


def registered() -> dict[str, Estimator]:
    """A copy of the registry (key -> estimator)."""
    return dict(_REGISTRY)


def aux_declarations(ctx: RankContext) -> list[BufferDecl]:
    """Every registered auxiliary buffer on this rank, in registration order."""
    return [decl for estimator in _REGISTRY.values() for decl in estimator(ctx)]


def _decl(name, component, kind, layers, per, shape, axes, dtype, role, of=None) -> BufferDecl:
    return BufferDecl(name, component, kind, layers, per, tuple(shape), tuple(axes), dtype, role=role, of=of)


# The rank's per-slot bookkeeping: the cache manager finds each of its pools by declaration.
SEED = _decl("seed", "aux", None, 1, "slot", (), (), "int64", Role.BOOKKEEPING)
REPLAY_PENDING = _decl("replay_prev_accepted", "spec", None, 1, "slot", (), (), "int32", Role.BOOKKEEPING)
REPLAY_BUFFER = _decl("replay_buf_idx", "spec", None, 1, "slot", (), (), "int32", Role.BOOKKEEPING)
VERSION_INDEX = _decl("version_idx", "spec", None, 1, "slot", (), (), "int32", Role.BOOKKEEPING)


def intermediate_states(ctx: RankContext) -> list[BufferDecl]:
    """Intermediate scheme: the state after every draft position, `[T, *state]` per batch row.

    Under the replay scheme, kinds without a replay recurrence (Mamba1, lightning) fall back to this.
    """
    scheme, t = ctx.runtime.spec_scheme, ctx.runtime.tokens_per_step
    kinds = ctx.recurrent_kinds if scheme == "intermediate" else []
    if scheme == "replay":
        kinds = [k for k in ctx.recurrent_kinds if ctx.replay_inputs(k) is None]
    return [
        _decl(f"inter_{s.name}", "spec", k, ctx.counts[k], "request", (t, *s.shape), ("T", *s.axes), s.dtype,
              Role.INTERMEDIATE, s.role)
        for k in kinds
        for s in ctx.states(k)
    ]


def replay_buffers(ctx: RankContext) -> list[BufferDecl]:
    """Replay scheme: a double-buffered ring of per-token inputs per slot (in the kind's fold order), and per-slot
    bookkeeping."""
    if ctx.runtime.spec_scheme != "replay":
        return []
    hist = ctx.runtime.history
    decls = [
        _decl(f"ring_{r.name}", "spec", k, ctx.counts[k], "slot", (2, hist, *r.shape), ("buf", "hist", *r.axes), r.dtype,
              Role.RING, r.of)
        for k in ctx.recurrent_kinds
        for r in ctx.replay_inputs(k) or []
    ]
    return decls + [REPLAY_PENDING, REPLAY_BUFFER] if decls else []


def state_versions(ctx: RankContext) -> list[BufferDecl]:
    """Index-only scheme: T more versions of every state per slot, and a per-slot version index."""
    if ctx.runtime.spec_scheme != "index" or not ctx.recurrent_kinds:
        return []
    t = ctx.runtime.tokens_per_step
    decls = [
        _decl(f"{s.name}_versions", "spec", k, ctx.counts[k], "slot", (t, *s.shape), ("T", *s.axes), s.dtype,
              Role.VERSIONS, s.role)
        for k in ctx.recurrent_kinds
        for s in ctx.states(k)
    ]
    return decls + [VERSION_INDEX]


def slot_seeds(ctx: RankContext) -> list[BufferDecl]:
    """A random seed per slot, re-derived from the request and the rank on first use."""
    return [SEED] if ctx.recurrent_kinds else []


def snapshot_slots(ctx: RankContext) -> list[BufferDecl]:
    """Snapshot slots for prefix caching: a copy of every recurrent state per snapshot."""
    if not ctx.runtime.snapshot_slots:
        return []
    return [
        _decl(f"snap_{s.name}", "aux", k, ctx.counts[k], "snapshot", s.shape, s.axes, s.dtype, Role.SNAPSHOT, s.role)
        for k in ctx.recurrent_kinds
        for s in ctx.states(k)
    ]


def spec_aux_buffers(ctx: RankContext) -> list[BufferDecl]:
    """The spec's own `aux_buffers`, shapes evaluated against the spec and runtime."""
    decls = []
    for i, aux in enumerate(ctx.spec.aux_buffers):
        layers = ctx.counts.get(aux.layer_kind, 0) if aux.layer_kind else 1
        if not layers:
            continue
        field = f"aux_buffers[{i}].shape"
        shape = [dim if isinstance(dim, int) else evaluate(dim, _names(ctx), f"{field}[{j}]") for j, dim in enumerate(aux.shape)]
        if prod(shape) > MAX_INT:
            raise LayoutError(field, f"at most {MAX_INT} (2**40) elements per {aux.per}, got {shown(prod(shape))}")
        axes = [dim if isinstance(dim, str) else f"d{j}" for j, dim in enumerate(aux.shape)]
        decls.append(_decl(aux.name, "aux", aux.layer_kind, layers, aux.per, shape, axes, dtypes.canonical(aux.dtype), Role.AUXILIARY))
    return decls


def _names(ctx: RankContext) -> dict[str, int]:
    spec, rt = ctx.spec, ctx.runtime
    names = {
        "hidden_size": spec.hidden_size,
        "vocab_size": spec.vocab_size,
        "num_layers": spec.num_layers,
        "tp": ctx.layout.tp,
        "pp": ctx.layout.pp,
        "max_batch": rt.max_batch,
        "draft_tokens": rt.draft_tokens,
        "T": rt.tokens_per_step,
    }
    for kind in ctx.kinds:
        block = getattr(spec, kind)
        names.update({f"{kind}.{f}": v for f in block.__struct_fields__ if isinstance(v := getattr(block, f), int)})
    return {name: v for name, v in names.items() if v is not None}  # an unknown (null) vocab_size is no name


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv}
MAX_EXPRESSION = 200  # characters: bounds the tree's depth, so evaluating it cannot exhaust the stack


def evaluate(expr: str, names: dict[str, int], field: str) -> int:
    """Evaluate a shape expression such as `mamba2.num_heads // tp * 2` over integer `names`; the result is a size
    in `1..MAX_INT`, as a literal would be."""

    def walk(node: ast.AST) -> int:
        if isinstance(node, ast.Constant) and type(node.value) is int:  # not True/False, which are ints too
            return node.value
        if isinstance(node, ast.Name | ast.Attribute):
            key = ast.unparse(node)
            if key not in names:
                raise LayoutError(field, f"known names ({', '.join(sorted(names))}), got {key!r}")
            return names[key]
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            try:
                return _OPS[type(node.op)](walk(node.left), walk(node.right))
            except ZeroDivisionError:
                raise LayoutError(field, f"a shape that does not divide by zero, got {expr!r}") from None
        raise LayoutError(field, f"integers, names and + - * // only, got {ast.unparse(node)!r}")

    if len(expr) > MAX_EXPRESSION:
        raise LayoutError(field, f"an expression of at most {MAX_EXPRESSION} characters, got {len(expr)}")
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError:
        raise LayoutError(field, f"an arithmetic expression, got {expr!r}") from None
    value = walk(tree.body)
    if not 1 <= value <= MAX_INT:
        raise LayoutError(field, f"a size from 1 to {MAX_INT} (2**40), {expr!r} gives {shown(value)}")
    return value


for _key, _fn in (
    ("spec.intermediate", intermediate_states),
    ("spec.replay", replay_buffers),
    ("spec.index", state_versions),
    ("slot.seed", slot_seeds),
    ("snapshot", snapshot_slots),
    ("spec.aux_buffers", spec_aux_buffers),
):
    register(_key, _fn)
