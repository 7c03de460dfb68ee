"""The README's "How many GPUs for 1,000 users of 32K" table: the best of `mcache plan MODEL --gpu GPU --context 32768
--target-concurrency 1000 --engine ENGINE` for each model, engine and GPU, as markdown rows.

Usage: python scripts/users_table.py   (from the repository root, with mcache installed; paste its output)
"""

from __future__ import annotations

import contextlib
import io
import json

from mcache.cli.main import main as mcache

MODELS = ("qwen3-next-80b-a3b", "nemotron-3-nano-30b-a3b")
ENGINES = ("vllm", "sglang", "trtllm")
GPUS = ("h200", "b200")
CONTEXT, USERS = 32768, 1000
HEAD = ("model", "engine", "GPU", "GPUs = replicas × (layout)", "KV", "seqs/replica", "seqs/GPU", "tok/s/GPU ≤",
        "TPOT ms ≥", "state bytes", "solved (the defaults' GPUs)")


def best(model: str, engine: str, gpu: str) -> dict:
    """The best candidate of the plan, as its JSON has it."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = mcache(["plan", model, "--gpu", gpu, "--context", str(CONTEXT), "--target-concurrency", str(USERS),
                       "--engine", engine, "--format", "json"])
    assert code == 0, (model, engine, gpu, code)
    return json.loads(out.getvalue())["best"]


def row(model: str, engine: str, gpu: str) -> str:
    c = best(model, engine, gpu)
    r = c["roofline"]
    defaults = -(-USERS // c["default_sequences"]) * c["tp"] * c["pp"] if c["default_sequences"] else "none"
    solved = f"{c['solved']} ({defaults})" if c["solved_for"] == "target" else c["solved"] or "-"
    cells = (model, engine, gpu, f"{c['gpus']} = {c['replicas']} x (tp {c['tp']}, pp {c['pp']})", c["kv_dtype"],
             str(c["sequences_per_replica"]), f"{c['sequences_per_gpu']:g}", f"{r['tokens_per_s_per_gpu']:,.0f}",
             f"{r['tpot_ms']:.1f}", f"{100 * r['state_share']:.1f}%", solved)
    return "| " + " | ".join(cells) + " |"


def main() -> None:
    print("| " + " | ".join(HEAD) + " |")
    print("|" + "|".join("---" for _ in HEAD) + "|")
    for model in MODELS:
        for engine in ENGINES:
            for gpu in GPUS:
                print(row(model, engine, gpu))


if __name__ == "__main__":
    main()
