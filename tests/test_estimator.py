"""Per-rank cache bytes: every expected value is worked out by hand in the test, never by mcache.

Inline specs are tiny so the arithmetic stays checkable; itemsizes: bfloat16 2, float32 4, int32 4, int64 8.
"""

from __future__ import annotations

import textwrap

import pytest

from mcache.core.errors import LayoutError
from mcache.core.load import bundled_names, load_spec, parse_spec
from mcache.core.sizing.estimate import RankEstimate, estimate
from mcache.core.sizing.layout import ParallelLayout, RuntimeConfig
from mcache.core.sizing.rank import resolve_dtypes
from mcache.core.spec.model import ModelSpec

HEAD = "name: tiny\nsource: test\nhidden_size: {hidden}\nvocab_size: 1000\n"


def make_spec(body: str, hidden: int = 256) -> ModelSpec:
    """A spec from the YAML `body` under a fixed header (hidden 256 unless given)."""
    return parse_spec(HEAD.format(hidden=hidden) + textwrap.dedent(body), "inline.yaml")


def rank_of(spec: ModelSpec, *, tp=1, pp=1, stage=0, dp=False, partition=None, kv=None, conv=None, ssm=None,
            **runtime) -> RankEstimate:
    """The estimate of PP stage `stage` under the given layout, dtype overrides and runtime settings."""
    layout = ParallelLayout(tp=tp, pp=pp, attention_dp=dp, pp_partition=partition)
    dtypes = resolve_dtypes(spec, kv=kv, conv=conv, ssm=ssm)
    return estimate(spec, layout, RuntimeConfig(**runtime), dtypes).ranks[stage]


def by_key(rank: RankEstimate) -> dict[str, int]:
    """Bytes of one unit of every pool of the rank, by pool key (e.g. `mamba2.conv`)."""
    return {c.decl.key: c.decl.bytes_per_unit for c in rank.components}


# --- one layer kind at a time (TP 1, bfloat16) ---------------------------------------------------

KIND_CASES = [
    pytest.param(
        """
        num_layers: 3
        layers: {repeat: [attention]}
        attention: {num_heads: 8, num_kv_heads: 2, head_dim: 64}
        """,
        0, 0, (2 * 2 * 64 * 2) * 3,  # K and V x 2 kv heads x 64 x bf16, 3 layers
        id="attention-gqa",
    ),
    pytest.param(
        """
        num_layers: 2
        layers: {repeat: [attention]}
        attention: {num_heads: 4, num_kv_heads: 4, head_dim: 32}
        """,
        0, 0, (2 * 4 * 32 * 2) * 2,
        id="attention-mha",
    ),
    pytest.param(
        """
        num_layers: 1
        layers: {repeat: [attention]}
        attention: {num_heads: 4, num_kv_heads: 2, head_dim: 96, v_head_dim: 64}
        """,
        0, 0, (2 * 96 + 2 * 64) * 2,  # K is 2 heads x 96, V is 2 heads x 64
        id="attention-v_head_dim-differs",
    ),
    pytest.param(
        """
        num_layers: 2
        layers: {repeat: [mla]}
        mla: {num_heads: 4, kv_lora_rank: 512, qk_rope_head_dim: 64, qk_nope_head_dim: 128, v_head_dim: 128}
        """,
        0, 0, (512 + 64) * 2 * 2,  # one latent per token, 2 layers
        id="mla",
    ),
    pytest.param(
        """
        num_layers: 2
        layers: {repeat: [mamba1]}
        mamba1: {intermediate_size: 64, state_size: 16, conv_kernel: 4}
        """,
        (64 * 3 * 2) * 2, (64 * 16 * 2) * 2, 0,  # conv [I, K-1], ssm [I, N]
        id="mamba1",
    ),
    pytest.param(
        """
        num_layers: 1
        layers: {repeat: [mamba2]}
        mamba2: {num_heads: 8, head_dim: 16, state_size: 32, n_groups: 2, conv_kernel: 4}
        """,
        (8 * 16 + 2 * 2 * 32) * 3 * 2, 8 * 16 * 32 * 2, 0,  # conv [x|B|C, K-1], ssm [H, P, N]
        id="mamba2",
    ),
    pytest.param(
        """
        num_layers: 1
        layers: {repeat: [gdn]}
        gdn: {num_k_heads: 2, num_v_heads: 4, k_head_dim: 32, v_head_dim: 16, conv_kernel: 4}
        """,
        (2 * 2 * 32 + 4 * 16) * 3 * 2, 4 * 16 * 32 * 2, 0,  # conv [q|k|v, K-1], ssm [Hv, Dv, Dk]
        id="gdn",
    ),
    pytest.param(
        """
        num_layers: 1
        layers: {repeat: [kda]}
        kda: {num_heads: 4, head_dim: 32, conv_kernel: 4}
        """,
        (3 * 4 * 32) * 3 * 2, 4 * 32 * 32 * 4, 0,  # the state is float32 although the model is bf16
        id="kda",
    ),
    pytest.param(
        """
        num_layers: 2
        layers: {repeat: [short_conv]}
        short_conv: {conv_kernel: 3}
        """,
        (256 * 2 * 2) * 2, 0, 0,  # [hidden, L_cache-1], 2 layers
        id="short_conv",
    ),
    pytest.param(
        """
        num_layers: 1
        layers: {repeat: [lightning]}
        lightning: {num_heads: 4, head_dim: 32}
        """,
        0, 4 * 32 * 32 * 2, 0,  # [H, D, D], no conv
        id="lightning",
    ),
]


