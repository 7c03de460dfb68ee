"""Host-side checks and views shared by the Triton launchers (no Triton import here).

The launchers check everything a kernel would otherwise get silently wrong: dtypes, one device, shapes,
state dims contiguous, and index ranges. Index ranges are read on the host: free for CPU index tensors, one
synchronization for GPU ones (callers that capture CUDA graphs or validated the indices pass `check=False`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import torch

try:  # private: its absence only makes the one-shot calls check their tensors in Python (`layout_guard`)
    from torch._C._dynamo.guards import TensorGuards
except ImportError:  # pragma: no cover - torch 2.10 to 2.13 have it
    TensorGuards = None

FLOAT_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
INDEX_DTYPES = (torch.int32, torch.int64)


class KernelArgError(ValueError):
    """An argument a kernel cannot run on (wrong dtype, device, shape, layout or index range)."""


def fail(msg: str) -> None:
    raise KernelArgError(msg)


def state_numel(t: torch.Tensor, nlead: int, name: str) -> int:
    """Elements of one state in a `[*lead(nlead), *state]` tensor whose state dims must be contiguous."""
    if t.dim() < nlead:
        fail(f"{name}: expected at least {nlead} dims, got shape {tuple(t.shape)}")
    state = t.shape[nlead:]
    expect = 1
    for size, stride in reversed(list(zip(state, t.stride()[nlead:], strict=True))):
        if size != 1 and stride != expect:
            fail(f"{name}: state dims {tuple(state)} must be contiguous (strides {t.stride()[nlead:]})")
        expect *= size
    return math.prod(state)


def same_device(**tensors: torch.Tensor) -> torch.device:
    devs = {n: t.device for n, t in tensors.items()}
    first = next(iter(devs.values()))
    for n, d in devs.items():
        if d != first:
            fail(f"all tensors must be on one device: {n} is on {d}, expected {first}")
    return first


def same_dtype(op: str, **pair: torch.Tensor) -> None:
    """The two tensors of a bit copy must share a dtype (the copy does not convert)."""
    (a, ta), (b, tb) = pair.items()
    if ta.dtype != tb.dtype:
        fail(f"{op}: {a} is {ta.dtype}, {b} is {tb.dtype}; the copy does not convert")


_NUMBERS: dict[torch.device, int] = {}




def layout_guard(tensors: Sequence[torch.Tensor]):
    """A check, `guard.check(*others) -> bool`, that `others` have the type, dtype, device, requires_grad, sizes and
    strides `tensors` have now, made by one C++ call: torch's own `TensorGuards` (what torch.compile's guards run).
    None where this torch has no such class (a private API): the callers then take their Python checks."""
    if TensorGuards is None:
        return None
    return TensorGuards(*tensors, dynamic_dims_sizes=[list(t.shape) for t in tensors],
                        dynamic_dims_strides=[list(t.stride()) for t in tensors])


def _device_number(device: torch.device) -> int:
    """`Tensor.get_device()` of a tensor on `device` (-1 for the CPU): an int compares faster than devices do. Kept
    per device (`device.type` costs the host more than a dict lookup), except a CUDA device without an index."""
    number = _NUMBERS.get(device)
    if number is None:
        if device.type == "cpu":
            number = _NUMBERS[device] = -1
        elif device.index is not None:
            number = _NUMBERS[device] = device.index
        else:
            number = torch.cuda.current_device()
    return number


def as_index(name: str, t: torch.Tensor, n: int | None, number: int, device: torch.device) -> torch.Tensor:
    """Check an index vector (int32/int64 `[n]`; `n` None: any length) and move it to `device` (whose
    `_device_number` is `number`) if it lives on the CPU."""
    dtype = getattr(t, "dtype", None)
    if (dtype is not torch.int64 and dtype is not torch.int32) or not isinstance(t, torch.Tensor):
        fail(f"{name}: expected an int32/int64 tensor, got {dtype or type(t)}")
    shape = t.shape
    if len(shape) != 1 or (n is not None and shape[0] != n):
        fail(f"{name}: expected shape [{'B' if n is None else n}], got {tuple(shape)}")
    if t.get_device() != number:
        if t.device.type != "cpu":
            fail(f"{name}: on {t.device}, expected {device} or the CPU")
        t = t.to(device, non_blocking=True)
    return t if t.is_contiguous() else t.contiguous()


def check_ranges(items: Sequence[tuple[str, torch.Tensor, int, int]]) -> None:
    """Check `lo <= t < hi` for each `(name, t, lo, hi)`; all GPU tensors are read in one synchronization."""
    items = [it for it in items if it[1].numel() > 0]
    if not items:
        return
    # Index tensors of one call share a device (as_index moved them): one .cpu() reads every min and max.
    stats = torch.stack([torch.stack([t.min().long(), t.max().long()]) for _, t, _, _ in items]).cpu()
    for (name, _, lo, hi), (mn, mx) in zip(items, stats.tolist(), strict=True):
        if mn < lo or mx >= hi:
            fail(f"{name}: values must lie in [{lo}, {hi}), got min {mn}, max {mx}")


def indices_on(device: torch.device, names: tuple[str, ...], *tensors: torch.Tensor,
               length: int | None = None) -> tuple[torch.Tensor, ...]:
    """The index vectors `tensors` (named by `names`), each checked by `as_index` to have one length (`length` if
    given, else the first one's), on `device`."""
    number = _device_number(device)
    out, n = [], length
    for name, t in zip(names, tensors, strict=True):
        t = as_index(name, t, n, number, device)
        n = t.shape[0]
        out.append(t)
    return tuple(out)


def lead_strides(t: torch.Tensor, n: int) -> tuple[int, ...]:
    """The element strides of the first `n` dims, as the kernels take them."""
    return t.stride()[:n]


def launch_grid(op: str, programs: int) -> int:
    """`programs`, checked to fit the 1-D launch grid (fewer than 2**31)."""
    if programs >= 2**31:
        fail(f"{op}: {programs} programs exceed the launch grid")
    return programs


def word_size(t: torch.Tensor, nlead: int, extra: Sequence[int] = ()) -> int:
    """Widest word (4, 2 or 1 bytes) that divides the state size, the lead strides, the storage offset and
    every element offset in `extra`, so that the tensor can be moved as words of that size."""
    es = t.element_size()
    vals = [t.storage_offset(), *t.stride()[:nlead], math.prod(t.shape[nlead:]), *extra]
    for w in (4, 2, 1):
        if all((v * es) % w == 0 for v in vals) and t.data_ptr() % w == 0:
            return w
    return 1


_WORD_DTYPES = {4: torch.int32, 2: torch.int16, 1: torch.uint8}


def word_view(t: torch.Tensor, nlead: int, w: int) -> torch.Tensor:
    """`[*lead, *state]` -> `[*lead, state_words]` reinterpreted as `w`-byte integers (a view, no copy)."""
    flat = t.reshape(*t.shape[:nlead], -1)
    if flat.numel() and flat.data_ptr() != t.data_ptr():
        fail("internal: state view is not a view")
    if flat.shape[-1] == 1:
        flat = flat.as_strided(flat.shape, (*flat.stride()[:-1], 1))
    return flat.view(_WORD_DTYPES[w])


def word_views(
    a: torch.Tensor, a_lead: int, b: torch.Tensor, b_lead: int, a_extra: Sequence[int] = (), b_extra: Sequence[int] = ()
) -> tuple[int, torch.Tensor, torch.Tensor]:
    """`(w, a_words, b_words)`: both tensors viewed as words of the widest size `w` that suits both."""
    w = min(word_size(a, a_lead, a_extra), word_size(b, b_lead, b_extra))
    return w, word_view(a, a_lead, w), word_view(b, b_lead, w)


def next_pow2(n: int) -> int:
    return 1 << max(0, (int(n) - 1).bit_length())


@lru_cache
def _sm_count(index: int) -> int:
    return torch.cuda.get_device_properties(index).multi_processor_count


def sm_count(device: torch.device) -> int | None:
    """Streaming multiprocessors of a CUDA device; None for the CPU."""
    if device.type != "cuda":
        return None
    return _sm_count(torch.cuda.current_device() if device.index is None else device.index)


# A copy-like launch moving less than this many 128 KiB programs per SM runs 32 KiB programs instead.
SMALL_LAUNCH_PER_SM = 4


def copy_config(
    words: int, word_bytes: int, config: tuple[int, int] | None, total_words: int, device: torch.device
) -> tuple[int, int]:
    """`(BLOCK words per program, num_warps)` for a copy-like kernel over states of `words` words, moving
    `total_words` in all on `device`.

    128 KiB per program at 16 warps (64 bytes in flight per thread): the fastest of the configurations timed on
    an H200 from a few programs per SM up. A launch with fewer than `SMALL_LAUNCH_PER_SM` of them per SM is
    mostly its last wave, so it runs 32 KiB programs at 16 warps: on an H200 that took packing half the
    Qwen3-Next heads of one request from 84% to 94% of the size-matched copy, and lost at most a point against
    128 KiB programs in the launches it now covers (results/kernel_experiments.md).
    """
    if config is not None:
        return config
    sms = sm_count(device)
    small = sms is not None and total_words * word_bytes < SMALL_LAUNCH_PER_SM * sms * (128 << 10)
    program = (32 if small else 128) << 10  # bytes per program at most
    block = max(16, min(next_pow2(words), program // word_bytes))
    nbytes = block * word_bytes
    warps = 16 if nbytes >= min(program, 64 << 10) else 8 if nbytes >= 16 << 10 else 4
    return block, warps


def pool_groups(items: Sequence, word_dtype, most: int) -> list[list]:
    """`items` (pools, or pairs of pools) in launch groups: the items of one word type (`word_dtype(item)`) in
    their order, at most `most` per group. Items of one group share the launch's block of words."""
    by: dict = {}
    for item in items:
        by.setdefault(word_dtype(item), []).append(item)
    return [g[i : i + most] for g in by.values() for i in range(0, len(g), most)]


def group_config(views: Sequence[torch.Tensor], nb: int, config: tuple[int, int] | None) -> tuple[int, int]:
    """`copy_config` of one launch over the `[L, S, words]` word views `views` of a group at `nb` requests: the
    block suits the largest state, and the launch moves every pool's states."""
    moved = sum(v.shape[0] * v.shape[2] for v in views) * nb
    return copy_config(max(v.shape[2] for v in views), views[0].element_size(), config, moved, views[0].device)


def pool_args(group: list, most: int, nb: int, args_of) -> tuple[list, list, int]:
    """The arguments of a launch over the pools of `group` (at most `most`; unused places repeat the first):
    `args_of(item)` gives `(arguments, chunks, flag)` of one, the arguments ending in its layers. Returns the
    flat arguments, each pool's followed by the cumulative unit count at its end (but the last pool's), the
    flags, and the units `(layer, request, chunk)` of the whole launch at `nb` requests."""
    flat, flags, units = [], [], 0
    for i, item in enumerate(group + group[:1] * (most - len(group))):
        args, nch, flag = args_of(item)
        flat += args
        if i < len(group):
            units += args[-1] * nb * nch
        if i < most - 1:
            flat.append(units)
        flags.append(flag)
    return flat, flags, units


def layer_inner(*views: tuple[torch.Tensor, int]) -> bool:
    """Whether a copy-like launch walks all layers of one request before the next request (units `(request,
    layer, chunk)`) rather than all requests of one layer: when, in any of the word views `(t, layer_dim)`, the
    layers of one request lie side by side (slot-major pools, transfer buffers `[B, L, n]`).

    Neighbouring programs then touch neighbouring memory. On an H200 that took copies between slot-major pools
    from 94.5-96.6% to 97.7-98.5% of the size-matched copy (batch 8-64) and packing half the Qwen3-Next heads
    from 93.4-94.1% to 94.6-96.5%; between layer-major pools the request-inner order stays 0.3-1 point faster
    (results/kernel_experiments.md).
    """
    return any(t.shape[d] > 1 and t.stride(d) == t.shape[-1] for t, d in views)
