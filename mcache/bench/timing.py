"""Timing on the device: CUDA-graph replays timed with CUDA events, L2 flushed between runs.

Kernels of a few microseconds are dominated by launch overhead when launched from Python, so each
op is captured once into a CUDA graph and the graph is replayed (the results say so). The reference
copies (ceiling and size-matched) are timed as eager launches, see `copy_time`. Between
replays a 256 MiB buffer is overwritten so no run starts with its data in the 60 MB L2.
On the CPU (smoke runs) the wall clock is used instead.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import msgspec

L2_FLUSH_BYTES = 256 << 20


class Timing(msgspec.Struct, frozen=True):
    """Median and spread of one op, in microseconds; `graph` says whether CUDA-graph replays were timed."""

    median_us: float
    p10_us: float
    p90_us: float
    graph: bool = False


def summarize(samples_us: list[float]) -> Timing:
    """Median, 10th and 90th percentile of a list of samples."""
    if len(samples_us) < 2:
        only = samples_us[0]
        return Timing(only, only, only)
    deciles = statistics.quantiles(samples_us, n=10, method="inclusive")
    return Timing(statistics.median(samples_us), deciles[0], deciles[-1])


def time_op(fn: Callable[[], None], device, reps: int = 30, warmup: int = 5, graph: bool = True) -> Timing:
    """Time `fn` on `device`: CUDA-graph replays with events on CUDA, wall clock on the CPU."""
    import torch

    if device.type != "cuda":
        for _ in range(warmup):
            fn()
        samples = []
        for _ in range(reps):
            start = time.perf_counter()
            fn()
            samples.append((time.perf_counter() - start) * 1e6)
        return summarize(samples)

    stream = torch.cuda.Stream(device)
    stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(stream):
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream(device).wait_stream(stream)
    run = fn
    if graph:
        cuda_graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(cuda_graph):
                fn()
            run = cuda_graph.replay
        except RuntimeError:  # not capturable (a host sync inside): time eager launches instead
            torch.cuda.synchronize(device)
            graph = False
        for _ in range(2):
            run()
    flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device=device)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        flush.fill_(i)
        starts[i].record()
        run()
        ends[i].record()
    torch.cuda.synchronize(device)
    t = summarize([s.elapsed_time(e) * 1000 for s, e in zip(starts, ends, strict=True)])
    return Timing(t.median_us, t.p10_us, t.p90_us, graph)


def copy_time(nbytes: int, device, reps: int = 30) -> Timing:
    """Time a plain contiguous device-to-device copy that moves `nbytes` (read + write): the
    size-matched limit of an op that moves that many bytes."""
    import torch

    # int32 elements: a byte tensor of more than 2**31 elements takes a slower 64-bit-index copy path.
    half = max(nbytes // 8, 4)
    src = torch.randint(1, 2**31 - 1, (half,), dtype=torch.int32, device=device)
    dst = torch.empty_like(src)
    # Timed as eager launches: a copy captured in a CUDA graph becomes a memcpy node that runs on the
    # copy engine at ~2.7 TB/s on an H200, far below what `copy_` launched from a stream reaches.
    return time_op(lambda: dst.copy_(src), device, reps=reps, graph=False)


def gbps(nbytes: int, us: float) -> float:
    """GB/s (1e9 B/s) of `nbytes` moved in `us` microseconds."""
    return nbytes / us / 1e3 if us > 0 else 0.0


def eager_time(fn: Callable[[], None], device, reps: int = 30) -> Timing:
    """One call launched from Python with the GPU idle, `reps` times: synchronize, flush L2, synchronize,
    record a start event, call, record an end event (both events created beforehand). The events span from the
    start event to the end of the last kernel, so the host's launch latency before the first kernel counts.
    Wall clock on the CPU."""
    import torch

    if device.type != "cuda":
        return time_op(fn, device, reps=reps, warmup=1, graph=False)
    fn()
    flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device=device)
    samples = []
    for i in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()  # torch creates a CUDA event on its first record: not inside the timed span
        end.record()
        torch.cuda.synchronize(device)
        flush.fill_(i)
        torch.cuda.synchronize(device)
        start.record()
        fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1000)
    return summarize(samples)


HOST_CALLS = 250  # calls per round: a few launches each stays under the ~1000 launches CUDA queues
HOST_ROUNDS = 3
SLEEP_CYCLES_PER_US = 2000  # `torch.cuda._sleep` counts GPU clock cycles (~2 GHz)


def host_time(fn: Callable[[], None], device, calls: int = HOST_CALLS, rounds: int = HOST_ROUNDS, busy: bool = True,
              clock: Callable[[], float] = time.perf_counter) -> Timing:
    """Host cost of one call: `calls` calls back to back timed with `clock` (seconds), per call; `rounds` times.

    On CUDA with `busy` a `torch.cuda._sleep` is queued first, so the GPU is busy and the loop only enqueues.
    A round in which the GPU went idle (the sleep ended before the loop, or the launch queue filled and the
    host waited) is repeated with twice the sleep and half the calls. `busy=False` (a host-synchronizing
    call) times the loop as it is. On the CPU the loop is wall clock.
    """
    import torch

    cuda = device.type == "cuda" and busy
    fn()
    samples: list[float] = []
    cycles = SLEEP_CYCLES_PER_US * calls * 100
    while len(samples) < rounds:
        if cuda:
            torch.cuda.synchronize(device)
            torch.cuda._sleep(cycles)
            slept = torch.cuda.Event()
            slept.record()
        start = clock()
        for _ in range(calls):
            fn()
        elapsed = clock() - start
        if cuda:
            idle = slept.query()
            torch.cuda.synchronize(device)
            if idle and calls > 10:
                cycles, calls = 2 * cycles, calls // 2
                continue
        samples.append(elapsed * 1e6 / calls)
    return summarize(samples)


def torch_host_reference(device, calls: int = HOST_CALLS, rounds: int = HOST_ROUNDS) -> dict[str, float]:
    """torch's own host cost per call, measured as `host_time` does: `copy_` and `index_copy_` of a small tensor;
    beside them mcache's `copy_slots` of 8 slots of a small pool through its plan (`copy_slots plan`) and as a
    repeated one-shot call with `check=False` (`copy_slots one-shot`, its plan cached after the first call)."""
    import torch

    from mcache import kernels as K

    src = torch.ones(1024, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    rows = torch.ones(8, 128, dtype=torch.float32, device=device)
    table = torch.empty(64, 128, dtype=torch.float32, device=device)
    index = torch.arange(8, device=device)
    pool = torch.ones(2, 64, 128, dtype=torch.float32, device=device)
    src_slots, dst_slots = torch.arange(8, device=device), torch.arange(8, 16, device=device)
    plan = K.copy_slots_plan([(pool, pool)])
    ops = {"copy_": lambda: dst.copy_(src), "index_copy_": lambda: table.index_copy_(0, index, rows),
           "copy_slots plan": lambda: plan(src_slots, dst_slots),
           "copy_slots one-shot": lambda: K.copy_slots(pool, src_slots, pool, dst_slots, check=False)}
    return {name: round(host_time(fn, device, calls, rounds).median_us, 3) for name, fn in ops.items()}