@pytest.mark.parametrize(("body", "conv", "ssm", "kv"), KIND_CASES)
def test_state_and_kv_bytes_per_kind(body, conv, ssm, kv):
    rank = rank_of(make_spec(body))
    assert rank.conv_bytes_per_slot == conv
    assert rank.ssm_bytes_per_slot == ssm
    assert rank.state_bytes_per_slot == conv + ssm
    assert rank.kv_bytes_per_token == kv


def test_mamba2_axes_and_sections():
    spec = make_spec("""
        num_layers: 1
        layers: {repeat: [mamba2]}
        mamba2: {num_heads: 8, head_dim: 16, state_size: 32, n_groups: 2}
    """)
    conv, ssm = rank_of(spec).ctx.states("mamba2")
    assert conv.shape == (8 * 16 + 2 * 2 * 32, 3)
    assert conv.sections == (("x", 8 * 16), ("B", 2 * 32), ("C", 2 * 32))
    assert ssm.shape == (8, 16, 32)
    assert ssm.axes == ("H", "P", "N")


def test_gdn_state_is_v_major():
    spec = make_spec("""
        num_layers: 1
        layers: {repeat: [gdn]}
        gdn: {num_k_heads: 2, num_v_heads: 4, k_head_dim: 32, v_head_dim: 16}
    """)
    _, ssm = rank_of(spec).ctx.states("gdn")
    assert (ssm.shape, ssm.axes) == ((4, 16, 32), ("H", "V", "K"))


def test_sliding_window_caps_kv_tokens():
    spec = make_spec("""
        num_layers: 2
        layers: {repeat: [attention]}
        attention: {num_heads: 4, num_kv_heads: 2, head_dim: 64, sliding_window: 1000}
    """)
    rank = rank_of(spec, max_batch=3, max_seq_len=8192, tokens_per_block=32)
    per_token = (2 * 2 * 64 * 2) * 2
    assert rank.kv_bytes_per_token == per_token
    # the window of 1000 tokens rounds up to 32 blocks of 32 = 1024 tokens per sequence
    assert rank.bytes_of("kv") == per_token * 3 * 1024
    assert rank.kv_bytes_per_seq(100) == per_token * 128  # 4 blocks
    assert rank.kv_bytes_per_seq(5000) == per_token * 1024  # capped


def test_no_window_holds_max_seq_len_tokens():
    spec = make_spec("""
        num_layers: 2
        layers: {repeat: [attention]}
        attention: {num_heads: 4, num_kv_heads: 2, head_dim: 64}
    """)
    rank = rank_of(spec, max_batch=3, max_seq_len=8000, tokens_per_block=32)
    assert rank.bytes_of("kv") == (2 * 2 * 64 * 2) * 2 * 3 * 8000  # 8000 is 250 whole blocks


KDA_SPEC = """
    num_layers: 1
    dtype: bfloat16
    layers: {repeat: [kda]}
    kda: {num_heads: 4, head_dim: 32}
"""


@pytest.mark.parametrize(("field", "option", "dtype", "itemsize"), [
    (None, None, "float32", 4),  # float32 by default, not the model dtype
    ("bfloat16", None, "bfloat16", 2),  # the spec's ssm_dtype
    (None, "float16", "float16", 2),  # --ssm-dtype
    ("bfloat16", "float32", "float32", 4),  # --ssm-dtype over the spec
], ids=["default", "spec", "option", "option-over-spec"])
def test_kda_state_is_float32_unless_asked(field, option, dtype, itemsize):
    spec = KDA_SPEC + (f"    ssm_dtype: {field}\n" if field else "")
    rank = rank_of(make_spec(spec), ssm=option)
    assert rank.ssm_bytes_per_slot == 4 * 32 * 32 * itemsize  # heads x head_dim x key dim
    assert {c.decl.dtype for c in rank.components if c.decl.component == "ssm"} == {dtype}


def test_kda_conv_follows_conv_dtype():
    rank = rank_of(make_spec(KDA_SPEC), conv="float32")
    assert rank.conv_bytes_per_slot == (3 * 4 * 32) * 3 * 4


MIXED = """
    num_layers: 2
    layers: {pattern: "M*"}
    attention: {num_heads: 8, num_kv_heads: 2, head_dim: 64}
    mamba2: {num_heads: 8, head_dim: 16, state_size: 32, n_groups: 2}
"""


