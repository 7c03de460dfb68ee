"""Layer kinds, one module each; `KIND_MODULES` maps a kind name to its module.

Modules are imported on first use, so sizing a model loads only the kinds it has.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from importlib import import_module
from types import ModuleType

NAMES = ("attention", "sliding_attention", "mla", "mamba1", "mamba2", "gdn", "kda", "short_conv", "lightning", "indexer",
         "dsa_indexer", "ple", "hc", "mhc", "mlp", "moe")
RECURRENT_KINDS = ("mamba1", "mamba2", "gdn", "kda", "short_conv", "lightning", "ple")


class _KindModules(Mapping):
    def __getitem__(self, name: str) -> ModuleType:
        if name not in NAMES:
            raise KeyError(name)
        return import_module(f"{__name__}.{name}")

    def __iter__(self) -> Iterator[str]:
        return iter(NAMES)

    def __len__(self) -> int:
        return len(NAMES)


KIND_MODULES: Mapping[str, ModuleType] = _KindModules()
