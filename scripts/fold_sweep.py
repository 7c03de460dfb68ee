"""Time the GatedDeltaNet / KDA / Mamba2 fold forms and configs on one GPU (issue 33; results/kernel_experiments.md).

Qwen3-Next-80B-A3B's GatedDeltaNet geometry (36 layers x `[32, 128, 128]`, 16 k-heads) or Kimi-Linear's KDA (20 layers
x `[32, 128, 128]`), k and v rings in bf16, g and beta in float32, as `mcache bench` allocates them; or Nemotron-H-8B's
Mamba2 (24 layers x `[128, 64, 128]`, 8 groups), x and B rings in bf16, dt and dA in float32. Each variant is
checked against the float64 torch reference first, then timed as `mcache bench` times (graph replays, L2 flushed);
`% roof` is the fold's bytes (state read and written, the ring tokens read) at the ceiling of a 4 GiB copy in the same
process, `% match` against a copy of the same bytes. Prints one line per cell and writes them as JSON lines to `--out`.

    python scripts/fold_sweep.py --kind gdn --dtype float32 --ring 4 --variants step:16x1,step:32x2,chunk
"""

from __future__ import annotations

import argparse
import json

import torch

from mcache.bench.timing import copy_time, time_op
from mcache.kernels.replay_fold import reference
from mcache.kernels.replay_fold.gdn import GdnFoldPlan
from mcache.kernels.replay_fold.kda import KdaFoldPlan
from mcache.kernels.replay_fold.mamba2 import Mamba2FoldPlan

GEOMETRY = {"gdn": (36, 32, 16, 128, 128), "kda": (20, 32, 32, 128, 128), "mamba2": (24, 128, 8, 64, 128)}  # L, H, Hk|G, V|P, K|N


def make(kind: str, dtype: torch.dtype, ring: int, slots: int, gen: torch.Generator):
    L, H, Hk, V, K = GEOMETRY[kind]
    dev = "cuda"
    ssm = torch.empty(L, slots, H, V, K, dtype=dtype, device=dev).uniform_(-1, 1, generator=gen)
    if kind == "mamba2":  # x [.., H, P], B [.., G, N], dt, dA [.., H]
        x = torch.empty(L, slots, 2, ring, H, V, device=dev).uniform_(-1, 1, generator=gen)
        B = torch.empty(L, slots, 2, ring, Hk, K, device=dev).uniform_(-1, 1, generator=gen)
        dt = torch.empty(L, slots, 2, ring, H, device=dev).uniform_(0.01, 0.2, generator=gen)
        dA = torch.empty(L, slots, 2, ring, H, device=dev).uniform_(-0.5, -0.01, generator=gen)
        return ssm, x.bfloat16(), B.bfloat16(), dt, dA
    k = torch.nn.functional.normalize(torch.empty(L, slots, 2, ring, Hk, K, device=dev).uniform_(-1, 1, generator=gen), dim=-1)
    v = torch.empty(L, slots, 2, ring, H, V, device=dev).uniform_(-1, 1, generator=gen)
    gshape = (H, K) if kind == "kda" else (H,)
    g = torch.empty(L, slots, 2, ring, *gshape, device=dev).uniform_(-0.5, -0.01, generator=gen)
    beta = torch.empty(L, slots, 2, ring, H, device=dev).uniform_(0.05, 1.0, generator=gen)
    return ssm, k.bfloat16(), v.bfloat16(), g, beta


