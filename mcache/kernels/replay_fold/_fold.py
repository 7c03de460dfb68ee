"""What the replay folds share: checks of their state and ring tensors, the ring and head addressing of their
kernels, and the base of their plans.

Tokens past `count` are loaded as zeros (k, v, beta, x, dt, dA, g = 0), which makes them identity steps.
Offsets are int64; `[L, S, ...]` dims 0/1 of the state and dims 0..3 of the ring tensors may have any strides.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .._blocks import unit_of
from .._common import FLOAT_DTYPES, check_ranges, fail, lead_strides, same_device, state_numel
from .._launch import Plan

HALF = (torch.bfloat16, torch.float16)  # 16-bit states and rings


@triton.jit
def ring_base(ptr, s0, s1, s2, layer, slot, r):
    """The first token of ring `r` of `slot` in `layer` of a ring tensor with strides `s0, s1, s2`."""
    return ptr + (layer * s0 + slot * s1 + r * s2)


@triton.jit
def dot16_pieces(w, b, acc, F32: tl.constexpr):
    """`acc + w @ b` for a 16-bit `b` and an fp32 `w` split into pieces of `b`'s type, hi + lo (+ lo2 when F32):
    exact products on the tensor cores, about fp32 accuracy with three pieces, far below a 16-bit state's rounding with
    two (a 16-bit `b` needs no split of its own, unlike `tf32x3`'s)."""
    hi = w.to(b.dtype)
    lo = w - hi.to(tl.float32)
    acc = tl.dot(hi, b, acc=acc)
    acc = tl.dot(lo.to(b.dtype), b, acc=acc)
    if F32:
        acc = tl.dot((lo - lo.to(b.dtype).to(tl.float32)).to(b.dtype), b, acc=acc)
    return acc


@triton.jit
def head_of(u, NBLK, H, NB):
    """`(block, head, request, layer)` of unit `u` of the units `(layer, request, head, block)`, block
    fastest; all int32."""
    h, b, layer = unit_of(u // NBLK, H, NB)
    return u % NBLK, h, b, layer


@triton.jit
def head_unit(NBLK, H, NB):
    """`head_of` this program, head and layer int64 (they scale strides)."""
    blk, h, b, layer = head_of(tl.program_id(0), NBLK, H, NB)
    return blk, h.to(tl.int64), b, layer.to(tl.int64)


def _float(name: str, t: torch.Tensor) -> None:
    """States and ring inputs are float32, bfloat16 or float16."""
    if t.dtype not in FLOAT_DTYPES:
        fail(f"{name}: expected float32/bfloat16/float16, got {t.dtype}")


def _ring(name: str, t: torch.Tensor, L: int, S: int, tail: tuple[int, ...]) -> tuple[int, int]:
    """Check a ring tensor `[L, S, NBUF, Hist, *tail]`; returns `(NBUF, Hist)`."""
    _float(name, t)
    if t.dim() != 4 + len(tail) or tuple(t.shape[:2]) != (L, S) or tuple(t.shape[4:]) != tail:
        fail(f"{name}: expected [L={L}, S={S}, 2, Hist, {', '.join(map(str, tail))}], got {tuple(t.shape)}")
    state_numel(t, 4, name)
    return t.shape[2], t.shape[3]


def check_rings(L: int, S: int, *rings: tuple[str, torch.Tensor, tuple[int, ...]]) -> tuple[int, int]:
    """Check ring tensors `(name, t, tail)` (see `_ring`) with the ring dims of the first; returns `(NBUF, Hist)`."""
    first, t0, tail0 = rings[0]
    dims = _ring(first, t0, L, S, tail0)
    for name, t, tail in rings[1:]:
        if _ring(name, t, L, S, tail) != dims:
            fail(f"{name}: ring dims {tuple(t.shape[2:4])} differ from {first}'s {dims}")
    return dims


def ring_groups(name: str, t: torch.Tensor, H: int, group: str, dim: str) -> int:
    """Head groups of a grouped ring tensor `[L, S, 2, Hist, groups, dim]`; they must divide the H heads."""
    if t.dim() != 6 or t.shape[-2] < 1 or H % t.shape[-2]:
        fail(f"{name}: expected [L, S, 2, Hist, {group}, {dim}] with H={H} divisible by {group}, got {tuple(t.shape)}")
    return t.shape[-2]


def check_state(name: str, t: torch.Tensor, ndim: int) -> None:
    """Check a state pool `[L, S, *state]` of `ndim` dims, its state dims contiguous."""
    _float(name, t)
    if t.dim() != ndim:
        fail(f"{name}: expected {ndim} dims, got shape {tuple(t.shape)}")
    state_numel(t, 2, name)


class FoldPlan(Plan):
    """A fold bound to its state pool and ring tensors: `plan(slots, buf, count)` launches with no host-side
    work but the launches (index vectors on the pools' device, int32 or int64, ranges not checked; see `check`).
    Subclasses check their tensors in `__init__` (setting `S`, `nbuf`, `hist`, `empty`) and `build` a batch's
    launches. A state's plan may also fold the kind's conv window (`conv.state_window`)."""

    def __init__(self, device: torch.device, S: int, nbuf: int, hist: int):
        super().__init__()
        self.device, self.S, self.nbuf, self.hist = device, S, nbuf, hist

    def __call__(self, slots: torch.Tensor, buf: torch.Tensor, count: torch.Tensor) -> None:
        for launch in self.launches(self.key(slots, buf, count)):
            launch.run(slots, buf, count)

    def key(self, slots: torch.Tensor, buf: torch.Tensor, count: torch.Tensor) -> tuple:
        return (0 if self.empty else slots.shape[0], slots.dtype, buf.dtype, count.dtype)

    def check(self, slots: torch.Tensor, buf: torch.Tensor, count: torch.Tensor) -> None:
        """Slots, ring buffers and counts within the pools (one synchronization)."""
        check_ranges([("slots", slots, 0, self.S), ("buf", buf, 0, self.nbuf), ("count", count, 0, self.hist + 1)])


FOLD_INDICES = ("slots", "buf", "count")  # the index vectors of every fold call, by name


def rings_with_strides(*rings: torch.Tensor) -> tuple:
    """Each ring tensor followed by the strides of its four ring dims, as the kernels take them."""
    return tuple(x for t in rings for x in (t, *lead_strides(t, 4)))


def delta_args(ssm, k, v, g, beta, per_channel: bool):
    """Check a delta-rule fold's tensors; returns `((L, H, V, K, heads per k group, Hist, NBUF, S), device)`."""
    check_state("ssm", ssm, 5)
    L, S, H, V, K = ssm.shape
    dev = same_device(ssm=ssm, k=k, v=v, g=g, beta=beta)
    hk = ring_groups("k", k, H, "Hk", "K")
    gtail = (H, K) if per_channel else (H,)
    nbuf, hist = check_rings(L, S, ("k", k, (hk, K)), ("v", v, (H, V)), ("g", g, gtail), ("beta", beta, (H,)))
    return (L, H, V, K, H // hk, hist, nbuf, S), dev

