"""The transfer plan (`mcache.core.transfer_plan`, `mcache size --transfer-to-tp`): bytes and pieces by hand."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from mcache.cli.main import app, main
from mcache.core.load import load_spec
from mcache.core.sizing.estimate import estimate
from mcache.core.sizing.layout import ParallelLayout, RuntimeConfig
from mcache.core.sizing.rank import resolve_dtypes
from mcache.core.transfer_plan import transfer_plan


def _plan(name: str, sender: tuple[int, int], receiver: tuple[int, int], context: int = 8192):
    spec = load_spec(name)
    return transfer_plan(spec, resolve_dtypes(spec), ParallelLayout(tp=sender[0], pp=sender[1]),
                         ParallelLayout(tp=receiver[0], pp=receiver[1]), context, 32)


def _parts(pair) -> dict[str, tuple[int, int, int]]:
    return {p.buffer: (len(p.layers), p.bytes, p.pieces) for p in pair.parts}


def test_nemotron_h_tp1_to_tp2():
    plan = _plan("nemotron-h-8b", (1, 1), (2, 1))
    assert [(p.sender, p.receiver) for p in plan.pairs] == [(0, 0), (0, 1)]
    # Mamba2 conv at TP 2: x 128*64/2 = 4096 rows, B and C 8*128/2 = 512 each; rows of K-1 = 3 bf16:
    #   (4096 + 2*512) * 3 * 2 B = 30720 B per layer, x 24 layers = 737280; the sender's x, B, C rows are
    #   apart in its [x|B|C] (TP 1) state: 3 pieces per layer, 72.
    # Mamba2 SSM: 64 heads x 64 x 128 x 2 B = 1048576 B per layer, x 24 = 25165824; one run per layer: 24.
    # KV: 4 of the 8 KV heads, 2 (K, V) x 4 x 128 x 2 B = 2048 B per token per layer, x 8192 tokens x 4 layers
    #   = 67108864; the heads are cut, so one piece per token, K and V apart: 8192 x 2 x 4 layers = 65536.
    want = {"attention.kv": (4, 67108864, 65536), "mamba2.conv": (24, 737280, 72), "mamba2.ssm": (24, 25165824, 24)}
    assert _parts(plan.pairs[0]) == _parts(plan.pairs[1]) == want
    conv = {p.buffer: p for p in plan.pairs[1].parts}["mamba2.conv"]
    assert [(s.section, s.start, s.rows, s.src, s.dst) for s in conv.spans] == [
        ("x", 4096, 4096, 4096, 0), ("B", 512, 512, 8704, 4096), ("C", 512, 512, 9728, 4608)]
    # per request: 2 x (737280 + 25165824) state, 2 x 67108864 KV, 2 x (65536 + 72 + 24) pieces
    assert (plan.state_bytes, plan.kv_bytes, plan.pieces) == (51806208, 134217728, 131264)


def test_qwen3_next_tp2_to_tp1():
    plan = _plan("qwen3-next-80b-a3b", (2, 1), (1, 1))
    assert [(p.sender, p.receiver) for p in plan.pairs] == [(0, 0), (1, 0)]
    # GDN conv at TP 2: q, k 16*128/2 = 1024 rows each, v 32*128/2 = 2048; (1024*2 + 2048) * 3 * 2 B = 24576 B
    #   per layer, x 36 = 884736; the sender sends all its rows: one piece per layer, 36.
    # GDN SSM: 16 heads x 128 x 128 x 2 B = 524288 B per layer, x 36 = 18874368; 36 pieces.
    # KV: 1 of 2 KV heads: 2 x 1 x 256 x 2 B = 1024 B per token per layer, x 8192 x 12 layers = 100663296; the
    #   sender's whole rows: one piece per 32-token block, 256 x 12 = 3072.
    want = {"attention.kv": (12, 100663296, 3072), "gdn.conv": (36, 884736, 36), "gdn.ssm": (36, 18874368, 36)}
    assert _parts(plan.pairs[0]) == _parts(plan.pairs[1]) == want
    # 39518208: the reference's worked figure of one Qwen3-Next state slot at TP 1
    assert (plan.state_bytes, plan.kv_bytes, plan.pieces) == (39518208, 201326592, 6288)


def test_kimi_linear_tp1_to_tp2_takes_the_mla_latent_whole():
    plan = _plan("kimi-linear-48b-a3b", (1, 1), (2, 1))
    # KDA conv at TP 2: q, k, v 32*128/2 = 2048 rows each, x 3 x 2 B = 36864 B per layer, x 20 = 737280; 3 pieces
    #   per layer (q, k, v apart on the sender), 60.
    # KDA SSM (always float32): 16 heads x 128 x 128 x 4 B = 1048576 B per layer, x 20 = 20971520; 20 pieces.
    # MLA latent (512 + 64) x 2 B = 1152 B per token, not split by TP: each receiver takes it whole,
    #   x 8192 x 7 layers = 66060288, one piece per block: 256 x 7 = 1792.
    want = {"mla.kv": (7, 66060288, 1792), "kda.conv": (20, 737280, 60), "kda.ssm": (20, 20971520, 20)}
    assert _parts(plan.pairs[0]) == _parts(plan.pairs[1]) == want
    assert (plan.state_bytes, plan.kv_bytes, plan.pieces) == (43417600, 132120576, 3744)


@pytest.mark.parametrize("name", ["nemotron-h-8b", "qwen3-next-80b-a3b", "kimi-linear-48b-a3b"])
@pytest.mark.parametrize("sender,receiver", [((1, 1), (1, 1)), ((2, 2), (2, 1)), ((16, 1), (1, 2))])
def test_each_receiver_gets_exactly_its_rank_bytes(name, sender, receiver):
    """Whatever the sender, a receiver gets its rank's state slot and its KV of the context, once (replicated
    rows, as Nemotron-H's 8 groups and 8 KV heads or Qwen3-Next's 2 KV heads at TP 16, come from one sender)."""
    spec = load_spec(name)
    plan = _plan(name, sender, receiver, context=1000)
    est = estimate(spec, ParallelLayout(tp=receiver[0], pp=receiver[1]), RuntimeConfig(), resolve_dtypes(spec))
    for stage, rank in enumerate(est.ranks):
        for q in range(receiver[0]):
            got = [p for p in plan.pairs if p.receiver == stage * receiver[0] + q]
            assert sum(p.state_bytes for p in got) == rank.state_bytes_per_slot
            assert sum(p.kv_bytes for p in got) == rank.kv_bytes_per_seq(1000)


def test_under_attention_dp_a_request_moves_from_its_attention_dp_group():
    """TP 4 with attention DP 2: a request lives in one group of 2 ranks, its state and KV split over those 2 (the
    attention TP); the plan is of the first group's request: ranks 0 and 1 send, exactly what a TP 2 sender would."""
    spec = load_spec("qwen3-next-80b-a3b")
    narrow = transfer_plan(spec, resolve_dtypes(spec), ParallelLayout(tp=4, attention_dp=True, attention_dp_size=2),
                           ParallelLayout(tp=1), 8192, 32)
    assert [(p.sender, p.receiver) for p in narrow.pairs] == [(0, 0), (1, 0)]
    assert (narrow.sender_group_ranks, narrow.receiver_group_ranks) == (2, 1)
    assert narrow.pairs == _plan("qwen3-next-80b-a3b", (2, 1), (1, 1)).pairs
    # full-width attention DP: every rank holds a request whole, so one rank sends all of it
    full = transfer_plan(spec, resolve_dtypes(spec), ParallelLayout(tp=4, attention_dp=True), ParallelLayout(tp=2),
                         8192, 32)
    assert [(p.sender, p.receiver) for p in full.pairs] == [(0, 0), (0, 1)]
    assert (full.state_bytes, full.kv_bytes) == (39518208, 201326592)
    result = CliRunner().invoke(app, ["size", "qwen3-next-80b-a3b", "--tp", "4", "--attn-dp-size", "2",
                                      "--transfer-to-tp", "1"])
    assert result.exit_code == 0, result.output
    assert "in the first attention-DP group (sender's ranks 0-1 of each stage; other groups' alike)" in result.output


