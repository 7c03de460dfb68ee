"""Per-kind behaviour of the cache manager, one module per kind family, keyed by kind name.

A module registers its classes with `@register("kind", ...)`; modules of this package are found
on first lookup, so adding a kind is adding (or editing) one module here. A kind with no registered
class gets the generic one: `PagedKV` if it has per-token pools, else `RecurrentState`.
"""

from __future__ import annotations

import importlib
import pkgutil

_CLASSES: dict[str, type] = {}
_LOADED = False


def register(*kinds: str):
    """Class decorator: the state class of `kinds`."""

    def deco(cls):
        for kind in kinds:
            if _CLASSES.get(kind, cls) is not cls:
                raise ValueError(f"state kind {kind!r} is already registered by {_CLASSES[kind].__qualname__}")
            _CLASSES[kind] = cls
        return cls

    return deco


def state_class(kind: str, per_token: bool) -> type:
    """The class that manages `kind`'s pools."""
    global _LOADED
    if not _LOADED:
        for info in pkgutil.iter_modules(__path__):
            importlib.import_module(f"{__name__}.{info.name}")
        _LOADED = True
    if kind in _CLASSES:
        return _CLASSES[kind]
    from mcache.cache.states.kv import PagedKV
    from mcache.cache.states.recurrent import RecurrentState

    return PagedKV if per_token else RecurrentState
