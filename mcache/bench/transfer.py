"""`mcache bench --ops transfer --sender-tp A --receiver-tp B`: move request states between processes.

One process per rank on `torch.distributed` (started by `torchrun`, or spawned here when `RANK` and `WORLD_SIZE`
are not set): ranks `0 .. A*P-1` are the sender's (`stage * tp + tp_rank`), the rest the receiver's. Each rank
builds the real cache manager of its rank. Per batch size, each sender writes every request's share of a random
full (TP 1) state, packs what each receiver takes (`mcache.core.transfer_plan`, one contiguous buffer per rank
pair, with the `pack` kernel), sends it with batched `isend`/`irecv`, and each receiver unpacks it into its pools
(`unpack`) and checks them bitwise against its share of the same full state. Pack, wire and unpack are timed
apart (a barrier before each; a phase lasts as long as its slowest rank), and the ceiling is the same sends of
plain buffers of the same sizes. With `--backend gloo` and GPU pools the buffers go through host memory.
Recurrent state only: KV blocks are in the plan (`mcache size --transfer-to-tp`), not moved here.
"""

from __future__ import annotations

import os
import socket
import statistics
import tempfile
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.distributed as dist

from mcache import kernels as K
from mcache.bench import device_info
from mcache.bench.timing import gbps
from mcache.cache.manager import CacheManager
from mcache.cache.states.base import torch_dtype
from mcache.core.errors import McacheError
from mcache.core.kinds import KIND_MODULES
from mcache.core.load import load_spec, resolve
from mcache.core.sizing.estimate import estimate_rank
from mcache.core.sizing.layout import ParallelLayout, RuntimeConfig
from mcache.core.sizing.rank import RankContext, resolve_dtypes
from mcache.core.spec.model import layer_kinds
from mcache.core.transfer_plan import Pair, Part, pieces, runs, transfer_plan
from mcache.results.schema import SCHEMA_VERSION, Meta, Results, Row, load, save

ALIGN = 16  # bytes: every part of a pair buffer starts aligned for any state dtype


@dataclass
class TransferConfig:
    """Sender and receiver layouts (tp, pp), batch sizes, device and backend (None: NCCL on CUDA, else gloo)."""

    spec: str
    sender: tuple[int, int] = (1, 1)
    receiver: tuple[int, int] = (2, 1)
    batches: list[int] = field(default_factory=lambda: [1, 8, 32, 64])
    device: str = "cuda"
    backend: str | None = None
    reps: int = 10
    max_seq_len: int = 256
    pool_layout: str = "layer"
    seed: int = 0

    @property
    def world(self) -> int:
        return self.sender[0] * self.sender[1] + self.receiver[0] * self.receiver[1]

    @property
    def backend_name(self) -> str:
        return self.backend or ("nccl" if self.device.startswith("cuda") else "gloo")


def plan_of(cfg: TransferConfig) -> list[Pair]:
    """The rank pairs of the transfer, recurrent state only (raises `LayoutError` on an impossible split)."""
    spec = load_spec(cfg.spec)
    sender, receiver = (ParallelLayout(tp=tp, pp=pp) for tp, pp in (cfg.sender, cfg.receiver))
    plan = transfer_plan(spec, resolve_dtypes(spec), sender, receiver, 1, 1)
    pairs = [Pair(p.sender, p.receiver, parts, p.state_bytes, 0, sum(x.pieces for x in parts))
             for p in plan.pairs if (parts := tuple(x for x in p.parts if x.per == "slot"))]
    if not pairs:
        raise McacheError(f"bench: {spec.name} has no recurrent state to transfer")
    return pairs