@pytest.mark.parametrize(
    ("fields", "overrides", "conv", "ssm", "kv"),
    [
        pytest.param("", {}, 256 * 3 * 2, 4096 * 2, 2 * 2 * 64 * 2, id="model-dtype"),
        pytest.param("ssm_dtype: float32\n", {}, 256 * 3 * 2, 4096 * 4, 2 * 2 * 64 * 2, id="spec-ssm-fp32"),
        pytest.param("ssm_dtype: float32\n", {"ssm": "bf16"}, 256 * 3 * 2, 4096 * 2, 2 * 2 * 64 * 2,
                     id="override-beats-spec"),
        pytest.param("conv_dtype: fp32\n", {}, 256 * 3 * 4, 4096 * 2, 2 * 2 * 64 * 2, id="spec-conv-fp32"),
        pytest.param("", {"kv": "fp8"}, 256 * 3 * 2, 4096 * 2, 2 * 2 * 64 * 1, id="kv-fp8"),
        pytest.param("dtype: float16\nkv_dtype: float32\n", {}, 256 * 3 * 2, 4096 * 2, 2 * 2 * 64 * 4,
                     id="spec-kv-fp32"),
    ],
)
def test_dtype_policy(fields, overrides, conv, ssm, kv):
    # conv channels 8*16 + 2*2*32 = 256, ssm elements 8*16*32 = 4096, kv elements 2*2*64
    rank = rank_of(make_spec(fields + textwrap.dedent(MIXED)), **overrides)
    assert (rank.conv_bytes_per_slot, rank.ssm_bytes_per_slot, rank.kv_bytes_per_token) == (conv, ssm, kv)


# --- tensor parallel -----------------------------------------------------------------------------

GROUPS_SPEC = """
    num_layers: 1
    layers: {{repeat: [mamba2]}}
    mamba2: {{num_heads: 16, head_dim: 8, state_size: 16, n_groups: {groups}}}
"""


@pytest.mark.parametrize(
    ("groups", "tp", "conv", "ssm", "sections"),
    [
        pytest.param(1, 1, (16 * 8 + 2 * 1 * 16) * 3 * 2, 16 * 8 * 16 * 2, (128, 16), id="G1-tp1"),
        pytest.param(1, 2, (8 * 8 + 2 * 1 * 16) * 3 * 2, 8 * 8 * 16 * 2, (64, 16), id="G1-tp2-replicated"),
        pytest.param(1, 4, (4 * 8 + 2 * 1 * 16) * 3 * 2, 4 * 8 * 16 * 2, (32, 16), id="G1-tp4-replicated"),
        pytest.param(1, 8, (2 * 8 + 2 * 1 * 16) * 3 * 2, 2 * 8 * 16 * 2, (16, 16), id="G1-tp8-replicated"),
        pytest.param(1, 16, (1 * 8 + 2 * 1 * 16) * 3 * 2, 1 * 8 * 16 * 2, (8, 16), id="G1-tp16-replicated"),
        pytest.param(8, 1, (16 * 8 + 2 * 8 * 16) * 3 * 2, 16 * 8 * 16 * 2, (128, 128), id="G8-tp1"),
        pytest.param(8, 2, (8 * 8 + 2 * 4 * 16) * 3 * 2, 8 * 8 * 16 * 2, (64, 64), id="G8-tp2"),
        pytest.param(8, 4, (4 * 8 + 2 * 2 * 16) * 3 * 2, 4 * 8 * 16 * 2, (32, 32), id="G8-tp4"),
        pytest.param(8, 8, (2 * 8 + 2 * 1 * 16) * 3 * 2, 2 * 8 * 16 * 2, (16, 16), id="G8-tp8"),
        pytest.param(8, 16, (1 * 8 + 2 * 1 * 16) * 3 * 2, 1 * 8 * 16 * 2, (8, 16), id="G8-tp16-replicated"),
    ],
)
def test_mamba2_group_replication(groups, tp, conv, ssm, sections):
    rank = rank_of(make_spec(GROUPS_SPEC.format(groups=groups)), tp=tp)
    assert rank.conv_bytes_per_slot == conv
    assert rank.ssm_bytes_per_slot == ssm
    x, bc = sections
    assert rank.ctx.states("mamba2")[0].sections == (("x", x), ("B", bc), ("C", bc))


