"""How a checkpoint stores its weights: a `quantization_config` (in config.json or its text config) or a
ModelOpt `hf_quant_config.json` in its checkpoint folder, turned into the spec's `quantization` block.

Formats as vLLM loads them (vllm/model_executor/layers/quantization): `modelopt` (`quant_algo` NVFP4,
W4A16_NVFP4, FP8, FP8_PER_CHANNEL_PER_TOKEN, FP8_PB_WO, MIXED_PRECISION with `quantized_layers`; excluded
modules matched exactly, as substrings or shell wildcards, modelopt.py `is_layer_excluded`), `compressed-tensors`
(config groups by `targets`, `ignore` exact or `re:` regexes, compressed_tensors.py `should_ignore_layer`),
`fp8` (`weight_block_size`, `modules_to_not_convert`), `mxfp4` (routed experts only: mxfp4.py quantizes no other
linear layer), `gptq` and `awq` (int4 with zero points). Which units a pattern excludes is decided on the module
names checkpoints give each layer's projections (`LEAVES`) under the usual layer prefixes.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import msgspec

from mcache.core.errors import SpecError, validation_parts
from mcache.core.hf.common import Cfg, read_config
from mcache.core.hf.patterns import checked, quiet
from mcache.core.sizing.weights import layer_units
from mcache.core.spec.model import MAX_INT, QUANT_FILE, ModelSpec, layer_kinds

PREFIXES = ("model.layers.{i}", "model.language_model.layers.{i}", "backbone.layers.{i}", "language_model.model.layers.{i}")
# (kind, part) -> the projection names under a layer prefix that checkpoints of the supported families use
LEAVES = {
    ("attention", "proj"): ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                            "self_attn.qkv_proj", "mixer.q_proj", "mixer.o_proj", "attention.query_key_value",
                            "attention.dense"),
    ("mla", "proj"): ("self_attn.q_proj", "self_attn.q_a_proj", "self_attn.q_b_proj", "self_attn.kv_a_proj_with_mqa",
                      "self_attn.kv_b_proj", "self_attn.o_proj", "attention.q_a_proj", "attention.kv_b_proj"),
    ("mamba1", "proj"): ("mamba.in_proj", "mamba.out_proj", "mixer.in_proj", "mixer.out_proj", "mixer.x_proj"),
    ("mamba2", "proj"): ("mamba.in_proj", "mamba.out_proj", "mixer.in_proj", "mixer.out_proj"),
    ("gdn", "gate_proj"): ("linear_attn.in_proj_ba", "linear_attn.in_proj_b", "linear_attn.in_proj_a"),
    ("gdn", "proj"): ("linear_attn.in_proj_qkvz", "linear_attn.in_proj_qkv", "linear_attn.in_proj_z",
                      "linear_attn.out_proj", "linear_attn.q_proj", "linear_attn.o_proj"),
    ("kda", "proj"): ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                      "attention.q_proj", "attention.o_proj"),
    ("short_conv", "proj"): ("conv.in_proj", "conv.out_proj"),
    ("lightning", "proj"): ("self_attn.qkv_proj", "self_attn.out_proj", "attention.query_key_value", "attention.dense"),
    ("mlp", "proj"): ("mlp.gate_proj", "mlp.up_proj", "mlp.down_proj", "mixer.up_proj", "mixer.down_proj",
                      "feed_forward.w1", "feed_forward.w2"),
    ("moe", "experts"): ("mlp.experts.0.gate_proj", "mlp.experts.0.up_proj", "mlp.experts.0.down_proj", "mlp.experts",
                         "mixer.experts.0.up_proj", "mixer.experts.0.down_proj", "block_sparse_moe.experts.0.w1",
                         "feed_forward.experts.0.w1"),
    ("moe", "shared_experts"): ("mlp.shared_expert.gate_proj", "mlp.shared_expert.down_proj", "mlp.shared_experts.up_proj",
                                "mlp.shared_experts.down_proj", "mixer.shared_experts.up_proj",
                                "mixer.shared_experts.down_proj", "mlp.shared_expert"),
    ("moe", "proj"): ("mixer.fc1_latent_proj", "mixer.fc2_latent_proj", "mlp.fc1_latent_proj", "mlp.fc2_latent_proj"),
}
LEAVES[("sliding_attention", "proj")] = LEAVES[("attention", "proj")]
MTP_NAMES = ("mtp.layers.0.self_attn.q_proj", "mtp.fc", "mtp.layers.0.mlp.experts.0.up_proj", "model.mtp.layers.0.self_attn.q_proj")
REGEX_CHARS = set("*+?^$()[]{}|\\")  # inc.py: an extra_config key with one of these is a pattern
AUTO_ROUND_METHODS = ("auto-round", "auto_round", "autoround", "intel/auto-round")  # vLLM's names for INCConfig
MODELOPT_ALGOS = {"NVFP4": "nvfp4", "W4A16_NVFP4": "nvfp4", "NVFP4_AWQ": "nvfp4", "FP8": "fp8",
                  "FP8_PER_CHANNEL_PER_TOKEN": "fp8", "FP8_PB_WO": "fp8_block", "FP8_BLOCK_SCALES": "fp8_block",
                  "MXFP8": "fp8"}


# A group size: positive, or -1 (GPTQ, compressed-tensors: one group per row); 0 reads as no group size.
GroupSize = Annotated[int, msgspec.Meta(ge=-1, le=MAX_INT)]
Bits = Annotated[int, msgspec.Meta(ge=1, le=64)]


class Weights(msgspec.Struct):
    """A compressed-tensors config group's weight scheme."""

    num_bits: Bits | None = None
    type: str = "int"
    strategy: str | None = None
    group_size: GroupSize | None = None
    symmetric: bool = True