def rank_context(cfg: TransferConfig, spec, rank: int) -> RankContext:
    """The rank context of global rank `rank`: a sender's (`stage * tp + tp_rank`) below the sender's size, else the
    receiver's."""
    senders = cfg.sender[0] * cfg.sender[1]
    tp, pp = cfg.sender if rank < senders else cfg.receiver
    index = rank if rank < senders else rank - senders
    runtime = RuntimeConfig(max_batch=max(cfg.batches) + 1, max_seq_len=cfg.max_seq_len)
    return RankContext.build(spec, ParallelLayout(tp=tp, pp=pp), runtime, resolve_dtypes(spec), index // tp)


def check_memory(cfg: TransferConfig, ranks: dict[int, torch.device]) -> None:
    """Refuse, before any cache is built, ranks whose caches (estimated) exceed the memory free on their devices (the
    ranks on one device, the host's for CPU pools, summed)."""
    spec = load_spec(cfg.spec)
    wanted: dict[torch.device, int] = {}
    for rank, device in ranks.items():
        wanted[device] = wanted.get(device, 0) + estimate_rank(rank_context(cfg, spec, rank)).cache_bytes
    for device, need in wanted.items():
        device_info.check_free(need, device, f"the caches of the transfer's ranks on {device} take",
                               "--batch or --max-seq-len")


def _device(cfg: TransferConfig, rank: int, local: int | None) -> torch.device:
    """The device of `rank` (its local rank's GPU under torchrun)."""
    if not cfg.device.startswith("cuda"):
        return torch.device("cpu")
    return torch.device("cuda", (rank if local is None else local) % torch.cuda.device_count())


def run_transfer(cfg: TransferConfig) -> Results | None:
    """Run the transfer: this rank's share under `torchrun` (the results on rank 0, None elsewhere), else spawn
    the whole world here and return rank 0's results."""
    plan_of(cfg)  # bad layouts fail here, once, before any process starts
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        world = int(os.environ["WORLD_SIZE"])
        if world != cfg.world:
            raise McacheError(f"bench: torchrun started {world} processes; the transfer needs {cfg.world} "
                              "(sender tp x pp + receiver tp x pp)")
        rank, local = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", 0))
        check_memory(cfg, {rank: _device(cfg, rank, local)})
        return _worker(rank, cfg, world, local)
    if cfg.backend_name == "nccl" and torch.cuda.device_count() < cfg.world:
        raise McacheError(f"bench: transfer over nccl needs one GPU per rank: {cfg.world} ranks, {torch.cuda.device_count()} "
                          "GPUs visible (NCCL refuses two ranks on one GPU); use --backend gloo or more GPUs")
    check_memory(cfg, {rank: _device(cfg, rank, None) for rank in range(cfg.world)})
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "results.json"
        init = f"tcp://127.0.0.1:{_free_port()}"
        try:
            mp.spawn(_worker, args=(cfg, cfg.world, None, init, out), nprocs=cfg.world, join=True)
        except mp.ProcessRaisedException as err:  # the child's traceback: keep its last line
            raise McacheError(f"bench: transfer rank failed: {str(err).strip().splitlines()[-1]}") from None
        return load(out)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, cfg: TransferConfig, world: int, local: int | None, init: str | None = None,
            out: Path | None = None) -> Results | None:
    """One rank: set up the process group, measure every batch size, write or return the results on rank 0."""
    cuda = cfg.device.startswith("cuda")
    device = _device(cfg, rank, local)
    if cuda:
        torch.cuda.set_device(device)
    backend = cfg.backend_name
    dist.init_process_group(backend, init_method=init or "env://", rank=rank, world_size=world,
                            device_id=device if backend == "nccl" else None)
    try:
        side = TransferRank(cfg, rank, device)
        rows = [side.measure(batch) for batch in cfg.batches]
    finally:
        dist.destroy_process_group()
    if rank:
        return None
    results = _results(cfg, device, rows)
    if out is not None:
        save(results, out)
    return results