@pytest.mark.parametrize(
    ("tp", "kv"),
    [
        pytest.param(1, 2 * 2 * 64 * 2, id="tp1"),
        pytest.param(2, 2 * 1 * 64 * 2, id="tp2"),
        pytest.param(4, 2 * 1 * 64 * 2, id="tp4-replicated"),
        pytest.param(8, 2 * 1 * 64 * 2, id="tp8-replicated"),
    ],
)
def test_kv_heads_replicated_when_tp_exceeds_them(tp, kv):
    spec = make_spec("""
        num_layers: 1
        layers: {repeat: [attention]}
        attention: {num_heads: 16, num_kv_heads: 2, head_dim: 64}
    """)
    assert rank_of(spec, tp=tp).kv_bytes_per_token == kv


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_mla_latent_not_sharded(tp):
    spec = make_spec("""
        num_layers: 2
        layers: {repeat: [mla]}
        mla: {num_heads: 8, kv_lora_rank: 512, qk_rope_head_dim: 64, qk_nope_head_dim: 128, v_head_dim: 128}
    """)
    assert rank_of(spec, tp=tp).kv_bytes_per_token == (512 + 64) * 2 * 2


@pytest.mark.parametrize(
    ("body", "hidden", "tp", "field"),
    [
        pytest.param("layers: {repeat: [mamba2]}\nmamba2: {num_heads: 24, head_dim: 64, state_size: 128}",
                     256, 16, "mamba2.num_heads", id="mamba2-heads-24-over-tp16"),
        pytest.param("layers: {repeat: [mamba2]}\nmamba2: {num_heads: 12, head_dim: 8, state_size: 16, n_groups: 3}",
                     256, 2, "mamba2.n_groups", id="mamba2-groups-3-over-tp2"),
        pytest.param("layers: {repeat: [attention]}\nattention: {num_heads: 12, num_kv_heads: 4, head_dim: 64}",
                     256, 8, "attention.num_heads", id="attention-heads-12-over-tp8"),
        pytest.param("layers: {repeat: [attention]}\nattention: {num_heads: 6, num_kv_heads: 3, head_dim: 64}",
                     256, 2, "attention.num_kv_heads", id="kv-heads-3-over-tp2"),
        pytest.param("layers: {repeat: [mla]}\nmla: {num_heads: 6, kv_lora_rank: 64, qk_rope_head_dim: 16, "
                     "qk_nope_head_dim: 32, v_head_dim: 32}",
                     256, 4, "mla.num_heads", id="mla-heads-6-over-tp4"),
        # value heads are whole groups of key heads (check_spec), so a TP that splits the key heads splits them too
        pytest.param("layers: {repeat: [gdn]}\ngdn: {num_k_heads: 3, num_v_heads: 6, k_head_dim: 32, v_head_dim: 32}",
                     256, 4, "gdn.num_k_heads", id="gdn-k-heads-3-over-tp4"),
        pytest.param("layers: {repeat: [kda]}\nkda: {num_heads: 6, head_dim: 32}",
                     256, 4, "kda.num_heads", id="kda-heads-6-over-tp4"),
        pytest.param("layers: {repeat: [mamba1]}\nmamba1: {intermediate_size: 100}",
                     256, 8, "mamba1.intermediate_size", id="mamba1-channels-100-over-tp8"),
        pytest.param("layers: {repeat: [short_conv]}\nshort_conv: {conv_kernel: 3}",
                     100, 8, "hidden_size", id="short_conv-hidden-100-over-tp8"),
        pytest.param("layers: {repeat: [lightning]}\nlightning: {num_heads: 6, head_dim: 32}",
                     256, 4, "lightning.num_heads", id="lightning-heads-6-over-tp4"),
    ],
)
def test_impossible_tp_split_names_the_field(body, hidden, tp, field):
    spec = make_spec("num_layers: 1\n" + body + "\n", hidden=hidden)
    with pytest.raises(LayoutError) as info:
        rank_of(spec, tp=tp)
    assert info.value.field == field
    assert str(info.value).startswith(f"{field}: ")
    assert f"tp={tp}" in str(info.value)


# --- pipeline parallel ---------------------------------------------------------------------------

# 4 Mamba2 layers then 4 attention layers; per Mamba2 layer conv (8*16 + 2*2*32)*3*2 = 1536 B and
# ssm 8*16*32*2 = 8192 B per slot; per attention layer 2*2*64*2 = 512 B per token.
PP_SPEC = """
    num_layers: 8
    layers: {pattern: "MMMM****"}
    attention: {num_heads: 8, num_kv_heads: 2, head_dim: 64}
    mamba2: {num_heads: 8, head_dim: 16, state_size: 32, n_groups: 2}
"""
MAMBA_LAYER = 1536 + 8192
ATTN_LAYER = 512


def test_pp_even_split_and_a_stage_without_recurrent_layers():
    spec = make_spec(PP_SPEC)
    first = rank_of(spec, pp=2, stage=0, max_batch=4)
    last = rank_of(spec, pp=2, stage=1, max_batch=4)
    assert first.ctx.layers == range(0, 4)
    assert (first.state_bytes_per_slot, first.kv_bytes_per_token) == (4 * MAMBA_LAYER, 0)
    assert first.ctx.num_slots == 4 * 2 + 1  # max_batch x pp + one padding slot
    assert last.ctx.layers == range(4, 8)
    assert (last.state_bytes_per_slot, last.kv_bytes_per_token) == (0, 4 * ATTN_LAYER)
    assert last.ctx.num_slots == 0
    assert [c.decl.key for c in last.components] == ["attention.kv"]  # no state, no seeds
    assert last.bytes_of("aux") == 0