class Group(msgspec.Struct, rename={"weight_format": "format"}):
    """A compressed-tensors config group: the modules it `targets` and their weight scheme."""

    weights: Weights | None = None
    targets: list[str] = []
    weight_format: str | None = None


class Settings(msgspec.Struct, rename={"weight_format": "format"}):
    """The fields of a `quantization_config` (any method) mcache reads, typed so a damaged one is one error."""

    quant_method: str = ""
    quant_algo: str = ""  # modelopt
    group_size: GroupSize | None = None  # modelopt, gptq
    exclude_modules: list[str] = []  # modelopt hf_quant_config.json
    ignore: list[str] = []  # modelopt config.json form, compressed-tensors
    quantized_layers: dict[str, dict[str, Any] | None] = {}  # modelopt MIXED_PRECISION
    config_groups: dict[str, Group] = {}  # compressed-tensors (and modelopt's config.json form)
    weight_format: str = ""  # compressed-tensors
    weight_block_size: list[Annotated[int, msgspec.Meta(ge=1, le=MAX_INT)]] | None = None  # fp8: rows x columns a scale
    modules_to_not_convert: list[str] | None = None  # fp8, mxfp4, awq
    ignored_layers: list[str] | None = None  # fp8 (older spelling)
    bits: Bits | None = None  # gptq
    w_bit: Bits | None = None  # awq
    q_group_size: GroupSize | None = None  # awq
    lm_head: bool = False  # gptq, awq: the output head is quantized too
    dynamic: dict[str, Any] = {}  # gptq (GPTQModel): "-:regex" keys skip modules
    kv_cache_scheme: dict[str, Any] | str | None = None  # compressed-tensors, modelopt's config.json form ("FP8" in 0.30's)
    kv_cache_quant_algo: str | None = None  # modelopt
    data_type: str = "int"  # auto-round
    block_name_to_quantize: str | list[str] | None = None  # auto-round (also `to_quant_block_names`)
    to_quant_block_names: str | list[str] | None = None  # auto-round
    extra_config: dict[str, dict[str, Any] | None] = {}  # auto-round: per-module bits
    load_in_4bit: bool = False  # bitsandbytes
    load_in_8bit: bool = False  # bitsandbytes
    bnb_4bit_use_double_quant: bool = False  # bitsandbytes
    bnb_4bit_quant_type: str = "fp4"  # bitsandbytes: fp4 or nf4 codes (BitsAndBytesConfig's default fp4)
    llm_int8_skip_modules: list[str] | None = None  # bitsandbytes: the modules it leaves unquantized


