"""Read a DFlash drafter's `config.json` (`--draft-model`) as a spec's `drafter` block, as vLLM builds the drafter
(model_executor/models/qwen3_dflash.py, v0.20.0 - v0.34.0: DFlashQwen3Model): `num_hidden_layers` Qwen3 decoder layers
of the config's attention geometry; `layer_types` and `dflash_config.use_swa` / `swa_window_size` (else the config
class's `sliding_window`) windowing them (`_resolve_layer_attention`, v0.27.0 on); and, unless `use_aux_hidden_state`
is false, an `fc` that reads the target's hidden states at `target_layer_ids` (its `eagle_config` updated with its
`dflash_config`, the latter winning); its block size as SGLang reads it (speculative/dflash_utils.py
parse_dflash_draft_config, v0.5.23: `dflash_config.block_size`, else the config's own). A vllm-project/speculators
checkpoint (`speculators_config`) is read as vLLM converts it. DFlash2's per-block convolutions (qwen3_dflash2.py, a
few MB) are not weighed."""

from __future__ import annotations

from pathlib import Path

import msgspec

from mcache.core.errors import SpecError
from mcache.core.hf.common import Cfg, attention_block, config_file, read_config
from mcache.core.spec.model import Drafter, check_drafter

ARCHITECTURES = ("DFlashDraftModel", "DFlash2DraftModel")  # vLLM's registry (DFlash2: from v0.28.0)
LAYER_TYPES = ("full_attention", "sliding_attention")
MAX_BLOCK = 257  # 256 drafts (mcache's bound on --draft) and the bonus token


def read_drafter(path: str | Path) -> Drafter:
    """The drafter of the config at `path` (a `config.json` or a folder holding one); a `SpecError` naming the file
    and field for anything else."""
    file = config_file(path)
    data = read_config(file)
    speculators = data.get("speculators_config") is not None
    if speculators:
        data = _from_speculators(data, str(file))
    cfg = Cfg(data, str(file), "DFlash drafter", "transformer_layer_config." if speculators else "")
    arch = cfg.architecture()
    if arch not in ARCHITECTURES:
        raise cfg.error("architectures", f"a DFlash drafter's ({' or '.join(ARCHITECTURES)}), got {arch!r}")
    layers = cfg.num_layers()
    hidden = cfg.int("hidden_size")
    merged = {**_mapping(cfg, "eagle_config"), **_mapping(cfg, "dflash_config")}
    inner = Cfg(merged, cfg.file, cfg.model_type, "dflash_config.")
    kept = cfg.int("sliding_window") if cfg.given("sliding_window") and _keeps_window(cfg) else None
    types = cfg.list("layer_types", str, []) if cfg.given("layer_types") else _class_layer_types(cfg, layers, kept)
    if types and len(types) != layers:
        raise cfg.error("layer_types", f"{layers} entries (num_hidden_layers), got {len(types)}")
    for i, entry in enumerate(types):
        if entry not in LAYER_TYPES:
            raise cfg.error(f"layer_types[{i}]", f"one of {', '.join(LAYER_TYPES)}, got {entry!r}")
    window = inner.int("swa_window_size") if inner.given("swa_window_size") else kept
    ids = next((inner.list(k, int) for k in ("target_layer_ids", "layer_ids") if inner.given(k)), None)
    fc = inner.bool("use_aux_hidden_state") if inner.given("use_aux_hidden_state") else (
        cfg.bool("use_aux_hidden_state", True))
    attention = attention_block(cfg, hidden)
    attention.pop("sliding_window", None)  # the drafter's own fields window its layers
    data = {
        "architecture": arch,
        "num_layers": layers,
        "attention": attention,
        "layer_types": types,
        "use_swa": inner.bool("use_swa", False),
        "sliding_window": window,
        "hidden_size": hidden,
        "intermediate_size": cfg.int("intermediate_size"),
        "target_layers": len(ids) if ids else layers,
        "target_hidden_size": cfg.int("target_hidden_size") if cfg.given("target_hidden_size") else None,
        "fc": fc,
        "block_size": _block_size(cfg),
        "target_layer_ids": ids or [],
        "source": str(file),
    }
    try:
        drafter = msgspec.convert(data, Drafter)
    except msgspec.ValidationError as exc:
        raise SpecError(str(file), "drafter", str(exc)) from None
    check_drafter(drafter, str(file))
    return drafter


def _block_size(cfg: Cfg) -> int | None:
    """The drafter's block size: `dflash_config.block_size`, else the config's `block_size` (None: neither), at most
    `MAX_BLOCK` (the drafts mcache takes, and the bonus token)."""
    inner = Cfg(_mapping(cfg, "dflash_config"), cfg.file, cfg.model_type, "dflash_config.")
    size = inner.int("block_size", None, maximum=MAX_BLOCK)
    return size if size is not None else cfg.int("block_size", None, maximum=MAX_BLOCK)


def _from_speculators(data: dict, file: str) -> dict:
    """A vllm-project/speculators checkpoint's config as vLLM reads it (transformers_utils/configs/speculators/algos.py
    update_dflash, update_dflash2; v0.34.0): its `transformer_layer_config` with the DFlash architecture, the
    `target_hidden_size` and `block_size`, and `dflash_config.target_layer_ids` its `aux_hidden_state_layer_ids` less
    one."""
    kind = data.get("speculators_model_type")
    if kind not in ("dflash", "dflash2"):
        raise SpecError(file, "speculators_model_type", f"dflash or dflash2 (a DFlash drafter), got {kind!r}")
    layer, ids = data.get("transformer_layer_config"), data.get("aux_hidden_state_layer_ids")
    if not isinstance(layer, dict):
        raise SpecError(file, "transformer_layer_config", "a mapping: the drafter's layers")
    if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) and i > 0 for i in ids):
        raise SpecError(file, "aux_hidden_state_layer_ids", "a list of the target's layers (1-based) the drafter reads")
    out = {**layer, "architectures": ["DFlash2DraftModel" if kind == "dflash2" else "DFlashDraftModel"],
           "dflash_config": {"target_layer_ids": [i - 1 for i in ids]}}
    out |= {key: data[key] for key in ("target_hidden_size", "block_size") if data.get(key) is not None}
    return out


def _class_layer_types(cfg: Cfg, layers: int, window: int | None) -> list[str]:
    """The `layer_types` a `qwen3` drafter's config class writes when the config names none (transformers
    configuration_qwen3.py Qwen3Config, 4.57.6 and 5.22.2: windowed from layer `max_window_layers`, default 28, when
    it keeps a window), which is what vLLM then reads; none for another model type."""
    if cfg.raw("model_type", None) != "qwen3":
        return []
    first = cfg.int("max_window_layers", 28, minimum=0)
    return ["sliding_attention" if window is not None and i >= first else "full_attention" for i in range(layers)]


def _keeps_window(cfg: Cfg) -> bool:
    """Whether the config class keeps `sliding_window`: transformers' Qwen3Config (a `qwen3` drafter's) sets it to None
    unless `use_sliding_window` is true; other model types keep it."""
    return cfg.raw("model_type", None) != "qwen3" or cfg.bool("use_sliding_window", False)


def _mapping(cfg: Cfg, key: str) -> dict:
    """The config's nested mapping `key` (empty when absent)."""
    value = cfg.raw(key, None)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise cfg.error(key, f"a mapping, got {type(value).__name__}")
    return value
