"""Import a Hugging Face `config.json` (or a checkpoint folder holding one) as a `ModelSpec`, offline.

One converter per `model_type` (the `CONVERTERS` table); each reads the fields the way the model's
code does: layer lists, intervals, period/offset rules and 1-based lists become one entry per layer,
and the config's state-dtype fields become the spec's `ssm_dtype_hints` (only what the config says: the
engines' defaults belong to the engine profiles).
Configs written by the `mamba_ssm` library (`d_model`, `n_layer`, `ssm_cfg`, no `model_type`) are
read with that library's defaults. Every problem is a one-line `SpecError` naming file and field.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from pathlib import Path

import msgspec
from msgspec.structs import replace

from mcache.core.errors import SpecError
from mcache.core.hf import glm5_next, linear_attention, mamba2_hybrids, qwen4_exp, ssm
from mcache.core.hf.common import Cfg, Draft, config_file, read_config
from mcache.core.hf.drafter import ARCHITECTURES as DRAFTER_ARCHITECTURES
from mcache.core.hf.index import lone_index_note, read_index
from mcache.core.hf.quantization import find_quantization, lone_file_note, quantization_block
from mcache.core.sizing.weights import unknown_fields
from mcache.core.spec.model import ModelSpec, Quantization, check_spec

CONVERTERS: dict[str, Callable[[Cfg], Draft]] = {
    "bailing_hybrid": linear_attention.bailing_hybrid,
    "bailing_moe_linear": linear_attention.bailing_moe_linear,
    "bamba": mamba2_hybrids.bamba,
    "falcon_mamba": ssm.mamba,
    "falcon_h1": mamba2_hybrids.falcon_h1,
    "glm5_next": glm5_next.glm5_next,
    "glm5_next_text": glm5_next.glm5_next,
    "granitemoehybrid": mamba2_hybrids.granitemoehybrid,
    "jamba": ssm.jamba,
    "kimi_k3": linear_attention.kimi_k3,
    "kimi_linear": linear_attention.kimi_linear,
    "lfm2": linear_attention.lfm2,
    "lfm2_moe": linear_attention.lfm2_moe,
    "lfm2_vl": linear_attention.lfm2_vl,
    "lfm3": linear_attention.lfm3,
    "lfm3_vl": linear_attention.lfm3_vl,
    "mamba": ssm.mamba,
    "mamba2": ssm.mamba2,
    "minicpmv4_6": linear_attention.minicpmv4_6,
    "minimax": linear_attention.minimax,
    "minimax_m1": linear_attention.minimax,
    "minimax_text_01": linear_attention.minimax,
    "nemotron_h": mamba2_hybrids.nemotron_h,
    "NemotronH_Nano_VL_V2": mamba2_hybrids.nemotron_h_nano_vl,
    "NemotronH_Nano_Omni_Reasoning_V3": mamba2_hybrids.nemotron_h_nano_vl,
    "nemotron_h_omni": mamba2_hybrids.nemotron_h_nano_vl,
    "olmo_hybrid": linear_attention.olmo_hybrid,
    "plamo2": mamba2_hybrids.plamo2,
    "qwen3_5": linear_attention.qwen3_5,
    "qwen3_5_moe": linear_attention.qwen3_5_moe,
    "qwen3_5_moe_text": linear_attention.qwen3_5_moe,
    "qwen3_5_text": linear_attention.qwen3_5,
    "qwen3_next": linear_attention.qwen3_next,
    "qwen4_exp": qwen4_exp.qwen4_exp,
    "qwen4_exp_text": qwen4_exp.qwen4_exp,
    "zamba2": mamba2_hybrids.zamba2,
}
MAMBA_SSM = "mamba_ssm"
# Model types a checkpoint declares beside the transformers type mcache reads it as: Ling-3.0's remote-code
# configuration_bailing_moe_v3.py (BailingMoeV3Config, model_type bailing_moe_v3) has the fields of transformers'
# BailingHybridConfig, and engines serve both through BailingMoeV3ForCausalLM (vLLM models/bailing_moe_v3.py)
REMOTE_TYPES = {"bailing_moe_v3": "bailing_hybrid",
                # Qwen3.8-Flash-Next's first model type, renamed qwen4_exp; some quantized uploads keep it, their
                # text_config field for field the same (a public parser test pinned to both, search file id 59768075050)
                "qwen3_8_flash_next": "qwen4_exp", "qwen3_8_flash_next_text": "qwen4_exp_text"}
# Model types engines serve that mcache knows and does not model yet, with what it lacks: a refusal names the gap
# rather than the closest type, which would size the model without those caches
NOT_MODELLED = {
    **{t: "MiniMax-M3 has no recurrent or linear-attention layers (sparse attention with index keys): "
                     "not a hybrid mcache sizes" for t in ("minimax_m3", "minimax_m3_vl")},
    # recurrent models transformers has a class for and the engines none (vLLM 0.34 model_executor/models/registry.py,
    # SGLang 0.5.23 srt/models/): no engine's pools to size them by
    **{t: f"{name} is a recurrent model neither vLLM (0.34) nor SGLang (0.5.23) serves: no engine keeps its state"
       for t, name in (("rwkv", "RWKV"), ("recurrent_gemma", "RecurrentGemma"), ("xlstm", "xLSTM"))},
}
# A config that names no model_type but its architecture, as some exports write it (an MLX export of Edge0-8B-A1B,
# BailingMoeV3ForCausalLM with an auto_map to the remote config class): engines pick the model by architecture
ARCHITECTURE_TYPES = {"BailingMoeV3ForCausalLM": "bailing_hybrid"}


def supported_model_types() -> list[str]:
    """Model types `import_hf` reads (plus `mamba_ssm` library configs, which have none)."""
    return sorted(CONVERTERS)


def model_type_of(data: dict, file: str) -> str:
    """The config's `model_type`, or `mamba_ssm` for a `mamba_ssm` library config; a DFlash drafter's config is
    refused, naming the option that takes it."""
    kind = data.get("model_type")
    names = data.get("architectures")
    arch = names[0] if isinstance(names, list) and names and isinstance(names[0], str) else None
    if arch in DRAFTER_ARCHITECTURES:
        raise SpecError(file, "architectures", f"a model's config; this is a DFlash drafter's ({arch}): give it with "
                                               "--draft-model beside the config of the model it drafts for")
    # a transformers config converted from mamba_ssm's keeps d_model / n_layer beside hidden_size, which its class reads
    if "d_model" in data and "n_layer" in data and (kind is None or kind in ("mamba", "mamba2") and "hidden_size" not in data):
        return MAMBA_SSM
    by_hand = "or write a spec by hand (`mcache spec schema`)"
    if kind is None and arch in ARCHITECTURE_TYPES:
        return ARCHITECTURE_TYPES[arch]
    if isinstance(kind, str) and kind in REMOTE_TYPES:
        return REMOTE_TYPES[kind]
    if kind is None:
        raise SpecError(file, "model_type", f"a model type (or a mamba_ssm config with d_model, n_layer), missing; "
                                            f"`mcache import-hf --help` lists them, {by_hand}")
    base = kind.removesuffix("_text") if isinstance(kind, str) else None
    if base in NOT_MODELLED:
        raise SpecError(file, "model_type", f"a model type mcache models, got {kind!r}: {NOT_MODELLED[base]} (a spec "
                                            "written by hand, `mcache spec schema`, can still describe the rest)")
    if not isinstance(kind, str) or kind not in CONVERTERS:
        close = difflib.get_close_matches(str(kind).lower(), supported_model_types(), n=1, cutoff=0.75)
        hint = f"the closest supported one is {close[0]!r}" if close else "`mcache import-hf --help` lists the supported ones"
        raise SpecError(file, "model_type", f"a supported model type, got {kind!r}: {hint}, {by_hand}")
    return kind


def import_hf(path: str | Path, name: str | None = None, origin: str | None = None) -> ModelSpec:
    """The spec of the HF config at `path` (a `config.json` or a checkpoint folder holding one); no network. Only a
    folder's quantization file (`hf_quant_config.json`) and safetensors index (`model.safetensors.index.json`, the
    stored weights' size) are read: beside a lone config file they may belong to another model. `name` and `origin`
    replace the spec's name and the source's file (a Hub snapshot: its repo id)."""
    folder = Path(path) if Path(path).is_dir() else None
    file = config_file(path)
    data = read_config(file)
    kind = model_type_of(data, str(file))
    cfg = Cfg(data, str(file), kind)
    if kind == MAMBA_SSM:
        draft = ssm.mamba_ssm(cfg)
        label = f"mamba_ssm config, ssm_cfg.layer {'Mamba2' if 'mamba2' in draft.blocks else 'Mamba1'}"
        if data.get("model_type"):
            label = f"model_type {data['model_type']}, {label}"
    else:
        draft = CONVERTERS[kind](cfg)
        given = data.get("model_type")
        label = (f"model_type {kind}" if given == kind else f"model_type {given}, read as {kind}" if given
                 else f"no model_type, architecture {cfg.architecture()} read as {kind}")
    spec = draft.build(name or spec_name(file), f"{origin or file} ({label})")
    stored = read_index(folder, origin)  # like the quantization file, only a checkpoint folder's
    if stored is not None:
        spec = replace(spec, stored_weights=stored)
    found = find_quantization(cfg, draft.dtype_cfg or draft.cfg, folder)
    if folder is None and (note := lone_index_note(file)):
        spec = replace(spec, notes=f"{spec.notes} {note}".strip())
    if found is None and folder is None and (note := lone_file_note(file)):
        spec = replace(spec, notes=f"{spec.notes} {note}".strip())
    if found is None or unknown_fields(spec):  # weights mcache cannot count need no storage format
        return spec
    block, note = quantization_block(spec, *found, cfg)
    quant = msgspec.convert({**block, "source": note}, Quantization) if block else None
    spec = replace(spec, quantization=quant, notes=f"{spec.notes} {note}".strip())
    check_spec(spec, str(file))
    return spec


def spec_name(file: Path) -> str:
    """`foo` for `foo.json`; the folder's name for `<folder>/config.json`."""
    if file.stem == "config" and file.resolve().parent.name:
        return file.resolve().parent.name
    return file.stem