class TransferRank:
    """One rank's manager and its pairs (as sender or receiver); collectives run over `group` (None: the world,
    whose first `cfg.world` ranks it must be). Building one needs no process group."""

    def __init__(self, cfg: TransferConfig, rank: int, device: torch.device, group=None):
        self.cfg, self.device, self.backend, self.group = cfg, device, cfg.backend_name, group
        self.spec = load_spec(cfg.spec)
        self.dtypes = resolve_dtypes(self.spec)
        senders = cfg.sender[0] * cfg.sender[1]
        self.is_sender = rank < senders
        self.index = rank if self.is_sender else rank - senders
        self.ctx = rank_context(cfg, self.spec, rank)
        self.tp = self.ctx.layout.tp
        self.tp_rank = self.index % self.tp
        self.manager = CacheManager(self.ctx, tp_rank=self.tp_rank, device=device, pool_layout=cfg.pool_layout)
        mine = (lambda p: p.sender == self.index) if self.is_sender else (lambda p: p.receiver == self.index)
        # (peer's global rank, pair), in one order on both sides
        self.plan = plan_of(cfg)
        self.pairs = [(p.receiver + senders if self.is_sender else p.sender, p) for p in self.plan if mine(p)]
        kinds = layer_kinds(self.spec)
        self.kind_layers = {k: [i for i in range(self.spec.num_layers) if k in kinds[i]] for k in self.ctx.recurrent_kinds}

    # -- states -----------------------------------------------------------------------------------
    def _full(self, request: int, buffer: str) -> torch.Tensor:
        """The full (TP 1) state of `buffer` over every layer of its kind, the same on every rank."""
        kind, name = buffer.split(".")
        state = next(s for s in KIND_MODULES[kind].states(self.spec, getattr(self.spec, kind), 1, self.dtypes) if s.name == name)
        gen = torch.Generator(self.device).manual_seed(self.cfg.seed * 1_000_003 + request * 101 + zlib.crc32(buffer.encode()))
        values = torch.rand((len(self.kind_layers[kind]), *state.shape), generator=gen, device=self.device)
        return (values * 0.9 + 0.1).to(torch_dtype(state.dtype))  # never zero: an unwritten row cannot pass

    def _share(self, request: int, buffer: str) -> torch.Tensor:
        """This rank's rows of the full state, on this rank's layers: `[L, *shape]`."""
        kind, name = buffer.split(".")
        full = self._full(request, buffer)[[self.kind_layers[kind].index(i) for i in self.ctx.layers_of(kind)]]
        held, _ = pieces(self.spec, self.dtypes, kind, name, self.tp, self.tp_rank)
        return torch.cat([full[:, p.start : p.start + p.rows] for p in held], dim=1)

    def _buffers(self) -> list[str]:
        return [f"{h.kind}.{n}" for h in self.manager.handlers for n in h.transfer_states()]

    # -- one batch --------------------------------------------------------------------------------
    def fill(self, batch: int) -> list[tuple]:
        """Free every request, add `batch` new ones (after one more, so receivers use other slots than senders) and,
        on a sender, write each one's share of its full state; returns the request ids."""
        for name in self.manager.requests:
            self.manager.free(name)
        names = [("b", batch, i) for i in range(batch)]
        self.manager.add_request(("other", batch))
        for i, name in enumerate(names):
            self.manager.add_request(name)
            if self.is_sender:
                self.manager.write_state(name, {b: self._share(i, b) for b in self._buffers()})
        return names

    def measure(self, batch: int) -> Row:
        """Fill, move `reps` times, check, and return the row (every rank returns the same; the requests stay)."""
        names = self.fill(batch)
        slots = torch.tensor([self.manager.slot_of(n) for n in names], dtype=torch.int64, device=self.device)
        bufs = {peer: torch.zeros(_size(pair, batch), dtype=torch.uint8, device=self.device) for peer, pair in self.pairs}
        plain = {peer: torch.ones_like(b) for peer, b in bufs.items()}
        times = []
        for _ in range(self.cfg.reps):
            pack = self._phase(lambda: self._pack(bufs, slots, batch) if self.is_sender else None)
            wire = self._phase(lambda: self._wire(bufs))
            unpack = self._phase(lambda: None if self.is_sender else self._unpack(bufs, slots, batch))
            ceiling = self._phase(lambda: self._wire(plain))
            times.append(self._slowest([pack, wire, unpack, ceiling]))
        ok = self.is_sender or all(torch.equal(got, self._share(i, b)) for i, n in enumerate(names)
                                   for b, got in self.manager.state(n).items())
        ok = bool(self._slowest([0.0 if ok else 1.0])[0] == 0.0)
        return _row(self.cfg, batch, times, sum(p.state_bytes for p in self.plan) * batch, ok)

    def _phase(self, fn) -> float:
        """Microseconds of `fn` on this rank, after a barrier (CUDA events on a GPU, wall clock on the CPU)."""
        dist.barrier(group=self.group)
        if self.device.type != "cuda":
            start = time.perf_counter()
            fn()
            return (time.perf_counter() - start) * 1e6
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        fn()
        end.record()
        end.synchronize()
        return begin.elapsed_time(end) * 1e3

    def _slowest(self, values: list[float]) -> list[float]:
        """The largest of each value over all ranks."""
        t = torch.tensor(values, dtype=torch.float64, device=self.device if self.backend == "nccl" else "cpu")
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self.group)
        return t.tolist()

    def _views(self, buf: torch.Tensor, pair: Pair, batch: int):
        """`(part, pool [L, units, *shape] of the part's layers, packed view [batch, L, elems])` of a pair buffer."""
        offset = 0
        for part in pair.parts:
            kind = part.buffer.split(".")[0]
            first = self.ctx.layers_of(kind).index(part.layers[0])
            pool = self.manager.pools[part.buffer].view[first : first + len(part.layers)]
            n = part.bytes * batch
            yield part, pool, buf[offset : offset + n].view(pool.dtype).view(batch, len(part.layers), -1)
            offset += _aligned(n)

    def _pack(self, bufs, slots, batch) -> None:
        for peer, pair in self.pairs:
            for part, pool, out in self._views(bufs[peer], pair, batch):
                K.pack(pool, slots, _ranges(part, "src"), out, check=False)

    def _unpack(self, bufs, slots, batch) -> None:
        for peer, pair in self.pairs:
            for part, pool, packed in self._views(bufs[peer], pair, batch):
                K.unpack(packed, pool, slots, _ranges(part, "dst"), check=False)

    def _wire(self, bufs: dict[int, torch.Tensor]) -> None:
        """Every pair buffer of this rank over batched P2P (through host memory for gloo with GPU pools)."""
        staged = bufs
        if self.backend == "gloo" and self.device.type == "cuda":
            staged = {p: b.cpu() if self.is_sender else torch.empty(b.shape, dtype=b.dtype) for p, b in bufs.items()}
        op = dist.isend if self.is_sender else dist.irecv
        if staged:
            for work in dist.batch_isend_irecv([dist.P2POp(op, staged[peer], peer, self.group) for peer in staged]):
                work.wait()
        if staged is not bufs and not self.is_sender:
            for peer, b in bufs.items():
                b.copy_(staged[peer])


