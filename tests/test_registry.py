"""The auxiliary-buffer registry and the spec's own `aux_buffers`; expected bytes worked out by hand."""

from __future__ import annotations

import textwrap

import pytest

from mcache.core.errors import LayoutError
from mcache.core.load import parse_spec
from mcache.core.sizing import auxiliary as aux
from mcache.core.sizing.buffers import BufferDecl
from mcache.core.sizing.estimate import estimate
from mcache.core.sizing.layout import ParallelLayout, RuntimeConfig
from mcache.core.sizing.rank import RankContext, resolve_dtypes
from mcache.core.spec.model import ModelSpec

# One Mamba2 layer (H 8, P 16, N 32, G 2) and one attention layer; hidden 256.
BASE = """\
name: tiny
source: test
hidden_size: 256
vocab_size: 1000
num_layers: 2
layers: {pattern: "M*"}
attention: {num_heads: 8, num_kv_heads: 2, head_dim: 64}
mamba2: {num_heads: 8, head_dim: 16, state_size: 32, n_groups: 2}
"""


def make_spec(aux_yaml: str = "") -> ModelSpec:
    return parse_spec(BASE + textwrap.dedent(aux_yaml), "inline.yaml")


def context(spec: ModelSpec, *, tp=1, pp=1, stage=0, **runtime) -> RankContext:
    return RankContext.build(spec, ParallelLayout(tp=tp, pp=pp), RuntimeConfig(**runtime), resolve_dtypes(spec), stage)


@pytest.fixture
def registry(monkeypatch):
    """A private copy of the registry, so a test's registrations vanish after it."""
    monkeypatch.setattr(aux, "_REGISTRY", dict(aux._REGISTRY))
    return aux


def probe(ctx: RankContext) -> list[BufferDecl]:
    return [BufferDecl("probe", "aux", None, 1, "rank", (10,), ("d",), "float32")]


def other_probe(ctx: RankContext) -> list[BufferDecl]:
    return []


# --- register ------------------------------------------------------------------------------------


def test_builtins_are_registered():
    assert {"spec.intermediate", "spec.replay", "spec.index", "slot.seed", "snapshot", "spec.aux_buffers"} <= set(
        aux.registered()
    )


def test_register_same_function_twice_is_a_noop(registry):
    before = len(registry.registered())
    registry.register("test.probe", probe)
    registry.register("test.probe", probe)
    assert len(registry.registered()) == before + 1
    assert registry.registered()["test.probe"] is probe


def test_register_builtin_again_is_a_noop(registry):
    before = registry.registered()
    registry.register("slot.seed", aux.slot_seeds)
    assert registry.registered() == before


def test_register_other_function_under_taken_key_raises(registry):
    registry.register("test.probe", probe)
    with pytest.raises(ValueError, match="'test.probe' is already registered by probe"):
        registry.register("test.probe", other_probe)
    assert registry.registered()["test.probe"] is probe
    with pytest.raises(ValueError, match="slot.seed"):
        registry.register("slot.seed", probe)


def test_registered_returns_a_copy(registry):
    registry.registered()["test.probe"] = probe
    assert "test.probe" not in registry.registered()


def test_registered_estimator_is_counted(registry):
    spec = make_spec()
    ctx = context(spec, max_batch=4)
    before = aux.estimate_aux_bytes(ctx)
    assert before == 8 * (4 + 1)  # an int64 seed per slot: 4 requests + 1 padding slot
    registry.register("test.probe", probe)
    assert aux.estimate_aux_bytes(ctx) == before + 10 * 4
    rank = estimate(spec, ParallelLayout(), RuntimeConfig(max_batch=4), resolve_dtypes(spec)).ranks[0]
    assert [(c.decl.key, c.total_bytes) for c in rank.components if c.decl.key == "probe"] == [("probe", 10 * 4)]


# --- estimate_aux_bytes sums every registered buffer ---------------------------------------------

AUX = """\
aux_buffers:
  - {name: dt_cache, shape: ["mamba2.num_heads // tp", 4], dtype: float32, per: slot, layer_kind: mamba2}
  - {name: step_table, shape: ["max_batch * T"], dtype: int32, per: rank}
  - {name: scratch, shape: [hidden_size, 2], dtype: bf16, per: request}
"""


