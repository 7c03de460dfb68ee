"""Parameters of Kimi-K3's vision tower and projector as SGLang's own classes build them, beside mcache's count.

    /tmp/oracle-venvs/sglang-0.5.23/bin/python scripts/oracles/kimi_k3_vision.py   # a venv from scripts/oracles/sglang.py

transformers cannot build Kimi-K3 (remote code), so scripts/param_counts.py has no figure for its tower. This runs the
class definitions of SGLang's python/sglang/srt/models/kimi_k3_vl.py (the installed wheel's) on the meta device: the
module's imports (GPU kernels, attention backends, CUDA-graph runners) are not loaded, each name they bind is a mock
that construction never calls, and the attention backend is plain torch SDPA, which builds no backend module.
`tests/test_hf_families.py::test_kimi_tower_parameters_by_hand` holds the figure (447,358,976 for
tests/data/hf_configs/kimi-k3.json).
"""

from __future__ import annotations
import __future__

import ast
import importlib.util
import json
import sys
import types
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]


class _Names(dict):
    """Module globals where a name the module imports (and construction never calls) is a mock."""

    def __missing__(self, key):
        import builtins

        return getattr(builtins, key) if hasattr(builtins, key) else mock.MagicMock(name=key)


def sglang_count(config: Path) -> tuple[int, int]:
    """(tower, projector) parameters of `config`'s vision_config, by SGLang's KimiK3VisionTower and
    KimiK3MultiModalProjector."""
    import numpy as np
    import torch
    import torch.nn.functional as F  # noqa: N812
    from torch import nn

    package = importlib.util.find_spec("sglang")  # found, not imported: its __init__ loads the GPU stack
    source = Path(package.origin).parent / "srt" / "models" / "kimi_k3_vl.py"
    tree = ast.parse(source.read_text())
    names = _Names(np=np, torch=torch, F=F, nn=nn, __name__="kimi_k3_vl")
    sys.modules["kimi_k3_vl"] = types.ModuleType("kimi_k3_vl")  # where dataclasses look a class's module up
    exec("from dataclasses import dataclass, replace\nfrom typing import *", names)  # noqa: S102
    flags = __future__.annotations.compiler_flag  # annotations name backend types: never evaluated
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            exec(compile(ast.Module(body=[node], type_ignores=[]), str(source), "exec", flags=flags,  # noqa: S102
                         dont_inherit=True), names)
    names["_get_mm_attention_backend"] = lambda: "sdpa"
    names["QKV_BACKEND_IMPL"] = {"sdpa": None}
    vision = json.loads(config.read_text())["vision_config"]
    cfg = mock.Mock(spec=list(vision), **vision)
    with torch.device("meta"):
        tower, projector = names["KimiK3VisionTower"](cfg), names["KimiK3MultiModalProjector"](cfg)
    return tuple(sum(p.numel() for p in m.parameters()) for m in (tower, projector))


def main() -> None:
    sys.path[0] = str(ROOT)  # not this folder, whose sglang.py would shadow the package
    from mcache.core.hf import import_hf
    from mcache.core.sizing.vision import tower_params

    config = ROOT / "tests" / "data" / "hf_configs" / "kimi-k3.json"
    tower, projector = sglang_count(config)
    ours = tower_params(import_hf(config).vision)
    print(f"SGLang KimiK3VisionTower {tower:,} + KimiK3MultiModalProjector {projector:,} = {tower + projector:,}; "
          f"mcache {ours:,} ({ours - tower - projector:+,})")


if __name__ == "__main__":
    main()
