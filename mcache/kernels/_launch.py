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

from collections.abc import Sequence

import torch
import triton
from triton.runtime.jit import JITFunction


def interpreted(kernel) -> bool:
    """Whether `kernel` runs in Triton's interpreter (it was decorated with `TRITON_INTERPRET=1`)."""
    return not isinstance(kernel, JITFunction)


class Launch:
    """One launch of `kernel` over a 1-D grid of `grid` programs with `args` bound (the leading parameters in
    order) and `constexprs` (the trailing ones, by name); `per_call` names the positions in `args` that
    `__call__` fills, in its order. `options` are Triton's launch options (`num_warps`, ...).

    Pointer arguments that stay bound may be given as tensors; on CUDA they are bound as their addresses
    (the plan keeps the tensors alive).
    """

    __slots__ = ("kernel", "grid", "args", "constexprs", "per_call", "options", "keep", "_run", "_function", "_meta", "_launch_args",
                 "_launch_pos", "_stream", "_device")

    def __init__(self, kernel, grid: int, args: Sequence, per_call: Sequence[int], constexprs: dict | None = None, **options):
        self.kernel, self.grid, self.options = kernel, grid, options
        self.args, self.constexprs = list(args), constexprs or {}
        self.per_call = tuple(per_call)
        self.keep = [a for a in self.args if isinstance(a, torch.Tensor)]
        self._run = None
        self._device = next((a.device for a in self.keep if a.is_cuda), None)

    def __call__(self, *values) -> None:
        if self._run is not None:
            args = self._launch_args
            for pos, value in zip(self._launch_pos, values, strict=True):
                args[pos] = value
            self._run(self.grid, 1, 1, self._stream(self._device.index), self._function, self._meta, None, None, None, *args)
            return
        args = self.args
        for pos, value in zip(self.per_call, values, strict=True):
            args[pos] = value
        compiled = self.kernel[(self.grid,)](*args, **self.constexprs, **self.options)
        if self._device is not None and not interpreted(self.kernel):
            self._bind(compiled)

    def _bind(self, compiled) -> None:
        """Keep `compiled` and the argument list its launcher takes, pointers as addresses."""
        params = self.kernel.params
        # Triton 3.3 and later pass every parameter to the launcher (constexprs too, which it skips); earlier
        # versions only the others (triton/runtime/jit.py, JITFunction.run).
        every = len(compiled.src.signature) == len(params)
        keep = [i for i, p in enumerate(params) if every or not p.is_constexpr]
        args = [a.data_ptr() if isinstance(a, torch.Tensor) and i not in self.per_call else a for i, a in enumerate(self.args)]
        args += [self.constexprs.get(p.name, p.default) for p in params[len(args) :]]
        self._launch_args = [args[i] for i in keep]
        self._launch_pos = tuple(keep.index(i) for i in self.per_call)
        self._function, self._meta = compiled.function, compiled.packed_metadata
        self._stream = triton.runtime.driver.active.get_current_stream
        self._run = compiled.run
        if self._device.index is None:
            self._device = torch.device("cuda", torch.cuda.current_device())