def test_pp_uneven_default_split_front_loads_extra_layers():
    spec = make_spec(PP_SPEC)
    ranges = [rank_of(spec, pp=3, stage=s).ctx.layers for s in range(3)]
    assert ranges == [range(0, 3), range(3, 6), range(6, 8)]


def test_pp_explicit_partition():
    spec = make_spec(PP_SPEC)
    first = rank_of(spec, pp=2, stage=0, partition=(3, 5))
    last = rank_of(spec, pp=2, stage=1, partition=(3, 5))
    assert (first.ctx.layers, last.ctx.layers) == (range(0, 3), range(3, 8))
    assert (first.state_bytes_per_slot, first.kv_bytes_per_token) == (3 * MAMBA_LAYER, 0)
    assert (last.state_bytes_per_slot, last.kv_bytes_per_token) == (1 * MAMBA_LAYER, 4 * ATTN_LAYER)


@pytest.mark.parametrize(
    ("pp", "partition", "field"),
    [
        pytest.param(2, (3, 4), "pp_partition", id="sum-short"),
        pytest.param(2, (8,), "pp_partition", id="wrong-length"),
        pytest.param(2, (9, -1), "pp_partition", id="negative"),
        pytest.param(2, (0, 8), "pp_partition", id="empty-stage"),
        pytest.param(9, None, "pp", id="more-stages-than-layers"),
    ],
)
def test_bad_pp_partition(pp, partition, field):
    with pytest.raises(LayoutError) as info:
        rank_of(make_spec(PP_SPEC), pp=pp, partition=partition)
    assert info.value.field == field


# --- attention data parallel ---------------------------------------------------------------------

HYBRID = """
    num_layers: 2
    layers: {pattern: "M*"}
    attention: {num_heads: 8, num_kv_heads: 2, head_dim: 64}
    mamba2: {num_heads: 8, head_dim: 16, state_size: 32, n_groups: 2}
"""


def test_attention_dp_keeps_whole_state_and_heads_and_reserves_a_dummy_slot():
    spec = make_spec(HYBRID)
    dp = rank_of(spec, tp=4, dp=True, max_batch=4)
    assert dp.conv_bytes_per_slot == (8 * 16 + 2 * 2 * 32) * 3 * 2
    assert dp.ssm_bytes_per_slot == 8 * 16 * 32 * 2
    assert dp.kv_bytes_per_token == 2 * 2 * 64 * 2
    assert dp.ctx.num_slots == 4 + 1 + 1  # batch + padding + attention-DP dummy


def test_same_tp_without_attention_dp_shards():
    tp = rank_of(make_spec(HYBRID), tp=4, max_batch=4)
    assert tp.conv_bytes_per_slot == (2 * 16 + 2 * 1 * 32) * 3 * 2  # 2 groups over tp 4: one replicated
    assert tp.ssm_bytes_per_slot == 2 * 16 * 32 * 2
    assert tp.kv_bytes_per_token == 2 * 1 * 64 * 2
    assert tp.ctx.num_slots == 4 + 1


# --- speculative decoding ------------------------------------------------------------------------

# Two Mamba2 layers (conv [256, 3], ssm [8, 16, 32]) and one attention layer; max_batch 4, 3 drafts:
# T = 4 tokens per step, 4 reserved slots (draft + 1), 4 + 4 = 8 slots.
SPEC_SPEC = """
    num_layers: 3
    layers: {pattern: "MM*"}
    attention: {num_heads: 8, num_kv_heads: 2, head_dim: 64}
    mamba2: {num_heads: 8, head_dim: 16, state_size: 32, n_groups: 2}
"""
SPEC_RT = {"max_batch": 4, "draft_tokens": 3}


def spec_pools(rank: RankEstimate) -> dict[str, int]:
    return {k: v for k, v in by_key(rank).items() if k not in ("attention.kv", "mamba2.conv", "mamba2.ssm", "seed")}


def test_scheme_none_has_no_spec_buffers():
    rank = rank_of(make_spec(SPEC_SPEC), max_batch=4)
    assert spec_pools(rank) == {}
    assert rank.ctx.num_slots == 4 + 1
    assert rank.bytes_of("aux") == 8 * (4 + 1)  # an int64 seed per slot


def test_scheme_intermediate():
    rank = rank_of(make_spec(SPEC_SPEC), spec_scheme="intermediate", **SPEC_RT)
    assert spec_pools(rank) == {
        "mamba2.inter_conv": 2 * 4 * (256 * 3) * 2,  # layers x T x conv elements x bf16
        "mamba2.inter_ssm": 2 * 4 * (8 * 16 * 32) * 2,
    }
    assert rank.bytes_per_request == 2 * 4 * 768 * 2 + 2 * 4 * 4096 * 2
    assert rank.bytes_of("spec") == 4 * (2 * 4 * 768 * 2 + 2 * 4 * 4096 * 2)  # per batch row, 4 rows
    assert rank.ctx.num_slots == 4 + 4


