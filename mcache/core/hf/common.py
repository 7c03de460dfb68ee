"""Shared pieces of the HF importers: typed field access with errors that name the field, and the
assembly of a converter's blocks into a validated `ModelSpec`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from mcache.core.errors import SpecError
from mcache.core.files import read_json_object
from mcache.core.hf.defaults import defaults_of
from mcache.core.kinds.mamba1 import dt_rank_auto
from mcache.core.numbers import JSON_HOOKS, Refused, first_refused
from mcache.core.spec import dtypes
from mcache.core.spec.dump import compact_layers
from mcache.core.spec.model import MAX_INT, MAX_LAYERS, NORM_EPS_KEYS, SSM_HINT_KEYS, ModelSpec, check_spec

_MISSING = object()


def config_file(path: str | Path) -> Path:
    """`path` itself if it is a file, else the `config.json` in the folder `path`."""
    path = Path(path)
    if path.is_dir():
        path = path / "config.json"
        if not path.is_file():
            raise SpecError(str(path), "file", "a checkpoint folder holding config.json, none found")
    elif not path.is_file():
        raise SpecError(str(path), "file", "an existing config.json or a checkpoint folder holding one")
    return path


def read_config(path: Path) -> dict:
    """The JSON object in `path`; a `SpecError` for unreadable files, bad JSON, another top-level type, or a number
    no field can hold (an integer too long to read, NaN, Infinity, 1e400), naming its field."""
    data = read_json_object(path, "of config fields", **JSON_HOOKS)
    refused = first_refused(data, non_finite=False)  # NaN and infinities: refused where mcache reads them (`Cfg.raw`)
    if refused:
        raise SpecError(str(path), refused[0], refused[1].expected)
    return data


class Cfg:
    """Read access to one (possibly nested) config mapping; every failure is a `SpecError` naming the
    file, the dotted field and what `model_type` needs.

    A field the config omits (or sets to null) takes its config class's default (`defaults.CLASS_DEFAULTS` of
    `defaults_type`, the model type by default), as `AutoConfig` would; `used` collects the defaults read, for
    the spec's notes, and `unknown` the fields only the weights need that neither gives (`weight_int`); both are
    shared with nested configs.
    """

    def __init__(self, data: dict, file: str, model_type: str, prefix: str = "", defaults_type: str | None = None,
                 used: dict | None = None, unknown: list | None = None):
        self.data, self.file, self.model_type, self.prefix = data, file, model_type, prefix
        self.class_name, self.defaults = defaults_of(model_type if defaults_type is None else defaults_type)
        self.used: dict[str, tuple[Any, str]] = {} if used is None else used
        self.unknown: list[str] = [] if unknown is None else unknown

    def error(self, key: str, expected: str) -> SpecError:
        return SpecError(self.file, self.prefix + key, expected)

    def has(self, key: str) -> bool:
        """The config sets `key`, or its class has a default for it."""
        return self.given(key) or self.defaults.get(key) is not None

    def given(self, key: str) -> bool:
        """The config itself sets `key` (not null)."""
        return self.data.get(key) is not None

    def architecture(self) -> str | None:
        """The first of the config's `architectures`, when it lists one."""
        names = self.data.get("architectures")
        return names[0] if isinstance(names, list) and names and isinstance(names[0], str) else None

    def first_given(self, *keys: str) -> str:
        """The first of `keys` (spellings of one field) the config sets, else the first with a class default,
        else the first."""
        defaulted = next((k for k in keys if self.defaults.get(k) is not None), keys[0])
        return next((k for k in keys if self.given(k)), defaulted)

    def raw(self, key: str, default: Any = _MISSING) -> Any:
        value = self.data.get(key)
        if isinstance(value, Refused):  # a NaN or an infinity in a field mcache sizes
            raise self.error(key, value.expected)
        if value is None and self.defaults.get(key) is not None:
            value = self.defaults[key]
            self.used[self.prefix + key] = (value, self.class_name)
        if value is None:
            if default is _MISSING:
                raise self.error(key, f"a value (required for model_type {self.model_type}), missing")
            return default
        return value

    def int(self, key: str, default: Any = _MISSING, minimum: int = 1, maximum: int = MAX_INT) -> int:
        """An integer in `minimum..maximum` (default: positive, below 2**40); `default` when absent or null."""
        value = self.raw(key, default)
        if value is default and default is not _MISSING:
            return value
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
            raise self.error(key, f"{what}, got {value!r}")
        if value > maximum:
            raise self.error(key, f"at most {maximum}, got {value}")
        return value

    def weight_int(self, key: str, minimum: int = 1) -> int | None:
        """An integer only the weight estimate needs: None (recorded in `unknown`) when neither the config nor its
        class sets it, so the caches are still sized."""
        if not self.has(key):
            self.unknown.append(self.prefix + key)
            return None
        return self.int(key, minimum=minimum)

    def num_layers(self, key: str = "num_hidden_layers") -> int:
        """The layer count (at most `MAX_LAYERS`, so a typo cannot build a billion-entry layer list)."""
        return self.int(key, maximum=MAX_LAYERS)

    def int_or_auto(self, key: str, auto: int, default: Any = "auto") -> int:
        """An integer, or `auto` (the string transformers writes) meaning `auto`."""
        return auto if self.raw(key, default) == "auto" else self.int(key)

    def bool(self, key: str, default: Any = _MISSING) -> bool:
        value = self.raw(key, default)
        if not isinstance(value, bool):
            raise self.error(key, f"true or false, got {value!r}")
        return value

    def str(self, key: str, default: Any = _MISSING) -> str:
        value = self.raw(key, default)
        if not isinstance(value, str):
            raise self.error(key, f"a string, got {value!r}")
        return value

    def list(self, key: str, item: type, default: Any = _MISSING) -> list:
        """A list whose entries are all of type `item` (`int` entries must be >= 0)."""
        value = self.raw(key, default)
        if not isinstance(value, list):
            raise self.error(key, f"a list of {item.__name__}, got {type(value).__name__}")
        for i, entry in enumerate(value):
            bad = isinstance(entry, bool) or not isinstance(entry, item) or (item is int and entry < 0)
            if bad:
                raise self.error(f"{key}[{i}]", f"a {'non-negative integer' if item is int else item.__name__}, "
                                                f"got {entry!r}")
        return value

    def sub(self, key: str, required: bool = True, defaults_type: str = "") -> Cfg | None:
        """The nested mapping `key` (e.g. `text_config`) as a `Cfg` whose errors carry the prefix; its defaults are
        those of `defaults_type` (none unless given)."""
        value = self.data.get(key)
        if value is None and not required:
            return None
        if not isinstance(value, dict):
            got = "missing" if value is None else f"got {type(value).__name__}"
            raise self.error(key, f"a mapping (required for model_type {self.model_type}), {got}")
        return Cfg(value, self.file, self.model_type, f"{self.prefix}{key}.", defaults_type, self.used, self.unknown)

    def layer_list(self, key: str, n: int, names: dict[str, str]) -> list[str]:
        """A per-layer list of type names mapped through `names`; its length must be `n`."""
        values = self.list(key, str)
        if len(values) != n:
            raise self.error(key, f"{n} entries (num_hidden_layers), got {len(values)}")
        for i, v in enumerate(values):
            if v not in names:
                raise self.error(f"{key}[{i}]", f"one of {', '.join(sorted(names))}, got {v!r}")
        return [names[v] for v in values]

    def indices(self, key: str, n: int, base: int = 0) -> set[int]:
        """A list of distinct layer numbers counted from `base`, returned 0-based."""
        values = self.list(key, int)
        for i, v in enumerate(values):
            if not base <= v < n + base:
                raise self.error(f"{key}[{i}]", f"a {base}-based layer number in {base}..{n + base - 1}, got {v}")
        if len(set(values)) != len(values):
            raise self.error(key, "distinct layer numbers, got a repeat")
        return {v - base for v in values}