def read_settings(qc: Any, where: str, file: str) -> Settings:
    """`qc` (the `where` field of `file`) as `Settings`; a wrong type anywhere is one error naming the field."""
    try:
        return msgspec.convert(qc, Settings)
    except msgspec.ValidationError as err:
        path, reason = validation_parts(str(err))
        raise SpecError(file, f"{where}.{path}" if path else where, reason) from None


def find_quantization(cfg: Cfg, text: Cfg, folder: Path | None) -> tuple[Settings, str] | None:
    """The quantization settings and where they came from: the text config's or the config's
    `quantization_config`, else the `quantization` of the `hf_quant_config.json` of the checkpoint folder `folder`
    (None: the config was given as a lone file, and a quantization file beside it belongs to no known checkpoint)."""
    for c in dict.fromkeys((text, cfg)):
        if c.data.get("quantization_config") is not None:
            where = f"{c.prefix}quantization_config"
            qc, where = _modelopt_export(c.data["quantization_config"], where)
            return read_settings(qc, where, cfg.file), where
    side = folder / QUANT_FILE if folder is not None else None
    if side is not None and side.is_file():
        q = read_config(side).get("quantization")
        if not isinstance(q, dict):
            raise SpecError(str(side), "quantization", "a mapping")
        return read_settings({"quant_method": "modelopt", **q}, "quantization", str(side)), QUANT_FILE
    return None


def _modelopt_export(qc: Any, where: str) -> tuple[Any, str]:
    """A config's `quantization_config` (at `where`) and where its settings are: a ModelOpt export without
    `quant_method` (`producer.name` modelopt) reads as ModelOpt's settings, with `quant_method` modelopt: those under
    `quantization` (hf_quant_config.json's form, which vLLM reads so: config/model.py `_parse_quant_hf_config`,
    `_normalize_quantization_config` from 0.11), or its own when it names a `quant_algo` beside the producer
    (ModelOpt 0.30's config.json, e.g. nvidia/Nemotron-H-47B-Reasoning-128K-FP8). Any other form as it is."""
    if not isinstance(qc, dict) or "quant_method" in qc:
        return qc, where
    producer, nested = qc.get("producer"), qc.get("quantization")
    if not isinstance(producer, dict) or producer.get("name") != "modelopt":
        return qc, where
    if isinstance(nested, dict) and nested.get("quant_algo") is not None:
        return {"quant_method": "modelopt", **nested}, f"{where}.quantization"
    if nested is None and qc.get("quant_algo") is not None:
        return {**qc, "quant_method": "modelopt"}, where
    return qc, where


def lone_file_note(file: Path) -> str:
    """What a lone config file's neighbour `hf_quant_config.json` is not used for (empty when it has none)."""
    if not file.with_name(QUANT_FILE).is_file():
        return ""
    return (f"{QUANT_FILE} beside {file.name} was not read: quantization files count only in a checkpoint folder "
            f"(pass the folder {file.parent} to use it); weights in the config's dtype.")


def quantization_block(spec: ModelSpec, qc: Settings, where: str, cfg: Cfg) -> tuple[dict | None, str]:
    """The spec's `quantization` block for settings `qc` (None for a method mcache does not know, with a note)."""
    method = qc.quant_method.lower()
    if method.startswith("modelopt"):
        block, note = _modelopt(spec, qc, where, cfg)
    elif method == "compressed-tensors":
        block, note = _compressed_tensors(spec, qc, where, cfg)
    elif method in ("fp8", "mxfp4", "gptq", "awq"):
        block, note = _simple(spec, qc, where, method, cfg)
    elif method == "bitsandbytes" and (qc.load_in_4bit or qc.load_in_8bit):
        if qc.load_in_4bit and qc.load_in_8bit:  # transformers' BitsAndBytesConfig refuses both
            raise cfg.error(f"{where}.load_in_8bit", "false where load_in_4bit is true (one of them, as transformers' "
                                                     "BitsAndBytesConfig takes)")
        block, note = _bitsandbytes(spec, qc, where)
    elif method in AUTO_ROUND_METHODS and qc.data_type == "int":
        block, note = _auto_round(spec, qc, where, cfg)
    elif not method and qc.bits is not None and qc.group_size is not None:  # mlx_lm's export: no quant_method
        return None, (f"{where}: an MLX export's {qc.bits}-bit groups of {qc.group_size} (no quant_method), which no "
                      "serving engine loads; weights counted in the model dtype.")
    else:
        return None, f"{where}: quant_method {method or 'missing'!r} is not one mcache sizes; weights counted in the model dtype."
    block["method"], block["algo"] = method, qc.quant_algo if method.startswith("modelopt") else ""
    kv = kv_cache_format(qc, method)
    if kv is not None:
        block["kv_cache"] = kv
        note += f" KV cache stored as {kv} (an engine's --kv-cache-dtype auto takes it)."
    return block, note


