"""Multimodal wrappers: a text model nested in the config (`text_config`, or Nemotron-H VL's and Omni's `llm_config`) that a
family's converter reads, and the vision tower (`vision_config`), recorded as the spec's `vision` block (weighed where
mcache knows the tower: Qwen3.5's ViT, Kimi-K3's MoonViT3d)."""

from __future__ import annotations

from collections.abc import Callable

from mcache.core.hf.common import Cfg, Draft
from mcache.core.hf.defaults import NEMOTRON_VL_TYPES, RADIO_VITS, TEXT_KEYS, TEXT_TYPES, VISION_TYPES


def text_config(cfg: Cfg) -> Cfg:
    """The text config of a multimodal config (`TEXT_KEYS`, else `text_config`), with its text class's defaults (all
    of them when it is absent, as the wrapper class builds it); a bare `*_text` config is its own text config."""
    if cfg.model_type.endswith("_text"):
        return cfg
    text_type, key = TEXT_TYPES[cfg.model_type], TEXT_KEYS.get(cfg.model_type, "text_config")
    if not cfg.given(key):
        return Cfg({}, cfg.file, cfg.model_type, f"{key}.", text_type, cfg.used)
    return cfg.sub(key, defaults_type=text_type)


def wrapped(convert: Callable[[Cfg], Draft], cfg: Cfg) -> Draft:
    """A multimodal wrapper whose text config `convert` reads (the model dtype and state-dtype hints from it, the
    architecture from the wrapper), with its vision tower."""
    text = text_config(cfg)
    draft = convert(text)
    draft.cfg, draft.dtype_cfg = cfg, text
    draft.notes.insert(0, f"The text model is its {text.prefix.rstrip('.')} (model_type {TEXT_TYPES[cfg.model_type]}).")
    return with_vision(draft, cfg)


def with_vision(draft: Draft, cfg: Cfg) -> Draft:
    """`draft` with the vision tower of a multimodal wrapper config (`VISION_TYPES`): its `vision_config`, or the
    tower its class builds when the config has none; a bare `*_text` config has no tower. Weighed where mcache knows
    the tower (`TOWERS`)."""
    if cfg.model_type not in VISION_TYPES:
        return draft
    vision_type, layers_key, hidden_key = VISION_TYPES[cfg.model_type]
    if cfg.given("vision_config") or vision_type is None:  # a wrapper without a default tower requires one
        vision = cfg.sub("vision_config", defaults_type=vision_type or "")
    else:
        vision = Cfg({}, cfg.file, cfg.model_type, "vision_config.", vision_type, cfg.used)
    if cfg.model_type in RADIO_WRAPPERS:
        name, (layers, hidden) = _radio_vit(vision)
        where = f"{vision.prefix}args.model {name}, RADIO's ViT"
    else:
        layers, hidden = vision.num_layers(layers_key), vision.int(hidden_key)
        where = f"{vision.prefix}{layers_key}, {vision.prefix}{hidden_key}"
    block = {"num_layers": layers, "hidden_size": hidden, "layers_key": layers_key, "hidden_key": hidden_key,
             **({} if cfg.given("vision_config") else {"defaulted": True})}
    tower = TOWERS.get(cfg.model_type)
    if tower is None:
        draft.blocks["vision"] = block
        draft.notes.append(f"Vision tower: {layers} layers of width {hidden} ({where}), not counted in the weights "
                           "(mcache does not weigh this tower: give --weights for the checkpoint's size).")
        return draft
    block |= tower(vision, hidden)
    draft.blocks["vision"] = block
    draft.notes.append(f"Vision tower: {layers} layers of width {hidden} ({where}), counted in the weights (on every PP "
                       "stage, in the model dtype).")
    if block["out_hidden_size"] != draft.hidden_size:  # the projector feeds the text model: a real checkpoint agrees
        key = "text_hidden_size" if cfg.model_type == "kimi_k3" else "out_hidden_size"
        draft.notes.append(f"The tower projects to {block['out_hidden_size']} ({vision.prefix}{key}), not the text "
                           f"model's width {draft.hidden_size}: weighed as the config says.")
    return draft


def _radio_vit(vision: Cfg) -> tuple[str, tuple[int, int]]:
    """The ViT a RADIO tower's `args.model` names and its (layers, width) (`RADIO_VITS`)."""
    args = vision.sub("args")
    name = args.str("model")
    if name not in RADIO_VITS:
        raise args.error("model", f"one of {', '.join(RADIO_VITS)} (the RADIO ViTs whose sizes mcache knows), got {name!r}")
    return name, RADIO_VITS[name]


def _qwen_tower(vision: Cfg, hidden: int) -> dict:
    """The sizes of Qwen3.5's ViT (Qwen3_5VisionModel) that its parameters take."""
    return {"tower": "qwen3_5", "intermediate_size": vision.int("intermediate_size"),
            "patch_size": vision.int("patch_size"), "temporal_patch_size": vision.int("temporal_patch_size"),
            "in_channels": vision.int("in_channels"), "position_embeddings": vision.int("num_position_embeddings"),
            "merge_size": vision.int("spatial_merge_size") ** 2, "out_hidden_size": vision.int("out_hidden_size")}


# The Kimi-K3 tower mcache weighs (SGLang v0.5.23 kimi_k3_vl.py): these fields at these values.
KIMI_TOWER = {"norm_type": "rmsnorm", "attn_bias": False, "linear_bias": False, "patch_embed_proj_bias": False,
              "mm_projector_type": "patchmergerv2"}


def _kimi_tower(vision: Cfg, hidden: int) -> dict:
    """The sizes of Kimi-K3's MoonViT3d and projector that their parameters take; a variant of it is refused."""
    for key, value in KIMI_TOWER.items():
        if vision.raw(key) != value:
            raise vision.error(key, f"{value!r} (the Kimi-K3 tower mcache weighs), got {vision.raw(key)!r}")
    if vision.int("mm_hidden_size", hidden) != hidden:
        raise vision.error("mm_hidden_size", f"the tower's width {hidden} (vt_hidden_size), got {vision.raw('mm_hidden_size')!r}")
    kernel = vision.list("merge_kernel_size", int)
    if len(kernel) != 2 or min(kernel) < 1:
        raise vision.error("merge_kernel_size", f"two positive integers, got {kernel!r}")
    return {"tower": "kimi_k3", "intermediate_size": vision.int("vt_intermediate_size"),
            "attention_size": vision.int("qkv_hidden_size"), "patch_size": vision.int("patch_size"),
            "position_embeddings": vision.int("init_pos_emb_height") * vision.int("init_pos_emb_width"),
            "merge_size": kernel[0] * kernel[1], "out_hidden_size": vision.int("text_hidden_size")}


# The towers mcache weighs, by wrapper model type (core/sizing/vision.py); the others are recorded, not weighed
TOWERS: dict[str, Callable[[Cfg, int], dict]] = {"qwen3_5": _qwen_tower, "qwen3_5_moe": _qwen_tower,
                                                 "kimi_k3": _kimi_tower}
# Wrappers whose tower is a RADIO model: its sizes follow the ViT that `vision_config.args.model` names
RADIO_WRAPPERS = NEMOTRON_VL_TYPES