def test_estimate_aux_bytes_sums_builtin_and_spec_buffers():
    # tp 2, max_batch 4, 1 draft (T = 2): 4 + 2 = 6 slots. Mamba2 per rank: 4 heads, 1 group (of 2).
    ctx = context(make_spec(AUX), tp=2, max_batch=4, draft_tokens=1, spec_scheme="intermediate")
    seed = 8 * 6
    inter_conv = 1 * 2 * ((4 * 16 + 2 * 1 * 32) * 3) * 2 * 4  # layers x T x conv elements x bf16 x 4 rows
    inter_ssm = 1 * 2 * (4 * 16 * 32) * 2 * 4
    dt_cache = (8 // 2) * 4 * 4 * 6  # [heads/tp, 4] float32 per slot
    step_table = (4 * 2) * 4  # [max_batch * T] int32, once per rank
    scratch = 256 * 2 * 2 * 4  # [hidden, 2] bf16 per batch row
    assert aux.estimate_aux_bytes(ctx) == seed + inter_conv + inter_ssm + dt_cache + step_table + scratch


def test_spec_aux_buffers_declarations():
    decls = {d.key: d for d in aux.spec_aux_buffers(context(make_spec(AUX), tp=2, max_batch=4))}
    assert set(decls) == {"mamba2.dt_cache", "step_table", "scratch"}
    dt = decls["mamba2.dt_cache"]
    assert (dt.shape, dt.axes, dt.dtype, dt.per, dt.layers) == ((4, 4), ("mamba2.num_heads // tp", "d1"), "float32",
                                                               "slot", 1)
    assert decls["scratch"].dtype == "bfloat16"  # alias canonicalised


def test_spec_aux_buffer_skipped_on_a_stage_without_its_kind():
    spec = make_spec(AUX)
    first = {d.key for d in aux.spec_aux_buffers(context(spec, pp=2, stage=0))}
    last = {d.key for d in aux.spec_aux_buffers(context(spec, pp=2, stage=1))}
    assert first == {"mamba2.dt_cache", "step_table", "scratch"}
    assert last == {"step_table", "scratch"}  # stage 1 holds only the attention layer


def test_spec_aux_buffer_per_token():
    spec = make_spec("""\
        aux_buffers:
          - {name: kv_scale, shape: [2, "attention.num_kv_heads"], dtype: float32, per: token, layer_kind: attention}
    """)
    ctx = context(spec, max_batch=4, max_seq_len=100, tokens_per_block=32)
    # 4 sequences x 128 tokens (100 rounded up to blocks of 32), [2, 2] float32 each; plus 5 seeds
    assert aux.estimate_aux_bytes(ctx) == 4 * 128 * (2 * 2 * 4) + 8 * 5


# --- shape expressions ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "tp", "runtime", "value"),
    [
        pytest.param("mamba2.num_heads // tp", 1, {}, 8 // 1, id="heads-over-tp1"),
        pytest.param("mamba2.num_heads // tp", 2, {}, 8 // 2, id="heads-over-tp2"),
        pytest.param("mamba2.num_heads // tp", 8, {}, 8 // 8, id="heads-over-tp8"),
        pytest.param("hidden_size * 2 + 1", 1, {}, 256 * 2 + 1, id="arithmetic"),
        pytest.param("(mamba2.head_dim + 16) // 8", 1, {}, (16 + 16) // 8, id="parentheses"),
        pytest.param("mamba2.state_size - attention.num_kv_heads", 1, {}, 32 - 2, id="two-blocks"),
        pytest.param("T * max_batch", 1, {"max_batch": 4, "draft_tokens": 2, "spec_scheme": "index"}, (2 + 1) * 4,
                     id="runtime-names"),
        pytest.param("draft_tokens + pp + num_layers + vocab_size", 1,
                     {"draft_tokens": 3, "spec_scheme": "replay"}, 3 + 1 + 2 + 1000, id="more-names"),
        pytest.param(7, 1, {}, 7, id="plain-int"),
    ],
)
def test_shape_expression(expr, tp, runtime, value):
    spec = make_spec(f"aux_buffers:\n  - {{name: buf, shape: [{expr!r}], dtype: uint8, per: rank}}\n")
    (decl,) = aux.spec_aux_buffers(context(spec, tp=tp, **runtime))
    assert decl.shape == (value,)


@pytest.mark.parametrize(
    "expr",
    [
        pytest.param("mamba2.num_heads ** 2", id="power"),
        pytest.param("mamba2.num_heads / tp", id="true-division"),
        pytest.param("heads * 2", id="unknown-name"),
        pytest.param("mamba1.intermediate_size", id="kind-not-in-spec"),
        pytest.param("mamba2.num_heads //", id="syntax-error"),
        pytest.param("tp - tp", id="zero-size"),
        pytest.param("2.5", id="float"),
        pytest.param("len(hidden_size)", id="call"),
        pytest.param("-hidden_size", id="unary-minus"),
        pytest.param("True", id="boolean"),
        pytest.param("+".join(["1"] * 1000), id="1000-terms"),
        pytest.param("hidden_size * hidden_size * hidden_size * hidden_size * hidden_size * 2", id="above-2**40"),
    ],
)
def test_bad_shape_expression_raises_layout_error(expr):
    spec = make_spec(f'aux_buffers:\n  - {{name: buf, shape: [4, "{expr}"], dtype: uint8, per: slot}}\n')
    with pytest.raises(LayoutError) as info:
        estimate(spec, ParallelLayout(), RuntimeConfig(), resolve_dtypes(spec))
    assert info.value.field == "aux_buffers[0].shape[1]"
    assert str(info.value).startswith("aux_buffers[0].shape[1]: ")


# --- buffer declarations -------------------------------------------------------------------------


def test_buffer_decl_bytes():
    decl = BufferDecl("ssm", "ssm", "mamba2", 3, "slot", (8, 16, 32), ("H", "P", "N"), "bfloat16")
    assert (decl.key, decl.elements_per_unit, decl.bytes_per_unit) == ("mamba2.ssm", 8 * 16 * 32, 3 * 8 * 16 * 32 * 2)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param({"per": "step"}, "per must be one of", id="bad-per"),
        pytest.param({"component": "misc"}, "unknown component", id="bad-component"),
        pytest.param({"axes": ("H",)}, "1 axis names", id="axes-mismatch"),
    ],
)
def test_buffer_decl_rejects(kwargs, message):
    fields = {"name": "x", "component": "aux", "kind": None, "layers": 1, "per": "slot", "shape": (4, 4),
              "axes": ("a", "b"), "dtype": "int32"} | kwargs
    with pytest.raises(ValueError, match=message):
        BufferDecl(**fields)


def test_spec_aux_buffer_problems_are_layout_errors():
    import pytest as _pytest

    from mcache.core.errors import LayoutError, SpecError
    from mcache.core.load import parse_spec
    from mcache.core.sizing.estimate import estimate
    from mcache.core.sizing.layout import ParallelLayout, RuntimeConfig
    from mcache.core.sizing.rank import resolve_dtypes

    base = ("name: t\nsource: t\nhidden_size: 64\nvocab_size: 10\nnum_layers: 1\nlayers: {types: [mamba2]}\n"
            "mamba2: {num_heads: 4, head_dim: 8, state_size: 16}\naux_buffers:\n")

    def run(aux: str, **runtime):
        spec = parse_spec(base + aux, "t.yaml")
        return estimate(spec, ParallelLayout(), RuntimeConfig(**runtime), resolve_dtypes(spec))

    with _pytest.raises(SpecError, match="aux_buffers"):
        run("  - {name: x, shape: [-5], dtype: int32, per: slot}\n")
    with _pytest.raises(LayoutError, match="divide by zero"):
        run("  - {name: x, shape: [hidden_size // draft_tokens], dtype: int32, per: slot}\n")
    with _pytest.raises(LayoutError, match=r"aux_buffers\[0\]\.name.*'seed'"):
        run("  - {name: seed, shape: [1], dtype: int64, per: slot}\n")