def plan_of(kind: str, variant: str, tensors):
    """`step:BVxW[:sN]` (stepping; `:sN` the token loop's pipeline stages), `chunk[:BVxW]` (GatedDeltaNet's
    chunked default form), `tma`, `pointer`; Mamba2: `dot[:BPxWxRBxSTAGES]` (tensor-core product), `fma[:BPxWxRBxSTAGES]` (CUDA cores)."""
    name, *rest = variant.split(":")
    config = tuple(int(x) for x in rest[0].split("x")) if rest and "x" in rest[0] else None
    if kind == "mamba2":
        return Mamba2FoldPlan(*tensors, config=config, form=name)
    if kind == "kda":
        plan = KdaFoldPlan(*tensors, config=config)
    else:
        form = {"step": "step", "tma": "tma", "pointer": "pointer"}.get(name)
        if name == "chunk":
            form = "tma" if tensors[0].dtype == torch.bfloat16 else "pointer"
        plan = GdnFoldPlan(*tensors, config=config, form=form)
    for opt in rest[1:] if config else rest:
        if not opt.startswith("s"):
            raise SystemExit(f"unknown option {opt!r} in {variant!r}")
        plan.stepper.constexprs["STAGES"] = int(opt[1:])
    return plan


def fold_bytes(ssm, rings, batch: int, ring: int) -> int:
    state = ssm[0, 0].numel() * ssm.element_size() * ssm.shape[0] * batch * 2
    return state + sum(r[0, 0, 0, 0].numel() * r.element_size() * r.shape[0] * batch * ring for r in rings)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kind", default="gdn")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--ring", type=int, default=4)
    ap.add_argument("--batches", default="1,8,32,64")
    ap.add_argument("--variants", required=True)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--slots", type=int, default=None, help="slots in the pools (default: the largest batch + 16)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    dtype = getattr(torch, a.dtype)
    batches = [int(b) for b in a.batches.split(",")]
    gen = torch.Generator(device="cuda").manual_seed(0)
    slots = a.slots or max(batches) + 16
    ssm, *rings = make(a.kind, dtype, a.ring, slots, gen)
    ceiling = copy_time(8 << 30, ssm.device, reps=a.reps).median_us / (8 << 30)  # µs per byte moved
    ref = getattr(reference, f"replay_fold_{a.kind}_reference")
    out = open(a.out, "a") if a.out else None  # noqa: SIM115
    for variant in a.variants.split(","):
        plan = plan_of(a.kind, variant, (ssm, *rings))
        # Correctness on 3 requests (full ring, a partial one, an empty one) against the float64 reference.
        sl = torch.tensor([0, 5, slots - 1], device="cuda")
        bf = torch.tensor([1, 0, 1], device="cuda")
        ct = torch.tensor([a.ring, max(1, a.ring - 1), 0], device="cuda")
        before = ssm.clone()
        expect = ssm.double()
        ref(expect, *(r.double() for r in rings), sl, bf, ct)
        plan(sl, bf, ct)
        got = ssm[:, sl[:2]].double()
        want = expect[:, sl[:2]]
        err = ((got - want).norm() / want.norm()).item()
        ok = torch.equal(ssm[:, sl[2]], before[:, sl[2]])
        ssm.copy_(before)
        del expect, before
        for nb in batches:
            s = torch.randperm(slots, generator=torch.Generator().manual_seed(nb))[:nb].cuda()
            b = torch.randint(0, 2, (nb,), generator=torch.Generator().manual_seed(nb + 1)).cuda()
            c = torch.full((nb,), a.ring, device="cuda")
            t = time_op(lambda plan=plan, s=s, b=b, c=c: plan(s, b, c), ssm.device, reps=a.reps).median_us
            nbytes = fold_bytes(ssm, rings, nb, a.ring)
            match = copy_time(nbytes, ssm.device, reps=a.reps).median_us
            row = dict(kind=a.kind, dtype=a.dtype, ring=a.ring, variant=variant, slots=slots, batch=nb, us=round(t, 1),
                       roof=round(100 * nbytes * ceiling / t, 1), match=round(100 * match / t, 1), err=err, untouched=ok)
            print(json.dumps(row), flush=True)
            if out:
                out.write(json.dumps(row) + "\n")
        del plan
    if out:
        out.close()


if __name__ == "__main__":
    main()
