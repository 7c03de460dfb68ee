"""What every layer kind declares: its per-layer cache states, replay inputs and weights, and the roles of buffers.

Pure shape functions: integers in, named shapes out, a `LayoutError` naming the spec field on an
impossible TP split. The estimator and the cache manager both read these declarations.
"""

from __future__ import annotations

from enum import Enum

from msgspec import Struct

from mcache.core.errors import LayoutError


class Role(Enum):
    """What a buffer is to the cache manager; a buffer's name is for display only."""

    KV = "kv"  # attention KV, per token
    CONV = "conv window"  # a recurrent kind's conv window, per slot
    STATE = "state"  # a recurrent kind's recurrent (SSM) state, per slot
    INTERMEDIATE = "intermediate"  # speculative: a state after every draft position, per batch row
    VERSIONS = "versions"  # speculative index scheme: T more versions of a state, per slot
    RING = "ring"  # speculative replay: the per-token inputs a state's fold reads, per slot
    SNAPSHOT = "snapshot"  # a copy of a state per snapshot slot (prefix caching)
    BOOKKEEPING = "bookkeeping"  # the rank's per-slot seed, replay cursors and version index
    AUXILIARY = "auxiliary"  # anything else: the spec's own buffers, a registered extension's


class CacheDtypes(Struct, frozen=True):
    """Resolved dtypes of one run: model (weights, conv), KV cache, conv state, recurrent state."""

    model: str
    kv: str
    conv: str
    ssm: str


class StateShape(Struct, frozen=True):
    """One per-layer state of a kind on one rank.

    `per` is `slot` (recurrent state) or `token` (KV). `sections` splits axis 0 into named
    channel sections (`[x|B|C]`, `[q|k|v]`) and `heads` says axis 0 is split by heads, so a
    transfer to a receiver of another TP knows how to slice. A per-token state of `tokens_per_row` > 1 keeps one
    `shape` row for that many tokens (an indexer's compressed keys).
    """

    name: str
    component: str
    shape: tuple[int, ...]
    axes: tuple[str, ...]
    dtype: str
    per: str = "slot"
    sections: tuple[tuple[str, int], ...] = ()
    window: int | None = None
    tokens_per_row: int = 1

    @property
    def role(self) -> Role:
        """`KV`, `CONV` or `STATE`, by component."""
        return _STATE_ROLES[self.component]


_STATE_ROLES = {"kv": Role.KV, "conv": Role.CONV, "ssm": Role.STATE}


class ReplayInput(Struct, frozen=True):
    """One per-token entry of a kind's replay ring, and the state whose fold reads it (`of`: `Role.STATE` or
    `Role.CONV`).

    A kind lists its inputs once, in fold order: those of `Role.STATE` in the order of the arguments of its
    `replay_fold_<kind>` after the state, then the conv input (`replay_fold_conv`'s `conv_in`).
    """

    name: str
    of: Role
    shape: tuple[int, ...]
    axes: tuple[str, ...]
    dtype: str


def split(total: int, tp: int, field: str, what: str = "heads") -> int:
    """`total / tp`, or a `LayoutError` naming `field` when it does not divide."""
    if total % tp:
        raise LayoutError(field, f"{total} {what} cannot be split evenly over tp={tp}")
    return total // tp


def replicated_split(total: int, tp: int, field: str) -> int:
    """Per-rank count of heads/groups that are replicated when `tp > total` (KV heads, Mamba groups).

    `total % tp == 0` splits evenly; `tp % total == 0` gives each rank one whole copy; anything
    else cannot be laid out.
    """
    if total % tp == 0:
        return total // tp
    if tp % total == 0:
        return 1
    raise LayoutError(field, f"{total} cannot be split over tp={tp}: need {total} % tp == 0 or tp % {total} == 0")
