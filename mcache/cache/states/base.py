"""The state contract: what every state kind of the cache manager implements, and the pools it owns.

A pool is one buffer declaration allocated as one tensor. Whatever the storage layout, `Pool.view` is
`[layers, units, *shape]` (per-token pools: `[layers, blocks, block, *shape]`), the form every kernel in
`mcache.kernels` takes. Every write to pool memory goes through those kernels.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from mcache import kernels as K
from mcache.core.sizing.buffers import BufferDecl

if TYPE_CHECKING:
    from mcache.core.sizing.rank import RankContext

LAYOUTS = ("layer", "slot")


def torch_dtype(name: str) -> torch.dtype:
    """The torch dtype of a canonical dtype name (`bfloat16`, `float8_e4m3fn`, `int32`, ...)."""
    return getattr(torch, name)


@dataclass(eq=False)
class Pool:
    """One allocated buffer declaration (its `decl.role` says what it is)."""

    decl: BufferDecl
    units: int
    storage: torch.Tensor
    layout: str

    @property
    def view(self) -> torch.Tensor:
        """`[L, units, *shape]` (per-token: `[L, blocks, block, *shape]`) whatever the storage layout."""
        return self.storage if self.layout == "layer" else self.storage.transpose(0, 1)

    @property
    def nbytes(self) -> int:
        """Bytes of the tensor actually allocated."""
        return self.storage.numel() * self.storage.element_size()


def allocate(decl: BufferDecl, units: int, layout: str, device: torch.device, block: int) -> Pool:
    """One tensor for `decl`: layer-major `[L, units, *shape]` or slot-major `[units, L, *shape]`.

    Per-token pools are split into blocks: `[L, blocks, block, *shape]` or `[blocks, L, block, *shape]`
    (the same bytes as `units` tokens; a block holds `block / tokens_per_row` rows of a pool whose rows are shared).
    The memory is left uninitialized: slots are reset on first use.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"pool layout must be one of {LAYOUTS}, not {layout!r}")
    lead = (units // block, block // decl.tokens_per_row) if decl.per == "token" else (units,)
    if decl.per == "token" and (units % block or block % decl.tokens_per_row):
        raise ValueError(f"{decl.key}: {units} tokens in blocks of {block}, each whole rows of {decl.tokens_per_row} "
                         "tokens: they do not divide")
    shape = (decl.layers, *lead, *decl.shape) if layout == "layer" else (lead[0], decl.layers, *lead[1:], *decl.shape)
    storage = torch.empty(shape, dtype=torch_dtype(decl.dtype), device=device)
    return Pool(decl, units, storage, layout)


def arange(n: int, device: torch.device) -> torch.Tensor:
    return torch.arange(n, dtype=torch.int64, device=device)


def gather(view: torch.Tensor, slots: torch.Tensor) -> torch.Tensor:
    """`view[:, slots]` as a new `[L, B, *rest]` tensor (through `copy_slots`).

    Like every kernel call of the state handlers, the index ranges are not re-checked on the device (a
    synchronization per launch): the manager hands out and validates the slots, rows and counts itself.
    """
    out = torch.empty((view.shape[0], len(slots), *view.shape[2:]), dtype=view.dtype, device=view.device)
    K.copy_slots(view, slots, out, arange(len(slots), view.device), check=False)
    return out


def scatter(view: torch.Tensor, slots: torch.Tensor, values: torch.Tensor) -> None:
    """`view[:, slots] = values` for `values` `[L, B, *rest]` (through `copy_slots`)."""
    K.copy_slots(values.to(view.device, view.dtype), arange(len(slots), view.device), view, slots, check=False)


class Plans:
    """Kernel plans (`mcache.kernels.*_plan`) of one owner, by name. A plan binds its pools once, so that a
    launch passes only index vectors; `get` rebuilds it when one of its pools changed (another tensor or
    another layout) and returns the one it has otherwise."""

    def __init__(self):
        self._entries: dict[str, tuple[list[tuple[torch.Tensor, str]], Callable]] = {}

    def get(self, name: str, pools: Sequence[Pool], build: Callable[[], Callable]) -> Callable:
        """The plan `name` over `pools`, built by `build()` when it is missing or its pools changed."""
        bound = [(p.storage, p.layout) for p in pools]
        entry = self._entries.get(name)
        if entry is None or len(entry[0]) != len(bound) or any(
            a is not b or la != lb for (a, la), (b, lb) in zip(entry[0], bound, strict=True)
        ):
            entry = self._entries[name] = (bound, build())
        return entry[1]


def reset_kinds(plans: Plans, kinds: list[StateKind], slots: torch.Tensor) -> None:
    """Zero every per-slot pool of `kinds` at `slots` through one plan of `plans` (the kernel zeroes up to four
    pools per launch), instead of a call per kind."""
    pools = [p for k in kinds for p in k.slot_pools()]
    plans.get("reset", pools, lambda: K.reset_slots_plan([p.view for p in pools]))(slots)


@dataclass
class Step:
    """One speculative verify step of a batch: which slots and rows, and where each scheme wants its data.

    The model writes, for batch row `b` and draft position `j` (`0 .. T`):
    - intermediate: the state after token `j` into `inter_*[:, rows[b], j]`;
    - replay: token `j`'s inputs into `ring_*[:, slots[b], ring_buf[b], ring_pos[b] + j]`;
    - index: the state after token `j` into version `versions[b, j]` of the slot (0 = the base pool,
      `v > 0` = `*_versions[:, slot, v - 1]`).
    """

    requests: list
    slots: torch.Tensor  # [B] state slot of each row (empty on a rank without recurrent layers)
    rows: torch.Tensor  # [B] batch row 0 .. B
    tokens: int  # T = draft + 1
    # replay: `pending` accepted tokens wait in ring buffer `read_buf`; on `overflow` they were folded
    # (`fold` tokens, 0 elsewhere) and the step's tokens go to `ring_buf` from `ring_pos`
    overflow: torch.Tensor | None = None
    read_buf: torch.Tensor | None = None
    pending: torch.Tensor | None = None
    fold: torch.Tensor | None = None
    ring_buf: torch.Tensor | None = None
    ring_pos: torch.Tensor | None = None
    versions: torch.Tensor | None = None  # index: [B, T]


class StateKind:
    """The contract of one state kind on one rank: its buffers and what each manager operation does to them.

    The base implementation is the generic behaviour: reset zeroes every per-slot pool of the kind,
    relocate copies them all, the rest do nothing. Kinds override what they need. `layers` are the
    global layer indices of the kind on this rank (pool layer `i` is global layer `layers[i]`).
    Slots and other index vectors are int64 tensors on the pools' device, validated by the manager: the
    kernels are launched through `plans` without checking them again.
    """

    def __init__(self, kind: str | None, ctx: RankContext, pools: list[Pool], book=None):
        self.kind, self.ctx, self.pools, self.book = kind, ctx, pools, book
        self.runtime = ctx.runtime
        self.plans = Plans()
        self.layers = [0] if kind is None else ctx.layers_of(kind)

    def slot_pools(self) -> list[Pool]:
        """Pools indexed by state slot (reset and moved with the slot)."""
        return [p for p in self.pools if p.decl.per == "slot"]

    def reset(self, slots: torch.Tensor) -> None:
        """Zero every per-slot pool of the kind at `slots` (first use of a slot by a request)."""
        reset_kinds(self.plans, [self], slots)

    def relocate(self, src: torch.Tensor, dst: torch.Tensor) -> None:
        """Copy every per-slot pool of the kind from slots `src` to slots `dst`."""
        pools = self.slot_pools()
        if pools:
            self.plans.get("relocate", pools, lambda: K.copy_slots_plan([(p.view, p.view) for p in pools]))(src, dst)

    def begin_step(self, step: Step) -> None:
        """Work before the model runs a verify step (replay folds the ring on overflow)."""

    def commit(self, step: Step, accepted: torch.Tensor) -> None:
        """Keep the state after `accepted[b]` tokens of each row of `step`."""

    def replay_metadata(self) -> ReplayMeta | None:
        """The replay ring of the kind (its per-token inputs), or None if the kind has none."""
        return None

    def on_transfer_complete(self, slots: torch.Tensor) -> None:
        """Hook after state was imported into `slots` (e.g. drop stale replay rings)."""

    def views(self, layer: int) -> dict[str, torch.Tensor]:
        """Per-layer views of every pool of the kind: `name -> [units, *shape]` for global layer `layer`."""
        if layer not in self.layers:
            raise KeyError(f"layer {layer} has no {self.kind} state on this rank (layers {self.layers})")
        i = self.layers.index(layer)
        return {p.decl.name: p.view[i] for p in self.pools}

    # Recurrent state: the logical state of a slot, snapshots, transfers. Kinds without state keep these.
    def current(self, slots: torch.Tensor) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
        """`name -> (pool, index)`: where the current base state of each of `slots` can be read
        (`pool[:, index[b]]`), without changing anything."""
        return {}

    def write(self, slots: torch.Tensor, values: dict[str, torch.Tensor]) -> None:
        """Set the base state of `slots` to `values[name]` `[L, B, *shape]`."""

    def snapshot(self, slot: torch.Tensor, snap: torch.Tensor) -> None:
        """Copy the current state of `slot` into snapshot slot `snap`."""

    def restore(self, snap: torch.Tensor, slot: torch.Tensor) -> None:
        """Copy snapshot slot `snap` into the base state of `slot`."""

    def transfer_states(self) -> list[str]:
        """Names of the base states that move between workers (conv and SSM)."""
        return []


@dataclass(frozen=True)
class ReplayMeta:
    """A kind's replay ring: `inputs` are the per-token entries, `rings` their `[L, S, 2, Hist, ...]` views."""

    kind: str
    history: int
    inputs: tuple
    rings: dict[str, torch.Tensor]
