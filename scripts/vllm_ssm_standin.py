"""Make vLLM's Mamba2 decode kernel importable without vLLM's dependencies, for `mcache bench`'s vLLM row (issue 33;
`mcache/bench/vllm_ssm.py`): from a vLLM wheel, extract the kernel's module
(`vllm/model_executor/layers/mamba/ops/mamba_ssm.py`), the helpers it imports from its own package and its tuned
launch configurations, and write stand-ins for the other vLLM modules it imports. None of them touches the kernel:

- `vllm.envs`: `VLLM_TUNED_CONFIG_FOLDER = None` (no user folder of launch configurations: the wheel's are read);
- `vllm._custom_ops`: empty (the CUDA ops of the prefill scan, not called by `selective_state_update`);
- `vllm.logger.init_logger`: a `logging` logger with vLLM's `info_once` / `warning_once`;
- `vllm.platforms.current_platform`: CUDA (`is_xpu()`, `is_cpu()` false) and `get_device_name` from torch, which
  `vllm.utils.platform_utils.get_device_name_as_file_name` turns into the configurations' file name as vLLM does
  (without CUDA, under Triton's interpreter, "cpu": vLLM's default launch configuration);
- `vllm.triton_utils`: `triton` and `triton.language` themselves;
- `vllm.v1.attention.backends.utils` / `vllm.attention.backends.utils`: the null slot ids (`NULL_BLOCK_ID = 0`,
  `PAD_SLOT_ID = -1`; the bench passes -1 as the null id itself).

A `vllm-VERSION.dist-info` records the wheel's version, which `mcache bench` writes into `meta.versions`.

    pip download vllm==0.33.0 --no-deps -d wheels/
    python scripts/vllm_ssm_standin.py wheels/vllm-0.33.0-*.whl OUT
    PYTHONPATH=OUT mcache bench model_specs/nemotron-h-8b.yaml --scheme replay --ops replay_fold ...
"""

from __future__ import annotations

import argparse
import re
import zipfile
from pathlib import Path

OPS = "vllm/model_executor/layers/mamba/ops/"
KERNEL = OPS + "mamba_ssm.py"

STANDINS = {
    "vllm/__init__.py": "",
    "vllm/envs.py": "VLLM_TUNED_CONFIG_FOLDER = None\nVLLM_TRITON_FORCE_FIRST_CONFIG = False\n",
    "vllm/_custom_ops.py": "",
    "vllm/logger.py": '''import logging


class _Logger(logging.LoggerAdapter):
    def info_once(self, msg, *args, **kwargs):
        self.info(msg, *args)

    def warning_once(self, msg, *args, **kwargs):
        self.warning(msg, *args)


def init_logger(name):
    return _Logger(logging.getLogger(name), {})
''',
    "vllm/platforms/__init__.py": '''import torch


class _Cuda:
    def is_xpu(self):
        return False

    def is_cpu(self):
        return False

    def get_device_name(self, device_id=0):  # "cpu" under Triton's interpreter: no tuned configuration matches it
        return torch.cuda.get_device_name(device_id) if torch.cuda.is_available() else "cpu"


current_platform = _Cuda()
''',
    "vllm/utils/__init__.py": "",
    "vllm/utils/platform_utils.py": '''import re


def get_device_name_as_file_name(device_id=0):
    from vllm.platforms import current_platform

    return re.sub(r"[\\s/]+", "_", current_platform.get_device_name(device_id))
''',
    "vllm/triton_utils/__init__.py": "import triton\nimport triton.language as tl\n\nHAS_TRITON = True\n",
    "vllm/v1/__init__.py": "",
    "vllm/v1/attention/__init__.py": "",
    "vllm/v1/attention/backends/__init__.py": "",
    "vllm/v1/attention/backends/utils.py": "NULL_BLOCK_ID = 0\nPAD_SLOT_ID = -1\n",
    "vllm/attention/__init__.py": "",
    "vllm/attention/backends/__init__.py": "",
    "vllm/attention/backends/utils.py": "PAD_SLOT_ID = -1\n",
    "vllm/model_executor/__init__.py": "",
    "vllm/model_executor/layers/__init__.py": "",
    "vllm/model_executor/layers/mamba/__init__.py": "",
    "vllm/model_executor/layers/mamba/ops/__init__.py": "",
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("wheel", type=Path)
    ap.add_argument("out", type=Path)
    a = ap.parse_args()
    version = re.match(r"vllm-([^-]+)-", a.wheel.name)
    if version is None:
        raise SystemExit(f"{a.wheel}: expected a vLLM wheel (vllm-VERSION-...whl)")
    with zipfile.ZipFile(a.wheel) as wheel:
        names = wheel.namelist()
        if KERNEL not in names:
            raise SystemExit(f"{a.wheel}: no {KERNEL}")
        kernel = wheel.read(KERNEL).decode()
        # The kernel's own package: the helpers it imports (`...ops.triton_helpers`) and its launch configurations.
        helpers = {OPS + m + ".py" for m in re.findall(r"from vllm\.model_executor\.layers\.mamba\.ops\.(\w+) import", kernel)}
        wanted = [n for n in names if n == KERNEL or n in helpers or n.startswith(OPS + "configs/")]
        for name in wanted:
            wheel.extract(name, a.out)
    for name, text in STANDINS.items():
        path = a.out / name
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    info = a.out / f"vllm-{version[1]}.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {version[1]}\n")
    print(f"{a.out}: vLLM {version[1]}'s {KERNEL} and {len(wanted) - 1} files of its package, with stand-ins")


if __name__ == "__main__":
    main()