def kv_cache_format(qc: Settings, method: str) -> str | None:
    """`fp8` when the checkpoint declares an 8-bit float KV cache: a compressed-tensors or ModelOpt
    `kv_cache_scheme` (`num_bits` 8, `type` float), a ModelOpt `kv_cache_quant_algo` FP8 or `kv_cache_scheme` "FP8"
    (ModelOpt 0.30's config.json); else None.
    (Other KV formats, e.g. NVFP4 KV, are not recorded: no engine profile sizes them yet.)"""
    scheme = qc.kv_cache_scheme
    if isinstance(scheme, dict) and scheme.get("num_bits") == 8 and scheme.get("type") == "float":
        return "fp8"
    if isinstance(scheme, str) and scheme.upper() == "FP8" and method.startswith("modelopt"):
        return "fp8"
    if method.startswith("modelopt") and (qc.kv_cache_quant_algo or "").upper() == "FP8":
        return "fp8"
    return None


def _modelopt(spec: ModelSpec, qc: Settings, where: str, cfg: Cfg) -> tuple[dict, str]:
    """ModelOpt's formats as vLLM's modelopt.py gives them to modules (0.34: `LinearBase`, `ParallelLMHead` and routed
    experts; a module is excluded by `is_layer_excluded`, or, in MIXED_PRECISION, quantized when `quantized_layers` names
    it or a module it sits in)."""
    excluded = qc.ignore or qc.exclude_modules
    matcher = _modelopt_match(excluded)
    group = qc.group_size or _group_of(qc) or 16
    if qc.quant_algo == "MIXED_PRECISION":
        if not qc.quantized_layers:
            raise cfg.error(f"{where}.quantized_layers", "a mapping of module names to their quant_algo")
        formats = {name: MODELOPT_ALGOS.get(str((v or {}).get("quant_algo")), "") for name, v in qc.quantized_layers.items()}

        def format_of(kind: str, part: str | None, names: tuple[str, ...]) -> str | None:
            for name in names:  # looked up by name: a checkpoint's map holds tens of thousands of modules
                for key in (name, *_parents(name)):
                    if key in formats:
                        return formats[key] or None
            return None

        block = _resolve(spec, format_of, "nvfp4")
        block["group_size"] = group
        return block, f"{where}: modelopt MIXED_PRECISION ({len(formats)} quantized modules)."
    if qc.quant_algo not in MODELOPT_ALGOS:
        raise cfg.error(f"{where}.quant_algo", f"one of {', '.join(MODELOPT_ALGOS)} or MIXED_PRECISION, got {qc.quant_algo!r}")
    fmt = MODELOPT_ALGOS[qc.quant_algo]
    block = _resolve(spec, lambda kind, part, names: None if any(map(matcher, names)) else fmt, fmt)
    if fmt == "nvfp4":
        block["group_size"] = group
    return block, f"{where}: modelopt {qc.quant_algo}, {len(excluded)} excluded module patterns."


def _group_of(qc: Settings) -> int | None:
    """ModelOpt's config.json form keeps the group size in its config groups only."""
    sizes = [g.weights.group_size for g in qc.config_groups.values() if g.weights and g.weights.group_size]
    return sizes[0] if sizes and sizes[0] > 0 else None


