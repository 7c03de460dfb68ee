"""The model spec: what a YAML file under `model_specs/` holds, as frozen msgspec structs.

Field names and defaults here are the spec format; `mcache spec schema` prints them as JSON Schema.
Semantic checks that types cannot express (layer pattern vs layer count, a parameter block for every
kind used) are in `check_spec`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Literal

import msgspec
from msgspec import Meta, Struct

from mcache.core.errors import SpecError
from mcache.core.kinds import NAMES as KINDS
from mcache.core.kinds import RECURRENT_KINDS
from mcache.core.spec import dtypes

MAX_INT = 1 << 40  # bounds every size, so a typo cannot ask for an absurd allocation
MAX_LAYERS = 100_000  # bounds layer counts, so a typo cannot build a billion-entry layer list
Pos = Annotated[int, Meta(gt=0, le=MAX_INT)]
NonNeg = Annotated[int, Meta(ge=0, le=MAX_INT)]
LayerCount = Annotated[int, Meta(gt=0, le=MAX_LAYERS)]
Dtype = Annotated[str, Meta(description="float32 | bfloat16 | float16 (fp8 variants for kv_dtype)")]


class Block(Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """Base of every parameter block: unknown keys are rejected."""


class Attention(Block):
    """GQA/MHA attention; `v_head_dim` defaults to `head_dim`. A block shared across layers (`shared_blocks` copies,
    Zamba2) may give each layer that runs it LoRA adapters of rank `adapter_rank` on q, k and v (each `input_size`
    -> rank -> `input_size`) and a `layer_linear` of hidden x hidden on its output (Zamba2's hybrid layer `linear`),
    both weighed per layer. `output_gate` gates each output channel (q doubled, Qwen3-Next); `head_gate` each head
    (a hidden x num_heads projection, LFM3's `gate_proj`)."""

    num_heads: Pos
    num_kv_heads: Pos
    head_dim: Pos
    v_head_dim: Pos | None = None
    sliding_window: Pos | None = None
    output_gate: bool = False
    head_gate: bool = False
    input_size: Pos | None = None
    shared_blocks: Pos | None = None
    adapter_rank: Pos | None = None
    layer_linear: bool = False


class MLA(Block):
    """Multi-head latent attention: the cache holds one latent of `kv_lora_rank + qk_rope_head_dim` (no rotary part:
    `qk_rope_head_dim` 0, GLM-5.3-Flash's NoPE attention)."""

    num_heads: Pos
    kv_lora_rank: Pos
    qk_rope_head_dim: NonNeg
    qk_nope_head_dim: Pos
    v_head_dim: Pos
    q_lora_rank: Pos | None = None


class Mamba1(Block):
    """Mamba1 mixer; `dt_rank` defaults to `ceil(hidden_size / 16)`."""

    intermediate_size: Pos
    state_size: Pos = 16
    conv_kernel: Pos = 4
    dt_rank: Pos | None = None


class Mamba2(Block):
    """Mamba2 mixer: `num_heads` x `head_dim` = d_inner; `n_groups` groups of B and C in the conv window (0:
    B and C are computed after the conv, one group for all heads, as in PLaMo-2); `chunk_size` of the scan
    (the config's `mamba_chunk_size` or `chunk_size`: vLLM aligns prefix-cached blocks to it); `intermediate_size`
    is provenance, the `intermediate_size` a pure Mamba2 config declares (None: it declares none, as transformers'
    Mamba2Config writes none): SGLang's Mamba2Config reads it, and fails without it (engines/sglang.py); the sizes
    use num_heads x head_dim."""

    num_heads: Pos
    head_dim: Pos
    state_size: Pos
    n_groups: NonNeg = 1
    conv_kernel: Pos = 4
    chunk_size: Pos | None = None
    intermediate_size: Pos | None = None


class GatedDeltaNet(Block):
    """GatedDeltaNet mixer (Qwen3-Next, Qwen3.5)."""

    num_k_heads: Pos
    num_v_heads: Pos
    k_head_dim: Pos
    v_head_dim: Pos
    conv_kernel: Pos = 4


class KDA(Block):
    """Kimi Delta Attention; key heads/dims default to `num_heads`/`head_dim`. State in float32 unless `ssm_dtype`
    says. Its forget gate and output gate are low-rank (hidden -> head_dim -> width, Kimi-Linear), or with
    `low_rank_gates: false` full-rank projections from the hidden size (Ling 3.0's `no_kda_lora`)."""

    num_heads: Pos
    head_dim: Pos
    num_k_heads: Pos | None = None
    k_head_dim: Pos | None = None
    conv_kernel: Pos = 4
    low_rank_gates: bool = True


class ShortConv(Block):
    """Gated short convolution over `hidden_size` channels (LFM2's `conv_L_cache` is `conv_kernel`)."""

    conv_kernel: Pos = 3


class Lightning(Block):
    """Lightning / linear attention (MiniMax-01): a `[D, D]` state per head."""

    num_heads: Pos
    head_dim: Pos
    output_gate: bool = True


class Indexer(Block):
    """A sparse-attention indexer beside an attention layer (Qwen3.8-Flash-Next's QSA): its keys, `kv_heads` of
    `head_dim`, one row per `compress` tokens (the mean of a group's keys), whole on every TP rank, and a ring of the
    raw keys of the group still open (`compress` rows a slot); `num_heads` query heads are weighed."""

    num_heads: Pos
    head_dim: Pos
    kv_heads: Pos = 1
    compress: Pos = 1


class DSAIndexer(Block):
    """DeepSeek sparse attention's indexer beside an MLA layer (GLM-5.3-Flash's): `num_heads` query heads of
    `head_dim` projected from the MLA's query latent (`q_rank`, its `q_lora_rank`) and one key head, stored in fp8 with
    a float32 scale per 128 values, one key per `kpool` tokens, whole on every TP rank. With `compress` (and `kpool` >
    1) a pool's key is a gated mix of its tokens' keys: the open pool's raw keys and gate scores are a slot's ring."""

    num_heads: Pos
    head_dim: Pos
    q_rank: Pos
    kpool: Pos = 1
    compress: bool = False


class PLE(Block):
    """Per-layer n-gram embeddings (Qwen3.8-Flash-Next's PLE): hashed n-gram ids index an `embedding_rows` x
    `embedding_dim` table (`heads` of them concatenate to `embed_dim`), projected into `streams` residual streams of
    `hidden_size`, then a depthwise conv of `conv_kernel` taps `dilation` tokens apart: its window of
    `(conv_kernel - 1) * dilation` inputs over `streams * hidden_size` channels is a slot's state, whole on every TP
    rank."""

    streams: Pos
    conv_kernel: Pos
    dilation: Pos
    embed_dim: Pos
    embedding_rows: Pos
    embedding_dim: Pos


class HyperConnection(Block):
    """`streams` residual streams mixed through a rank of `lowrank` around each of a layer's blocks (weights only)."""

    streams: Pos
    lowrank: Pos


class MHC(Block):
    """Manifold-constrained hyper-connections (GLM-5.3-Flash's mHC): `streams` residual streams, mixed around each of
    a layer's blocks by weights a projection of the streams computes (weights only)."""

    streams: Pos


class MLP(Block):
    """Dense feed-forward; `gated` (SwiGLU) has three matrices, else two. A null `intermediate_size` is unknown
    (an imported config without it): the caches are sized, the weights are not. `adapter_rank`: each layer that runs
    a shared MLP adds a LoRA adapter to its up (and gate) projection, hidden -> rank -> up's outputs (Zamba2)."""

    intermediate_size: Pos | None
    gated: bool = True
    shared_blocks: Pos | None = None
    adapter_rank: Pos | None = None


class MoE(Block):
    """Mixture of experts with optional always-on shared experts; with `latent_size`, the routed experts work in
    a latent space that a projection on each side maps to and from the hidden size (Nemotron-3 Super, Kimi-K3)."""

    num_experts: Pos
    top_k: Pos | None  # null: unknown (only the weights would need the sizes; the caches never do)
    expert_intermediate_size: Pos | None
    shared_experts: NonNeg = 0
    shared_intermediate_size: Pos | None = None
    gated: bool = True
    latent_size: Pos | None = None


class Layers(Block):
    """The layer stack, written one of three ways (exactly one is given).

    - `pattern`: one character per layer, mapped through `legend` (default: Nemotron-H's letters);
    - `types`: one entry per layer;
    - `repeat`: a unit repeated to `num_layers` (the last repetition may be cut short).
    An entry names one kind or several joined by `+` (e.g. `mamba2+attention` for Falcon-H1).
    """

    pattern: str | None = None
    legend: dict[str, str] | None = None
    types: list[str] | None = None
    repeat: list[str] | None = None


class MTP(Block):
    """Multi-token-prediction layers: counted in the weights, and their attention's KV while they draft
    (`sizing.estimate.mtp_kv_states`)."""

    num_layers: Pos
    layer: str


class Drafter(Block):
    """A draft model of its own (`method: dflash`: a DFlash block-diffusion drafter, `architecture` its config's
    `architectures[0]`, which reads the target's hidden states at `target_layers` layers). While it drafts, each of its
    `num_layers` attention layers (`attention`: heads, KV heads, head dim; no window) keeps KV in the engine's pool
    beside the model's. Which are windowed is its config's: `layer_types` (one per layer, `full_attention` or
    `sliding_attention`; empty when it names none), `use_swa` (DFlash's `dflash_config.use_swa`: every layer windowed
    when no type says sliding) and `sliding_window` (`dflash_config.swa_window_size`, else the config's where its
    `use_sliding_window` keeps it; None: no window, so a windowed layer is sized as full), read as each engine release
    reads them (`core/sizing/drafter.py`). Its weights: the layers (a gated MLP of `intermediate_size`),
    the `fc` from `target_layers` x `target_hidden_size` (None: `hidden_size`) to `hidden_size` when `fc` is true, and
    its norms; the embedding and head are the model's. `block_size`: the tokens it drafts a block, the bonus token
    among them (`dflash_config.block_size`, else the config's; None: it names none), SGLang's draft tokens by default;
    `target_layer_ids`: the target's layers (0-based) it reads, as its config names them (empty: none named)."""

    num_layers: LayerCount
    attention: Attention
    hidden_size: Pos
    intermediate_size: Pos
    target_layers: Pos
    method: Literal["dflash"] = "dflash"
    architecture: str = "DFlashDraftModel"
    layer_types: list[Literal["full_attention", "sliding_attention"]] = []
    use_swa: bool = False
    sliding_window: Pos | None = None
    target_hidden_size: Pos | None = None
    fc: bool = True
    block_size: Pos | None = None
    target_layer_ids: list[int] = []
    source: str = ""


QUANT_FORMATS = ("nvfp4", "mxfp4", "fp8", "fp8_block", "int4", "int8", "nf4")
QUANT_FILE = "hf_quant_config.json"  # ModelOpt's export writes its settings here (`Quantization.source` names it)


class Quantization(Block):
    """How the checkpoint stores the weights of its linear layers; everything else (embeddings, norms, convs,
    routers, and the units listed) stays in the model `dtype`.

    A unit is `lm_head`, `mtp` (the MTP layers), `<kind>` (all of a layer kind's projections) or `<kind>.<part>`
    (`moe.experts`, `moe.shared_experts`, `moe.proj` for latent projections, `gdn.gate_proj` for the `[b|a]`
    one), optionally `@3,7`: only those layers (0-based). `other_formats` maps a format to the units stored in it instead (mixed precision).
    `group_size`: elements per scale (nvfp4 16, mxfp4 32, int4 the config's, nf4 64); `zero_points`: int4 with zeros.
    `nf4`: bitsandbytes 4-bit (nf4 or fp4 codes), an fp32 absmax per 64, or with `double_quant` an 8-bit one with an
    fp32 scale per 256 of them.
    `kv_cache`: the KV cache format the checkpoint declares (`fp8`: a compressed-tensors or ModelOpt
    `kv_cache_scheme` of 8-bit floats, or ModelOpt `kv_cache_quant_algo` FP8); None when it declares none. Engine
    profiles resolve `--kv-cache-dtype auto` from it as each engine does; the neutral model keeps the model dtype.
    `method` and `algo`: the checkpoint's `quant_method` (`modelopt` for a `hf_quant_config.json`) and ModelOpt's
    `quant_algo`, which engines name their quantization method by (and may refuse on a GPU).
    """

    format: Literal["nvfp4", "mxfp4", "fp8", "fp8_block", "int4", "int8", "nf4"]
    group_size: Pos | None = None
    zero_points: bool = False
    double_quant: bool = False
    unquantized: list[str] = []
    other_formats: dict[str, list[str]] = {}
    kv_cache: Literal["fp8"] | None = None
    method: str = ""
    algo: str = ""
    source: str = ""


class StoredWeights(Block):
    """What the checkpoint's safetensors index (`model.safetensors.index.json`) says of its stored weights:
    `total_size` (its `metadata.total_size`: the bytes of every tensor in its shards), `mtp_tensors` (tensors of its
    weight map under an `mtp` module, which engines load only with an MTP draft) and `source` (the file read).
    Reported beside mcache's estimate; when the config leaves the weights unknown, the weights one rank loads are
    `total_size` split over the TP x PP ranks."""

    total_size: Annotated[int, Meta(gt=0, le=1 << 50)]
    mtp_tensors: NonNeg = 0
    source: str = ""


class Vision(Block):
    """The vision tower of a multimodal checkpoint: `num_layers` encoder blocks of width `hidden_size`, from the
    config's `vision_config` (or what its config class fills in when the config has none). `layers_key` and
    `hidden_key` are the `vision_config` fields they come from: engines read the tower by field name (SGLang's
    `adjust_mem_fraction_for_vlm` reads `num_hidden_layers` and `hidden_size`, and takes its own defaults where the
    config names them otherwise, as Qwen3.5's `depth` does).

    With `tower` (the architecture: `qwen3_5`, Qwen3.5's ViT; `kimi_k3`, Kimi-K3's MoonViT3d) the tower is weighed
    (`core/sizing/vision.py`), from: `intermediate_size` (each block's MLP), `attention_size` (its q/k/v width;
    default `hidden_size`), `patch_size` x `patch_size` x `temporal_patch_size` pixels of `in_channels` per patch,
    `position_embeddings` learned position vectors, `merge_size` patches merged into one token by the projector and
    `out_hidden_size` (the text model's width it projects to). Without `tower` it is not weighed. `defaulted`: the
    config has no `vision_config` and this is the tower its config class builds (a class of an engine's own may build
    none)."""

    num_layers: LayerCount
    hidden_size: Pos
    layers_key: str = "num_hidden_layers"
    hidden_key: str = "hidden_size"
    tower: Literal["qwen3_5", "kimi_k3"] | None = None
    intermediate_size: Pos | None = None
    attention_size: Pos | None = None
    patch_size: Pos | None = None
    temporal_patch_size: Pos = 1
    in_channels: Pos = 3
    position_embeddings: NonNeg = 0
    merge_size: Pos = 1
    out_hidden_size: Pos | None = None
    defaulted: bool = False


class AuxBuffer(Block):
    """A spec-declared auxiliary buffer; `shape` entries are integers or expressions of names."""

    name: str
    shape: list[Pos | str]
    dtype: str
    per: Literal["slot", "request", "token", "snapshot", "rank"]
    layer_kind: str | None = None


class ModelSpec(Block):
    """A hybrid model: its layers, one parameter block per layer kind, dtypes and provenance.

    `ssm_dtype` is the spec author's choice of recurrent-state dtype; `ssm_dtype_hints` are the state-dtype
    fields the checkpoint's config sets, as written there (`mamba_ssm_cache_dtype`, `mamba_ssm_dtype`), which
    each engine profile reads the way its engine does. `norm_eps_keys` are the norm-epsilon fields the config sets
    (`NORM_EPS_KEYS`): a model class reads one by name and fails as it builds when the config lacks it (None: not from a
    config, so assumed present). `architecture` (the config's `architectures[0]`) keys
    the engines' per-model rules; `max_model_len` is the longest context the config declares, the engines'
    default max model length. `vision` is the vision tower of a multimodal checkpoint (None: a text-only model).
    `drafter` is a draft model of its own that drafts in place of the MTP layers (`--draft-model`; None: none).
    `dtype_named` says whether the checkpoint's config names its dtype (false: `dtype` is assumed, and an engine that
    serves such a config in a dtype of its own choosing says which). `config_format` is `mamba_ssm` for a config of the
    mamba_ssm library (`d_model`, `n_layer`, `ssm_cfg`; no `model_type` or `architectures`), which transformers'
    AutoConfig does not read (None: a config it reads, or a hand-written spec).
    """

    name: str
    source: str
    hidden_size: Pos
    vocab_size: Pos | None  # null: unknown, so the weights are not estimated (the caches do not need it)
    num_layers: LayerCount
    layers: Layers
    architecture: str | None = None
    config_format: Literal["mamba_ssm"] | None = None
    max_model_len: Pos | None = None
    notes: str = ""
    dtype: str = "bfloat16"
    dtype_named: bool = True
    kv_dtype: str | None = None
    conv_dtype: str | None = None
    ssm_dtype: str | None = None
    ssm_dtype_hints: dict[str, str] = {}
    norm_eps_keys: list[str] | None = None
    tie_embeddings: bool = False
    attention: Attention | None = None
    sliding_attention: Attention | None = None
    mla: MLA | None = None
    mamba1: Mamba1 | None = None
    mamba2: Mamba2 | None = None
    gdn: GatedDeltaNet | None = None
    kda: KDA | None = None
    short_conv: ShortConv | None = None
    lightning: Lightning | None = None
    indexer: Indexer | None = None
    dsa_indexer: DSAIndexer | None = None
    ple: PLE | None = None
    hc: HyperConnection | None = None
    mhc: MHC | None = None
    mlp: MLP | None = None
    moe: MoE | None = None
    mtp: MTP | None = None
    drafter: Drafter | None = None
    quantization: Quantization | None = None
    stored_weights: StoredWeights | None = None
    vision: Vision | None = None
    aux_buffers: list[AuxBuffer] = []


# Config fields that name a recurrent-state dtype, in the order the neutral model reads them.
SSM_HINT_KEYS = ("mamba_ssm_cache_dtype", "mamba_ssm_dtype")
# Config fields that name a norm epsilon, which model classes read by name.
NORM_EPS_KEYS = ("rms_norm_eps", "layer_norm_epsilon", "layer_norm_eps", "norm_eps", "norm_epsilon")
# What a weighed vision tower (`Vision.tower`) needs besides its defaults.
VISION_SIZES = ("intermediate_size", "patch_size", "out_hidden_size")
NEMOTRON_LEGEND = {"M": "mamba2", "*": "attention", "-": "mlp", "E": "moe"}


_MEMO: dict[tuple, tuple[ModelSpec, object]] = {}  # by (id(spec), what), the spec kept to prove the id is its own
MEMO_SIZE = 512  # entries remembered at most (cleared when full): a sweep's few specs, each a few dozen layouts


def remembered(spec: ModelSpec, what: tuple, compute: Callable[[], object]):
    """`compute()`, remembered for this spec under `what` (a spec is frozen: what it derives never changes): a layout
    search or a plan sweep asks for the same derived figures thousands of times."""
    key = (id(spec), *what)
    known = _MEMO.get(key)
    if known is not None and known[0] is spec:
        return known[1]
    value = compute()
    if len(_MEMO) >= MEMO_SIZE:
        _MEMO.clear()
    _MEMO[key] = (spec, value)
    return value


def layer_kinds(spec: ModelSpec) -> tuple[tuple[str, ...], ...]:
    """The kinds of every layer, e.g. `(("mamba2",), ("mlp",), ...)`; assumes `check_spec` passed."""
    return remembered(spec, ("layer_kinds",), lambda: tuple(tuple(entry.split("+")) for entry in _layer_entries(spec)))


def _layer_entries(spec: ModelSpec) -> list[str]:
    layers = spec.layers
    if layers.pattern is not None:
        legend = layers.legend or NEMOTRON_LEGEND
        return [legend.get(ch, f"?{ch}") for ch in layers.pattern]
    if layers.types is not None:
        return list(layers.types)
    unit = layers.repeat or []
    return [unit[i % len(unit)] for i in range(spec.num_layers)] if unit else []


def check_spec(spec: ModelSpec, file: str) -> None:
    """Checks types cannot express; raise `SpecError` naming the field and what was expected."""
    for kind in ("attention", "sliding_attention"):  # grouped-query attention: each KV head serves whole query heads
        a = getattr(spec, kind)
        if a is not None and a.num_heads % a.num_kv_heads:
            raise SpecError(file, f"{kind}.num_kv_heads", f"a divisor of num_heads {a.num_heads} (each KV head serves "
                                                           f"as many query heads), got {a.num_kv_heads}")
    for field, heads, groups in _head_groups(spec):  # groups of heads that share a B/C or a key head split them evenly
        if heads % groups:
            raise SpecError(file, field, f"a divisor of {heads} heads (each group serves as many heads), got {groups}")
    if spec.moe is not None and spec.moe.top_k is not None and spec.moe.top_k > spec.moe.num_experts:
        raise SpecError(file, "moe.top_k", f"at most num_experts ({spec.moe.num_experts}), got {spec.moe.top_k}")
    if spec.mtp is not None and spec.mtp.num_layers > spec.num_layers:
        raise SpecError(file, "mtp.num_layers", f"at most the model's {spec.num_layers} layers (num_layers; a model "
                                                f"drafts with one to a few), got {spec.mtp.num_layers}")
    if "\n" in spec.name:  # it heads every report, whose other controls are shown escaped: a line break would forge one
        raise SpecError(file, "name", f"one line of text, got {spec.name[:60]!r}")
    given = [k for k in ("pattern", "types", "repeat") if getattr(spec.layers, k) is not None]
    if len(given) != 1:
        raise SpecError(file, "layers", f"exactly one of pattern, types, repeat (got {given or 'none'})")
    how = given[0]
    if how == "pattern":
        legend = spec.layers.legend or NEMOTRON_LEGEND
        for ch in spec.layers.pattern:
            if ch not in legend:
                raise SpecError(file, "layers.pattern", f"character {ch!r} is not in the legend {sorted(legend)}")
    elif spec.layers.legend is not None:
        raise SpecError(file, "layers.legend", "a legend goes only with a pattern")
    if how == "repeat" and not spec.layers.repeat:
        raise SpecError(file, "layers.repeat", "a non-empty list of layer types")
    entries = _layer_entries(spec)
    if how != "repeat" and len(entries) != spec.num_layers:
        raise SpecError(file, f"layers.{how}", f"{spec.num_layers} layers (num_layers), got {len(entries)}")
    source = "layers.legend" if how == "pattern" and spec.layers.legend else f"layers.{how}"
    for i, entry in enumerate(entries):
        parts = entry.split("+")
        for kind in parts:
            if kind not in KINDS:
                raise SpecError(file, f"{source}[{i}]", f"layer kind {kind!r} is not one of {', '.join(KINDS)}")
            if getattr(spec, kind) is None:
                raise SpecError(file, f"{source}[{i}]", f"a `{kind}:` parameter block, which the spec lacks (layer {i} is {entry!r})")
        if len(set(parts)) != len(parts):
            raise SpecError(file, f"{source}[{i}]", f"each kind at most once per layer, got {entry!r}")
    if not any(kind in MIXER_KINDS for entry in entries for kind in entry.split("+")):  # MLPs alone keep no cache
        raise SpecError(file, f"layers.{how}", f"at least one layer of a kind that keeps a cache ({', '.join(MIXER_KINDS)}), "
                                               f"got only {', '.join(sorted({k for e in entries for k in e.split('+')}))}")
    for key, value in spec.ssm_dtype_hints.items():
        if key not in SSM_HINT_KEYS:
            raise SpecError(file, "ssm_dtype_hints", f"keys among {', '.join(SSM_HINT_KEYS)}, got {key!r}")
        if dtypes.for_role(value, "ssm_dtype") is None:
            raise SpecError(file, f"ssm_dtype_hints.{key}", f"one of {dtypes.allowed_for('ssm_dtype')}, got {value!r}")
    for field in ("dtype", "kv_dtype", "conv_dtype", "ssm_dtype"):
        value = getattr(spec, field)
        if value is None:
            continue
        if dtypes.for_role(value, field) is None:
            raise SpecError(file, field, f"one of {dtypes.allowed_for(field)}, got {value!r}")
    if spec.mtp is not None:
        for kind in spec.mtp.layer.split("+"):
            if kind not in KINDS or getattr(spec, kind) is None:
                raise SpecError(file, "mtp.layer", f"kinds with a parameter block, got {kind!r}")
    if spec.drafter is not None:
        check_drafter(spec.drafter, file)
    if spec.quantization is not None:
        check_quantization(spec, file)
    if spec.vision is not None and spec.vision.tower is not None:
        for field in VISION_SIZES:
            if getattr(spec.vision, field) is None:
                raise SpecError(file, f"vision.{field}", f"a size: a `{spec.vision.tower}` tower is weighed from it")
    for i, aux in enumerate(spec.aux_buffers):
        if aux.layer_kind is not None and aux.layer_kind not in KINDS:
            raise SpecError(file, f"aux_buffers[{i}].layer_kind", f"one of {', '.join(KINDS)}")
        try:
            dtypes.canonical(aux.dtype)
        except KeyError:
            raise SpecError(file, f"aux_buffers[{i}].dtype", f"a dtype ({', '.join(dtypes.ITEMSIZE)})") from None


MIXER_KINDS = ("attention", "sliding_attention", "mla", *RECURRENT_KINDS)  # the layers a sequence's cache lives in


def _head_groups(spec: ModelSpec) -> list[tuple[str, int, int]]:
    """(field, heads, groups) of each state kind whose heads come in groups: Mamba2's B/C groups (0: one for all),
    GatedDeltaNet's and KDA's key heads, which value heads share."""
    out = []
    if spec.mamba2 is not None and spec.mamba2.n_groups:
        out.append(("mamba2.n_groups", spec.mamba2.num_heads, spec.mamba2.n_groups))
    if spec.gdn is not None:
        out.append(("gdn.num_k_heads", spec.gdn.num_v_heads, spec.gdn.num_k_heads))
    if spec.kda is not None and spec.kda.num_k_heads is not None:
        out.append(("kda.num_k_heads", spec.kda.num_heads, spec.kda.num_k_heads))
    return out


def check_drafter(d: Drafter, file: str) -> None:
    """A drafter's layer types name each of its layers, and its own fields (not its attention block) window them."""
    if d.layer_types and len(d.layer_types) != d.num_layers:
        raise SpecError(file, "drafter.layer_types", f"{d.num_layers} entries (drafter.num_layers), got {len(d.layer_types)}")
    if d.attention.sliding_window is not None:
        raise SpecError(file, "drafter.attention.sliding_window", "none: drafter.sliding_window and layer_types window it")


def parse_unit(unit: str) -> tuple[str, str | None, tuple[int, ...] | None]:
    """`"moe.experts@3,7"` -> `("moe", "experts", (3, 7))`; a `ValueError` for a malformed unit."""
    name, at, layers = unit.partition("@")
    kind, _, part = name.partition(".")
    if at and not layers:
        raise ValueError(f"no layers after '@' in {unit!r}")
    indices = tuple(int(x) for x in layers.split(",")) if layers else None
    return kind, part or None, indices


def check_quantization(spec: ModelSpec, file: str) -> None:
    """Every unit names `lm_head`, `mtp` or a kind of the model (and layers it has); formats are known."""
    q = spec.quantization
    groups = [("quantization.unquantized", q.unquantized)]
    for fmt, units in q.other_formats.items():
        if fmt not in QUANT_FORMATS:
            raise SpecError(file, "quantization.other_formats", f"formats among {', '.join(QUANT_FORMATS)}, got {fmt!r}")
        groups.append((f"quantization.other_formats.{fmt}", units))
    for field, units in groups:
        for i, unit in enumerate(units):
            try:
                kind, _, layers = parse_unit(unit)
            except ValueError:
                raise SpecError(file, f"{field}[{i}]", f"a unit such as lm_head, moe.experts or attention@3,7, got {unit!r}") from None
            if kind not in ("lm_head", "mtp") and (kind not in KINDS or getattr(spec, kind) is None):
                raise SpecError(file, f"{field}[{i}]", f"lm_head, mtp or a kind of the model, got {unit!r}")
            if layers and not all(0 <= n < spec.num_layers for n in layers):
                raise SpecError(file, f"{field}[{i}]", f"layers 0..{spec.num_layers - 1}, got {unit!r}")


def json_schema() -> dict:
    """JSON Schema of the spec format, for editors."""
    return msgspec.json.schema(ModelSpec)
