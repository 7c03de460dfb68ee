"""A checkpoint's safetensors index, `model.safetensors.index.json`: `metadata.total_size` is the bytes of every tensor
its shards store (transformers' `save_pretrained` and huggingface_hub's `save_torch_state_dict` write it), and
`weight_map` names each tensor. Read from a checkpoint folder or a Hub snapshot, never beside a lone config file (it
may be another model's)."""

from __future__ import annotations

import math
from pathlib import Path

from mcache.core.errors import SpecError
from mcache.core.files import read_json_object
from mcache.core.spec.model import StoredWeights

INDEX = "model.safetensors.index.json"
# An index line takes about 100 bytes per tensor (`"model.layers.10.mlp.experts.100.down_proj.weight_scale_inv":
# "model-00010-of-000163.safetensors",`): 64 MiB holds over 600,000 tensors, room for MoE checkpoints of hundreds of
# experts per layer with a scale beside each weight, where the 8 MiB of a config would not be.
MAX_INDEX_BYTES = 64 << 20
MAX_TOTAL_SIZE = 1 << 50  # a petabyte: a larger figure is a corrupt file, not a checkpoint


def read_index(folder: Path | None, origin: str | None = None) -> StoredWeights | None:
    """The stored weights the index in checkpoint `folder` declares (None: no folder, or no index in it); `origin`
    names the index in the result (a Hub snapshot's `repo@commit`), else its path. A malformed index is a one-line
    `SpecError` naming the file and the field."""
    if folder is None or not (folder / INDEX).is_file():
        return None
    path = folder / INDEX
    file = str(path)
    data = read_json_object(path, "with metadata and weight_map", MAX_INDEX_BYTES)
    metadata = data.get("metadata")
    if not isinstance(metadata, dict):
        raise SpecError(file, "metadata", f"an object holding total_size, got {_shown(metadata)}")
    total = metadata.get("total_size")
    # an integral float (`1.5e10`) is a whole number of bytes as well; bool is an int to Python, not to JSON
    whole = isinstance(total, int) and not isinstance(total, bool) or (
        isinstance(total, float) and math.isfinite(total) and total.is_integer())
    if not whole or not 0 < total <= MAX_TOTAL_SIZE:
        raise SpecError(file, "metadata.total_size", f"the stored weights' size, a whole number of bytes from 1 to "
                                                     f"2^50, got {_shown(total)}")
    weight_map = data.get("weight_map")
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        raise SpecError(file, "weight_map", f"an object mapping each tensor name to its shard file, got "
                                            f"{_shown(weight_map)}")
    mtp = sum(1 for name in weight_map if "mtp" in name.split("."))
    return StoredWeights(total_size=int(total), mtp_tensors=mtp, source=f"{INDEX} of {origin}" if origin else file)


def lone_index_note(file: Path) -> str:
    """What a lone config file's neighbour index is not used for (empty when it has none)."""
    if not file.with_name(INDEX).is_file():
        return ""
    return (f"{INDEX} beside {file.name} was not read: an index counts only in a checkpoint folder (pass the folder "
            f"{file.parent} to use it).")


def _shown(value) -> str:
    if value is None:
        return "none"
    if isinstance(value, (dict, list)):
        return f"a JSON {'object' if isinstance(value, dict) else 'array'}"
    return repr(value)[:60]
