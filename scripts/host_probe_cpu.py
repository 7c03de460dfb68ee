"""Host cost of a repeated one-shot call against a plan call, on a machine without a GPU (issue 33).

What `scripts/host_probe.py` measures on the device, with the launches stubbed: CPU tensors under Triton's
interpreter, each launch's first call replaced by the bound launch's own closure (`_launch._closure`: the stream
read, the per-call addresses written into its argument list, the launcher called: here a no-op) and never
interpreted, so only the Python path to the launch is timed. Prints the best of 9 rounds of 100,000 calls (µs per
call) for `copy_slots` between two pools and within one, and the float32 GatedDeltaNet and bf16 Mamba2 folds (4 ring
tokens, batch 4). Run it against another tree with `PYTHONPATH=<tree>`. The device host runs this path 2-2.5x slower,
and its plan call adds the driver's launch (about 4 µs there).

    python scripts/host_probe_cpu.py
"""

from __future__ import annotations

import os
import time

os.environ["TRITON_INTERPRET"] = "1"  # before any kernel module is imported

import torch  # noqa: E402

from mcache.kernels import _launch  # noqa: E402
from mcache.kernels.copy_slots.kernel import CopySlotsPlan, copy_slots_triton  # noqa: E402
from mcache.kernels.replay_fold.gdn import GdnFoldPlan, replay_fold_gdn_triton  # noqa: E402
from mcache.kernels.replay_fold.mamba2 import Mamba2FoldPlan, replay_fold_mamba2_triton  # noqa: E402


def _stub(launch, *values) -> None:
    """`Launch._first` replaced: the launch becomes the bound form's own closure (`_launch._closure`) over a no-op."""
    launch.run = _launch._closure([0] * 40, tuple(range(30, 30 + len(values))), _noop, 0)


def _noop(*args) -> None:
    pass


def best(fn, calls: int = 100_000, rounds: int = 9) -> float:
    """The fastest round's µs per call."""
    out = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        out.append((time.perf_counter() - start) / calls * 1e6)
    return min(out)


def fold_tensors(kind: str, dtype, gen, L=2, S=8, H=2, Hk=1, V=16, K=16, ring=4):
    ssm = torch.empty(L, S, H, V, K, dtype=dtype).uniform_(-1, 1, generator=gen)
    lead = (L, S, 2, ring)
    if kind == "mamba2":  # x, B, dt, dA
        return (ssm, torch.randn(*lead, H, V, generator=gen).bfloat16(), torch.randn(*lead, Hk, K, generator=gen).bfloat16(),
                torch.rand(*lead, H, generator=gen), -torch.rand(*lead, H, generator=gen))  # fmt: skip
    k = torch.nn.functional.normalize(torch.randn(*lead, Hk, K, generator=gen), dim=-1).bfloat16()
    v = torch.randn(*lead, H, V, generator=gen).bfloat16()
    return ssm, k, v, -torch.rand(*lead, H, generator=gen), torch.rand(*lead, H, generator=gen)


def main() -> None:
    _launch.Launch._first = _stub
    torch._C._cuda_getCurrentRawStream = abs  # a C function, as the stream query is (a CPU build has none)
    gen = torch.Generator().manual_seed(0)
    pool, other = torch.ones(2, 64, 128), torch.ones(2, 64, 128)
    src_slots, dst_slots = torch.arange(8), torch.arange(8, 16)
    rows = []
    for name, dst in (("copy_slots, two pools", other), ("copy_slots, one pool", pool)):
        plan = CopySlotsPlan([(pool, dst)])
        rows.append((name, lambda p=plan: p(src_slots, dst_slots),
                     lambda d=dst: copy_slots_triton(pool, src_slots, d, dst_slots, check=False)))  # fmt: skip
    slots, buf, count = torch.arange(4), torch.zeros(4, dtype=torch.int64), torch.full((4,), 4)
    folds = (("fold gdn float32", "gdn", torch.float32, GdnFoldPlan, replay_fold_gdn_triton),
             ("fold mamba2 bfloat16", "mamba2", torch.bfloat16, Mamba2FoldPlan, replay_fold_mamba2_triton))
    for name, kind, dtype, plan_cls, oneshot in folds:
        tensors = fold_tensors(kind, dtype, gen)
        plan = plan_cls(*tensors)
        rows.append((name, lambda p=plan: p(slots, buf, count),
                     lambda t=tensors, f=oneshot: f(*t, slots, buf, count, check=False)))  # fmt: skip
    for name, plan_call, oneshot_call in rows:
        plan_call(), oneshot_call()  # the first calls build and stub
        p, o = best(plan_call), best(oneshot_call)
        print(f"{name:22s} plan {p:.2f}  one-shot {o:.2f}  ({o - p:+.2f}, {o / p:.2f}x)", flush=True)


if __name__ == "__main__":
    main()
