"""`mcache plan`'s engine settings solved for: the SGLang state pool sized for the requests (`--max-mamba-cache-size`
with `--max-running-requests`) where SGLang's default share does not start a replica or runs fewer than a target, a
raised vLLM `max_num_seqs` that reaches a target on fewer GPUs, each pasted setting re-run through `mcache size`,
and the search's bound on sizings."""

from __future__ import annotations

import math
import shlex

import pytest
from cli_util import plan_json, size_json

import mcache.core.plan as plan_module
from mcache.core.engines import plan_hooks
from mcache.core.load import load_spec
from mcache.core.plan import Axes, Goal, catalogue_gpu, sweep


def pasted(settings: str, flags: tuple[str, ...]) -> list[str]:
    """The `mcache size` options of the flags `flags` in a pasted engine line (their values as pasted)."""
    argv = shlex.split(settings)
    return [x for f in flags for x in (f, argv[argv.index(f) + 1])]


def sglang_pools(stage: dict) -> tuple[int, int, int, int]:
    """(state bytes per slot, KV bytes per token, slots, tokens) of an SGLang stage of `mcache size --format json`."""
    return (stage["mamba_cache_per_req_bytes"], stage["cell_size_bytes"], stage["max_mamba_cache_size"],
            stage["max_total_num_tokens"])


def test_sglang_starts_with_the_state_pool_of_the_requests_that_fit_where_its_default_share_does_not():
    """Qwen3-Next-80B on one B200 at 128K: SGLang's default share (--mamba-full-memory-ratio 0.9) gives the state pool
    25 slots (and its dummy) of 77,266,944 B, leaving 96,803 tokens: not one sequence of 131,072 runs. One request
    with extra_buffer's 5 slots starts and runs it (198,690 tokens); two requests (10 slots) would need 262,144 tokens
    and get 182,970: the 5 more slots take exactly 15,720 tokens of 24,576 B. The pasted line, re-run through `mcache
    size --engine sglang`, runs the same 1."""
    common = ["qwen3-next-80b-a3b", "--gpu", "b200", "--engine", "sglang", "--max-seq-len", "131072"]
    default = size_json(common)["engine"]
    per, cell, slots, tokens = sglang_pools(default["stages"][0])
    assert (per, cell, slots, tokens) == (77_266_944, 24_576, 25, 96_803) and tokens < 131_072
    assert default["max_running_requests"] == 0
    (c,) = plan_json("qwen3-next-80b-a3b", "--gpu", "b200", "--engine", "sglang", "--tp", "1", "--pp", "1",
                     "--context", "131072", "--kv-dtype", "default")["candidates"]
    assert (c["fits"], c["sequences_per_replica"], c["solved_for"], c["startup"]) == (True, 1, "start-up", "starts")
    assert c["solved"] == "max_running_requests=1, max_mamba_cache_size=5"
    flags = pasted(c["settings"], ("--max-running-requests", "--max-mamba-cache-size"))
    again = size_json([*common, *flags])["engine"]
    assert again["max_running_requests"] == 1 and sglang_pools(again["stages"][0])[2:] == (5, 198_690)
    two = size_json([*common, "--max-running-requests", "2", "--max-mamba-cache-size", "10"])["engine"]
    assert sglang_pools(two["stages"][0])[3] == 182_970 < 2 * 131_072 and two["max_running_requests"] == 1
    assert (198_690 - 182_970) * cell == 5 * per


