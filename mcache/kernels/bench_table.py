"""Kernel benchmark table on one CUDA GPU: each cache op against the size-matched contiguous copy.

    PYTHONPATH=. python3 -m mcache.kernels.bench_table --out results [--sweep] [--commit HASH]

For the Nemotron-H-8B and Qwen3-Next-80B state shapes (built here directly: this script must run where
msgspec is absent) at batch 1, 8, 32, 64 it times every op through its public function (`check=False`: no
host-side index check, which would synchronize), a torch-indexing baseline of the same op, and a plain
contiguous `dst.copy_(src)` that moves the same number of bytes (read + write); a 4 GiB copy gives the
ceiling. Bytes are the fewest the op must read plus write.

Timing: CUDA events around every call, median of `--reps`; the host runs ahead of the GPU (a `_sleep`
kernel first) so launch overhead on the host is not timed, only the GPU's own launch latency. Inputs rotate
between calls (other slots, other ring buffers, other copy buffers) so no call finds its data in L2, and
no input is zero. Each op's output is checked against the baseline before it is timed; a row that disagrees
is not written. Writes `kernels_h200.md` and `kernels_h200.json` under `--out` (`kernels_h200_slot.*` with
`--layout slot`: slot-major pools).
"""

from __future__ import annotations

import argparse
import math
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

import mcache.kernels as K
from mcache.bench.ops import FOLD_INPUTS, FOLDS
from mcache.core.atomic import write_atomic
from mcache.core.json_text import json_text

MODELS = {
    # Nemotron-H-8B, TP1: 24 Mamba2 layers; heads 128, head dim 64, 8 groups, state 128, conv K=4.
    "Nemotron-H-8B": dict(kind="mamba2", L=24, H=128, P=64, N=128, G=8, C=128 * 64 + 2 * 8 * 128, KM1=3),
    # Qwen3-Next-80B-A3B, TP1: 36 GatedDeltaNet layers; 32 value heads, 16 key heads, head dims 128.
    "Qwen3-Next-80B": dict(kind="gdn", L=36, H=32, V=128, K=128, Hk=16, C=2 * 16 * 128 + 32 * 128, KM1=3),
}
SLOTS = 80  # 64 requests + reserved slots
ROWS, T = 64, 4  # intermediate-state rows and draft positions (3 drafts + 1)
HIST = 16  # replay ring length
ROT = 6  # input sets rotated between timed calls
SLEEP_CYCLES = 40_000_000  # ~20 ms at 2 GHz: the host enqueues every timed call before the GPU reaches it
DEV = "cuda"  # "cpu" in --smoke runs (tiny shapes, torch references, wall clock): checks the plumbing only
SMOKE_MODELS = {
    "Nemotron-H-8B": dict(kind="mamba2", L=2, H=4, P=8, N=16, G=2, C=8 * 4 + 2 * 2 * 16, KM1=3),
    "Qwen3-Next-80B": dict(kind="gdn", L=3, H=4, V=16, K=16, Hk=2, C=2 * 2 * 16 + 4 * 16, KM1=3),
}


def timed(fns, reps: int, warmup: int = 3) -> dict:
    """Median / p10 / p90 microseconds of GPU time per call, cycling through `fns`."""
    for i in range(warmup):
        fns[i % len(fns)]()
    if DEV == "cpu":
        us = []
        for i in range(reps):
            t0 = time.perf_counter()
            fns[i % len(fns)]()
            us.append((time.perf_counter() - t0) * 1e6)
        return {"median": statistics.median(us), "p10": min(us), "p90": max(us)}
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    torch.cuda._sleep(SLEEP_CYCLES)
    for i in range(reps):
        starts[i].record()
        fns[i % len(fns)]()
        ends[i].record()
    torch.cuda.synchronize()
    us = sorted(s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends, strict=True))
    q = statistics.quantiles(us, n=10, method="inclusive") if len(us) > 1 else [us[0]] * 9
    return {"median": statistics.median(us), "p10": q[0], "p90": q[-1]}


