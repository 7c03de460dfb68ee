"""The stand-in for a checkpoint's own configuration module (`--trust-remote-code`), shared by the vLLM and SGLang
oracles (scripts/oracles/vllm.py, sglang_worker.py), which load it by file path (each keeps its own folder off
sys.path, where vllm.py / sglang.py would shadow the engine).

A user of a checkpoint that ships its configuration code runs the engine with `--trust-remote-code`; the oracles do
the same, with a stand-in in place of that code (MOCK). It touches no arithmetic: every config.json key becomes an
attribute, as the real remote classes leave them (they set their own fields, then call
super().__init__(**kwargs), so a key config.json gives wins), and a composite config's `text_config` dict becomes a
config of those keys, as composite configuration classes turn their sub-configs into config objects (the
KimiK3Config classes of the engines that serve Kimi-K3 build a KimiLinearConfig from the dict; SUB_CONFIGS for the
others a composite class builds); a class default
matters only for a key the fixture lacks, and only the published class's defaults are given (REMOTE_DEFAULTS, cited
there). Any other missing key fails in the engine as AttributeError, so it shows in the table: no default is invented.
"""

from __future__ import annotations

from pathlib import Path

MOCK = (
    "remote code: every case passes trust_remote_code=True, as a user of a checkpoint that ships its configuration "
    "module does (`--trust-remote-code`); that module is a stand-in (scripts/oracles/remote_code.py), written where the "
    "config's auto_map.AutoConfig names it, or registered with AutoConfig for a model_type that neither the "
    "installed transformers nor {engine}'s own config registry knows and whose published checkpoints ship that "
    "module though the fixture keeps no auto_map (REMOTE_CODE_TYPES). A checkpoint that ships none (Qwen3.5 / "
    "Qwen3.6, LFM2-MoE) gets no stand-in: where neither knows its model_type, transformers refuses it, as a user's "
    "launch does. The stand-in is "
    "a PretrainedConfig subclass: every config.json key becomes an attribute, as the real remote classes (which "
    "set their own fields, then call super().__init__(**kwargs), so a key config.json gives wins) leave them, and a "
    "`text_config` dict a config of its keys, as composite configuration classes (Kimi-K3's) build it (Nemotron "
    "Nano VL v2's llm_config and vision_config likewise, the llm_config by the installed transformers' class of its "
    "model_type where there is one: SUB_CONFIGS); a "
    "remote class's default matters only for a key config.json lacks: those {engine} reads are REMOTE_DEFAULTS, the "
    "published class's defaults (cited there; none of them is a cache dimension except nemotron_h's chunk_size), "
    "and any other key the fixture lacks fails as AttributeError in the table (no default is invented)"
)

# The stand-in for a checkpoint's own configuration module (`--trust-remote-code`): config.json's keys as attributes.
REMOTE_CONFIG_SOURCE = """try:
    from transformers import PreTrainedConfig
except ImportError:  # transformers 4.x
    from transformers import PretrainedConfig as PreTrainedConfig

inf = float("inf")  # as repr() writes it in the defaults below


def _sub_config(data, defaults):
    # a sub-config's dict as its class builds it: the installed transformers' class of its model_type, else a config of
    # its keys with the published class's defaults for the keys it lacks
    from transformers import AutoConfig
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    if data.get("model_type") in CONFIG_MAPPING:
        return AutoConfig.for_model(**data)
    config = PreTrainedConfig(**data)
    for key, value in defaults.get(data.get("model_type"), {{}}).items():
        if key not in data:
            setattr(config, key, value)
    return config


class {name}(PreTrainedConfig):
    model_type = {model_type!r}

    def __init__(self, **kwargs):
        for key, value in {defaults!r}.items():
            setattr(self, key, value)
        if isinstance(kwargs.get("text_config"), dict):  # a composite config's text part: a config, as remote classes make it
            kwargs["text_config"] = PreTrainedConfig(**kwargs["text_config"])
        for key in {sub_configs!r}:  # the sub-configs the published class builds as configs
            if isinstance(kwargs.get(key), dict):
                kwargs[key] = _sub_config(kwargs[key], {sub_defaults!r})
        super().__init__(**kwargs)
"""
# The defaults of a checkpoint's own configuration class (its __init__ signature) for the keys an engine's model reads
# that a config fixture lacks. nemotron_h: configuration_nemotron_h.py of nvidia/Nemotron-H-8B-Base-8K (the attribute
# names its __init__ stores them under: mamba_conv_bias -> use_conv_bias, mamba_chunk_size -> chunk_size, mamba_dt_*
# -> time_step_*); transformers 4.x has no NemotronHConfig (vLLM before 0.24 loads it as remote code).
REMOTE_DEFAULTS = {
    "nemotron_h": {"mlp_hidden_act": "relu2", "attention_bias": False, "mlp_bias": False, "use_bias": False,
                   "initializer_range": 0.02, "layer_norm_epsilon": 1e-5, "residual_in_fp32": False,
                   "use_cache": True, "num_logits_to_keep": 1, "sliding_window": None, "attention_dropout": 0.0,
                   "hidden_dropout": 0.0, "use_mamba_kernels": True, "mamba_hidden_act": "silu",
                   "time_step_min": 0.001, "time_step_max": 0.1, "time_step_limit": (0.0, float("inf")),
                   "time_step_floor": 1e-4, "use_conv_bias": True, "mamba_proj_bias": False, "chunk_size": 128,
                   "rescale_prenorm_residual": True, "n_routed_experts": 8, "n_shared_experts": 1,
                   "moe_intermediate_size": 7688, "moe_shared_expert_intermediate_size": 7688,
                   "num_experts_per_tok": 2, "routed_scaling_factor": 1.0, "n_group": 1, "topk_group": 1,
                   "norm_topk_prob": True},
    # NemotronH_Nano_VL_V2: its configuration.py (nvidia/NVIDIA-Nemotron-Nano-12B-v2-VL-BF16 @cb5a65ff, as SGLang's
    # configs/nano_nemotron_vl.py adapts it, v0.5.23): the __init__ defaults vLLM's nano_nemotron_vl.py reads
    "NemotronH_Nano_VL_V2": {"force_image_size": 512, "patch_size": 16, "downsample_ratio": 0.5, "template": None,
                             "ps_version": "v2", "image_tag_type": "internvl", "projector_hidden_size": 4096,
                             "vit_hidden_size": 1280, "video_pruning_rate": 0.0,
                             "norm_mean": (0.485, 0.456, 0.406), "norm_std": (0.229, 0.224, 0.225),
                             "use_thumbnail": True},
}
# Composite remote classes and the sub-configs they build as config objects (the rest of a composite stays as
# config.json gives it): NemotronH_Nano_VL_V2's configuration.py builds its llm_config as a NemotronHConfig and its
# vision_config as a config of its keys (vLLM's nano_nemotron_vl.py reads vision_config.args)
SUB_CONFIGS = {"NemotronH_Nano_VL_V2": ("llm_config", "vision_config")}

