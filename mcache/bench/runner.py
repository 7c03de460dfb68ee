"""`mcache bench`: build the real cache manager of one rank and time its operations.

For each layer kind with recurrent state, each op and each batch size the runner times mcache's
kernel and the torch-indexing baseline, sets each against a contiguous copy of the same number of
bytes and against the large-copy ceiling measured in the same process, and checks the kernel's
output against the reference first (a row whose output disagrees is recorded as skipped, never timed).
Each row has three times (see `results.Row`): device (CUDA-graph replays), eager (one call with the GPU
idle) and host (the launch cost per call). Ops a kind or scheme has no buffers for are listed once as
skipped, without work. A batch an op's slots do not fit in the pool is a skipped row saying why, planned before any
case is built; out of memory and an op that fails become skipped rows too (a failure also goes into `failures`, for
the caller to say), so a run always keeps every row it finished. Ctrl-C ends the run with the rows done so far.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

import torch

from mcache.bench import device_info
from mcache.bench.interrupt import Interrupts
from mcache.bench.kernel_ops import KERNEL_BUFFERS, KERNEL_OPS, SWEEP_OPS, KernelCaseBuilder, sweep_cases
from mcache.bench.ops import OP_BUFFERS, OPS, CaseBuilder, OpCase
from mcache.bench.roofline import arith_us, fma_tflops, tf32_tflops
from mcache.bench.timing import HOST_CALLS, Timing, copy_time, eager_time, gbps, host_time, time_op, torch_host_reference
from mcache.cache.manager import CacheManager
from mcache.cache.states.base import Pool
from mcache.core.errors import McacheError, allocation_error, first_line
from mcache.core.kinds import RECURRENT_KINDS
from mcache.core.kinds.base import Role
from mcache.core.load import load_spec, resolve
from mcache.core.sizing.estimate import estimate_rank
from mcache.core.sizing.layout import ParallelLayout, RuntimeConfig
from mcache.core.sizing.rank import RankContext, resolve_dtypes
from mcache.results.schema import SCHEMA_VERSION, Ceiling, Compute, Memory, Meta, Results, Row

CEILING_BYTES = 4 << 30  # source size of the ceiling copy (8 GiB moved, read + write)
HOST_MIN_CALLS, HOST_GPU_US = 20, 200_000  # calls in a host-cost loop: at least 20, at most ~0.2 s of device time


@dataclass
class BenchConfig:
    """What to run: one rank of a deployment, the ops, the batch sizes, the scheme."""

    spec: str
    tp: int = 1
    pp: int = 1
    stage: int = 0
    tp_rank: int = 0
    attention_dp: bool = False
    batches: list[int] = field(default_factory=lambda: [1, 8, 32, 64])
    ops: list[str] = field(default_factory=lambda: list(OPS))
    scheme: str = "intermediate"
    draft: int = 3
    max_batch: int | None = None
    max_seq_len: int = 4096
    per_layer: bool = False
    device: str = "cuda"
    pool_layout: str = "layer"
    reps: int = 30
    seed: int = 0
    ssm_dtype: str | None = None
    sweep: bool = False
    ring_tokens: int | None = None  # tokens each replay ring holds and each fold folds (default: draft + 1)


Progress = Callable[[str, int], None]  # (description, total steps) on start; ("", 0) per step


class Runner:
    """Runs one `BenchConfig`; `rows` fills as it goes, so an interrupted run keeps what it measured."""

    def __init__(self, cfg: BenchConfig, interrupts: Interrupts | None = None):
        """`interrupts`: the SIGINT handler the caller installed around the whole command (else one of its own)."""
        self.cfg = cfg
        self.device = torch.device(cfg.device)
        self.rows: list[Row] = []
        self.spec_path = resolve(cfg.spec)
        self.spec = load_spec(cfg.spec)
        self.layout = ParallelLayout(tp=cfg.tp, pp=cfg.pp, attention_dp=cfg.attention_dp)
        max_batch = cfg.max_batch or max(cfg.batches)
        self.runtime = RuntimeConfig(
            max_batch=max_batch, max_seq_len=cfg.max_seq_len, draft_tokens=cfg.draft,
            spec_scheme=cfg.scheme, snapshot_slots=max_batch if "snapshot" in cfg.ops else 0,
            replay_history=cfg.ring_tokens or cfg.draft + 1)
        dtypes = resolve_dtypes(self.spec, ssm=cfg.ssm_dtype)
        self.ctx = RankContext.build(self.spec, self.layout, self.runtime, dtypes, cfg.stage)
        self.estimated = estimate_rank(self.ctx).cache_bytes  # shapes now: a layout error names the spec file
        device_info.check_free(self.estimated, self.device, "the cache of one rank takes",
                               "--batch / --max-batch, --max-seq-len or --ring-tokens")
        if not self.ctx.recurrent_kinds and set(cfg.ops) - {"alloc"}:
            raise McacheError(f"bench: {self.spec.name} has no recurrent layers on stage {cfg.stage}: "
                              "no state op to time (--ops alloc times the allocation alone)")
        self.gen = torch.Generator().manual_seed(cfg.seed)
        self.ceiling: Ceiling | None = None
        self.compute: Compute | None = None
        self.memory: Memory | None = None
        self.interrupted = False
        self.failures: list[str] = []  # one line per op that raised (each also a skipped row)
        self.host_reference: dict[str, float] | None = None
        self.interrupts = interrupts or Interrupts()
        self._copy_cache: dict[int, Timing] = {}

    # -- the run ----------------------------------------------------------------------------------
    def run(self, progress: Progress | None = None) -> Results:
        """Measure everything the config asks for; returns the results (also when interrupted)."""
        tick = progress or (lambda desc, total: None)
        try:
            with self.interrupts.armed():
                self._run(tick)
        except KeyboardInterrupt:
            self.interrupted = True
        return self.results()

    def _run(self, tick: Progress) -> None:
        manager = self._build_manager()
        self.ceiling = self._ceiling()
        self.compute = self._compute()
        self.host_reference = torch_host_reference(self.device)
        kinds = self.ctx.recurrent_kinds
        layers = self._layers(kinds)
        pools = list(manager.pools.values())
        runnable = {kind: self._runnable(pools, kind) for kind in kinds}
        units = sum((1 + len(layers.get(kind, []))) * len(runnable[kind]) for kind in kinds)  # all layers, each alone
        tick("ops", units * len(self.cfg.batches) + (len(kinds) * len(self.cfg.batches) if self.cfg.sweep else 0))
        free = len(manager.free_slots)
        for kind in kinds:
            for local, layer in [(None, None), *enumerate(layers.get(kind, []))]:
                args = (pools, kind, local, free, self.runtime.tokens_per_step, self.runtime.history, self.gen)
                builders = {False: CaseBuilder(*args), True: KernelCaseBuilder(*args)}
                for op in runnable[kind]:
                    for batch in self.cfg.batches:
                        self._measure(builders[op in KERNEL_OPS], op, batch, layer)
                        self.interrupts.check()
                        tick("", 0)
            if self.cfg.sweep:
                for batch in self.cfg.batches:
                    self._sweep(KernelCaseBuilder(pools, kind, None, free, self.runtime.tokens_per_step,
                                                  self.runtime.history, self.gen), batch)
                    tick("", 0)

    def _runnable(self, pools: list[Pool], kind: str) -> list[str]:
        """The ops of `kind` to time; one skipped row (and no work) for each op it has no buffers for."""
        have = [p.decl for p in pools if p.decl.kind == kind]
        runnable = []
        for op in self.cfg.ops:
            need = OP_BUFFERS.get(op) or KERNEL_BUFFERS.get(op)
            if op == "alloc":
                continue
            if need and not need.met_by(have):
                self._skipped(op, self._impl(), kind, min(self.cfg.batches), None,
                              f"no {need.shown}* buffers for {kind} with scheme {self.runtime.spec_scheme} (every batch)")
            else:
                runnable.append(op)
        return runnable

    def _impl(self) -> str:
        return "triton" if self.device.type == "cuda" else "torch"

    def _sweep(self, builder: KernelCaseBuilder, batch: int) -> None:
        """Time every kernel configuration of the sweep at `batch` (rows `impl="triton@BLOCKxWARPS"`); an op whose
        slots do not fit is one skipped row `impl="triton@sweep"`."""
        for op in SWEEP_OPS:
            if reason := builder.unfit(op, batch):
                self._skipped(op, "triton@sweep", builder.kind, batch, None, reason)
        for impl, case in sweep_cases(builder, batch):
            self._guarded(case.op, impl, builder.kind, batch, None, partial(self._time_case, case, impl, None, baseline=False))
            self.interrupts.check()

    @property
    def state_dtype(self) -> str:
        """The dtype the recurrent states are held in, as allocated (kinds in two dtypes would read `bfloat16,float32`)."""
        held = {s.dtype for kind in self.ctx.kinds for s in self.ctx.states(kind) if s.component == "ssm"}
        return ",".join(sorted(held)) or self.ctx.dtypes.ssm

    def results(self) -> Results:
        """The run so far as a results file."""
        cfg = self.cfg
        meta = Meta.collect(
            self.spec.name, self.spec_path, **device_info.machine(self.device),
            layout={"tp": cfg.tp, "pp": cfg.pp, "stage": cfg.stage, "tp_rank": cfg.tp_rank,
                    "attention_dp": cfg.attention_dp},
            runtime={"max_batch": self.runtime.max_batch, "max_seq_len": self.runtime.max_seq_len,
                     "draft_tokens": self.runtime.draft_tokens, "spec_scheme": self.runtime.spec_scheme,
                     "history": self.runtime.history, "pool_layout": cfg.pool_layout, "state_dtype": self.state_dtype},
            # The device timer (unchanged since schema 1, so runs stay comparable); `Row` says how eager and host are timed.
            timer="cuda-graph replays, CUDA events, L2 flushed" if self.device.type == "cuda" else "wall clock (CPU)",
            cuda_graphs=self.device.type == "cuda",
            ceiling=self.ceiling,
            memory=self.memory,
            interrupted=self.interrupted,
            host_reference=self.host_reference,
            compute=self.compute,
        )
        return Results(schema_version=SCHEMA_VERSION, meta=meta, rows=list(self.rows))

    # -- pieces -----------------------------------------------------------------------------------
    def _sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def _build_manager(self) -> CacheManager:
        """Build the manager (timing the allocation), fill its state with random values, record memory."""
        estimated = self.estimated
        is_cuda = self.device.type == "cuda"
        before = torch.cuda.memory_allocated(self.device) if is_cuda else 0
        nvml_before = device_info.nvml_used_bytes(self.device.index or 0) if is_cuda else None
        samples = []
        manager = None
        for _ in range(3 if "alloc" in self.cfg.ops else 1):
            manager = None
            if is_cuda:
                torch.cuda.empty_cache()
            start = time.perf_counter()
            try:
                manager = CacheManager(self.ctx, tp_rank=self.cfg.tp_rank, device=self.device,
                                       pool_layout=self.cfg.pool_layout)
            except RuntimeError as err:  # torch's out-of-memory errors derive from RuntimeError
                raise allocation_error("bench", err, self.device) from None
            self._sync()
            samples.append((time.perf_counter() - start) * 1e6)
        nvml_after = device_info.nvml_used_bytes(self.device.index or 0) if is_cuda else None
        self.memory = Memory(
            estimated_bytes=estimated,
            allocated_bytes=sum(manager.allocated_bytes().values()),
            torch_allocated_bytes=torch.cuda.memory_allocated(self.device) - before if is_cuda else None,
            torch_reserved_bytes=torch.cuda.memory_reserved(self.device) if is_cuda else None,
            nvml_used_delta_bytes=nvml_after - nvml_before if nvml_before is not None and nvml_after is not None else None,
        )
        if "alloc" in self.cfg.ops:
            self._host_row("alloc", "pools", self.runtime.max_batch, samples, self.memory.allocated_bytes)
            self._host_row("alloc", "add+free", 1, self._add_free(manager), None)
        self._randomize(manager)
        return manager

    def _add_free(self, manager: CacheManager, n: int = 200) -> list[float]:
        """Host time of one add_request + free pair (slot reset and seed included), n times."""
        samples = []
        for i in range(n):
            start = time.perf_counter()
            manager.add_request(("bench", i))
            manager.free(("bench", i))
            samples.append((time.perf_counter() - start) * 1e6)
        return samples

    def _host_row(self, op: str, kind: str, batch: int, samples: list[float], nbytes: int | None) -> None:
        from mcache.bench.timing import summarize

        t = summarize(samples)
        self.rows.append(Row(op=op, impl="host", kind=kind, batch=batch, median_us=t.median_us, p10_us=t.p10_us,
                             p90_us=t.p90_us, bytes=nbytes, timer="wall clock"))

    def _randomize(self, manager: CacheManager) -> None:
        """Random, never-zero values in every recurrent-state pool and ring (gates and steps kept stable)."""
        values = torch.Generator(device=self.device).manual_seed(self.cfg.seed)
        ranges = {"dt": (0.0, 0.1), "dA": (-0.5, -0.01), "g": (-0.5, -0.01), "beta": (0.05, 1.0),
                  "k": (-0.1, 0.1)}
        for pool in manager.pools.values():
            if pool.decl.kind in RECURRENT_KINDS and pool.decl.role is not Role.RING and pool.storage.is_floating_point():
                pool.storage.uniform_(-1.0, 1.0, generator=values)
        for meta in manager.replay_metadata().values():
            for name, ring in meta.rings.items():
                ring.uniform_(*ranges.get(name, (-1.0, 1.0)), generator=values)
        self._sync()

    def _ceiling(self) -> Ceiling | None:
        """The large device-to-device copy: 4 GiB if memory allows, else the largest of 2 GiB, 1 GiB, 512 MiB."""
        if self.device.type != "cuda":
            return None
        for size in (CEILING_BYTES, CEILING_BYTES // 2, CEILING_BYTES // 4, CEILING_BYTES // 8):
            try:
                t = copy_time(2 * size, self.device, reps=self.cfg.reps)
            except torch.cuda.OutOfMemoryError:
                torch.cuda.empty_cache()
                continue
            return Ceiling(bytes=2 * size, median_us=t.median_us, gbps=gbps(2 * size, t.median_us))
        return None

    def _compute(self) -> Compute | None:
        """The arithmetic rates of this GPU, measured in this process (`roofline`); None off CUDA."""
        fma = fma_tflops(self.device)
        if fma is None:
            return None
        tf32 = tf32_tflops(self.device)
        return Compute(fma_tflops=round(fma, 2), tf32_tflops=round(tf32, 2) if tf32 else None)

    def _roofline(self, case: OpCase, us: float) -> dict:
        """A row's roofline fields: its memory time at the ceiling, its arithmetic time at the measured rates, and the
        larger of the two as a share of the device time `us` (none of them off CUDA)."""
        if not self.ceiling:
            return {}
        work = case.work
        memory = case.nbytes / (self.ceiling.gbps * 1e3)
        arith = arith_us(work, self.compute.fma_tflops if self.compute else None,
                         self.compute.tf32_tflops if self.compute else None)
        bound = max(memory, arith or 0.0)
        return {"flops": work.flops, "mma_flops": work.mma_flops, "memory_us": round(memory, 3),
                "arith_us": None if arith is None else round(arith, 3), "pct_roofline": round(100 * bound / us, 1)}

    def _layers(self, kinds: list[str]) -> dict[str, list[int]]:
        """Global layer indices of each kind on this rank, for `--per-layer` rows."""
        if not self.cfg.per_layer:
            return {}
        return {k: self.ctx.layers_of(k) for k in kinds}

    def _matched(self, nbytes: int) -> Timing | None:
        if self.device.type != "cuda":
            return None
        if nbytes not in self._copy_cache:
            self._copy_cache[nbytes] = copy_time(nbytes, self.device, reps=self.cfg.reps)
        return self._copy_cache[nbytes]

    def _measure(self, builder: CaseBuilder, op: str, batch: int, layer: int | None) -> None:
        """Check, then time one case and its baseline (see `_guarded`)."""

        def measure() -> None:
            if reason := builder.unfit(op, batch):
                raise _Skip(reason)
            case = builder.build(op, batch)
            if case is None:
                raise _Skip(f"no {op} buffers for {builder.kind} with scheme {self.runtime.spec_scheme}")
            self._time_case(case, self._impl(), layer)

        self._guarded(op, self._impl(), builder.kind, batch, layer, measure)

    def _guarded(self, op: str, impl: str, kind: str, batch: int, layer: int | None, measure: Callable[[], None]) -> None:
        """Run `measure`; a case that cannot run, out of memory, or any failure becomes a skipped row saying why, so
        one failing op never loses the rows done (a failure is also kept in `failures`)."""
        try:
            measure()
        except _Skip as skip:
            self._skipped(op, impl, kind, batch, layer, str(skip))
        except torch.cuda.OutOfMemoryError as err:
            torch.cuda.empty_cache()
            self._skipped(op, impl, kind, batch, layer, f"out of memory: {first_line(err)}")
        except Exception as err:  # any op's bug: the run goes on and keeps what it measured
            reason = f"failed: {type(err).__name__}: {first_line(err)}"
            self._skipped(op, impl, kind, batch, layer, reason)
            self.failures.append(f"bench: {op} ({impl}) on {kind} at batch {batch} {reason}; recorded as a skipped row")

    def _skipped(self, op: str, impl: str, kind: str, batch: int, layer: int | None, reason: str) -> None:
        self.rows.append(Row(op=op, impl=impl, kind=kind, batch=batch, layer=layer, status="skipped", reason=reason))

    def _time_case(self, case: OpCase, impl: str, layer: int | None, baseline: bool = True) -> None:
        case.run()
        self._sync()
        if not case.check():
            raise _Skip("output disagrees with the reference; not timed")
        reps = self.cfg.reps
        kernel = self._three_times(case.run, reps, capturable=True)
        matched = self._matched(case.nbytes)
        base = None
        if baseline and case.baseline is not None:
            # Host-synchronizing reference loops: few runs, timed eagerly, host cost on an idle GPU.
            graph = case.graph_baseline
            base = self._three_times(case.baseline, reps if graph else max(3, reps // 10), capturable=graph)
        self.rows.append(self._row(case, impl, layer, kernel, matched, base[0] if base else None))
        if base is not None:
            self.rows.append(self._row(case, case.baseline_impl, layer, base, matched, None))
        if baseline:
            for other, run, check in case.others:  # FLA's kernels: rows of their own, checked first like every row
                self._guarded(case.op, other, case.kind, case.batch, layer,
                              partial(self._time_other, case, other, run, check, layer, matched))

    def _time_other(self, case: OpCase, impl: str, run, check, layer: int | None, matched: Timing | None) -> None:
        if not check():
            raise _Skip("output disagrees with the reference; not timed")
        self.rows.append(self._row(case, impl, layer, self._three_times(run, self.cfg.reps, capturable=True), matched, None))

    def _three_times(self, fn, reps: int, capturable: bool) -> tuple[Timing, Timing, Timing]:
        """Device, eager and host time of `fn` (see `results.Row`)."""
        device = time_op(fn, self.device, reps=reps, warmup=5 if capturable else 1, graph=capturable)
        eager = eager_time(fn, self.device, reps=reps)
        # The GPU works off every call the host loop queued: enough calls for a steady loop, about 0.2 s of GPU work.
        calls = max(HOST_MIN_CALLS, min(HOST_CALLS, int(HOST_GPU_US / device.median_us))) if capturable else 3
        host = host_time(fn, self.device, calls=calls, busy=capturable)
        return device, eager, host

    def _timer(self, t: Timing) -> str | None:
        """A row's own timer where it differs from the run's (CUDA-graph replays)."""
        return "CUDA events, eager launches (not capturable)" if self.device.type == "cuda" and not t.graph else None

    def _row(self, case: OpCase, impl: str, layer: int | None, times: tuple[Timing, Timing, Timing],
             matched: Timing | None, base: Timing | None) -> Row:
        t, eager, host = times
        bw = gbps(case.nbytes, t.median_us)
        ceiling = self.ceiling.gbps if self.ceiling else None
        return Row(
            op=case.op, impl=impl, kind=case.kind, batch=case.batch, layer=layer,
            median_us=round(t.median_us, 3), p10_us=round(t.p10_us, 3), p90_us=round(t.p90_us, 3),
            bytes=case.nbytes, gbps=round(bw, 1),
            pct_ceiling=round(100 * bw / ceiling, 1) if ceiling else None,
            size_matched_us=round(matched.median_us, 3) if matched else None,
            pct_size_matched=round(100 * matched.median_us / t.median_us, 1) if matched else None,
            speedup_vs_baseline=round(base.median_us / t.median_us, 2) if base else None,
            timer=self._timer(t),
            eager_us=round(eager.median_us, 3), eager_p10_us=round(eager.p10_us, 3), eager_p90_us=round(eager.p90_us, 3),
            host_us=round(host.median_us, 3), host_p10_us=round(host.p10_us, 3), host_p90_us=round(host.p90_us, 3),
            **self._roofline(case, t.median_us),
        )


class _Skip(Exception):
    """A case that cannot run here; its reason goes into a skipped row."""