@dataclass
class Draft:
    """What a converter found: per-layer entries, parameter blocks and notes; `build` makes the spec."""

    cfg: Cfg
    hidden_size: int
    vocab_size: int | None
    entries: list[str]
    blocks: dict[str, dict] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    tie_embeddings: bool = False
    dtype_cfg: Cfg | None = None  # where the model dtype and state-dtype hints live, if not `cfg`

    def build(self, name: str, source: str) -> ModelSpec:
        where = self.dtype_cfg or self.cfg
        model_dtype, dtype_note = _model_dtype(where, self.cfg)
        data: dict[str, Any] = {
            "name": name,
            "source": source,
            **_provenance(self.cfg, where),
            "hidden_size": self.hidden_size,
            "vocab_size": self.vocab_size,
            "num_layers": len(self.entries),
            "layers": msgspec.to_builtins(compact_layers(self.entries)),
            "dtype": model_dtype,
            **({"dtype_named": False} if dtype_note else {}),
            "tie_embeddings": self.tie_embeddings,
            **self.blocks,
        }
        notes = list(self.notes)
        if dtype_note:
            notes.append(dtype_note)
        notes += _defaults_notes(self.cfg.used)
        if self.cfg.unknown:
            notes.append(f"Weights unknown: {', '.join(sorted(set(self.cfg.unknown)))} not in the config and no class "
                         "default; the caches are sized, the weights are not (give --weights for capacity).")
        kinds = {k for e in self.entries for k in e.split("+")}
        hints, ssm_note = _ssm_dtype_hints(where, self.cfg, kinds, model_dtype)
        if hints:
            data["ssm_dtype_hints"] = hints
        if ssm_note:
            notes.append(ssm_note)
        data["norm_eps_keys"] = [key for key in NORM_EPS_KEYS if where.given(key) or self.cfg.given(key)]
        data["notes"] = " ".join(notes)
        try:
            spec = msgspec.convert(data, ModelSpec)
        except msgspec.ValidationError as err:  # a converter bug, not a user error: still one line
            raise SpecError(self.cfg.file, "spec", f"a valid spec ({err})") from None
        check_spec(spec, self.cfg.file)
        return spec


