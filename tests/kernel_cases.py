"""Inputs for the kernel tests, shared by the CPU (Triton interpreter) and GPU runs.

Pools are random (never zero), in both layouts: layer-major `[L, S, *state]` as allocated, slot-major
allocated `[S, L, *state]` and passed as `.transpose(0, 1)`. Outputs a kernel must write are poisoned
with NaN first, so an element the kernel skips cannot match the reference.
"""

from __future__ import annotations

import os
import tempfile

import torch

LAYOUTS = ("layer_major", "slot_major")


def make_pool(L: int, S: int, state: tuple[int, ...], dtype, layout: str, device, gen=None) -> torch.Tensor:
    if layout == "layer_major":
        return torch.randn(L, S, *state, generator=gen).to(dtype).to(device)
    return torch.randn(S, L, *state, generator=gen).to(dtype).to(device).transpose(0, 1)


def poison_slots(pool: torch.Tensor, slots: torch.Tensor) -> None:
    """Fill `pool[:, slots]` with NaN (or -1 bits for integer pools)."""
    fill = float("nan") if pool.dtype.is_floating_point else -1
    pool[:, slots.to(pool.device)] = fill


def distinct_slots(n: int, S: int, gen, device, dtype=torch.int64) -> torch.Tensor:
    """`n` distinct random slots in `[0, S)`, always including the last slot when `n > 1`."""
    perm = torch.randperm(S - 1, generator=gen)[: n - 1] if n > 1 else torch.empty(0, dtype=torch.int64)
    s = torch.cat([perm, torch.tensor([S - 1])]) if n > 1 else torch.randint(0, S, (1,), generator=gen)
    return s[torch.randperm(n, generator=gen)].to(dtype).to(device)


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    """`|out - ref| / |ref|` in float64; NaN anywhere gives inf."""
    out, ref = out.double(), ref.double()
    if torch.isnan(out).any():
        return float("inf")
    return ((out - ref).norm() / ref.norm().clamp_min(1e-30)).item()


class SparseArena:
    """Views whose element offsets exceed 2**31 without allocating the memory.

    A sparse file is mapped shared (`torch.from_file`); only the pages a test touches ever get backing
    storage. Views start 2**31 elements into the mapping, so a kernel that computed an offset in int32 and
    wrapped would still land inside the mapping and produce a wrong answer instead of a crash.
    """

    GUARD = 2**31

    def __init__(self, elements: int, dtype: torch.dtype):
        self.dtype = dtype
        es = torch.empty(0, dtype=dtype).element_size()
        nbytes = (self.GUARD + elements + 4096) * es
        fd, self.path = tempfile.mkstemp(prefix="mcache-sparse-")
        with os.fdopen(fd, "wb") as f:
            f.truncate(nbytes)
        raw = torch.from_file(self.path, shared=True, size=nbytes, dtype=torch.uint8)
        self.flat = raw.view(dtype)

    def view(self, size: tuple[int, ...], stride: tuple[int, ...]) -> torch.Tensor:
        return self.flat.as_strided(size, stride, self.GUARD)

    def close(self) -> None:
        del self.flat
        os.unlink(self.path)
