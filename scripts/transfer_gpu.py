"""The GPU runs of `mcache bench --ops transfer` (issue 22): `python scripts/transfer_gpu.py [--out DIR]`.

On any GPU machine: two or three processes whose pools live on GPU 0 (ranks share it) move the packed buffers
over gloo through host memory, bitwise checked (`gloo` cases). With one GPU per rank: the same models over NCCL,
batch 1, 8, 32, 64, each row beside the same sends of plain buffers (`nccl` cases; NCCL refuses two ranks on one
GPU, so TP 1 -> TP 2 and TP 2 -> TP 1 need 3 GPUs, TP 1 -> TP 1 needs 2). Cases the machine cannot hold are
listed as skipped. Each case writes `DIR/<model>-<sender>-to-<receiver>-<backend>-<gpu>-<date>.json` (the GPU's
`--gpu` name, such as `h200`, and today's UTC date); the exit status is 1 if any case failed or disagreed with the reference.
"""

from __future__ import annotations

import argparse
from datetime import datetime, timezone
from pathlib import Path

MODELS = ("nemotron-h-8b", "qwen3-next-80b-a3b")
LAYOUTS = ((1, 2), (2, 1), (1, 1))  # (sender tp, receiver tp)


def main() -> int:
    import torch

    from mcache.cli.main import main as mcache
    from mcache.core.sizing.gpus import CATALOGUE

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("results/transfer"))
    parser.add_argument("--only", choices=("gloo", "nccl"), default=None)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    gpus = torch.cuda.device_count()
    gpu = torch.cuda.get_device_name(0)
    gpu = next((key for key, entry in CATALOGUE.items() if entry.name == gpu), gpu.lower().replace(" ", "-"))
    stamp = f"{gpu}-{datetime.now(timezone.utc).date().isoformat()}"
    failed, skipped = [], []
    for backend, batch, reps in (("gloo", "1,8", "5"), ("nccl", "1,8,32,64", "20")):
        if args.only not in (None, backend):
            continue
        for model in MODELS:
            for a, b in LAYOUTS:
                name = f"{model}-tp{a}-to-tp{b}-{backend}"
                if backend == "nccl" and gpus < a + b:
                    skipped.append(f"{name}: needs {a + b} GPUs, {gpus} visible")
                    continue
                print(f"== {name}", flush=True)
                rc = mcache(["bench", model, "--ops", "transfer", "--sender-tp", str(a), "--receiver-tp", str(b),
                             "--backend", backend, "--batch", batch, "--reps", reps, "--device", "cuda",
                             "-o", str(args.out / f"{name}-{stamp}.json")])
                if rc:
                    failed.append(f"{name}: exit {rc}")
    for line in skipped:
        print(f"skipped {line}")
    for line in failed:
        print(f"FAILED {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