def test_sglang_balances_state_slots_and_kv_tokens_for_a_target_on_fewer_gpus():
    """Nemotron-3-Nano at 32K on H200s, TP 2 x PP 2, fp8 KV, 1,200 users: PP turns SGLang's overlap scheduler off, so
    a request holds 4 state slots (extra_buffer); SGLang's default share gives the state pool 4,415 slots on the
    tighter stage (1,103 requests) while its 81,817,452 tokens hold 2,496 sequences, so a replica runs 1,103 and the
    target takes 2 replicas (8 GPUs). Sized for n requests the pools hold n = (pools - a slot) // (4 slots + 32,768
    tokens): 1,562, one replica (4 GPUs); at 1,563 the 4 more slots take 66,688 tokens and the pool holds 1,562
    sequences."""
    args = ("nemotron-3-nano-30b-a3b", "--gpu", "h200", "--engine", "sglang", "--tp", "2", "--pp", "2", "--context",
            "32768", "--kv-dtype", "fp8", "--target-concurrency", "1200")
    best = plan_json(*args)["best"]
    assert (best["replicas"], best["gpus"], best["sequences_per_replica"]) == (1, 4, 1562)
    assert (best["solved_for"], best["default_sequences"]) == ("target", 1103)
    assert best["solved"] == "max_running_requests=1562, max_mamba_cache_size=6248"
    common = ["nemotron-3-nano-30b-a3b", "--gpu", "h200", "--engine", "sglang", "--tp", "2", "--pp", "2",
              "--kv-dtype", "fp8_e4m3", "--max-seq-len", "32768"]
    default = size_json(common)["engine"]
    assert default["max_running_requests"] == 1103 == min(st["max_mamba_cache_size"] for st in default["stages"]) // 4
    assert default["stages"][0]["max_total_num_tokens"] // 32768 == 2496
    again = size_json([*common, *pasted(best["settings"], ("--max-running-requests", "--max-mamba-cache-size"))])
    per, cell, slots, tokens = sglang_pools(again["engine"]["stages"][0])
    assert again["engine"]["max_running_requests"] == 1562 and slots == 4 * 1562
    assert ((slots + 1) * per + tokens * cell - per) // (4 * per + 32768 * cell) == 1562 <= tokens // 32768
    more = size_json([*common, "--max-running-requests", "1563", "--max-mamba-cache-size", "6252"])["engine"]
    assert more["max_running_requests"] == 1562 and tokens - sglang_pools(more["stages"][0])[3] == 66_688
    assert 66_688 * cell == 4 * per
    without = plan_json(*args[:-2])["best"]  # no target: the defaults, sized as mcache size sizes them
    assert (without["solved"], without["sequences_per_replica"]) == ("", 1103)


def test_a_raised_max_num_seqs_reaches_a_target_on_fewer_gpus_and_its_line_runs_the_same():
    """Nemotron-3-Nano at 8K on H200s, TP 2 x PP 2, fp8 KV, 2,500 users: vLLM's default max_num_seqs (1024 on a GPU of
    70 GiB and more) caps a replica at 1,024, 3 replicas (12 GPUs), while its 37,456 blocks hold 37,456 // 14 = 2,675
    requests of 8,192 tokens (vLLM's "Maximum concurrency", whole). max_num_seqs 2675 runs them on one replica (4
    GPUs); one more runs no more. At vLLM 0.33 (16-token blocks, 0.92 utilization)."""
    args = ("nemotron-3-nano-30b-a3b", "--gpu", "h200", "--engine", "vllm", "--engine-version", "0.33.0", "--tp", "2",
            "--pp", "2", "--context",
            "8192", "--kv-dtype", "fp8", "--target-concurrency", "2500")
    best = plan_json(*args)["best"]
    assert (best["replicas"], best["gpus"], best["sequences_per_replica"], best["solved"]) == (1, 4, 2675,
                                                                                            "max_num_seqs=2675")
    assert (best["solved_for"], best["default_sequences"]) == ("target", 1024)
    common = ["nemotron-3-nano-30b-a3b", "--gpu", "h200", "--engine", "vllm", "--engine-version", "0.33.0", "--tp", "2",
              "--pp", "2",
              "--kv-dtype", "fp8", "--max-seq-len", "8192"]
    assert size_json(common)["engine"]["max_running_requests"] == 1024
    again = size_json([*common, *pasted(best["settings"], ("--max-num-seqs",))])["engine"]
    assert again["max_running_requests"] == 2675 and again["stages"][0]["startup_error"] is None
    assert {(st["num_blocks"], st["blocks_per_request"]) for st in again["stages"]} == {(37_456, 14)}
    assert 37_456 // 14 == 2675
    more = size_json([*common, "--max-num-seqs", "2676"])["engine"]
    assert (more["max_running_requests"], more["stages"][0]["binding"]) == (2675, "KV cache blocks")
    tpot = plan_json(*args, "--max-tpot", "10")["best"]  # the roofline keeps a replica below the default's 1,024
    assert tpot["solved"] == "" and tpot["binding"] == "--max-tpot" and tpot["sequences_per_replica"] < 1024