class CopyRef:
    """Contiguous device-to-device copies moving `nbytes` (read + write), rotated past L2; cached by size."""

    def __init__(self, reps: int):
        self.reps = reps
        self.cache: dict[int, dict] = {}

    def __call__(self, nbytes: int) -> dict:
        half = max(16, (nbytes // 2) // 16 * 16)
        if half not in self.cache:
            nrot = max(2, math.ceil(256e6 / half)) if DEV == "cuda" else 2
            src = torch.randint(1, 127, (nrot, half), dtype=torch.uint8, device=DEV)
            dst = torch.empty_like(src)
            fns = [lambda i=i: dst[i].copy_(src[i]) for i in range(nrot)]
            self.cache[half] = timed(fns, self.reps)
            del src, dst
        return self.cache[half]


def rand(*shape, dtype, lo=None, hi=None):
    t = torch.randn(*shape, device=DEV) if lo is None else torch.empty(*shape, device=DEV).uniform_(lo, hi)
    return t.to(dtype)


def slot_sets(nb: int, seed: int = 0) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randperm(SLOTS, generator=g)[:nb].to(DEV) for _ in range(ROT)]


# --- ops: each returns (kernel fns, baseline fns, bytes, check() -> (ok, note)) -----------------------------


def op_reset(m, pools, nb):
    ssm, conv = pools["ssm"], pools["conv"]
    sets = slot_sets(nb, 1)
    kern = [lambda s=s: K.reset_slots([ssm, conv], s, check=False) for s in sets]

    def base_one(s):
        ssm[:, s] = 0
        conv[:, s] = 0

    base = [lambda s=s: base_one(s) for s in sets]
    nbytes = nb * m["L"] * (ssm[0, 0].nbytes + conv[0, 0].nbytes)

    def check():
        s = sets[0]
        ssm[:, s] = 1.0
        conv[:, s] = 1.0
        other = [i for i in range(SLOTS) if i not in set(s.tolist())][0]
        keep = ssm[:, other].clone()
        K.reset_slots([ssm, conv], s, check=True)
        ok = bool((ssm[:, s] == 0).all()) and bool((conv[:, s] == 0).all()) and torch.equal(ssm[:, other], keep)
        return ok, "bitwise"

    return kern, base, nbytes, check


def op_copy(m, pools, nb):
    src, dst = pools["ssm"], pools["snap"]
    sets = list(zip(slot_sets(nb, 2), slot_sets(nb, 3), strict=True))
    kern = [lambda a=a, b=b: K.copy_slots(src, a, dst, b, check=False) for a, b in sets]

    def base_one(a, b):
        dst[:, b] = src[:, a]

    base = [lambda a=a, b=b: base_one(a, b) for a, b in sets]

    def check():
        a, b = sets[0]
        dst[:, b] = float("nan")
        K.copy_slots(src, a, dst, b)
        return torch.equal(dst[:, b], src[:, a]), "bitwise"

    return kern, base, 2 * nb * m["L"] * src[0, 0].nbytes, check


def op_commit(m, pools, nb):
    pool, inter = pools["ssm"], pools["inter"]
    g = torch.Generator().manual_seed(4)
    sets = [
        (s, torch.randperm(ROWS, generator=g)[:nb].to(DEV), torch.randint(1, T + 1, (nb,), generator=g).to(DEV)) for s in slot_sets(nb, 4)
    ]
    kern = [lambda a=a: K.commit_intermediate(pool, inter, *a, check=False) for a in sets]

    def base_one(s, r, acc):
        pool[:, s] = inter[:, r, acc - 1]

    base = [lambda a=a: base_one(*a) for a in sets]

    def check():
        s, r, acc = sets[0]
        pool[:, s] = float("nan")
        K.commit_intermediate(pool, inter, s, r, acc)
        return torch.equal(pool[:, s], inter[:, r, acc - 1]), "bitwise"

    return kern, base, 2 * nb * m["L"] * pool[0, 0].nbytes, check


def _half_heads(m, pool):
    # A TP2 receiver's share: the first half of the heads of the flattened per-layer SSM state.
    per_head = pool[0, 0].numel() // m["H"]
    return [(0, (m["H"] // 2) * per_head)]


def op_pack(m, pools, nb):
    pool = pools["ssm"]
    ranges = _half_heads(m, pool)
    n = ranges[0][1]
    outs = [torch.empty(nb, m["L"], n, dtype=pool.dtype, device=DEV) for _ in range(2)]
    sets = slot_sets(nb, 5)
    kern = [lambda i=i, s=s: K.pack(pool, s, ranges, outs[i % 2], check=False) for i, s in enumerate(sets)]
    flat = pool.flatten(2)

    def base_one(i, s):
        outs[i % 2][:] = flat[:, s, :n].transpose(0, 1)

    base = [lambda i=i, s=s: base_one(i, s) for i, s in enumerate(sets)]

    def check():
        outs[0].fill_(float("nan"))
        K.pack(pool, sets[0], ranges, outs[0])
        return torch.equal(outs[0], flat[:, sets[0], :n].transpose(0, 1)), "bitwise"

    return kern, base, 2 * nb * m["L"] * n * pool.element_size(), check


def op_unpack(m, pools, nb):
    pool = pools["ssm"]
    ranges = _half_heads(m, pool)
    n = ranges[0][1]
    packed = [rand(nb, m["L"], n, dtype=pool.dtype) for _ in range(2)]
    sets = slot_sets(nb, 6)
    kern = [lambda i=i, s=s: K.unpack(packed[i % 2], pool, s, ranges, check=False) for i, s in enumerate(sets)]
    flat = pool.flatten(2)

    def base_one(i, s):
        flat[:, s, :n] = packed[i % 2].transpose(0, 1)

    base = [lambda i=i, s=s: base_one(i, s) for i, s in enumerate(sets)]

    def check():
        flat[:, sets[0], :n] = float("nan")
        K.unpack(packed[0], pool, sets[0], ranges)
        return torch.equal(flat[:, sets[0], :n], packed[0].transpose(0, 1)), "bitwise"

    return kern, base, 2 * nb * m["L"] * n * pool.element_size(), check


def _fold_sets(nb):
    g = torch.Generator().manual_seed(7)
    return [(s, torch.randint(0, 2, (nb,), generator=g).to(DEV)) for s in slot_sets(nb, 7)]


def _fold_baseline_mamba2(m, pools, s, r):
    ssm, ring = pools["ssm"], pools["ring"]
    h = ssm[:, s].float()
    x, B, dt, dA = (ring[k][:, s, r].float() for k in ("x", "B", "dt", "dA"))  # [L, B, Hist, ...]
    B = B.repeat_interleave(m["H"] // m["G"], dim=3)
    for t in range(HIST):
        h = torch.exp(dA[:, :, t])[..., None, None] * h + (dt[:, :, t, :, None] * x[:, :, t])[..., None] * B[:, :, t, :, None, :]
    ssm[:, s] = h.to(ssm.dtype)


def _fold_baseline_gdn(m, pools, s, r):
    ssm, ring = pools["ssm"], pools["ring"]
    S = ssm[:, s].float()
    k, v, g, beta = (ring[n][:, s, r].float() for n in ("k", "v", "g", "beta"))
    k = k.repeat_interleave(m["H"] // m["Hk"], dim=3)
    for t in range(HIST):
        S = torch.exp(g[:, :, t])[..., None, None] * S
        err = v[:, :, t] - torch.einsum("lbhvk,lbhk->lbhv", S, k[:, :, t])
        S = S + beta[:, :, t, :, None, None] * err[..., None] * k[:, :, t, :, None, :]
    ssm[:, s] = S.to(ssm.dtype)


def op_fold(m, pools, nb):
    ssm, ring = pools["ssm"], pools["ring"]
    sets = _fold_sets(nb)
    count = torch.full((nb,), HIST, dtype=torch.int64, device=DEV)
    args = [ring[k] for k in FOLD_INPUTS[m["kind"]]]
    fn = FOLDS[m["kind"]]
    base_fn = _fold_baseline_mamba2 if m["kind"] == "mamba2" else _fold_baseline_gdn
    kern = [lambda s=s, r=r: fn(ssm, *args, s, r, count, check=False) for s, r in sets]
    base = [lambda s=s, r=r: base_fn(m, pools, s, r) for s, r in sets]
    tok_bytes = sum(t[0, 0, 0, 0].nbytes for t in args)
    nbytes = nb * m["L"] * (2 * ssm[0, 0].nbytes + HIST * tok_bytes)

    def check():
        s, r = sets[0]
        h0 = ssm[:, s].clone()
        base_fn(m, pools, s, r)
        want = ssm[:, s].float()
        ssm[:, s] = h0
        fn(ssm, *args, s, r, count)
        got = ssm[:, s].float()
        err = ((got - want).norm() / want.norm()).item()
        tol = 2e-5 if ssm.dtype == torch.float32 else 1e-2
        return err < tol, f"rel err {err:.1e}"

    return kern, base, nbytes, check


def op_fold_conv(m, pools, nb):
    conv, cin = pools["conv"], pools["ring"]["conv_in"]
    sets = _fold_sets(nb)
    count = torch.full((nb,), HIST, dtype=torch.int64, device=DEV)
    kern = [lambda s=s, r=r: K.replay_fold_conv(conv, cin, s, r, count, check=False) for s, r in sets]

    def base_one(s, r):
        seq = torch.cat([conv[:, s], cin[:, s, r].transpose(-1, -2)], dim=-1)
        conv[:, s] = seq[..., -m["KM1"] :]

    base = [lambda s=s, r=r: base_one(s, r) for s, r in sets]
    nbytes = nb * m["L"] * 2 * conv[0, 0].nbytes  # write K-1 columns, read the last K-1 tokens

    def check():
        s, r = sets[0]
        want = cin[:, s, r, HIST - m["KM1"] :].transpose(-1, -2).clone()
        conv[:, s] = float("nan")
        K.replay_fold_conv(conv, cin, s, r, count)
        return torch.equal(conv[:, s], want), "bitwise"

    return kern, base, nbytes, check


def op_index(m, pools, nb):
    vidx = pools["version"]
    g = torch.Generator().manual_seed(8)
    sets = [(s, torch.randint(0, T + 1, (nb,), generator=g).to(DEV)) for s in slot_sets(nb, 8)]
    kern = [lambda s=s, a=a: K.commit_index(vidx, s, a, T + 1, check=False) for s, a in sets]

    def base_one(s, a):
        vidx[s] = ((vidx[s].long() + a) % (T + 1)).int()

    base = [lambda s=s, a=a: base_one(s, a) for s, a in sets]

    def check():
        s, a = sets[0]
        want = (vidx[s].long() + a) % (T + 1)
        K.commit_index(vidx, s, a, T + 1)
        return torch.equal(vidx[s].long(), want), "exact"

    return kern, base, nb * (8 + 8 + 4 + 4), check


OPS = {
    "reset_slots (ssm+conv)": op_reset,
    "copy_slots (ssm)": op_copy,
    "commit_intermediate (ssm)": op_commit,
    "pack (ssm, half the heads)": op_pack,
    "unpack (ssm, half the heads)": op_unpack,
    "replay_fold (ssm, 16 tokens)": op_fold,
    "replay_fold_conv (16 tokens)": op_fold_conv,
    "commit_index": op_index,
}


def build_pools(m, ssm_dtype, conv_dtype, layout: str, need_inter: bool = True):
    L = m["L"]
    st = (m["H"], m["P"], m["N"]) if m["kind"] == "mamba2" else (m["H"], m["V"], m["K"])

    def pool(shape_tail, dtype):
        if layout == "layer":
            return rand(L, SLOTS, *shape_tail, dtype=dtype)
        return rand(SLOTS, L, *shape_tail, dtype=dtype).transpose(0, 1)

    p = {"ssm": pool(st, ssm_dtype), "conv": pool((m["C"], m["KM1"]), conv_dtype), "snap": pool(st, ssm_dtype)}
    if need_inter:
        p["inter"] = rand(L, ROWS, T, *st, dtype=ssm_dtype)
    ring = {"conv_in": rand(L, SLOTS, 2, HIST, m["C"], dtype=conv_dtype)}
    md = conv_dtype
    if m["kind"] == "mamba2":
        ring["x"] = rand(L, SLOTS, 2, HIST, m["H"], m["P"], dtype=md)
        ring["B"] = rand(L, SLOTS, 2, HIST, m["G"], m["N"], dtype=md)
        ring["dt"] = rand(L, SLOTS, 2, HIST, m["H"], dtype=torch.float32, lo=0.001, hi=0.1)
        ring["dA"] = -ring["dt"] * rand(L, SLOTS, 2, HIST, m["H"], dtype=torch.float32, lo=0.5, hi=4.0)
    else:
        ring["k"] = torch.nn.functional.normalize(rand(L, SLOTS, 2, HIST, m["Hk"], m["K"], dtype=torch.float32), dim=-1)
        ring["k"] = ring["k"].to(md)
        ring["v"] = rand(L, SLOTS, 2, HIST, m["H"], m["V"], dtype=md)
        ring["g"] = rand(L, SLOTS, 2, HIST, m["H"], dtype=torch.float32, lo=-0.5, hi=-0.01)
        ring["beta"] = rand(L, SLOTS, 2, HIST, m["H"], dtype=md, lo=0.05, hi=0.95)
    p["ring"] = ring
    p["version"] = torch.randint(0, T + 1, (SLOTS,), dtype=torch.int32, device=DEV)
    return p


def meta(args, ceiling) -> dict:
    import triton

    info = {"gpu": "cpu (smoke run)"}
    if DEV == "cuda":
        p = torch.cuda.get_device_properties(0)
        info = {
            "gpu": p.name,
            "gpu_uuid": str(getattr(p, "uuid", "")),
            "gpu_memory_bytes": p.total_memory,
            "sm_count": p.multi_processor_count,
            "driver": _driver(),
        }
    return {
        **info,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "git_commit": args.commit,
        "timer": f"CUDA events per call, host enqueued ahead (no host launch overhead), inputs rotated past L2, median of {args.reps}",
        "ceiling": ceiling,
        "pool_layout": args.layout,
        "check": "public op with check=False (no host index-range check)",
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
    }


def _driver() -> str:
    import subprocess

    try:
        res = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm,clocks.max.mem", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20,
        )  # fmt: skip
        return res.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def fmt_bytes(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.1f} KiB" if n >= 1024 else f"{n} B"


def run_table(args, copyref, ceiling_gbps, rows):
    for name, m in MODELS.items():
        for ssm_dtype in args.ssm_dtypes[name]:
            pools = build_pools(m, ssm_dtype, torch.bfloat16, args.layout)
            st = pools["ssm"][0, 0]
            shape = f"{tuple(st.shape)} {str(ssm_dtype).split('.')[-1]}"
            for opname, op in OPS.items():
                for nb in args.batches:
                    kern, base, nbytes, check = op(m, pools, nb)
                    ok, note = check()
                    if not ok:
                        print(f"!! {name} {opname} batch {nb}: output disagrees with the baseline ({note})", flush=True)
                        continue
                    tk = timed(kern, args.reps)
                    slow = "fold" in opname and "conv" not in opname
                    tb = timed(base, max(3, args.reps // 6) if slow else args.reps)
                    row = {
                        "model": name, "op": opname, "state": label(opname, shape, m),
                        "layout": args.layout, "batch": nb, "bytes": nbytes,
                        "kernel_us": tk["median"], "kernel_p10_us": tk["p10"], "kernel_p90_us": tk["p90"],
                        "gbps": nbytes / tk["median"] / 1e3, "baseline_us": tb["median"],
                        "speedup": tb["median"] / tk["median"], "check": note,
                    }  # fmt: skip
                    if opname != "commit_index":
                        tc = timed_copy(copyref, nbytes)
                        row.update(
                            copy_us=tc,
                            pct_ceiling=100 * row["gbps"] / ceiling_gbps,
                            pct_matched=100 * tc / tk["median"],
                        )
                    rows.append(row)
                    print(short(row), flush=True)
            del pools
            torch.cuda.empty_cache()


def label(opname: str, shape: str, m) -> str:
    conv = f"conv ({m['C']}, {m['KM1']}) bfloat16"
    return conv if opname.startswith("replay_fold_conv") else f"{shape} + {conv}" if "reset" in opname else shape


def timed_copy(copyref, nbytes):
    return copyref(nbytes)["median"]


def short(r):
    extra = f" {r['pct_ceiling']:5.1f}% ceil {r['pct_matched']:5.1f}% matched" if "pct_matched" in r else ""
    return (
        f"{r['model']:15s} {r['op']:30s} b={r['batch']:<3d} {fmt_bytes(r['bytes']):>11s} "
        f"{r['kernel_us']:9.1f} us {r['gbps']:7.0f} GB/s{extra}  base {r['baseline_us']:9.1f} us x{r['speedup']:.1f}"
    )


def sweep(args, copyref):
    """Time configs of the copy kernel and the folds; prints us and % of the size-matched copy."""
    from mcache.kernels.copy_slots.kernel import copy_slots_triton
    from mcache.kernels.replay_fold.kernel import (
        replay_fold_conv_triton,
        replay_fold_gdn_triton,
        replay_fold_mamba2_triton,
    )

    copy_cfgs = [(8192, 8), (16384, 16), (32768, 16), (32768, 32), (65536, 32)]
    fold_cfgs = {
        "mamba2": [(16, 4), (32, 4), (32, 8), (64, 4)],
        "gdn": [(16, 2), (32, 2), (64, 4), (128, 8)],
    }
    conv_cfgs = [(256, 2), (512, 2), (512, 4), (1024, 4), (2048, 8)]
    for name, m in MODELS.items():
        dtype = args.ssm_dtypes[name][0]
        pools = build_pools(m, dtype, torch.bfloat16, args.layout, need_inter=False)
        src, dst = pools["ssm"], pools["snap"]
        for nb in (1, 8, 64) if DEV == "cuda" else (1, 4):
            sets = list(zip(slot_sets(nb, 2), slot_sets(nb, 3), strict=True))
            nbytes = 2 * nb * m["L"] * src[0, 0].nbytes
            tc = copyref(nbytes)["median"]
            line = []
            for cfg in copy_cfgs:
                fns = [lambda a=a, b=b, c=cfg, x=src, y=dst: copy_slots_triton(x, a, y, b, check=False, config=c) for a, b in sets]
                t = timed(fns, args.reps)["median"]
                line.append(f"{cfg}: {t:.1f}us {100 * tc / t:.0f}%")
            print(f"SWEEP copy {name} b={nb} copy={tc:.1f}us | " + " | ".join(line), flush=True)
            count = torch.full((nb,), HIST, dtype=torch.int64, device=DEV)
            ring = pools["ring"]
            fn = replay_fold_mamba2_triton if m["kind"] == "mamba2" else replay_fold_gdn_triton
            targs = [ring[k] for k in FOLD_INPUTS[m["kind"]]]
            fsets = _fold_sets(nb)
            fbytes = nb * m["L"] * (2 * src[0, 0].nbytes + HIST * sum(t[0, 0, 0, 0].nbytes for t in targs))
            tcf = copyref(fbytes)["median"]
            line = []
            for cfg in fold_cfgs[m["kind"]]:
                fns = [
                    lambda s=s, r=r, c=cfg, f=fn, x=src, a=targs, n=count: f(x, *a, s, r, n, check=False, config=c)
                    for s, r in fsets
                ]  # fmt: skip
                t = timed(fns, args.reps)["median"]
                line.append(f"{cfg}: {t:.1f}us {t / tcf:.2f}x")
            print(f"SWEEP fold {name} b={nb} copy={tcf:.1f}us | " + " | ".join(line), flush=True)
            conv, cin = pools["conv"], ring["conv_in"]
            cbytes = nb * m["L"] * 2 * conv[0, 0].nbytes
            tcc = copyref(cbytes)["median"]
            line = []
            for cfg in conv_cfgs:
                fns = [
                    lambda s=s, r=r, c=cfg, x=conv, y=cin, n=count: replay_fold_conv_triton(x, y, s, r, n, check=False, config=c)
                    for s, r in fsets
                ]
                t = timed(fns, args.reps)["median"]
                line.append(f"{cfg}: {t:.1f}us {t / tcc:.2f}x")
            print(f"SWEEP conv {name} b={nb} copy={tcc:.1f}us | " + " | ".join(line), flush=True)
        del pools
        torch.cuda.empty_cache()


def markdown(rows, md_meta, command) -> str:
    c = md_meta["ceiling"]
    out = [
        "# mcache kernels on " + md_meta["gpu"],
        "",
        f"Command: `{command}`",
        "",
        f"{md_meta['timer']}. Pools {md_meta['pool_layout']}-major. Ceiling: contiguous copy of {fmt_bytes(c['bytes'] // 2)} "
        f"(read + write {fmt_bytes(c['bytes'])}): {c['gbps']:.0f} GB/s. "
        "'% matched' = time of a contiguous `copy_` moving the same bytes / kernel time. "
        f"torch {md_meta['torch']}, triton {md_meta['triton']}, CUDA {md_meta['cuda']}, {md_meta['check']}.",
        "",
        "| model | op | state | batch | bytes | kernel µs | GB/s | % ceiling | matched copy µs | % matched "
        "| torch-indexing µs | speed-up |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        pc = f"{r['pct_ceiling']:.0f}%" if "pct_ceiling" in r else "–"
        pm = f"{r['pct_matched']:.0f}%" if "pct_matched" in r else "–"
        cu = f"{r['copy_us']:.1f}" if "copy_us" in r else "–"
        out.append(
            f"| {r['model']} | {r['op']} | {r['state']} | {r['batch']} | {fmt_bytes(r['bytes'])} | "
            f"{r['kernel_us']:.1f} | {r['gbps']:.0f} | {pc} | {cu} | {pm} | {r['baseline_us']:.1f} | "
            f"{r['speedup']:.1f}× |"
        )
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="results")
    ap.add_argument("--batches", default="1,8,32,64")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--layout", choices=["layer", "slot"], default="layer")
    ap.add_argument("--qwen-ssm-dtype", default="bfloat16", help="comma list: bfloat16,float32")
    ap.add_argument("--nemotron-ssm-dtype", default="float32", help="comma list: float32,bfloat16")
    ap.add_argument("--sweep", action="store_true", help="also time kernel configs")
    ap.add_argument("--no-table", action="store_true")
    ap.add_argument("--commit", default="")
    ap.add_argument("--smoke", action="store_true", help="tiny shapes on the CPU (torch references): plumbing only")
    args = ap.parse_args(argv)
    global DEV, MODELS, SLOTS, ROWS
    if args.smoke:
        DEV, MODELS, SLOTS, ROWS = "cpu", SMOKE_MODELS, 12, 8
        args.batches = "1,4"
    args.batches = [int(b) for b in args.batches.split(",")]
    args.ssm_dtypes = {
        "Nemotron-H-8B": [getattr(torch, d) for d in args.nemotron_ssm_dtype.split(",")],
        "Qwen3-Next-80B": [getattr(torch, d) for d in args.qwen_ssm_dtype.split(",")],
    }
    if DEV == "cuda" and not torch.cuda.is_available():
        print("bench_table needs a CUDA device (or --smoke)", file=sys.stderr)
        return 2
    copyref = CopyRef(args.reps)
    big = 4 << 30 if DEV == "cuda" else 4 << 20
    tceil = copyref(2 * big)["median"]
    ceiling = {"bytes": 2 * big, "us": tceil, "gbps": 2 * big / tceil / 1e3}
    print(f"ceiling: 4 GiB copy {tceil:.0f} us = {ceiling['gbps']:.0f} GB/s", flush=True)
    for mib in (24, 48, 96, 144, 192, 384) if DEV == "cuda" else ():
        t = copyref(2 * mib << 20)["median"]
        print(f"copy {mib} MiB: {2 * (mib << 20) / t / 1e3:.0f} GB/s = {100 * tceil / t * mib / 4096:.0f}% of ceiling")
    if args.sweep:
        sweep(args, copyref)
    if args.no_table:
        return 0
    rows: list[dict] = []
    run_table(args, copyref, ceiling["gbps"], rows)
    md_meta = meta(args, ceiling)
    command = "PYTHONPATH=. python3 -m mcache.kernels.bench_table " + " ".join(argv if argv is not None else sys.argv[1:])
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = "kernels_h200" if args.layout == "layer" else "kernels_h200_slot"
    # Its own format (not a `mcache bench` results file, which `compare` and `export` read).
    table = {"kernel_table_version": 1, "meta": md_meta, "rows": rows}
    write_atomic(out / f"{stem}.json", json_text(table, indent=1) + "\n")
    text = markdown(rows, md_meta, command)
    write_atomic(out / f"{stem}.md", text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
