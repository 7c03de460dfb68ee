"""Host cost of a repeated one-shot call against a plan call, on one GPU (issue 33; results/kernel_experiments.md).

Prints, three times each in one process: torch's and `copy_slots`' host cost per call as `mcache bench` records it
(`meta.host_reference`), then, per fold, the host cost of a plan call and of the same call through the one-shot function
with `check=False` (its plan cached after the first call), the Triton one directly and the public one of
`mcache.kernels`, on the geometry of `scripts/fold_sweep.py` at 4 ring tokens, batch 8. Timed as `mcache bench` times
host cost (`bench.timing.host_time`: the GPU kept busy, the loop only enqueues).

    python scripts/host_probe.py
"""

from __future__ import annotations

import torch
from fold_sweep import make

from mcache import kernels as K
from mcache.bench.timing import host_time, torch_host_reference
from mcache.kernels.replay_fold.gdn import GdnFoldPlan, replay_fold_gdn_triton
from mcache.kernels.replay_fold.mamba2 import Mamba2FoldPlan, replay_fold_mamba2_triton

FOLDS = [("gdn", torch.float32, GdnFoldPlan, replay_fold_gdn_triton, K.replay_fold_gdn),
         ("gdn", torch.bfloat16, GdnFoldPlan, replay_fold_gdn_triton, K.replay_fold_gdn),
         ("mamba2", torch.bfloat16, Mamba2FoldPlan, replay_fold_mamba2_triton, K.replay_fold_mamba2)]


def main() -> None:
    dev = torch.device("cuda")
    for _ in range(3):
        print("copy", torch_host_reference(dev), flush=True)
    gen = torch.Generator(device="cuda").manual_seed(0)
    slots, buf = torch.arange(8, device=dev), torch.zeros(8, dtype=torch.int64, device=dev)
    count = torch.full((8,), 4, device=dev)
    for kind, dtype, plan_cls, oneshot, public in FOLDS:
        tensors = make(kind, dtype, 4, 80, gen)
        plan = plan_cls(*tensors)
        for _ in range(3):
            p = host_time(lambda plan=plan: plan(slots, buf, count), dev).median_us
            o = host_time(lambda t=tensors, f=oneshot: f(*t, slots, buf, count, check=False), dev).median_us
            u = host_time(lambda t=tensors, f=public: f(*t, slots, buf, count, check=False), dev).median_us
            print(f"fold {kind} {dtype}: plan {p:.2f} one-shot {o:.2f} ({o / p:.2f}x) public {u:.2f} ({u / p:.2f}x)",
                  flush=True)


if __name__ == "__main__":
    main()
