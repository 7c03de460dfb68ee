"""Capacity planning on a tiny spec whose every figure is computed by hand below."""

from __future__ import annotations

import pytest

from mcache.core.errors import LayoutError
from mcache.core.load import parse_spec
from mcache.core.sizing.capacity import Budget, capacity
from mcache.core.sizing.estimate import estimate
from mcache.core.sizing.gpus import lookup, parse_size
from mcache.core.sizing.layout import ParallelLayout, RuntimeConfig
from mcache.core.sizing.rank import resolve_dtypes

TINY = """
name: tiny
source: hand-made
hidden_size: 64
vocab_size: 100
num_layers: 2
layers: {types: [mamba2, attention]}
mamba2: {num_heads: 4, head_dim: 8, state_size: 16, n_groups: 1, conv_kernel: 4}
attention: {num_heads: 4, num_kv_heads: 2, head_dim: 16}
"""
# conv [4*8 + 2*16 = 64, 3] bf16 = 384 B; SSM [4, 8, 16] bf16 = 1024 B; KV/token 2*2*16*2 = 128 B.
# weights: mamba2 in_proj 64*(32+64+4) = 6400, conv 64*5 = 320, A/D/dt 12, norm 32, out 32*64 = 2048
#          -> 8812 + layer norm 64 = 8876; attention q/k/v/o 4096*3 = 12288 + 64 = 12352;
#          embedding 6400 + head 6400 + final norm 64  -> 34092 params = 68184 B in bf16.
WEIGHTS = 68_184


def tiny_estimate(**runtime):
    spec = parse_spec(TINY, "tiny.yaml")
    rt = RuntimeConfig(max_batch=4, max_seq_len=100, tokens_per_block=16, **runtime)
    return estimate(spec, ParallelLayout(), rt, resolve_dtypes(spec))


def test_tiny_bytes():
    rank = tiny_estimate().ranks[0]
    assert rank.weight_bytes == WEIGHTS
    assert rank.state_bytes_per_slot == 384 + 1024
    assert rank.kv_bytes_per_token == 128
    assert rank.bytes_of("kv") == 4 * 112 * 128  # 100 tokens round up to 7 blocks of 16
    assert rank.cache_bytes == 4 * 112 * 128 + 5 * (384 + 1024) + 5 * 8  # 5 slots with seeds


def test_state_slots_bind_at_short_context():
    caps, tightest = capacity(tiny_estimate(), Budget("test", 1_000_000, 1.0, 0), context=100, concurrency=4)
    cap = caps[0]
    assert tightest == 0
    assert cap.cache_budget_bytes == 1_000_000 - WEIGHTS  # 931,816
    assert cap.fixed_bytes == 5 * 1408 + 5 * 8  # 7,080
    assert cap.kv_budget_bytes == 924_736
    assert cap.kv_tokens == 924_736 // 128  # 7,224
    assert (cap.max_sequences, cap.binding) == (4, "state slots")  # KV alone would hold 924736 // 14336 = 64
    # resized: (931816 - 1 reserved slot x 1416) // (1416 + 14336) = 930400 // 15752 = 59
    assert cap.sequences_if_resized == 59
    # 4 sequences x blocks x 16 x 128 <= 924,736  ->  112 blocks = 1792 tokens
    assert cap.max_context == 1792


def test_kv_binds_at_long_context():
    caps, _ = capacity(tiny_estimate(), Budget("test", 1_000_000, 1.0, 0), context=4000, concurrency=4)
    # 4000 tokens = 250 blocks = 512,000 B of KV per sequence: 924,736 // 512,000 = 1
    assert (caps[0].max_sequences, caps[0].binding) == (1, "KV")


def test_memory_binds_when_weights_do_not_fit():
    caps, _ = capacity(tiny_estimate(), Budget("test", 70_000, 1.0, 0), context=100, concurrency=4)
    assert (caps[0].max_sequences, caps[0].binding, caps[0].max_context) == (0, "memory", 0)


def test_utilization_and_reserve_are_subtracted():
    caps, _ = capacity(tiny_estimate(), Budget("test", 2_000_000, 0.5, 10_000), context=100, concurrency=4)
    assert caps[0].cache_budget_bytes == 1_000_000 - WEIGHTS - 10_000