def _compressed_tensors(spec: ModelSpec, qc: Settings, where: str, cfg: Cfg) -> tuple[dict, str]:
    if not qc.config_groups:
        raise cfg.error(f"{where}.config_groups", "at least one config group")
    ignore = _ct_match(qc.ignore, cfg, f"{where}.ignore")
    default, targeted = None, []
    for name, group in qc.config_groups.items():
        fmt, size, zeros = _ct_format(group.weights or Weights(), group.weight_format or qc.weight_format)
        if fmt is None:
            raise cfg.error(f"{where}.config_groups.{name}.weights", "4-bit float or int, or 8-bit float or int, weights")
        if any(t.lower().endswith("linear") and not t.startswith("re:") for t in group.targets):
            default = (fmt, size, zeros)
        else:
            targeted.append((_ct_match(group.targets, cfg, f"{where}.config_groups.{name}.targets"), fmt))
    fallback = default[0] if default else None

    def format_of(kind: str, part: str | None, names: tuple[str, ...]) -> str | None:
        if ignore(names):
            return None
        for match, fmt in targeted:
            if match(names):
                return fmt
        return fallback

    block = _resolve(spec, format_of, fallback or targeted[0][1])
    size, zeros = (default[1], default[2]) if default else (None, False)
    if size:
        block["group_size"] = size
    if zeros:
        block["zero_points"] = True
    return block, f"{where}: compressed-tensors, {len(qc.config_groups)} config group(s), {len(qc.ignore)} ignored."


def _ct_format(weights: Weights, fmt: str) -> tuple[str | None, int | None, bool]:
    """(format, group size, zero points) of a compressed-tensors weights scheme."""
    size = weights.group_size if weights.group_size and weights.group_size > 0 else None
    if (weights.num_bits, weights.type) == (4, "float"):
        return ("mxfp4" if "mxfp4" in fmt or size == 32 else "nvfp4"), size, False
    if (weights.num_bits, weights.type) == (8, "float"):
        return ("fp8_block" if weights.strategy == "block" else "fp8"), None, False
    if (weights.num_bits, weights.type) == (4, "int"):
        return "int4", size, not weights.symmetric
    if (weights.num_bits, weights.type) == (8, "int"):
        return "int8", None, False
    return None, None, False


def _simple(spec: ModelSpec, qc: Settings, where: str, method: str, cfg: Cfg) -> tuple[dict, str]:
    """fp8, mxfp4, gptq and awq: one format for every linear layer not skipped. The output head is not a linear
    layer to these methods (fp8.py, mxfp4.py quantize `LinearBase` only), except GPTQ/AWQ with `lm_head: true`
    (gptq_utils.py, auto_awq.py `lm_head_quantized`)."""
    skip = qc.modules_to_not_convert or qc.ignored_layers or []
    # a module and what is under it (fp8.py: exact names); AWQ/GPTQ skip by substring (match_mode "substring")
    form = ".*{}.*" if method in ("awq", "gptq") else r"{}(?:\..*)?"
    patterns = [form.format(re.escape(m)) for m in skip]
    skips = [key[2:] for key in qc.dynamic if method == "gptq" and key.startswith("-:")]  # GPTQModel skips
    with quiet():
        for p in checked(skips, cfg.file, f"{where}.dynamic"):
            try:
                re.compile(p)
            except re.error as err:
                raise cfg.error(f"{where}.dynamic", f"keys whose pattern after '-:' is a valid regular expression, got "
                                f"{p[:80]!r} ({err.msg})") from None
        patterns += skips
        regex = re.compile("|".join(f"(?:{p})" for p in patterns), re.DOTALL) if patterns else None
    head_quantized = method in ("awq", "gptq") and qc.lm_head

    def chosen(fmt: str, experts_only: bool = False) -> Callable:
        def format_of(kind: str, part: str | None, names: tuple[str, ...]) -> str | None:
            if kind == "lm_head" and not head_quantized or experts_only and (kind, part) != ("moe", "experts"):
                return None
            return None if regex is not None and any(regex.fullmatch(n) for n in names) else fmt
        return format_of

    if method == "mxfp4":
        block = _resolve(spec, chosen("mxfp4", experts_only=True), "mxfp4")
        return block, f"{where}: mxfp4, routed experts only (vLLM mxfp4.py leaves every other linear layer unquantized)."
    if method == "fp8":
        fmt = "fp8_block" if qc.weight_block_size else "fp8"
        block = _resolve(spec, chosen(fmt), fmt)
        return block, f"{where}: fp8{' block ' + str(qc.weight_block_size) if qc.weight_block_size else ''}."
    bits = qc.bits or qc.w_bit or 4
    if bits not in (4, 8):
        raise cfg.error(f"{where}.bits", f"4 or 8, got {bits!r}")
    fmt = "int4" if bits == 4 else "int8"
    block = _resolve(spec, chosen(fmt), fmt)
    if fmt == "int4":  # GPTQ and AWQ both store a packed 4-bit zero point per group (qzeros)
        size = qc.group_size or qc.q_group_size or 128
        block.update(group_size=size if size > 0 else 128, zero_points=True)
    return block, f"{where}: {method} {bits}-bit."