def _defaults_notes(used: dict[str, tuple[Any, str]]) -> list[str]:
    """One note per config class whose defaults filled fields the config omits."""
    by_class: dict[str, list[str]] = {}
    for key, (value, cls) in sorted(used.items()):
        by_class.setdefault(cls, []).append(f"{key} {value}")
    return [f"Not in the config, so {cls.split(' (')[0]}'s defaults: {', '.join(items)}." for cls, items in by_class.items()]


# vllm/transformers_utils/model_arch_config_convertor.py derive_max_model_len_and_key (v0.33.0): the keys that bound
# the context, the smallest of them winning, `model_max_length` overriding them all
MAX_LEN_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
                "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len")
# vllm/config/model.py _get_and_verify_max_len: RoPE types whose max_position_embeddings is already scaled
PRESCALED_ROPE = ("su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling")


def _provenance(top: Cfg, text: Cfg) -> dict[str, Any]:
    """`architecture` (the first of the config's `architectures`; else `config_format` mamba_ssm for a mamba_ssm
    library config, which has no model_type), and `max_model_len`, the length the config
    allows as vLLM derives it (`_get_and_verify_max_len`): the smallest of `MAX_LEN_KEYS` (`model_max_length`
    overriding), times the RoPE scaling factor unless the type is pre-scaled; absent when no key is set."""
    found: dict[str, Any] = {}
    if top.architecture():
        found["architecture"] = top.architecture()
    elif top.model_type == "mamba_ssm" and not top.data.get("model_type"):
        found["config_format"] = "mamba_ssm"
    lengths = {}
    for key in MAX_LEN_KEYS:
        c = next((c for c in (text, top) if c.has(key)), None)
        if c is not None:
            lengths[key] = c.int(key)
    if not lengths:
        return found
    length = lengths.get("model_max_length") or min(lengths.values())
    rope = text.data.get("rope_parameters") or text.data.get("rope_scaling")
    if isinstance(rope, dict) and rope.get("rope_type", rope.get("type")) not in PRESCALED_ROPE:
        factor = rope.get("factor")
        length = int(length * factor) if isinstance(factor, int | float) and factor > 0 else length
    found["max_model_len"] = min(length, MAX_INT)
    return found


def _state_dtype(cfg: Cfg, key: str, also: str = "") -> str | None:
    """The canonical state dtype that `key` of `cfg` names; None when it is unset or "auto"."""
    value = cfg.data.get(key)
    if value is None or value == "auto":
        return None
    name = dtypes.for_role(str(value), "ssm_dtype")
    if name is None:
        raise cfg.error(key, f"one of {dtypes.allowed_for('ssm_dtype')}{also}, got {value!r}")
    return name


def _model_dtype(cfg: Cfg, top: Cfg) -> tuple[str, str]:
    """The checkpoint's dtype: `dtype`, else the older `torch_dtype` (transformers' PretrainedConfig in
    configuration_utils.py keeps `dtype` when a config has both)."""
    for c in (cfg, top):
        for key in ("dtype", "torch_dtype"):
            name = _state_dtype(c, key)
            if name is not None:
                return name, ""
    return "bfloat16", ("Weights weighed as bfloat16, assumed: the config names no dtype or torch_dtype (transformers "
                        "would build float32; engines load the dtype the checkpoint stores: give --weights if it is "
                        "not bfloat16).")


def _ssm_dtype_hints(cfg: Cfg, top: Cfg, kinds: set[str], model: str) -> tuple[dict[str, str], str]:
    """The state-dtype fields the config sets, in the text config or at the top level of a multimodal one (only
    what it says: engines apply their own defaults), and a note."""
    hints, notes = {}, []
    for c in dict.fromkeys((cfg, top)):
        for key in SSM_HINT_KEYS:
            if key not in hints and (name := _state_dtype(c, key, " or auto")) is not None:
                hints[key] = name
                notes.append(f"{c.prefix}{key} is {name}.")
    if "kda" in kinds:
        notes.append("The KDA recurrent state is float32 unless a state dtype is asked for.")
    if not hints and kinds & {"mamba1", "mamba2", "gdn", "lightning"}:
        notes.append(f"The config sets no {' or '.join(SSM_HINT_KEYS)}: the state dtype is the engine's default "
                     f"(neutral model: the model dtype, {model}).")
    return hints, " ".join(notes)


