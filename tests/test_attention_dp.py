"""Attention data parallelism: each TP rank of a stage runs a batch of its own, so a replica runs TP x a rank's sequences
(`ParallelLayout.replica_sequences`), in the neutral report, the engines' runs, their serve commands and the plan.
The figures are computed by hand below."""

from __future__ import annotations

import json
import shlex

import pytest
from cli_util import one_line, plan_json, size_json
from paths import HF_CONFIGS
from test_capacity import TINY

from mcache.cli.main import main
from mcache.core.engines import run_engine
from mcache.core.engines.common import EngineInputs, EngineRun, EngineStage, ServeArgs
from mcache.core.engines.trtllm import serve_command as trtllm_serve
from mcache.core.engines.vllm import serve_command as vllm_serve
from mcache.core.hf import import_hf
from mcache.core.kinds.base import CacheDtypes
from mcache.core.load import parse_spec
from mcache.core.roofline import roofline
from mcache.core.sizing.estimate import estimate
from mcache.core.sizing.gpus import lookup
from mcache.core.sizing.layout import ParallelLayout, RuntimeConfig
from mcache.core.sizing.rank import RankContext, resolve_dtypes
from mcache.core.sizing.weights import rank_weight_bytes, shard_ways

# test_capacity's tiny hybrid. Under attention DP at TP 2 a rank keeps whole heads and state: KV 2 x 2 x 16 x 2 B =
# 128 B a token, 100 tokens in 7 blocks of 16 = 14,336 B a sequence; conv [64, 3] + SSM [4, 8, 16] in bf16 = 1,408 B
# a slot, 8 B of seed: 1,416 B. Weights: every one whole on each rank (no MoE, so nothing stays split), the mixers
# (mamba2 8,876 and attention 12,352 params), embedding and head (6,400 each), final norm 64: 34,092 params, 68,184 B,
# as at TP 1. Budget: int(2^30 x 0.9) - 68,184 = 966,299,457 B; two reserved slots (a padding slot and the
# attention-DP dummy) 2,832 B; (966,299,457 - 2,832) // (14,336 + 1,416) = 61,344 sequences a rank.
PER_RANK = 61_344
QWEN3_NEXT = str(HF_CONFIGS / "qwen3-next-80b-a3b.json")


@pytest.fixture
def tiny(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY)
    return str(path)


