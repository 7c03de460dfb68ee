"""Write a `ModelSpec` back as spec YAML: defaults omitted, the layer stack in its most compact form.

The dump is canonical: `compact_layers` picks one representation per layer sequence, so a spec whose
layers were built with it (every imported spec) loads back equal, `parse_spec(spec_to_yaml(s)) == s`.
Any other spec loads back with the same layers in another form, hence the same estimate.
"""

from __future__ import annotations

import functools
import textwrap

import msgspec
import yaml

from mcache.core.spec.model import NEMOTRON_LEGEND, Layers, ModelSpec, layer_kinds

MAX_PERIOD = 8  # a repeat unit longer than this reads better as a pattern
MAX_LEGEND = 10  # more distinct layer types than this are written one per layer
# Fields written first, in this order (then the rest in struct order); `dtype` is written even at its default.
_HEAD = ("name", "source", "architecture", "max_model_len", "notes", "dtype", "kv_dtype", "conv_dtype", "ssm_dtype", "ssm_dtype_hints",
         "norm_eps_keys", "hidden_size", "vocab_size", "num_layers", "tie_embeddings", "layers")
_ALWAYS = ("name", "source", "dtype", "hidden_size", "vocab_size", "num_layers", "layers")
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def compact_layers(entries: list[str]) -> Layers:
    """The canonical `Layers` for one entry per layer (e.g. `"mamba2+moe"`).

    A unit of at most `MAX_PERIOD` layers that repeats at least twice becomes `repeat`; else up to
    `MAX_LEGEND` distinct entries become a `pattern` (with a `legend` unless Nemotron-H's letters
    cover them); else `types`.
    """
    n = len(entries)
    for period in range(1, min(MAX_PERIOD, n // 2) + 1):
        if all(entries[i] == entries[i % period] for i in range(n)):
            return Layers(repeat=entries[:period])
    distinct = list(dict.fromkeys(entries))
    if len(distinct) > MAX_LEGEND:
        return Layers(types=list(entries))
    default = {kind: ch for ch, kind in NEMOTRON_LEGEND.items()}
    if all(e in default for e in distinct):
        return Layers(pattern="".join(default[e] for e in entries))
    letters: dict[str, str] = {}
    for entry in distinct:
        parts = entry.split("+")
        # initials of the kinds first, then their other letters: readable and deterministic
        candidates = [default.get(entry, "")] + [p[0].upper() for p in parts]
        candidates += [ch.upper() for p in parts for ch in p if ch.isalpha()]
        used = set(letters.values())
        letters[entry] = next(c for c in [*candidates, *_LETTERS] if c and c not in used)
    return Layers(pattern="".join(letters[e] for e in entries), legend={ch: e for e, ch in letters.items()})


def spec_to_yaml(spec: ModelSpec) -> str:
    """Spec YAML text for `spec`: fields at their defaults left out, blocks as one-line mappings."""
    entries = ["+".join(kinds) for kinds in layer_kinds(spec)]
    names = list(_HEAD) + [f for f in spec.__struct_fields__ if f not in _HEAD]
    lines = []
    for field in names:
        value = compact_layers(entries) if field == "layers" else getattr(spec, field)
        if field not in _ALWAYS and value == _default(ModelSpec, field):
            continue
        if field == "notes":
            lines.append(_notes(value))
        elif field == "layers":
            lines.append("layers:")
            lines += [f"  {key}: {_dump(val)}" for key, val in _fields(value).items()]
        elif field == "aux_buffers":
            lines.append("aux_buffers:")
            lines += [f"  - {_dump(_fields(aux))}" for aux in value]
        elif isinstance(value, msgspec.Struct):
            lines.append(f"{field}: {_dump(_fields(value))}")
        else:
            lines.append(f"{field}: {_dump(value)}")
    return "\n".join(lines) + "\n"


@functools.cache
def _struct_fields(cls) -> dict[str, msgspec.structs.FieldInfo]:
    """`msgspec.structs.fields` of a class by name, read once (it evaluates the annotations on every call)."""
    return {f.name: f for f in msgspec.structs.fields(cls)}


def _default(cls, field: str):
    info = _struct_fields(cls)[field]
    if info.default_factory is not msgspec.NODEFAULT:
        return info.default_factory()
    return info.default


def _fields(block: msgspec.Struct) -> dict:
    """The fields of `block` that differ from their defaults, in declaration order (a nested block's too, such as the
    drafter's attention)."""
    return {
        f.name: _fields(value) if isinstance(value := getattr(block, f.name), msgspec.Struct) else value
        for f in _struct_fields(type(block)).values()
        if f.required or getattr(block, f.name) != _default(type(block), f.name)
    }


def _notes(text: str) -> str:
    """Notes as a folded block like the hand-written specs, when folding gives back the same text."""
    plain = text.isprintable() and text == text.strip() and "  " not in text and not text.startswith(("#", "-"))
    if not plain:
        return _dump({"notes": text}, flow=False, width=100)
    lines = textwrap.wrap(text, width=100, break_long_words=False, break_on_hyphens=False)
    return "notes: >-\n" + "\n".join(f"  {line}" for line in lines)


def _dump(value, flow: bool = True, width: int = 10**6) -> str:
    text = yaml.safe_dump(value, default_flow_style=flow, sort_keys=False, width=width, allow_unicode=True)
    return text.removesuffix("\n...\n").rstrip("\n")