def _auto_round(spec: ModelSpec, qc: Settings, where: str, cfg: Cfg) -> tuple[dict, str]:
    """AutoRound, as vLLM reads it (model_executor/layers/quantization/inc.py INCConfig.get_layer_config, read at
    0.20.0): `bits` (4 or 8) in groups of `group_size`, packed as GPTQ packs them (auto_round:auto_gptq: a 16-bit scale
    and a 4-bit zero point a group), on every linear layer but the head, or only those under `block_name_to_quantize`
    when it names blocks; a module `extra_config` names (exactly, or by a pattern with regex characters, searched)
    takes the bits given there, 16 or more leaving it unquantized."""
    blocks = qc.block_name_to_quantize or qc.to_quant_block_names
    blocks = blocks.split(",") if isinstance(blocks, str) else blocks or []
    bits = qc.bits or 4
    if bits not in (4, 8):
        raise cfg.error(f"{where}.bits", f"4 or 8, got {bits!r}")
    patterns = [p for p in qc.extra_config if any(c in p for c in REGEX_CHARS)]
    with quiet():
        regexes = []
        for p in checked(patterns, cfg.file, f"{where}.extra_config"):
            try:
                regexes.append((re.compile(p), qc.extra_config[p]))
            except re.error:
                continue  # inc.py skips a pattern that does not compile

    def given(name: str) -> dict | None:
        found = qc.extra_config.get(name)
        return found if found is not None else next((c for regex, c in regexes if regex.search(name)), None)

    def format_of(kind: str, part: str | None, names: tuple[str, ...]) -> str | None:
        # `names` spell one unit's modules under each prefix a checkpoint may use: any one extra_config names decides
        widths = {(c or {}).get("bits", bits) for c in map(given, names) if c is not None}
        if not widths:
            quantized = kind != "lm_head" and (not blocks or any(n.startswith(b) for n in names for b in blocks))
            widths = {bits if quantized else 16}
        return None if max(widths) >= 16 else "int8" if 8 in widths else "int4"

    fmt = "int4" if bits == 4 else "int8"
    block = _resolve(spec, format_of, fmt)
    if "int4" in (block["format"], *block.get("other_formats", {})):
        size = qc.group_size or 128
        block.update(group_size=size if size > 0 else 128, zero_points=True)
    return block, f"{where}: auto-round {bits}-bit, {len(qc.extra_config)} modules in extra_config."


def _bitsandbytes(spec: ModelSpec, qc: Settings, where: str) -> tuple[dict, str]:
    """bitsandbytes (a checkpoint saved quantized): every linear layer in 4 bits (`nf4`: fp4 or nf4 codes, an absmax a
    block of 64, itself in 8 bits with `bnb_4bit_use_double_quant`) or 8 bits (LLM.int8, its fp32 row scales left out),
    but the modules `llm_int8_skip_modules` names or, when it names none, the output head (quantizers/base.py
    get_keys_to_not_convert). A key skips a module that is it, ends with it, or lies under it: transformers 4.x
    (integrations/bitsandbytes.py replace_with_bnb_linear: the module's own name, its path, or `key.` within the path)
    and 5.x (quantizers_utils.py should_convert_module, read at 5.25: the path from its start to a module boundary, or
    its end) save checkpoints so."""
    skip = qc.llm_int8_skip_modules if qc.llm_int8_skip_modules is not None else ["lm_head"]

    def skipped(name: str) -> bool:
        return any(name.endswith(k) or f"{k}." in name for k in skip)

    fmt = "nf4" if qc.load_in_4bit else "int8"
    block = _resolve(spec, lambda kind, part, names: None if any(map(skipped, names)) else fmt, fmt)
    if fmt == "nf4":
        block.update(group_size=64, double_quant=qc.bnb_4bit_use_double_quant)
    double = ", absmax double-quantized" if qc.bnb_4bit_use_double_quant else ""
    bits = f"4-bit ({qc.bnb_4bit_quant_type} codes, the nf4 format's bytes{double})" if fmt == "nf4" else "8-bit"
    return block, f"{where}: bitsandbytes {bits}, {len(skip)} skipped module names."


