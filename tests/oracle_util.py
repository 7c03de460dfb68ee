"""The oracle scripts' modules (scripts/oracles: the comparers and the tables' files), loaded by path: that folder is
not a package, and its `vllm.py` must not shadow the engine."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ORACLES = Path(__file__).resolve().parents[1] / "scripts" / "oracles"


def load_oracle(name: str):
    """The module `scripts/oracles/<name>.py`."""
    spec = importlib.util.spec_from_file_location(name, ORACLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