def test_cli_prints_the_plan_and_carries_it_in_json():
    result = CliRunner().invoke(app, ["size", "nemotron-h-8b", "--transfer-to-tp", "2", "--format", "json"])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.output)["transfer"]
    assert (plan["receiver_tp"], plan["context"], plan["state_bytes"], plan["pieces"]) == (2, 8192, 51806208, 131264)
    result = CliRunner().invoke(app, ["size", "nemotron-h-8b", "--pp", "2", "--transfer-to-pp", "1", "--context", "4096"])
    assert result.exit_code == 0, result.output
    assert "transfer of one request: tp 1 x pp 2 -> tp 1 x pp 1 · KV at 4096 tokens" in result.output
    assert "over 2 rank pairs" in result.output


@pytest.mark.parametrize("args,needle", [
    (["--transfer-to-tp", "3"], "--transfer-to-tp: the receiver's layout: "),
    (["--transfer-to-tp", "3"], "nemotron-h-8b.yaml:20: attention.num_kv_heads: 8 cannot be split over tp=3"),
    (["--transfer-to-tp", "0"], "Invalid value for '--transfer-to-tp'"),
    (["--transfer-to-pp", "60"], "mcache: --transfer-to-pp: at most 52 stages"),
    (["--transfer-to-tp", str(2**40 + 1)], "--transfer-to-tp: an integer from 1 to 2**40"),
])
def test_bad_receiver_is_one_line_and_exit_2(args, needle, capsys):
    assert main(["size", "nemotron-h-8b", *args]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1 and "Traceback" not in err
