"""Time `mcache plan`'s default sweep (three GPUs, three contexts, TP 1-8, PP 1-2, two KV dtypes) of every
bundled model, in the neutral model and under each engine: `python scripts/plan_speed.py`."""

from __future__ import annotations

import time

from mcache.core.load import bundled_names, load_spec
from mcache.core.plan import Axes, catalogue_gpu, sweep

GPUS = ("h100-80gb", "h200", "b200")


def main() -> None:
    print(f"{'model':<28} {'candidates':>10} " + " ".join(f"{e or 'neutral':>8}" for e in (None, "vllm", "sglang", "trtllm")))
    for name in bundled_names():
        spec = load_spec(name)
        times, count = [], 0
        for engine in (None, "vllm", "sglang", "trtllm"):
            start = time.perf_counter()
            try:
                count = len(sweep(spec, name, engine, Axes(gpus=tuple(catalogue_gpu(g) for g in GPUS))).candidates)
            except Exception as err:  # an engine that does not serve the model (TensorRT-LLM: Mamba1, lightning)
                times.append(f"{type(err).__name__[:8]:>8}")
                continue
            times.append(f"{time.perf_counter() - start:7.2f}s")
        print(f"{name:<28} {count:>10} " + " ".join(times))


if __name__ == "__main__":
    main()