# Model types whose published checkpoints ship their configuration module (config.json's auto_map.AutoConfig), where a
# fixture keeps no auto_map: nemotron_h, nvidia's configuration_nemotron_h.py (the auto_map of the published
# Nemotron-3-Super config, tests/data/hf_configs/nemotron-3-super-120b-a12b.json, and of NVIDIA-Nemotron-3-Nano-30B-A3B's;
# the Nemotron-H checkpoints load with --trust-remote-code before transformers 5 has a NemotronHConfig); plamo2,
# pfnet's modeling_plamo.py (PROVENANCE.md: the checkpoint's auto_map is not written); kimi_linear, moonshotai's
# configuration_kimi.py (the published Kimi-Linear-48B-A3B-Instruct config.json's auto_map, quoted in the public model
# report gogongxt/python scripts/models, which the fixture dropped). No other model type is stood in
# for without an auto_map: a user of a checkpoint that ships no configuration code (Qwen3.5 / Qwen3.6, LFM2-MoE) gets
# transformers' refusal of a model type it does not know.
REMOTE_CODE_TYPES = ("nemotron_h", "plamo2", "kimi_linear")


def remote_config(model_dir: str | Path, cfg: dict, engine_registry) -> None:
    """Stand in for the checkpoint's own configuration module where loading needs remote code (MOCK): the module
    auto_map.AutoConfig names, written into the model folder, or a class registered with AutoConfig for a model_type
    of `REMOTE_CODE_TYPES` that neither transformers nor the engine's config registry (`engine_registry`, a mapping
    by model_type) has; any other model_type is left to transformers, which refuses one it does not know."""
    from transformers import AutoConfig
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    model_type = cfg.get("model_type")
    defaults = REMOTE_DEFAULTS.get(model_type, {})
    ref = (cfg.get("auto_map") or {}).get("AutoConfig")
    if ref:
        module, name = ref.split("--")[-1].rsplit(".", 1)
        source = REMOTE_CONFIG_SOURCE.format(name=name, model_type=model_type, defaults=defaults,
                                             sub_configs=SUB_CONFIGS.get(model_type, ()), sub_defaults=REMOTE_DEFAULTS)
        (Path(model_dir) / f"{module}.py").write_text(source)
    elif model_type in REMOTE_CODE_TYPES and model_type not in CONFIG_MAPPING and model_type not in engine_registry:
        namespace: dict = {}
        exec(REMOTE_CONFIG_SOURCE.format(name="RemoteConfig", model_type=model_type,  # noqa: S102
                                         defaults=defaults, sub_configs=(), sub_defaults={}), namespace)
        cls = namespace["RemoteConfig"]
        cls.__module__ = "oracle_remote_code"  # not transformers': AutoConfig takes it as the explicit local class
        AutoConfig.register(model_type, cls, exist_ok=True)