def _ranges(part: Part, side: str) -> list[tuple[int, int]]:
    """Element ranges of the part's rows in a rank's state row-major layout (`src`: sender, `dst`: receiver)."""
    return [(start * part.row_elems, n * part.row_elems) for start, n in runs([(getattr(s, side), s.rows) for s in part.spans])]


def _aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def _size(pair: Pair, batch: int) -> int:
    return sum(_aligned(p.bytes * batch) for p in pair.parts)


def _row(cfg: TransferConfig, batch: int, times: list[list[float]], nbytes: int, ok: bool) -> Row:
    impl = cfg.backend_name
    if not ok:
        return Row(op="transfer", impl=impl, kind="state", batch=batch, status="skipped",
                   reason="a receiver's state disagrees with its share of the full state; not timed")
    pack, wire, unpack, ceiling = (statistics.median(t[i] for t in times) for i in range(4))
    totals = sorted(t[0] + t[1] + t[2] for t in times)
    total = statistics.median(totals)
    return Row(op="transfer", impl=impl, kind="state", batch=batch, median_us=round(total, 3),
               p10_us=round(totals[len(totals) // 10], 3), p90_us=round(totals[-1 - len(totals) // 10], 3),
               bytes=nbytes, gbps=round(gbps(nbytes, total), 2), size_matched_us=round(ceiling, 3),
               pct_size_matched=round(100 * ceiling / total, 1), pack_us=round(pack, 3), wire_us=round(wire, 3),
               unpack_us=round(unpack, 3))


def _results(cfg: TransferConfig, device: torch.device, rows: list[Row]) -> Results:
    cuda = device.type == "cuda"
    meta = Meta.collect(
        load_spec(cfg.spec).name, resolve(cfg.spec), **device_info.machine(device),
        layout={"sender_tp": cfg.sender[0], "sender_pp": cfg.sender[1], "receiver_tp": cfg.receiver[0],
                "receiver_pp": cfg.receiver[1], "world": cfg.world},
        runtime={"spec_scheme": "none", "backend": cfg.backend_name, "pool_layout": cfg.pool_layout, "reps": cfg.reps},
        timer=("CUDA events" if cuda else "wall clock (CPU)") + " per phase, slowest rank, barrier before each phase; "
              "size-matched: the same sends of plain buffers",
        cuda_graphs=False, ceiling=None, memory=None)
    return Results(schema_version=SCHEMA_VERSION, meta=meta, rows=rows)
