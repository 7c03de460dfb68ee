"""The conv-window fold: shift a short convolution's `[L, S, C, K-1]` window by the ring's `count` new tokens
(the last K-1 inputs, old columns shifting left when fewer tokens came), a copy with no arithmetic.

A kind with an SSM state folds its window in the state kernel's launch, as its trailing programs
(`state_window`, `with_window`: a launch costs the host as much as a small kernel costs the device); a kind
without one (short conv) launches `_conv_kernel` alone (`ConvFoldPlan`).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .._blocks import unit_of
from .._common import fail, lead_strides, next_pow2, same_device
from .._launch import Launch
from .._oneshot import PLANS
from ._fold import FOLD_INDICES, FoldPlan, check_rings, check_state, ring_base

# `(channels per program, num_warps)` of the conv-window fold: 512 channels on two warps was the fastest of 256..2048
# channels on 2..8 warps on an H200 for the Qwen3-Next and Nemotron-H windows (85-96% of the size-matched copy with
# 16 new tokens, 65-88% with 2, where the old columns are read too). Folded in a state kernel's launch, the window
# takes the same channels per warp on that kernel's warps.
CONV_CONFIG = (512, 2)


@triton.jit
def conv_fold(
    conv, cs0, cs1,
    cin, is0, is1, is2, is3,
    slots, bufs, counts,
    u, NB, C, NCB,
    KM1: tl.constexpr, BJ: tl.constexpr, BC: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    """Unit `u` of the conv-window fold: BC channels of one (layer, request), as `[BJ window columns, BC channels]`
    rows. The ring tokens load contiguously along the channels, and the rows are stored transposed (the window's
    time axis is its fastest)."""
    cb, b, layer = unit_of(u, NCB, NB)  # requests inner: the order it was tuned in
    layer = layer.to(tl.int64)
    c = tl.load(counts + b).to(tl.int32)
    slot = tl.load(slots + b).to(tl.int64)
    r = tl.load(bufs + b).to(tl.int64)
    if c > 0:
        lc = tl.arange(0, BC)
        ch = cb * BC + lc
        j = tl.arange(0, BJ)
        tok = c + j - KM1  # window column j is token tok, or old column j + c when tok < 0
        m = (j < KM1)[:, None] & (ch < C)[None, :]
        ib = ring_base(cin, is0, is1, is2, layer, slot, r)
        rows = tl.load(ib + tok[:, None].to(tl.int64) * is3 + ch[None, :], mask=m & (tok >= 0)[:, None], other=0.0)
        rows = rows.to(conv.dtype.element_ty)
        cp = conv + (layer * cs0 + slot * cs1)
        if c < KM1:  # fewer new tokens than the window: old columns c.. shift left
            # The program's block of the old window loads contiguously; a gather in shared memory picks the columns.
            f = tl.arange(0, BLOCK)
            win = tl.load(cp + cb * (BC * KM1) + f, mask=f < tl.minimum(BC, C - cb * BC) * KM1, other=0.0)
            idx = tl.where(m & (tok < 0)[:, None], lc[None, :] * KM1 + (j + c)[:, None], 0)
            rows = tl.where((tok < 0)[:, None], tl.gather(win, tl.reshape(idx, [BJ * BC]), axis=0).reshape(BJ, BC), rows)
            tl.debug_barrier()  # every old column is read before any is overwritten (threads share a channel)
        tl.store(cp + ch[:, None] * KM1 + j[None, :], tl.trans(rows), mask=tl.trans(m))


@triton.jit
def _conv_kernel(
    slots, bufs, counts, NB,
    conv, cs0, cs1, cin, is0, is1, is2, is3, C, NCB,
    KM1: tl.constexpr, BJ: tl.constexpr, BC: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    # The conv window alone (a short-conv kind); the state kernels take it as their trailing programs (`CONV`).
    conv_fold(conv, cs0, cs1, cin, is0, is1, is2, is3, slots, bufs, counts, tl.program_id(0), NB, C, NCB, KM1, BJ, BC, BLOCK)


class ConvWindow:
    """The conv-window fold of a `[L, S, C, K-1]` window and its conv-input ring, `channels` per program: the
    trailing arguments of `_conv_kernel` and of the state kernels (from `conv`), and their constexprs."""

    def __init__(self, conv: torch.Tensor, conv_in: torch.Tensor, channels: int):
        check_state("conv", conv, 4)
        L, S, C, km1 = conv.shape
        self.device = same_device(conv=conv, conv_in=conv_in)
        self.L, self.S = L, S
        self.nbuf, self.hist = check_rings(L, S, ("conv_in", conv_in, (C,)))
        bc = min(next_pow2(channels), next_pow2(C))
        self.ncb = triton.cdiv(C, bc)
        self.empty = conv.numel() == 0
        self.args = (conv, *lead_strides(conv, 2), conv_in, *lead_strides(conv_in, 4), C, self.ncb)
        self.constexprs = dict(KM1=km1, BJ=next_pow2(km1), BC=bc, BLOCK=next_pow2(bc * km1))

    def programs(self, nb: int) -> int:
        return self.L * nb * self.ncb


_NO_WINDOW = (None,) * 8 + (0, 0)  # the conv arguments of a state kernel launched without a window


def state_window(plan: FoldPlan, conv: tuple[torch.Tensor, torch.Tensor] | None, L: int, warps: int) -> ConvWindow | None:
    """The conv window `conv = (window, conv_in)` (None: none) that a state's `plan` folds in its kernel's launch,
    as its trailing programs on the kernel's `warps`. The window must have the state's `L` layers, slots and ring
    dims."""
    if conv is None:
        return None
    window = ConvWindow(*conv, channels=CONV_CONFIG[0] // CONV_CONFIG[1] * warps)
    if window.device != plan.device:
        fail(f"all tensors must be on one device: conv is on {window.device}, expected {plan.device}")
    if (window.L, window.S, window.nbuf, window.hist) != (L, plan.S, plan.nbuf, plan.hist):
        fail(f"conv: the window's layers, slots and ring dims {(window.L, window.S, window.nbuf, window.hist)} "
             f"differ from the state's {(L, plan.S, plan.nbuf, plan.hist)}")
    return window


def with_window(window: ConvWindow | None, programs: int, nb: int, args: tuple, constexprs: dict) -> tuple[int, tuple, dict]:
    """`(grid, args, constexprs)` of a state kernel's launch over `programs` state programs with its trailing
    conv arguments: the window's programs after the state's when it folds one."""
    if window is None:
        return programs, (*args, *_NO_WINDOW, programs), constexprs
    return programs + window.programs(nb), (*args, *window.args, programs), {**constexprs, "CONV": True, **window.constexprs}


class ConvFoldPlan(FoldPlan):
    """The conv-window fold of a bound `[L, S, C, K-1]` window and its conv-input ring, alone (a kind without an
    SSM state); `config` = `(channels per program, num_warps)`."""

    def __init__(self, conv, conv_in, *, config: tuple[int, int] | None = None):
        bc, self.warps = config or CONV_CONFIG
        window = ConvWindow(conv, conv_in, bc)
        super().__init__(window.device, window.S, window.nbuf, window.hist)
        self.window, self.empty = window, window.empty

    def build(self, nb: int) -> tuple[Launch, ...]:
        w = self.window
        return (Launch(_conv_kernel, w.programs(nb), (None, None, None, nb, *w.args), (0, 1, 2), w.constexprs,
                       num_warps=self.warps),)


def replay_fold_conv_triton(conv, conv_in, slots, buf, count, *, check: bool = True, config: tuple[int, int] | None = None) -> None:
    """See `reference.replay_fold_conv_reference` and `ConvFoldPlan`."""
    PLANS.run("fold_conv", (conv, conv_in), config, _plan, FOLD_INDICES, (slots, buf, count), check)


def _plan(tensors: tuple, config) -> ConvFoldPlan:
    return ConvFoldPlan(*tensors, config=config)