def test_scheme_replay():
    rank = rank_of(make_spec(SPEC_SPEC), spec_scheme="replay", **SPEC_RT)
    # ring [2 buffers, history max(16, 4) = 16, *entry] per slot, 2 layers
    expected = {
        "mamba2.ring_x": 2 * 2 * 16 * (8 * 16) * 2,
        "mamba2.ring_B": 2 * 2 * 16 * (2 * 32) * 2,
        "mamba2.ring_dt": 2 * 2 * 16 * 8 * 4,
        "mamba2.ring_dA": 2 * 2 * 16 * 8 * 4,
        "mamba2.ring_conv_in": 2 * 2 * 16 * 256 * 2,
        "replay_prev_accepted": 4,
        "replay_buf_idx": 4,
    }
    assert spec_pools(rank) == expected
    assert rank.bytes_of("spec") == 8 * sum(expected.values())  # 8 slots
    assert rank.bytes_per_request == 0


def test_scheme_replay_with_longer_history():
    rank = rank_of(make_spec(SPEC_SPEC), spec_scheme="replay", replay_history=20, **SPEC_RT)
    assert by_key(rank)["mamba2.ring_x"] == 2 * 2 * 20 * (8 * 16) * 2


def test_scheme_index():
    rank = rank_of(make_spec(SPEC_SPEC), spec_scheme="index", **SPEC_RT)
    expected = {
        "mamba2.conv_versions": 2 * 4 * 768 * 2,  # T versions of each state per slot
        "mamba2.ssm_versions": 2 * 4 * 4096 * 2,
        "version_idx": 4,
    }
    assert spec_pools(rank) == expected
    assert rank.bytes_of("spec") == 8 * sum(expected.values())


FALLBACK_SPEC = """
    num_layers: 3
    layers:
      pattern: "ABC"
      legend: {A: mamba1, B: lightning, C: mamba2}
    mamba1: {intermediate_size: 64, state_size: 16}
    lightning: {num_heads: 4, head_dim: 32}
    mamba2: {num_heads: 8, head_dim: 16, state_size: 32, n_groups: 2}
"""


def test_replay_falls_back_to_intermediate_for_mamba1_and_lightning():
    pools = by_key(rank_of(make_spec(FALLBACK_SPEC), spec_scheme="replay", **SPEC_RT))
    assert pools["mamba1.inter_conv"] == 4 * 64 * 3 * 2
    assert pools["mamba1.inter_ssm"] == 4 * 64 * 16 * 2
    assert pools["lightning.inter_ssm"] == 4 * (4 * 32 * 32) * 2
    assert pools["mamba2.ring_x"] == 2 * 16 * (8 * 16) * 2  # one Mamba2 layer
    assert not any(k.startswith("mamba2.inter_") for k in pools)
    assert not any(k.startswith(("mamba1.ring_", "lightning.ring_")) for k in pools)
    assert pools["replay_prev_accepted"] == pools["replay_buf_idx"] == 4


def test_replay_without_replayable_kinds_has_no_bookkeeping():
    spec = make_spec("""
        num_layers: 1
        layers: {repeat: [mamba1]}
        mamba1: {intermediate_size: 64}
    """)
    pools = by_key(rank_of(spec, spec_scheme="replay", **SPEC_RT))
    assert set(pools) == {"mamba1.conv", "mamba1.ssm", "mamba1.inter_conv", "mamba1.inter_ssm", "seed"}


@pytest.mark.parametrize(
    ("settings", "dp", "slots"),
    [
        pytest.param({}, False, 4 + 1, id="no-draft"),
        pytest.param({"draft_tokens": 3, "spec_scheme": "intermediate"}, False, 4 + 3 + 1, id="draft3"),
        pytest.param({"draft_tokens": 3, "spec_scheme": "replay"}, True, 4 + 3 + 1 + 1, id="draft3-attention-dp"),
        pytest.param({"reserved_slots": 0}, False, 4, id="explicit-0"),
    ],
)
def test_reserved_slots(settings, dp, slots):
    assert rank_of(make_spec(SPEC_SPEC), tp=2, dp=dp, max_batch=4, **settings).ctx.num_slots == slots


