"""Launch plans: a Triton kernel bound once to everything that does not change between calls.

`kernel[grid](*args)` spends 10-15 µs on the host per call (binding the arguments, computing the
specialization key, looking up the compiled kernel), and the launchers' own preparation (word views, chunk
plans, launch configuration) adds more: at batch 1 an eager call cost 2-5x the kernel's device time on an
H200. A `Launch` does that work once. Its first call goes through `kernel[grid]` (which compiles), and keeps
the compiled kernel; every later call substitutes the per-call arguments (index tensors, scratch) into the
bound argument list and calls the compiled kernel's launcher directly, as Triton's `JITFunction.run` does
after its cache lookup (triton/runtime/jit.py). In Triton's interpreter (`TRITON_INTERPRET=1`, the CPU
tests) there is no compiled kernel: each call goes through `kernel[grid]` with the same bound arguments.

A plan owns no memory of its own beyond what it binds; it allocates nothing per call and never synchronizes,
so a call can be captured in a CUDA graph.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence

import torch
import triton
from triton.runtime.jit import JITFunction


def interpreted(kernel) -> bool:
    """Whether `kernel` runs in Triton's interpreter (it was decorated with `TRITON_INTERPRET=1`)."""
    return not isinstance(kernel, JITFunction)


class Plan:
    """Base of the ops' plans. What a call launches depends only on its batch size and its index vectors' dtypes
    (and, for some, their alignment): its `key(*indices)`. The launches are built by `build(nb)` on the first call
    with a new key and kept. `build` defaults to one launch per pool group (`self.groups`, by `group_launch`)."""

    index_length: int | None = None  # the length a call's index vectors must have (None: any, one for all)
    key_by_layout = True  # `key` reads only the index vectors' lengths and dtypes (False: their addresses too)

    def __init__(self) -> None:
        self._launches: dict[tuple, tuple[Launch, ...]] = {}

    def launches(self, key: tuple) -> tuple[Launch, ...]:
        """The launches of calls with `key` = `(batch size, ...)`: none for an empty batch."""
        found = self._launches.get(key)
        if found is None:
            found = self._launches[key] = self.build(key[0]) if key[0] else ()
        return found

    def key(self, *indices: torch.Tensor) -> tuple:
        """What decides a call's launches: `(batch size, ...)`."""
        raise NotImplementedError

    def build(self, nb: int) -> tuple[Launch, ...]:
        return tuple(self.group_launch(group, nb) for group in self.groups)

    def group_launch(self, group: list, nb: int) -> Launch:
        raise NotImplementedError


class Launch:
    """One launch of `kernel` over a 1-D grid of `grid` programs with `args` bound (the leading parameters in
    order) and `constexprs` (the trailing ones, by name); `per_call` names the positions in `args` that `run`
    fills, in its order, with tensors. `options` are Triton's launch options (`num_warps`, ...).

    `run(*tensors)` launches. Its first call compiles through `kernel[grid]`; on CUDA it then becomes a closure
    over the launcher's whole argument list, which only writes the stream and the per-call tensors' addresses
    into it: bound tensors (kept alive by the launch) and per-call ones reach the launcher as addresses, which it
    takes without querying the driver about them.
    """

    __slots__ = ("kernel", "grid", "args", "constexprs", "per_call", "options", "keep", "run")

    def __init__(self, kernel, grid: int, args: Sequence, per_call: Sequence[int], constexprs: dict | None = None, **options):
        self.kernel, self.grid, self.options = kernel, grid, options
        self.args, self.constexprs = list(args), constexprs or {}
        self.per_call = tuple(per_call)
        self.keep = [a for a in self.args if isinstance(a, torch.Tensor)]
        self.run = self._first

    def _first(self, *values) -> None:
        args = self.args
        for pos, value in zip(self.per_call, values, strict=True):
            args[pos] = value
        compiled = self.kernel[(self.grid,)](*args, **self.constexprs, **self.options)
        device = next((a.device for a in self.keep if a.is_cuda), None)
        if device is not None and not interpreted(self.kernel):
            self.run = self._bind(compiled, device.index if device.index is not None else torch.cuda.current_device())

    def _bind(self, compiled, device: int):
        """A closure that launches `compiled` with the whole argument list its launcher takes, pointers as
        addresses; only the stream and the per-call addresses are written per call."""
        params = self.kernel.params
        # Triton 3.3 and later pass every parameter to the launcher (constexprs too, which it skips); earlier
        # versions only the others (triton/runtime/jit.py, JITFunction.run).
        every = len(compiled.src.signature) == len(params)
        args = [a.data_ptr() if isinstance(a, torch.Tensor) and i not in self.per_call else a for i, a in enumerate(self.args)]
        args += [self.constexprs.get(p.name, p.default) for p in params[len(args) :]]
        keep = [i for i, p in enumerate(params) if every or not p.is_constexpr]
        args = [args[i] for i in keep]
        pos = [keep.index(i) for i in self.per_call]
        run = compiled.run
        direct = _direct_launch(run)
        if direct is None:  # the launcher as JITFunction.run calls it
            head = [self.grid, 1, 1, None, compiled.function, compiled.packed_metadata, None, None, None]
            call = run
        else:
            call, expand = direct
            head = [self.grid, 1, 1, None, compiled.function, run.launch_cooperative_grid, run.launch_pdl, None, None,
                    compiled.packed_metadata, None, None, None]  # fmt: skip
            args, pos = expand(args, pos)
        return _closure(head + args, tuple(len(head) + p for p in pos), call, device)


