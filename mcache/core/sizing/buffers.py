"""Buffer declarations: the single source the estimator sums and the cache manager allocates.

A declaration describes one pool: `layers` stacked copies (one per layer of the kind on the rank)
of `units` entries of `shape` elements each. What a unit is depends on `per`:

- `slot`: a state slot of the pool (max batch x pp size + reserved slots)
- `request`: a row of the running batch (max batch), e.g. speculative scratch
- `token`: a KV-cache token (paged in blocks; capped at `window` tokens per sequence)
- `snapshot`: a snapshot slot for prefix caching
- `rank`: one per rank
"""

from __future__ import annotations

from math import prod

from msgspec import Struct

from mcache.core.kinds.base import Role
from mcache.core.spec.dtypes import itemsize

PER_UNITS = ("slot", "request", "token", "snapshot", "rank")
COMPONENTS = ("kv", "conv", "ssm", "spec", "aux")


class BufferDecl(Struct, frozen=True):
    """One pool of a rank: `layers` x units x `shape` elements of `dtype`.

    `kind` is the layer kind that owns it (`None` for per-rank bookkeeping); `axes` names the
    axes of `shape` (e.g. `("H", "P", "N")`) so readers know the order. `role` says what the buffer is
    and `of` which state of the kind a derived buffer belongs to (`Role.STATE` or `Role.CONV`: the ring `x`
    of Mamba2's SSM state, the snapshot of a conv window); consumers select by these, `name` is for display.
    """

    name: str
    component: str
    kind: str | None
    layers: int
    per: str
    shape: tuple[int, ...]
    axes: tuple[str, ...]
    dtype: str
    window: int | None = None
    role: Role = Role.AUXILIARY
    of: Role | None = None
    tokens_per_row: int = 1  # per-token pools: one `shape` row for this many tokens

    def __post_init__(self) -> None:
        if self.per not in PER_UNITS:
            raise ValueError(f"buffer {self.name}: per must be one of {PER_UNITS}, not {self.per!r}")
        if self.component not in COMPONENTS:
            raise ValueError(f"buffer {self.name}: unknown component {self.component!r}")
        if len(self.axes) != len(self.shape):
            raise ValueError(f"buffer {self.name}: {len(self.axes)} axis names for shape {self.shape}")
        if self.tokens_per_row != 1 and (self.per != "token" or self.row_bytes % self.tokens_per_row):
            raise ValueError(f"buffer {self.name}: a row of {self.row_bytes} bytes shared by {self.tokens_per_row} "
                             "tokens must be per token and divide evenly")

    @property
    def key(self) -> str:
        """Unique name of the pool on a rank, e.g. `mamba2.ssm`."""
        return f"{self.kind}.{self.name}" if self.kind else self.name

    @property
    def elements_per_unit(self) -> int:
        """Elements of one unit of one layer."""
        return prod(self.shape)

    @property
    def row_bytes(self) -> int:
        """Bytes of one `shape` row of one layer."""
        return self.elements_per_unit * itemsize(self.dtype)

    @property
    def bytes_per_unit(self) -> int:
        """Bytes of one unit across all `layers` layers (a token's share of a row it shares)."""
        return self.layers * self.row_bytes // self.tokens_per_row