def test_snapshot_slots_copy_every_state():
    rank = rank_of(make_spec(SPEC_SPEC), max_batch=4, snapshot_slots=3)
    pools = by_key(rank)
    assert (pools["mamba2.snap_conv"], pools["mamba2.snap_ssm"]) == (2 * 768 * 2, 2 * 4096 * 2)
    assert rank.static_bytes == 3 * (2 * 768 * 2 + 2 * 4096 * 2)


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        pytest.param({"spec_scheme": "replay"}, "draft_tokens", id="scheme-without-drafts"),
        pytest.param({"draft_tokens": 2}, "spec_scheme", id="drafts-without-scheme"),
        pytest.param({"draft_tokens": 2, "spec_scheme": "eagle"}, "spec_scheme", id="unknown-scheme"),
        pytest.param({"draft_tokens": 7, "spec_scheme": "replay", "replay_history": 4}, "replay_history",
                     id="history-shorter-than-step"),
        pytest.param({"max_batch": 0}, "max_batch", id="zero-batch"),
    ],
)
def test_bad_runtime_settings(settings, field):
    with pytest.raises(LayoutError) as info:
        RuntimeConfig(**settings)
    assert info.value.field == field


# --- the worked figure and the bundled models ----------------------------------------------------


def test_qwen3_next_worked_figure():
    rank = rank_of(load_spec("qwen3-next-80b-a3b"))
    assert rank.conv_bytes_per_slot == 36 * (8192 * 3 * 2)  # 49,152 B per layer
    assert rank.ssm_bytes_per_slot == 36 * (32 * 128 * 128 * 2)  # 1,048,576 B per layer
    assert rank.state_bytes_per_slot == 39_518_208
    assert rank.kv_bytes_per_token == 24_576  # 12 layers x 2 x 2 kv heads x 256 x bf16


BUNDLED = [
    "falcon-h1-0.5b", "granite-4.0-h-tiny", "jamba-v0.1", "kimi-linear-48b-a3b", "lfm2-1.2b", "mamba2-2.7b",
    "minimax-text-01", "nemotron-3-nano-30b-a3b", "nemotron-h-56b", "nemotron-h-8b", "qwen3-next-80b-a3b",
    "qwen3.5-27b", "zamba2-2.7b",
]


def test_bundled_names():
    assert set(BUNDLED) <= set(bundled_names())


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_spec_loads_and_estimates(name):
    spec = load_spec(name)
    assert spec.source.startswith("https://huggingface.co/") and spec.source.endswith("/config.json")
    assert rank_of(spec).cache_bytes > 0