def _closure(full: list, pos: tuple[int, ...], call, device: int):
    """`run(*tensors)` for a bound launch: the stream (position 3 of every launcher's arguments) and the tensors'
    addresses go into `full`, then `call(*full)`. One closure per count of per-call tensors: the hot path of every
    launch, so it does no more than that."""
    stream = torch._C._cuda_getCurrentRawStream  # what Triton's driver asks for the current stream
    if len(pos) == 1:
        (p0,) = pos

        def run(a):
            full[3] = stream(device)
            full[p0] = a.data_ptr()
            call(*full)
    elif len(pos) == 2:
        p0, p1 = pos

        def run(a, b):
            full[3] = stream(device)
            full[p0], full[p1] = a.data_ptr(), b.data_ptr()
            call(*full)
    elif len(pos) == 3:
        p0, p1, p2 = pos

        def run(a, b, c):
            full[3] = stream(device)
            full[p0], full[p1], full[p2] = a.data_ptr(), b.data_ptr(), c.data_ptr()
            call(*full)
    else:

        def run(*values):
            full[3] = stream(device)
            for p, value in zip(pos, values, strict=True):
                full[p] = value.data_ptr()
            call(*full)

    return run


def _direct_launch(run):
    """`(C launch function, expand)` for a Triton 3.6 launcher that needs no scratch memory, else None.

    Triton 3.6's `CudaLauncher.__call__` (triton/backends/nvidia/driver.py) allocates scratch memory when a kernel
    asks for it (ours never do) and calls its compiled `launch` with the cooperative-grid and PDL flags, two
    scratch pointers, the packed metadata, the launch metadata and the two launch hooks before the kernel
    arguments; a kernel with a host tensor descriptor gets `launch` wrapped by `wrap_handle_tensordesc`, which
    encodes the descriptor into a `CUtensorMap` on every call. Calling `launch` directly, with the descriptors
    encoded once here (`expand`), skips both; the hooks (a profiler's) are not called. Other versions take the
    generic path.
    """
    if not triton.__version__.startswith("3.6.") or type(run).__name__ != "CudaLauncher":
        return None
    if run.global_scratch_size or run.profile_scratch_size:
        return None
    launch = run.launch
    if getattr(launch, "__name__", "") != "inner":
        return launch, lambda args, pos: (args, pos)
    closure = inspect.getclosurevars(launch).nonlocals
    from triton.backends.nvidia.driver import make_tensordesc_arg

    indices, meta = sorted(closure["tensordesc_indices"]), closure["tensordesc_meta"]

    def expand(args, pos):
        out, where = [], []
        for i, a in enumerate(args):
            where.append(len(out))
            out.extend(make_tensordesc_arg(a, meta[indices.index(i)]) if i in indices else [a])
        return out, [where[p] for p in pos]

    return closure["launcher"], expand