def attention_block(
    cfg: Cfg,
    width: int,
    *,
    heads_key: str = "num_attention_heads",
    kv_key: str = "num_key_value_heads",
    head_dim_keys: tuple[str, ...] = ("head_dim",),
    **extra: Any,
) -> dict:
    """The `attention` block: query heads, KV heads (as many as query heads when `kv_key` is absent) and the
    head dim, from the first of `head_dim_keys` the config has, else `width // heads` (which must divide); the
    config's `sliding_window`, unless `use_sliding_window` turns it off (the Qwen convention)."""
    heads = cfg.int(heads_key)
    head_dim = next((cfg.int(k) for k in head_dim_keys if cfg.has(k)), None)
    if head_dim is None:
        if width % heads:
            key = head_dim_keys[0] if head_dim_keys else heads_key
            raise cfg.error(key, f"a value, since the attention width {width} is not a multiple of {heads} heads")
        head_dim = width // heads
    block = {"num_heads": heads, "num_kv_heads": cfg.int(kv_key, heads), "head_dim": head_dim, **extra}
    if cfg.given("sliding_window") and cfg.raw("use_sliding_window", True) is not False:
        block["sliding_window"] = cfg.int("sliding_window")  # every attention layer masks to it (and caches no more)
    return block


def mamba2_block(cfg: Cfg, heads: int, head_dim: int, state: str, groups: str, conv: str) -> dict:
    """The `mamba2` block: the caller's head split, then the state size, groups and conv kernel read from the
    keys `state`, `groups` and `conv`, and the scan's chunk size when the config names one (`mamba_chunk_size`,
    else `chunk_size`, the order of vLLM's `ModelConfig.get_mamba_chunk_size` in vllm/config/model.py)."""
    block = {"num_heads": heads, "head_dim": head_dim, "state_size": cfg.int(state),
             "n_groups": cfg.int(groups), "conv_kernel": cfg.int(conv)}
    chunk = next((cfg.int(k) for k in ("mamba_chunk_size", "chunk_size") if cfg.has(k)), None)
    return block | ({"chunk_size": chunk} if chunk else {})


def mamba1_block(cfg: Cfg, inner: int, hidden: int, state: str, conv: str, dt_rank: str) -> dict:
    """The `mamba1` block: the inner size, then the state size, conv kernel and the dt rank (`"auto"` or absent:
    ceil(hidden / 16)) read from the keys `state`, `conv` and `dt_rank`."""
    return {"intermediate_size": inner, "state_size": cfg.int(state), "conv_kernel": cfg.int(conv),
            "dt_rank": cfg.int_or_auto(dt_rank, dt_rank_auto(hidden))}


def moe_block(experts: int, top_k: int, expert_size: int, shared: int, count: int = 1, **extra: Any) -> dict:
    """The `moe` block: routed experts, and `count` shared experts of intermediate size `shared` (0: none)."""
    block = {"num_experts": experts, "top_k": top_k, "expert_intermediate_size": expert_size,
             "shared_experts": count if shared else 0, **extra}
    return block | ({"shared_intermediate_size": shared} if shared and count else {})


def check_product(cfg: Cfg, heads_key: str, heads: int, dim: int, total: int, what: str) -> None:
    """Heads x head dim must equal the inner size the config implies elsewhere (`what`: its fields joined by " x ");
    the message names the fields that came from the class's defaults (a config written for another class lacks them)."""
    if heads * dim != total:
        keys = [heads_key, *what.split(" x ")]
        defaulted = [f"{cfg.prefix}{k} {cfg.defaults[k]}" for k in keys
                     if not cfg.given(k) and cfg.defaults.get(k) is not None]
        owner = cfg.class_name.split(" ")[0]
        hint = f" (not in the config, so {owner}'s defaults: {', '.join(defaulted)})" if defaulted else ""
        raise cfg.error(heads_key, f"heads x head dim equal to {what} ({total}), got {heads} x {dim} = {heads * dim}"
                                   f"{hint}")


def mtp_layers(cfg: Cfg) -> int:
    """MTP layers the config declares (`mtp_num_hidden_layers` or `num_nextn_predict_layers`)."""
    for key in ("mtp_num_hidden_layers", "num_nextn_predict_layers"):
        if cfg.has(key):
            return cfg.int(key, minimum=0)
    return 0


def count_note(entries: list[str]) -> str:
    """`"48 layers: 36 gdn+moe, 12 attention+moe."`"""
    counts: dict[str, int] = {}
    for e in entries:
        counts[e] = counts.get(e, 0) + 1
    return f"{len(entries)} layers: " + ", ".join(f"{c} {e}" for e, c in counts.items()) + "."