# (model, tp) -> conv B/slot, ssm B/slot, KV B/token, by hand from the config numbers.
REAL_MODELS = [
    # Nemotron-H-8B: 24 Mamba2 (H 128, P 64, N 128, G 8, K 4; SSM bf16: no hint), 4 attention (8 kv x 128)
    pytest.param("nemotron-h-8b", 1, 24 * (128 * 64 + 2 * 8 * 128) * 3 * 2, 24 * 128 * 64 * 128 * 2,
                 4 * 2 * 8 * 128 * 2, id="nemotron-h-8b-tp1"),
    pytest.param("nemotron-h-8b", 2, 24 * (64 * 64 + 2 * 4 * 128) * 3 * 2, 24 * 64 * 64 * 128 * 2,
                 4 * 2 * 4 * 128 * 2, id="nemotron-h-8b-tp2"),
    pytest.param("nemotron-h-8b", 4, 24 * (32 * 64 + 2 * 2 * 128) * 3 * 2, 24 * 32 * 64 * 128 * 2,
                 4 * 2 * 2 * 128 * 2, id="nemotron-h-8b-tp4"),
    pytest.param("nemotron-h-8b", 8, 24 * (16 * 64 + 2 * 1 * 128) * 3 * 2, 24 * 16 * 64 * 128 * 2,
                 4 * 2 * 1 * 128 * 2, id="nemotron-h-8b-tp8"),
    # Kimi-Linear: 20 KDA (32 heads x 128, conv [3*H*D, 3], float32 state), 7 MLA (latent 512 + 64)
    pytest.param("kimi-linear-48b-a3b", 1, 20 * (3 * 32 * 128) * 3 * 2, 20 * 32 * 128 * 128 * 4,
                 7 * (512 + 64) * 2, id="kimi-linear-tp1"),
    pytest.param("kimi-linear-48b-a3b", 2, 20 * (3 * 16 * 128) * 3 * 2, 20 * 16 * 128 * 128 * 4,
                 7 * (512 + 64) * 2, id="kimi-linear-tp2"),
    pytest.param("kimi-linear-48b-a3b", 4, 20 * (3 * 8 * 128) * 3 * 2, 20 * 8 * 128 * 128 * 4,
                 7 * (512 + 64) * 2, id="kimi-linear-tp4"),
    pytest.param("kimi-linear-48b-a3b", 8, 20 * (3 * 4 * 128) * 3 * 2, 20 * 4 * 128 * 128 * 4,
                 7 * (512 + 64) * 2, id="kimi-linear-tp8"),
    # Falcon-H1-0.5B: 36 layers of Mamba2 (H 24, P 64, N 128, G 1; bf16) + attention (2 kv x 64)
    pytest.param("falcon-h1-0.5b", 1, 36 * (24 * 64 + 2 * 1 * 128) * 3 * 2, 36 * 24 * 64 * 128 * 2,
                 36 * 2 * 2 * 64 * 2, id="falcon-h1-tp1"),
    pytest.param("falcon-h1-0.5b", 2, 36 * (12 * 64 + 2 * 1 * 128) * 3 * 2, 36 * 12 * 64 * 128 * 2,
                 36 * 2 * 1 * 64 * 2, id="falcon-h1-tp2"),
    pytest.param("falcon-h1-0.5b", 4, 36 * (6 * 64 + 2 * 1 * 128) * 3 * 2, 36 * 6 * 64 * 128 * 2,
                 36 * 2 * 1 * 64 * 2, id="falcon-h1-tp4-kv-replicated"),
    pytest.param("falcon-h1-0.5b", 8, 36 * (3 * 64 + 2 * 1 * 128) * 3 * 2, 36 * 3 * 64 * 128 * 2,
                 36 * 2 * 1 * 64 * 2, id="falcon-h1-tp8-kv-replicated"),
    # Nemotron-3-Nano: 23 Mamba2 (H 64, P 64, N 128, G 8; float32), 6 attention with 2 kv heads
    pytest.param("nemotron-3-nano-30b-a3b", 1, 23 * (64 * 64 + 2 * 8 * 128) * 3 * 2, 23 * 64 * 64 * 128 * 4,
                 6 * 2 * 2 * 128 * 2, id="nemotron-3-nano-tp1"),
    pytest.param("nemotron-3-nano-30b-a3b", 8, 23 * (8 * 64 + 2 * 1 * 128) * 3 * 2, 23 * 8 * 64 * 128 * 4,
                 6 * 2 * 1 * 128 * 2, id="nemotron-3-nano-tp8"),
    # Zamba2-2.7B: 54 Mamba2 (H 80, P 64, N 64, G 1); every hybrid layer (9) keeps its own KV (32 x 160)
    pytest.param("zamba2-2.7b", 1, 54 * (80 * 64 + 2 * 64) * 3 * 2, 54 * 80 * 64 * 64 * 2,
                 9 * 2 * 32 * 160 * 2, id="zamba2-tp1"),
    pytest.param("zamba2-2.7b", 4, 54 * (20 * 64 + 2 * 64) * 3 * 2, 54 * 20 * 64 * 64 * 2,
                 9 * 2 * 8 * 160 * 2, id="zamba2-tp4"),
    # Qwen3.5-27B: 48 GDN (16 k heads, 48 v heads, 128 dims; SSM float32), 16 attention (4 kv x 256)
    pytest.param("qwen3.5-27b", 2, 48 * (2 * 8 * 128 + 24 * 128) * 3 * 2, 48 * 24 * 128 * 128 * 4,
                 16 * 2 * 2 * 256 * 2, id="qwen3.5-tp2"),
    # LFM2-1.2B: 10 short-conv layers over hidden 2048, L_cache 3; 6 attention (8 kv x 64)
    pytest.param("lfm2-1.2b", 2, 10 * 1024 * 2 * 2, 0, 6 * 2 * 4 * 64 * 2, id="lfm2-tp2"),
    # MiniMax-Text-01: 70 lightning layers (64 heads x 128 x 128, bf16), 10 attention (8 kv x 128)
    pytest.param("minimax-text-01", 8, 0, 70 * 8 * 128 * 128 * 2, 10 * 2 * 1 * 128 * 2, id="minimax-tp8"),
    # Jamba: 28 Mamba1 (d_inner 8192, N 16, K 4), 4 attention (8 kv x 128)
    pytest.param("jamba-v0.1", 4, 28 * 2048 * 3 * 2, 28 * 2048 * 16 * 2, 4 * 2 * 2 * 128 * 2, id="jamba-tp4"),
]


@pytest.mark.parametrize(("name", "tp", "conv", "ssm", "kv"), REAL_MODELS)
def test_real_model_bytes_per_rank(name, tp, conv, ssm, kv):
    rank = rank_of(load_spec(name), tp=tp)
    assert (rank.conv_bytes_per_slot, rank.ssm_bytes_per_slot, rank.kv_bytes_per_token) == (conv, ssm, kv)


def test_falcon_h1_does_not_split_over_tp16():
    # 8 attention heads (checked first, in report order) and 24 Mamba2 heads: neither divides by 16
    with pytest.raises(LayoutError) as info:
        rank_of(load_spec("falcon-h1-0.5b"), tp=16)
    assert info.value.field == "attention.num_heads"


def test_nemotron_h_8b_total_cache_bytes():
    rank = rank_of(load_spec("nemotron-h-8b"), max_batch=8, max_seq_len=4096)
    state = 24 * (128 * 64 + 2 * 8 * 128) * 3 * 2 + 24 * 128 * 64 * 128 * 2  # bf16: the config has no state-dtype hint
    kv = 4 * 2 * 8 * 128 * 2
    slots = 8 + 1
    assert rank.cache_bytes == kv * 8 * 4096 + state * slots + 8 * slots  # KV + state + int64 seeds