def size(capsys, *args: str) -> tuple[dict, str]:
    """`mcache size ARGS` as JSON and as the table's last lines."""
    assert main(["size", *args, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert main(["size", *args]) == 0
    return report, capsys.readouterr().out


def test_a_replica_runs_tp_times_a_ranks_sequences_under_attention_dp(tiny, capsys):
    args = (tiny, "--gpu-memory", "1GiB", "--reserve", "0", "--max-seq-len", "100", "--block-size", "16")
    report, out = size(capsys, *args, "--tp", "2", "--attention-dp")
    cap = report["capacity"]
    rank = cap["ranks"][0]
    assert (rank["cache_budget_bytes"], rank["weight_bytes"]) == (966_299_457, 68_184)
    assert (rank["kv_bytes_per_sequence"], rank["state_bytes_per_sequence"]) == (14_336, 1_416)
    assert rank["max_sequences"] == cap["max_sequences_per_rank"] == PER_RANK
    assert (cap["attention_dp_ranks"], cap["max_sequences"], cap["max_sequences_per_gpu"]) == (2, 122_688, 61_344.0)
    assert ("mcache's neutral model fits 122688 sequences of 100 tokens per replica (TP × PP = 2 GPUs, attention DP: "
            "2 × 61344; 61,344 per GPU) on 1GiB GPU") in out
    # a pool --max-batch fixes is a rank's: 4 each, 8 a replica
    report, out = size(capsys, *args, "--tp", "2", "--attention-dp", "--max-batch", "4")
    assert (report["capacity"]["max_sequences_per_rank"], report["capacity"]["max_sequences"]) == (4, 8)
    assert "fits 8 sequences of 100 tokens per replica (TP × PP = 2 GPUs, attention DP: 2 × 4; 4 per GPU)" in out


def test_without_attention_dp_the_replica_runs_a_ranks_sequences(tiny, capsys):
    report, out = size(capsys, tiny, "--gpu-memory", "1GiB", "--reserve", "0", "--max-batch", "4", "--tp", "2")
    cap = report["capacity"]
    assert (cap["attention_dp_ranks"], cap["max_sequences_per_rank"], cap["max_sequences"]) == (1, 4, 4)
    assert "fits 4 sequences of 8192 tokens per replica (TP × PP = 2 GPUs; 2 per GPU)" in out


def test_an_engine_run_counts_its_stages_per_rank_and_its_replica_from_the_layout():
    def stage(n: int) -> EngineStage:
        return EngineStage(0, n, None, [])

    dtypes = CacheDtypes("bfloat16", "bfloat16", "bfloat16", "bfloat16")
    run = EngineRun("vllm", 8192, 8192, {}, {}, dtypes, [stage(101), EngineStage(1, 99, None, [])],
                    layout=ParallelLayout(tp=4, pp=2, attention_dp=True))
    assert (run.max_running_requests_per_rank, run.attention_dp_ranks, run.max_running_requests) == (99, 4, 396)
    assert {k: run.as_json()[k] for k in ("max_running_requests", "max_running_requests_per_rank",
                                          "attention_dp_ranks")} == {"max_running_requests": 396,
                                                                     "max_running_requests_per_rank": 99,
                                                                     "attention_dp_ranks": 4}
    run.layout = ParallelLayout(tp=4, pp=2)
    assert (run.max_running_requests, run.attention_dp_ranks) == (99, 1)


def test_vllm_sizes_one_tp1_engine_core_with_the_experts_split_over_the_dp_ranks():
    """Qwen3-Next's routed experts: 512 x 3 x 2048 x 512 = 1,610,612,736 parameters a layer; over 4 data-parallel
    ranks each holds a quarter, so its weights are a TP-1 core's less 3/4 of them: 48 x 1,207,959,552 x 2 B =
    115,964,116,992 B. With those weights given, its pools are a TP-1 core's, figure for figure."""
    spec = import_hf(HF_CONFIGS / "qwen3-next-80b-a3b.json")
    name, memory = lookup("h200")

    def vllm(layout: ParallelLayout, **given) -> EngineRun:
        return run_engine("vllm", EngineInputs(spec, layout, name, memory, 32768, given))

    dp = vllm(ParallelLayout(tp=4, attention_dp=True))
    core = vllm(ParallelLayout(tp=1))
    assert core.settings["weights_bytes"] - dp.settings["weights_bytes"] == 115_964_116_992
    given = vllm(ParallelLayout(tp=1), weights_bytes=dp.settings["weights_bytes"])
    assert dp.stages[0].fields == given.stages[0].fields and dp.stages[0].log == given.stages[0].log
    assert (dp.max_running_requests_per_rank, dp.max_running_requests) == (given.max_running_requests,
                                                                          4 * given.max_running_requests)


def test_a_rank_keeps_every_weight_whole_but_the_routed_experts_under_attention_dp():
    """Qwen3-Next-80B-A3B at TP 4, bf16, one rank under attention DP: the embedding and head, 151,936 x 2,048 =
    311,164,928 parameters each (622,329,856 B, not a quarter), the 48 shared experts of 3 x 2,048 x 512 (301,989,888
    B), the GDN and attention mixers, routers and norms are whole; the routed experts, 48 x 512 x 3 x 2,048 x 512 =
    77,309,411,328 parameters, split 4 ways (38,654,705,664 B). So a rank holds the TP-1 model's 159,348,573,696 B less
    3/4 of the experts, 57,982,058,496 x 2 B = 115,964,116,992 B: 43,384,456,704 B, what vLLM's TP-1 engine core with
    the experts over its 4 data-parallel ranks loads (one rule). An engine names what it still splits."""
    spec = import_hf(HF_CONFIGS / "qwen3-next-80b-a3b.json")

    def rank(tp: int, dp: bool) -> RankContext:
        return RankContext.build(spec, ParallelLayout(tp=tp, attention_dp=dp), RuntimeConfig(), resolve_dtypes(spec), 0)

    dp, plain = rank(4, True), rank(4, False)
    parts = [("embedding", None), ("lm_head", None), ("vision", None), ("moe", "shared_experts"), ("moe", "other"),
             ("gdn", "proj"), ("attention", "proj"), ("mtp", "proj")]
    assert [shard_ways(dp, kind, part) for kind, part in parts] == [1] * len(parts)
    assert [shard_ways(plain, kind, part) for kind, part in parts] == [4] * len(parts)
    assert shard_ways(dp, "moe", "experts") == shard_ways(plain, "moe", "experts") == 4
    assert shard_ways(dp, "moe", "shared_experts", dp_sharded=frozenset({"moe.shared_experts"})) == 4
    assert shard_ways(dp, "mlp", "proj", dp_sharded=frozenset({"mlp"})) == 4
    assert rank_weight_bytes(rank(1, False)) - rank_weight_bytes(dp) == 115_964_116_992
    assert rank_weight_bytes(dp) == 43_384_456_704
    name, memory = lookup("h200")
    vllm = run_engine("vllm", EngineInputs(spec, ParallelLayout(tp=4, attention_dp=True), name, memory, 32768))
    assert vllm.settings["weights_bytes"] == 43_384_456_704


def sglang_weights(config: str, version: str) -> int:
    """The weight bytes SGLang's profile loads on one rank of a TP-4 attention-DP replica of `config` at `version`."""
    spec = import_hf(HF_CONFIGS / f"{config}.json")
    name, memory = lookup("h200")
    inputs = EngineInputs(spec, ParallelLayout(tp=4, attention_dp=True), name, memory, 4096)
    return run_engine("sglang", inputs, version).settings["weights_bytes"]


def test_sglang_splits_the_head_and_shared_experts_over_tp_under_attention_dp():
    """SGLang keeps Qwen3-Next's embedding, attention and GDN mixers and routers whole on each DP rank
    (`use_attn_tp_group=is_dp_attention_enabled()`, "attn_tp") but splits the LM head (`enable_dp_lm_head` is off) and
    the shared experts (Qwen2MoeMLP on the TP group) over the 4 ranks: the neutral rank's 43,384,456,704 B (above) less
    3/4 of the head's 622,329,856 B (466,747,392) and of the 48 shared experts' 301,989,888 B (226,492,416):
    42,691,216,896 B, at 0.5.2 as at 0.5.23."""
    assert sglang_weights("qwen3-next-80b-a3b", "0.5.2") == sglang_weights("qwen3-next-80b-a3b", "0.5.23") == 42_691_216_896


def test_sglang_keeps_nemotron_h_mixers_and_embedding_whole_from_0_5_14():
    """Nemotron-H-8B at TP 4 (bf16; h 4,096, 24 Mamba2, 4 attention and 24 MLP layers). Every release splits the LM head
    (131,072 x 4,096 / 4 = 134,217,728 params) and the MLPs (2 x 4,096 x 21,504 / 4 = 44,040,192 a layer, its norm
    whole). From 0.5.14 (MambaMixer2 and nemotron_h.py on the attention-TP group) the Mamba2 mixers (109,576,192 proj +
    59,776 conv, A, D, dt bias and gated norm + 4,096 norm a layer), attention (41,943,040 + 4,096) and embedding
    (536,870,912) are whole: 24 x 109,640,064 + 4 x 41,947,136 + 24 x 44,044,288 + 536,870,912 + 134,217,728 + 4,096
    final norm = 4,527,305,728 params, 9,054,611,456 B. At 0.5.13 they take the TP size: 24 x (27,394,048 + 14,944 +
    1,024) + 4 x (10,485,760 + 4,096) + 24 x 44,044,288 + 2 x 134,217,728 + 4,096 = 2,025,302,272 params,
    4,050,604,544 B."""
    assert sglang_weights("nemotron-h-8b-base-8k", "0.5.13") == 4_050_604_544
    assert sglang_weights("nemotron-h-8b-base-8k", "0.5.14") == sglang_weights("nemotron-h-8b-base-8k", "0.5.23") \
        == 9_054_611_456


def test_sglang_splits_what_a_model_builds_on_the_tp_group_under_attention_dp():
    """The names `weights.shard_ways` splits over TP under SGLang's attention DP: the head, dense MLPs and shared
    experts everywhere; the plain VocabParallelEmbedding and the mixers a model file builds on the TP group."""
    from mcache.core.engines.sglang import _dp_sharded

    def extra(config: str, version: str = "0.5.23") -> set[str]:
        return set(_dp_sharded(import_hf(HF_CONFIGS / f"{config}.json"), version)) - {"lm_head", "mlp.proj",
                                                                                         "moe.shared_experts"}

    assert extra("qwen3-next-80b-a3b") == extra("qwen3.5-27b") == extra("falcon-h1-0.5b") == set()
    assert extra("falcon-h1-0.5b", "0.5.13") == {"mamba2"}
    assert extra("kimi-linear-48b-a3b-instruct") == extra("kimi-linear-48b-a3b-instruct", "0.5.14") == {"embedding",
                                                                                                          "kda"}
    assert extra("lfm2-1.2b") == extra("lfm2-8b-a1b") == {"embedding", "attention.proj", "short_conv"}
    assert extra("granite-4.0-h-tiny") == {"embedding", "attention.proj"}
    assert extra("granite-4.0-h-tiny", "0.5.9") == {"embedding", "attention.proj", "mamba2"}
    assert extra("mamba2-2.7b") == {"embedding"} and extra("mamba-2.8b") == {"embedding", "mamba1"}


def test_serve_commands_start_the_attention_dp_ranks():
    serve = ServeArgs("Qwen/Qwen3-Next-80B-A3B-Instruct", 4, 1, 32768, attention_dp=True, replicas=3)
    argv = shlex.split(vllm_serve(serve))
    assert argv[argv.index("--tensor-parallel-size") + 1] == "1"
    assert argv[-2:] == ["--data-parallel-size", "12"]  # 3 replicas of 4 engine cores
    plain = shlex.split(vllm_serve(ServeArgs("org/model", 4, 1, 32768, replicas=3)))
    assert plain[plain.index("--tensor-parallel-size") + 1] == "4" and plain[-2:] == ["--data-parallel-size", "3"]
    assert "--data-parallel-size" not in vllm_serve(ServeArgs("org/model", 4, 1, 32768))
    assert '"enable_attention_dp": true' in trtllm_serve(ServeArgs("org/model", 4, 1, 32768, attention_dp=True))
    assert "enable_attention_dp" not in trtllm_serve(ServeArgs("org/model", 4, 1, 32768))


def test_trtllm_max_batch_size_is_a_ranks(capsys):
    report, out = size(capsys, QWEN3_NEXT, "--tp", "4", "--attention-dp", "--gpu", "h200", "--context", "32768",
                       "--engine", "trtllm", "--max-batch-size", "64")
    eng = report["engine"]
    stage = eng["stages"][0]
    assert stage["max_batch_size"] == 64 and stage["max_running_requests"] == 64  # each rank runs its own 64
    assert (eng["max_running_requests_per_rank"], eng["max_running_requests"]) == (64, 256)
    assert "runs 256 sequences of 32768 tokens per replica (TP × PP = 4 GPUs, attention DP: 4 × 64; 64 per GPU)" in out


def test_the_engines_line_gives_each_replica_and_its_ranks(capsys):
    report, out = size(capsys, QWEN3_NEXT, "--tp", "4", "--attention-dp", "--gpu", "h200", "--context", "32768",
                       "--max-seq-len", "32768")
    line = out.splitlines()[-1]
    for engine, title in zip(report["capacity"]["engines"], ("vLLM", "SGLang", "TensorRT-LLM"), strict=True):
        per_rank = engine["max_running_requests_per_rank"]
        assert engine["max_running_requests"] == 4 * per_rank
        assert f"{title} {engine['version']}: {4 * per_rank} (4 × {per_rank}, {engine['binding']})" in line


def test_the_roofline_gives_each_attention_dp_rank_its_share():
    """8 sequences of 100 tokens over 2 attention-DP ranks: 4 on each, with whole heads (12,800 B of KV and 2 x 1,408 B
    of state read and written each)."""
    spec = parse_spec(TINY, "tiny.yaml")
    layout = ParallelLayout(tp=2, attention_dp=True)
    ranks = estimate(spec, layout, RuntimeConfig(max_batch=4, max_seq_len=100, tokens_per_block=16),
                     resolve_dtypes(spec)).ranks
    bound = roofline(ranks, None, 8, 100, 0, 10**12)
    assert (bound.kv_bytes, bound.state_bytes) == (4 * 12_800, 4 * 2 * 1_408)


def test_plan_counts_attention_dp_replicas_and_pastes_their_settings():
    """Qwen3-Next on H200s at 32K: a rank runs 106 (the neutral model), a TP-4 attention-DP replica 4 x 106 = 424, so
    1,000 sequences take ceil(1000 / 424) = 3 replicas, 12 GPUs."""
    args = (QWEN3_NEXT, "--gpu", "h200", "--tp", "4", "--pp", "1", "--kv-dtype", "default", "--context", "32768",
            "--target-concurrency", "1000")
    full = next(c for c in plan_json(*args, "--attention-dp", "off,on")["candidates"] if c["attention_dp_size"] == 4)
    assert (full["attention_dp"], full["sequences_per_replica"], full["replicas"], full["gpus"]) == (True, 424, 3, 12)
    assert (full["sequences"], full["sequences_per_gpu"]) == (1272, 106)
    assert shlex.split(full["settings"])[-1] == "--attention-dp"
    vllm = plan_json(*args, "--attention-dp", "on", "--engine", "vllm")["best"]
    argv = shlex.split(vllm["settings"])
    assert argv[argv.index("--tensor-parallel-size") + 1] == "1"
    assert argv[-2:] == ["--data-parallel-size", str(4 * vllm["replicas"])]
    assert vllm["sequences_per_replica"] % 4 == 0


def test_sglang_serve_command_names_the_attention_dp_width_by_release():
    """Before 0.5.22 --dp-size with --enable-dp-attention is the attention-DP width; from 0.5.22 --attn-dp-size is, and
    --dp-size replicas beside it are refused: either way one command starts one replica. Without attention DP
    --dp-size runs the replicas."""
    from mcache.core.engines.sglang import serve_command as sglang_serve

    def line(version: str | None, **kw) -> tuple[list[str], str]:
        command, _, note = sglang_serve(ServeArgs("org/model", 4, 1, 32768, version=version, **kw)).partition("  # ")
        return shlex.split(command), note

    assert line("0.5.21", attention_dp=True, replicas=3) == (
        line("0.5.21")[0] + ["--dp-size", "4", "--enable-dp-attention"],
        "one replica: start 3 (--dp-size is the attention-DP width)")
    assert line("0.5.21", attention_dp=True, attention_dp_size=2)[0][-3:] == ["--dp-size", "2", "--enable-dp-attention"]
    for version in ("0.5.22", None):  # None: the newest, 0.5.23
        assert line(version, attention_dp=True, attention_dp_size=2, replicas=3) == (
            line(version)[0] + ["--attn-dp-size", "2"],
            "one replica: start 3 (--dp-size replicas do not combine with --attn-dp-size)")
        assert line(version, attention_dp=True) == (line(version)[0] + ["--attn-dp-size", "4"], "")
        assert line(version, replicas=3) == (line(version)[0] + ["--dp-size", "3"], "")


def test_plan_solves_sglangs_replica_wide_settings_per_attention_dp_rank():
    """SGLang divides a given --max-running-requests and --max-mamba-cache-size among its DP ranks: the plan solves a
    rank's n and pastes dp x n (before the command's closing comment); PP 2 under attention DP is sized too, not
    skipped (SGLang refuses Qwen3-Next at PP 2 itself)."""
    plan = plan_json(QWEN3_NEXT, "--gpu", "h200", "--tp", "4", "--pp", "1,2", "--kv-dtype", "bfloat16", "--context",
                     "32768", "--target-concurrency", "1500", "--attention-dp", "on", "--engine", "sglang")
    assert {c["attention_dp_size"] for c in plan["candidates"]} == {2, 4}
    for best in (plan["best"], next(c for c in plan["candidates"] if c["attention_dp_size"] == 4)):
        argv, dp = shlex.split(best["settings"].partition("  # ")[0]), best["attention_dp_size"]
        per_rank = best["sequences_per_replica"] // dp
        assert argv[argv.index("--max-running-requests") + 1] == str(dp * per_rank)
        ratio = int(argv[argv.index("--max-mamba-cache-size") + 1]) // (dp * per_rank)
        assert ratio == 5  # extra_buffer's 5 slots a request, as SGLang 0.5.23 runs Qwen3-Next by default
        assert argv[argv.index("--attn-dp-size") + 1] == str(dp) and best["settings"].endswith(
            f"# one replica: start {best['replicas']} (--dp-size replicas do not combine with --attn-dp-size)")
    assert plan["skipped"] == []


def test_plan_attention_dp_needs_a_tp_above_1(capsys):
    assert "--attention-dp: a TP above 1" in one_line(["plan", "nemotron-h-8b", "--tp", "1", "--attention-dp", "on"],
                                                      capsys)
    assert "--attention-dp: off, on or off,on, got 'yes'" in one_line(["plan", "nemotron-h-8b", "--attention-dp",
                                                                      "yes"], capsys)


def test_explain_reads_a_vllm_engine_core_as_one_attention_dp_rank(capsys):
    """A data-parallel vLLM engine core is a TP-1 core: the TP-1 boot's figures agree as one rank's of a TP-2
    attention-DP replica, which runs 2 x its requests."""
    log = str(HF_CONFIGS.parent / "engine_logs" / "vllm" / "qwen36-35b-a3b-nvfp4-rtx5090-0.24.0-run2.log")
    args = ["explain", log, "--model", str(HF_CONFIGS / "qwen3.6-35b-a3b.json"), "--engine-version", "0.24.0",
            "--tp", "2", "--attention-dp"]
    assert main([*args, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [(c["figure"], c["verdict"]) for c in report["comparisons"]] == [("kv_cache_tokens", "agree"),
                                                                           ("max_concurrency", "agree")]
    engine = report["engine"]
    assert (engine["attention_dp_ranks"], engine["max_running_requests"]) == (2, 2 * engine["max_running_requests_per_rank"])
    assert main(args) == 0
    assert "per replica (TP × PP = 2 GPUs, attention DP: 2 × 1; 1 per GPU)" in capsys.readouterr().out


# ---- attention DP narrower than TP (--attn-dp-size N: N groups of tp / N ranks) ----

def test_a_narrower_attention_dp_splits_heads_and_state_over_its_attention_tp_group(tiny, capsys):
    """At TP 4 with an attention-DP width of 2 each rank holds half the KV heads and state (an attention TP of 2), as a
    TP-2 rank without attention DP does, and the replica runs 2 x a rank's sequences."""
    args = (tiny, "--gpu-memory", "1GiB", "--reserve", "0", "--max-seq-len", "100", "--block-size", "16")
    narrow, out = size(capsys, *args, "--tp", "4", "--attn-dp-size", "2")
    tp2, _ = size(capsys, *args, "--tp", "2")
    rank, rank2 = narrow["capacity"]["ranks"][0], tp2["capacity"]["ranks"][0]
    assert (rank["kv_bytes_per_sequence"], rank["state_bytes_per_sequence"]) == (
        rank2["kv_bytes_per_sequence"], rank2["state_bytes_per_sequence"]) == (7_168, 808)
    cap = narrow["capacity"]
    assert (cap["attention_dp_ranks"], cap["max_sequences"]) == (2, 2 * cap["max_sequences_per_rank"])
    assert narrow["layout"]["attention_dp"] is True and narrow["layout"]["attention_dp_size"] == 2
    assert " · tp 4 · pp 1 · attention-DP 2 · " in out and "attention DP: 2 × " in out
    # a width of tp is --attention-dp's layout; without attention DP the size is null
    assert size(capsys, *args, "--tp", "4", "--attn-dp-size", "4")[0] == size(capsys, *args, "--tp", "4",
                                                                                 "--attention-dp")[0]
    assert size(capsys, *args, "--tp", "4")[0]["layout"]["attention_dp_size"] is None
    assert ParallelLayout(tp=4, attention_dp=True, attention_dp_size=4) == ParallelLayout(tp=4, attention_dp=True)
    assert ParallelLayout(tp=8, attention_dp=True, attention_dp_size=2).state_tp == 4


@pytest.mark.parametrize(("args", "said"), [
    (["--tp", "8", "--attn-dp-size", "3"], "--attn-dp-size: a divisor of tp 8 (1 to 8), got 3"),
    (["--tp", "2", "--attn-dp-size", "4"], "--attn-dp-size: a divisor of tp 2 (1 to 2), got 4"),
    (["--tp", "2", "--attn-dp-size", "0"], "--attn-dp-size: an integer from 1"),
    (["--tp", "4", "--attn-dp-size", "2", "--engine", "vllm"],
     "--attn-dp-size: equal to --tp (4) with vLLM, whose data parallelism is separate engine cores"),
    (["--tp", "4", "--attn-dp-size", "2", "--engine", "trtllm"],
     "--attn-dp-size: equal to --tp (4) with TensorRT-LLM, whose enable_attention_dp spans every TP rank"),
    (["--tp", "4", "--attn-dp-size", "1", "--engine", "sglang"], "--attn-dp-size: of width 2 or more with "
                                                                      "SGLang"),
])
def test_an_attention_dp_width_a_layout_or_engine_cannot_take_is_one_line(args, said, capsys):
    assert said in one_line(["size", QWEN3_NEXT, "--gpu", "h200", *args], capsys)


def test_a_narrower_attention_dp_splits_the_whole_weights_over_its_attention_tp_group():
    """Under attention DP of 2 at TP 4 what stays whole at a width of tp is split over the attention-TP group of 2;
    what an engine keeps on the TP group stays over 4, what it keeps whole (SGLang's `enable_tp=False` embeddings,
    `DP_WHOLE`) over 1."""
    from mcache.core.engines.sglang import DP_WHOLE

    spec = import_hf(HF_CONFIGS / "qwen3-next-80b-a3b.json")
    ctx = RankContext.build(spec, ParallelLayout(tp=4, attention_dp=True, attention_dp_size=2), RuntimeConfig(),
                            resolve_dtypes(spec), 0)
    assert [shard_ways(ctx, kind, part) for kind, part in (("embedding", None), ("gdn", "proj"), ("moe", "experts"))] \
        == [2, 2, 4]
    assert shard_ways(ctx, "moe", "shared_experts", dp_sharded=frozenset({"moe.shared_experts"})) == 4
    assert shard_ways(ctx, "embedding", dp_whole=frozenset({"embedding"})) == 1
    assert DP_WHOLE["Qwen3_5ForConditionalGeneration"] == frozenset({"embedding"}) and "Qwen3NextForCausalLM" not in DP_WHOLE


def test_sglang_shards_the_pure_mamba_state_over_the_whole_tp_group():
    """configs/mamba.py (0.5.20 on) builds Mamba-1's state over get_parallel().tp_size, not the attention-TP group: under
    attention DP a rank's slot is the TP rank's (11,468,800 B at TP 2, half at TP 4 whatever the width), where
    Falcon-H1's follows the attention TP (the same at TP 4 with a width of 2 as at TP 2 without DP)."""
    name, memory = lookup("h200")

    def slot(config: str, layout: ParallelLayout) -> int:
        spec = import_hf(HF_CONFIGS / f"{config}.json")
        run = run_engine("sglang", EngineInputs(spec, layout, name, memory, 1024, {"weights_bytes": 1 << 30}))
        return run.stages[0].fields["mamba_cache_per_req_bytes"]

    narrow = ParallelLayout(tp=4, attention_dp=True, attention_dp_size=2)
    assert slot("mamba-2.8b", ParallelLayout(tp=2)) == slot("mamba-2.8b", ParallelLayout(tp=2, attention_dp=True)) \
        == 2 * slot("mamba-2.8b", narrow) == 11_468_800
    assert slot("falcon-h1-0.5b", ParallelLayout(tp=2)) == slot("falcon-h1-0.5b", narrow)


def test_an_sglang_0_5_22_server_args_line_gives_the_attention_dp_width():
    """0.5.22 moves --dp-size N --enable-dp-attention to attn_dp_size=N (dp_size 1, enable_dp_attention False)."""
    from mcache.core.logs import read_log

    log = read_log("[2026-01-01 00:00:00] server_args=ServerArgs(model_path='m', tp_size=8, dp_size=1, "
                   "attn_dp_size=2, enable_dp_attention=False)\n[2026-01-01 00:00:01 DP0 TP0] KV Cache is allocated. "
                   "#tokens: 10, K size: 0.01 GB, V size: 0.01 GB")
    assert (log.tp, log.dp, log.attention_dp) == (8, 2, True)


def test_sglang_sizes_attention_dp_at_pp_2_stage_by_stage(capsys):
    """Nemotron-H-8B at PP 2, TP 4, attention DP 2 on an H200 with 30 GiB of weights: each stage's rank holds
    12,562,944 tokens and runs 452 requests, SGLang 0.5.23's own figures (its table's PP x attention-DP case), and the
    replica 2 x 452."""
    report, out = size(capsys, str(HF_CONFIGS / "nemotron-h-8b-base-8k.json"), "--engine", "sglang", "--pp", "2",
                       "--tp", "4", "--attn-dp-size", "2", "--weights", "30GiB", "--gpu", "h200")
    engine = report["engine"]
    assert [(s["max_total_num_tokens"], s["max_running_requests"]) for s in engine["stages"]] == [(12_562_944, 452)] * 2
    assert (engine["max_running_requests_per_rank"], engine["max_running_requests"]) == (452, 904)


def test_plan_proposes_sglangs_narrower_attention_dp_as_mcache_size_sizes_it(capsys):
    """Qwen3-Next at TP 8 on H200s, 1,000 sequences of 32K under SGLang with attention DP on: widths 2, 4 and 8. The width
    of 4 pastes --attn-dp-size 4 and the settings solved for, which `mcache size --tp 8 --attn-dp-size 4` sizes at 4
    ranks of 173, 692 a replica (the defaults 4 x 134 = 536): ceil(1000 / 692) = 2 replicas of 8 GPUs, 16 GPUs, 2 x 692
    = 1,384 sequences, 692 / 8 = 86.5 a GPU (the defaults would take ceil(1000 / 536) x 8 = 16 GPUs too)."""
    args = (QWEN3_NEXT, "--gpu", "h200", "--tp", "8", "--pp", "1", "--kv-dtype", "bfloat16", "--context", "32768",
            "--target-concurrency", "1000", "--engine", "sglang", "--attention-dp", "on")
    plan = plan_json(*args)
    assert plan["schema_version"] == 4 and sorted(c["attention_dp_size"] for c in plan["candidates"]) == [2, 4, 8]
    c = plan["best"]
    assert (c["attention_dp"], c["attention_dp_size"], c["replicas"], c["gpus"], c["sequences"], c["sequences_per_gpu"]) \
        == (True, 4, 2, 16, 1384, 86.5)
    command, _, note = c["settings"].partition("  # ")
    argv = shlex.split(command)
    assert argv[argv.index("--attn-dp-size") + 1] == "4" and "--dp-size" not in argv
    assert note == "one replica: start 2 (--dp-size replicas do not combine with --attn-dp-size)"
    solved = [x for flag in ("--max-running-requests", "--max-mamba-cache-size") for x in (flag, argv[argv.index(flag) + 1])]
    replica = ["size", QWEN3_NEXT, "--gpu", "h200", "--engine", "sglang", "--tp", "8", "--attn-dp-size", "4",
               "--max-seq-len", "32768", "--kv-dtype", "bfloat16", "--format", "json"]
    for given, per_rank, per_replica in ((solved, 173, c["sequences_per_replica"]), ([], 134, c["default_sequences"])):
        assert main([*replica, *given]) == 0
        engine = json.loads(capsys.readouterr().out)["engine"]
        assert (engine["attention_dp_ranks"], engine["max_running_requests_per_rank"], engine["max_running_requests"]) \
            == (4, per_rank, per_replica) == (4, per_rank, 4 * per_rank)
    assert main(["plan", *args]) == 0
    out = capsys.readouterr().out
    assert "16 x h200 (2 replicas x tp 8 attention DP 4, pp 1)" in out and "the engine's defaults run 536 per replica: 16 GPUs" in out
    assert [line.split("│")[6].strip() for line in out.splitlines() if line.startswith("│")] == ["4", "8", "2"]
    # before 0.5.22 the width is --dp-size with --enable-dp-attention
    old = plan_json(*args, "--engine-version", "0.5.21")["best"]
    argv = shlex.split(old["settings"].partition("  # ")[0])
    assert argv[argv.index("--dp-size"):][:3] == ["--dp-size", str(old["attention_dp_size"]), "--enable-dp-attention"]


def test_plan_gives_narrower_attention_dp_to_the_engines_that_take_it():
    """vLLM and TensorRT-LLM take attention DP at a width of TP alone and are never swept at another (nothing is skipped
    for it); SGLang and the neutral model are swept at every width of 2 to TP dividing it. The neutral model pastes
    `mcache size --attn-dp-size N`, whose figure is the candidate's."""
    args = (QWEN3_NEXT, "--gpu", "h200", "--tp", "1,2,4,8", "--pp", "1", "--kv-dtype", "default", "--context", "32768",
            "--attention-dp", "off,on")
    every = {(1, None), (2, None), (4, None), (8, None), (2, 2), (4, 2), (4, 4), (8, 2), (8, 4), (8, 8)}
    for engine, widths in (("vllm", every - {(4, 2), (8, 2), (8, 4)}), ("trtllm", every - {(4, 2), (8, 2), (8, 4)}),
                           ("sglang", every), ("none", every)):
        plan = plan_json(*args, "--engine", engine)
        assert {(c["tp"], c["attention_dp_size"]) for c in plan["candidates"]} == widths and plan["skipped"] == []
    neutral = next(c for c in plan["candidates"] if (c["tp"], c["attention_dp_size"]) == (8, 2))
    argv = shlex.split(neutral["settings"])
    assert argv[-2:] == ["--attn-dp-size", "2"]
    sized = size_json([*argv[2:]])["capacity"]
    assert (sized["attention_dp_ranks"], sized["max_sequences"]) == (2, neutral["sequences_per_replica"])


def test_plan_counts_every_attention_dp_width_against_its_bound():
    """With attention DP off and on, TP 1, 2, 4, 8 and PP 1, 2 are 8 layouts without it and, with it, 1 + 2 + 3 widths
    (2; 2, 4; 2, 4, 8) at each PP under SGLang, 12: 20 layouts x 2 KV dtypes = 40 candidates a context, so 2,500 contexts
    are the most a sweep of 100,000 takes; vLLM's 3 widths make 14 layouts, 28 a context, 3,571 contexts."""
    from mcache.core.errors import LayoutError
    from mcache.core.plan import MAX_CANDIDATES, Axes, catalogue_gpu, check_size

    def axes(contexts: int) -> Axes:
        return Axes(gpus=(catalogue_gpu("h200"),), contexts=tuple(range(1, contexts + 1)), attention_dp=(False, True))

    for engine, most in (("sglang", 2500), (None, 2500), ("vllm", 3571)):
        check_size(axes(most), engine)
        with pytest.raises(LayoutError) as err:
            check_size(axes(most + 1), engine)
        assert err.value.field == "context" and f"of at most {MAX_CANDIDATES:,} candidates" in str(err.value)
        assert f"got {(most + 1) * 2 * (20 if engine != 'vllm' else 14):,}" in str(err.value)