def _parents(name: str) -> list[str]:
    """The modules `name` sits in, innermost first: `a.b.c` -> `a.b`, `a`."""
    parts = name.split(".")
    return [".".join(parts[:n]) for n in range(len(parts) - 1, 0, -1)]


def _modelopt_match(patterns: list[str]) -> Callable[[str], bool]:
    """modelopt.py is_layer_excluded: exact, substring or shell wildcard (one regex for them all)."""
    if not patterns:
        return lambda name: False
    either = "|".join(f"(?:.*{re.escape(p)}.*)|(?:{fnmatch.translate(p)})" for p in patterns)
    regex = re.compile(either, re.DOTALL)
    return lambda name: regex.fullmatch(name) is not None


def _ct_match(patterns: list[str], cfg: Cfg, field: str) -> Callable[[tuple[str, ...]], bool]:
    """compressed-tensors: whether any of the names is one of the exact names or matches one of the `re:`
    regexes from its start (a pattern that does not compile is skipped; one that may backtrack without bound is
    refused, naming `field`). The regexes run once over the names joined by lines."""
    exact = {p for p in patterns if not p.startswith("re:")}
    regexes = []
    with quiet():
        for p in checked([p[3:] for p in patterns if p.startswith("re:")], cfg.file, field):
            try:
                regexes.append(re.compile(p).pattern)
            except re.error:
                continue
        regex = re.compile("|".join(f"^(?:{r})" for r in regexes), re.MULTILINE) if regexes else None
    return lambda names: not exact.isdisjoint(names) or (regex is not None and regex.search("\n".join(names)) is not None)


def _resolve(spec: ModelSpec, format_of: Callable, main: str) -> dict[str, Any]:
    """The `quantization` block: `main` format, and per unit the format `format_of(kind, part, module names)`
    gives it (None: unquantized); units that agree over all layers of a kind are written once, others with
    their layers."""
    decisions: dict[tuple[str, str], dict[int, str | None]] = {}
    units_of: dict[tuple[str, ...], list[tuple[str, str]]] = {}
    for i, kinds in enumerate(layer_kinds(spec)):
        if kinds not in units_of:
            units_of[kinds] = [(k, part) for k, part, _ in layer_units(spec, kinds) if (k, part) in LEAVES]
        prefixes = [p.format(i=i) + "." for p in PREFIXES]
        for kind, part in units_of[kinds]:
            names = tuple(p + leaf for p in prefixes for leaf in LEAVES[(kind, part)])
            decisions.setdefault((kind, part), {})[i] = format_of(kind, part, names)
    whole = [("lm_head", format_of("lm_head", None, ("lm_head",)))]
    if spec.mtp is not None:
        whole.append(("mtp", format_of("mtp", None, MTP_NAMES)))
    unquantized, others = [], {}
    for unit, fmt in whole:
        if fmt is None:
            unquantized.append(unit)
        elif fmt != main:
            others.setdefault(fmt, []).append(unit)
    for (kind, part), by_layer in decisions.items():
        for fmt in set(by_layer.values()) - {main}:
            layers = [i for i, f in by_layer.items() if f == fmt]
            unit = f"{kind}.{part}" + ("" if len(layers) == len(by_layer) else "@" + ",".join(map(str, layers)))
            (unquantized if fmt is None else others.setdefault(fmt, [])).append(unit)
    block: dict[str, Any] = {"format": main}
    if unquantized:
        block["unquantized"] = sorted(unquantized)
    if others:
        block["other_formats"] = {fmt: sorted(units) for fmt, units in others.items()}
    return block