def test_a_trtllm_target_sets_max_batch_size_per_pp_stage():
    """TensorRT-LLM runs max_batch_size on each PP stage: at PP 2 the value solved for is half the sequences, and
    the pasted options run the same through `mcache size --engine trtllm`."""
    best = plan_json("qwen3-next-80b-a3b", "--gpu", "h200", "--engine", "trtllm", "--tp", "2", "--pp", "2",
                     "--context", "32768", "--kv-dtype", "fp8", "--target-concurrency", "1000")["best"]
    assert best["solved_for"] == "target" and best["sequences_per_replica"] > best["default_sequences"]
    batch = int(best["solved"].removeprefix("max_batch_size="))
    assert best["sequences_per_replica"] in (2 * batch, 2 * batch - 1)
    again = size_json(["qwen3-next-80b-a3b", "--gpu", "h200", "--engine", "trtllm", "--tp", "2", "--pp", "2",
                       "--kv-dtype", "fp8", "--max-seq-len", "32768", "--max-batch", str(batch)])["engine"]
    assert again["max_running_requests"] == best["sequences_per_replica"]


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_the_engines_hooks_are_their_modules_and_name_options_they_have(engine):
    from importlib import import_module

    from mcache.core.options import SizeOptions

    module = import_module(f"mcache.core.engines.{engine}")
    hooks = plan_hooks(engine)
    assert hooks.solved in module.FLAGS and hooks.solved in SizeOptions.__struct_fields__
    assert hooks.narrow_attention_dp == (module.FULL_WIDTH_ATTENTION_DP is None) == (engine == "sglang")


def test_the_search_finds_the_last_value_that_holds_within_its_bound_of_probes():
    """`_gallop` on a predicate true up to t: t from any guess, in at most 2 log2 |t - guess| + 4 probes."""
    for t in (0, 1, 2, 7, 100, 1023, 1024, 5000, 65_535, 65_536):
        for guess in (1, 2, t, t + 1, max(t - 3, 1), 3000, 65_536):
            probes = []

            def holds(n: int, t: int = t, probes: list = probes) -> bool:
                probes.append(n)
                return n <= t

            assert plan_module._gallop(holds, guess, 1 << 16) == t
            assert len(probes) <= 2 * math.log2(abs(t - guess) + 1) + 4, (t, guess, len(probes))


def test_solving_sizes_a_candidate_a_few_times():
    """Each candidate of a target sweep is sized a few times, not a bisection over every value: the engines' own
    figures (vLLM's concurrency, TensorRT-LLM's best_max_batch_size, SGLang's pools) land on the answer or next to
    it."""
    counts: list[int] = []
    original = plan_module._sized_replica

    def counting(*args):
        counts.append(1)
        return original(*args)

    spec = load_spec("nemotron-3-nano-30b-a3b")
    for engine in ("vllm", "sglang", "trtllm"):
        for target in (1000, 3000):
            counts.clear()
            plan_module._sized_replica = counting
            try:
                result = sweep(spec, "nemotron-3-nano-30b-a3b", engine,
                               Axes(gpus=(catalogue_gpu("h200"),), contexts=(8192,)), Goal(target=target))
            finally:
                plan_module._sized_replica = original
            assert len(counts) <= 6 * len(result.candidates), (engine, target, len(counts))
