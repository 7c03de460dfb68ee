"""What a run's metadata reads off the machine: the GPU through NVML, library versions, the git commit."""

from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path

import torch

from mcache.core.sizing.gpus import nvml_query, nvml_text
from mcache.results.schema import GPU


def machine(device: torch.device) -> dict:
    """The `Meta` fields of the machine a run on `device` is made on (GPU runs alone are comparable)."""
    cuda = device.type == "cuda"
    return {"device": str(device), "comparable": cuda, "gpu": gpu_info(device.index or 0) if cuda else None,
            "versions": versions(), "git_commit": git_commit()}


def gpu_info(index: int) -> GPU | None:
    """Name, UUID, memory, current and max SM clocks, memory clock and driver of GPU `index`."""

    def query(nv) -> GPU:
        h = nv.nvmlDeviceGetHandleByIndex(index)
        return GPU(
            name=nvml_text(nv.nvmlDeviceGetName(h)),
            uuid=nvml_text(nv.nvmlDeviceGetUUID(h)),
            memory_bytes=int(nv.nvmlDeviceGetMemoryInfo(h).total),
            sm_clock_mhz=int(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)),
            mem_clock_mhz=int(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)),
            max_sm_clock_mhz=int(nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM)),
            driver=nvml_text(nv.nvmlSystemGetDriverVersion()),
        )

    return nvml_query(query)


def nvml_used_bytes(index: int) -> int | None:
    """Device memory in use on GPU `index` (all processes), or None without NVML."""
    return nvml_query(lambda nv: int(nv.nvmlDeviceGetMemoryInfo(nv.nvmlDeviceGetHandleByIndex(index)).used))


def free_bytes(device: torch.device) -> int | None:
    """Memory a run on `device` can still take: the GPU's free memory, or the host's available memory (Linux's
    MemAvailable) for a CPU run; None where it cannot be read."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return None


def check_free(need: int, device: torch.device, what: str, lower: str) -> None:
    """Refuse, before anything is allocated, `need` bytes (`what` takes them) beyond the memory free on `device`
    (`lower`: the options that shrink them)."""
    from mcache.core.errors import McacheError

    free = free_bytes(device)
    if free is not None and need > free:
        raise McacheError(f"bench: {what} {need / 2**30:.2f} GiB, more than the {free / 2**30:.2f} GiB free on {device}: "
                          f"lower {lower}")


BASELINE_PACKAGES = ("fla-core", "vllm")  # the baselines' packages, recorded where installed (`fla.py`, `vllm_ssm.py`)


def versions() -> dict[str, str]:
    """torch, CUDA, triton and Python versions, and those of the baselines' packages that are installed."""
    import platform
    from importlib import metadata

    out = {"python": platform.python_version(), "torch": str(torch.__version__), "cuda": str(torch.version.cuda)}
    try:
        import triton

        out["triton"] = str(triton.__version__)
    except ImportError:
        pass
    for name in BASELINE_PACKAGES:
        with contextlib.suppress(metadata.PackageNotFoundError):
            out[name] = metadata.version(name)
    return out


def git_commit() -> str | None:
    """The commit of the mcache checkout, if it is one."""
    root = Path(__file__).resolve().parents[2]
    try:
        done = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None

