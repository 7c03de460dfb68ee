"""Time the stepped GatedDeltaNet fold with and without the conv window in its launch, for two row counts (issue 33).

Qwen3-Next-80B-A3B's geometry as `scripts/fold_sweep.py` (float32 state, 4 ring tokens, an 8192-channel bf16 window of
width 3); prints the median µs of each variant at batch 8 and 64 (graph replays, L2 flushed). Run from the repo root:

    python scripts/fold_window_probe.py
"""

from __future__ import annotations

import json
import sys

import torch

sys.path.insert(0, "scripts")
from fold_sweep import make  # noqa: E402

from mcache.bench.timing import time_op  # noqa: E402
from mcache.kernels.replay_fold.conv import ConvFoldPlan  # noqa: E402
from mcache.kernels.replay_fold.gdn import GdnFoldPlan  # noqa: E402


def main() -> None:
    gen = torch.Generator(device="cuda").manual_seed(0)
    slots = 80
    ssm, k, v, g, beta = make("gdn", torch.float32, 4, slots, gen)
    L = ssm.shape[0]
    win = torch.empty(L, slots, 8192, 3, device="cuda").uniform_(-1, 1, generator=gen).bfloat16()
    cin = torch.empty(L, slots, 2, 4, 8192, device="cuda").uniform_(-1, 1, generator=gen).bfloat16()
    rings = (k, v, g, beta)
    for nb in (8, 64):
        s = torch.randperm(slots)[:nb].cuda()
        b = torch.randint(0, 2, (nb,)).cuda()
        c = torch.full((nb,), 4, device="cuda")
        variants = [("conv-alone", ConvFoldPlan(win, cin)),
                    ("step8x1", GdnFoldPlan(ssm, *rings, form="step", config=(8, 1))),
                    ("step8x1+win", GdnFoldPlan(ssm, *rings, form="step", config=(8, 1), conv=(win, cin))),
                    ("step16x1", GdnFoldPlan(ssm, *rings, form="step", config=(16, 1))),
                    ("step16x1+win", GdnFoldPlan(ssm, *rings, form="step", config=(16, 1), conv=(win, cin))),
                    ("step8x2+win", GdnFoldPlan(ssm, *rings, form="step", config=(8, 2), conv=(win, cin))),
                    ("pointer+win", GdnFoldPlan(ssm, *rings, form="pointer", conv=(win, cin)))]
        res = {name: round(time_op(lambda p=plan, s=s, b=b, c=c: p(s, b, c), ssm.device, reps=20).median_us, 1) for name, plan in variants}
        print(nb, json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