def test_sliding_window_caps_kv_and_leaves_context_unbounded():
    windowed = TINY.replace("head_dim: 16}", "head_dim: 16, sliding_window: 32}")
    spec = parse_spec(windowed, "w.yaml")
    est = estimate(spec, ParallelLayout(), RuntimeConfig(max_batch=4, max_seq_len=100, tokens_per_block=16),
                   resolve_dtypes(spec))
    assert est.ranks[0].bytes_of("kv") == 4 * 32 * 128  # two blocks per sequence
    caps, _ = capacity(est, Budget("test", 1_000_000, 1.0, 0), context=100_000, concurrency=4)
    assert caps[0].max_context is None and caps[0].binding == "state slots"


def test_gpu_catalogue_and_sizes():
    assert lookup("H200") == ("NVIDIA H200", 143771 << 20)
    assert lookup("h100")[1] == 81559 << 20
    assert parse_size("141GiB", "gpu_memory") == 141 << 30
    assert parse_size("80GB", "gpu_memory") == 80 * 10**9
    assert parse_size("1.5GiB", "gpu_memory") == 3 << 29
    assert parse_size("8.2GB", "weights") == 8_200_000_000  # through a float: 8.2 * 10**9 = 8199999999.999999
    for text in ("80 parsecs", "1.5g", "80"):  # no unit, or a bare G that tools read as 10**9 or 2**30
        with pytest.raises(LayoutError, match="gpu_memory: a size with its unit"):
            parse_size(text, "gpu_memory")
    with pytest.raises(LayoutError, match="utilization"):
        Budget("x", 1, 0.0)


def test_pp_sizes_kv_for_every_request_in_flight():
    spec = parse_spec(TINY, "tiny.yaml")
    rt = RuntimeConfig(max_batch=4, max_seq_len=100, tokens_per_block=16)
    est = estimate(spec, ParallelLayout(pp=2), rt, resolve_dtypes(spec))
    mamba_stage, attention_stage = est.ranks
    # 4 requests per micro-batch x 2 stages = 8 in flight: 8 slots + 1 padding, 8 x 112 KV tokens
    assert mamba_stage.ctx.num_slots == 9 and mamba_stage.bytes_of("kv") == 0
    assert attention_stage.ctx.num_slots == 0 and attention_stage.bytes_of("kv") == 8 * 112 * 128
    caps, _ = capacity(est, Budget("test", 1_000_000, 1.0, 0), context=100, concurrency=4)
    assert [c.max_sequences for c in caps] == [8, 8]
    assert [c.binding for c in caps] == ["state slots", "max batch"]


def test_kv_tokens_caps_the_pool():
    spec = parse_spec(TINY, "tiny.yaml")
    rt = RuntimeConfig(max_batch=4, max_seq_len=100, tokens_per_block=16, kv_tokens=100)
    est = estimate(spec, ParallelLayout(), rt, resolve_dtypes(spec))
    assert est.ranks[0].bytes_of("kv") == 112 * 128  # 100 tokens round up to 7 blocks


def test_per_token_aux_buffers_count_once():
    text = TINY + "aux_buffers:\n  - {name: logits, shape: [32], dtype: float32, per: token}\n"
    spec = parse_spec(text, "aux.yaml")
    est = estimate(spec, ParallelLayout(), RuntimeConfig(max_batch=4, max_seq_len=100, tokens_per_block=16),
                   resolve_dtypes(spec))
    caps, _ = capacity(est, Budget("test", 1_000_000, 1.0, 0), context=100, concurrency=4)
    cap = caps[0]
    # per token: 128 B of KV + 32 x 4 B of aux = 256 B; fixed = slots and seeds only (7,080 B)
    assert cap.fixed_bytes == 5 * 1408 + 5 * 8
    assert cap.kv_budget_bytes == 1_000_000 - WEIGHTS - 7_080
    assert cap.kv_tokens == (1_000_000 - WEIGHTS - 7_080) // 256
    # 4 sequences x blocks x 16 x 256 <= 924,736 -> 56 blocks = 896 tokens
    assert cap.max_context == 896
