"""The results file of `mcache bench`: one versioned JSON with run metadata and fixed-schema rows.

Times are microseconds, bytes are integers, bandwidth is GB/s (1e9 bytes per second, read + write).
Version 2 added each row's eager and host times (`eager_us`, `host_us`) and `meta.host_reference`;
version-1 files are still read (their rows have no eager or host times).
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from mcache.core.atomic import write_atomic
from mcache.core.errors import SpecError, validation_parts

SCHEMA_VERSION = 2
READABLE_VERSIONS = (1, 2)
# Each time of a row: its name -> the fields of its median, p10 and p90.
TIMES = {"device": ("median_us", "p10_us", "p90_us"), "eager": ("eager_us", "eager_p10_us", "eager_p90_us"),
         "host": ("host_us", "host_p10_us", "host_p90_us")}


class Record(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=False):
    """Base of every results struct: unknown keys are rejected when a file is loaded."""


class Row(Record, kw_only=True):
    """One measurement: an op on one layer kind (or one layer) at one batch size, one implementation.

    `impl` is `triton` (mcache's kernel), `torch-index` (the baseline: torch indexing as serving code
    writes it), `torch-loop` (the replay baseline: the plain-torch recurrence, slot by slot), `torch`
    (mcache's op on the CPU, i.e. the torch reference) or `host` (allocator work timed on the CPU). `status` is `ok` or `skipped`
    (with `reason`, e.g. out of memory); skipped rows carry no times. `timer` is set only where a
    row was timed differently from the run's `meta.timer`.

    Three times per row, each a median with its p10 and p90:
    - device (`median_us`): the op's own GPU time, from CUDA-graph replays with the L2 flushed;
    - eager (`eager_us`): one call launched from Python with the GPU idle, from a CUDA event recorded
      before the call to the end of its last kernel, so the host's launch latency counts;
    - host (`host_us`): the host's cost per call, from 200-300 calls launched back to back while the GPU is
      busy (timed with `time.perf_counter`), i.e. what a call costs the Python thread.
    On the CPU (smoke runs) all three are wall clock. Version-1 files have no eager or host times (None).
    """

    op: str
    impl: str
    kind: str
    batch: int
    layer: int | None = None
    status: str = "ok"
    reason: str | None = None
    median_us: float | None = None
    p10_us: float | None = None
    p90_us: float | None = None
    bytes: int | None = None
    gbps: float | None = None
    pct_ceiling: float | None = None
    pct_size_matched: float | None = None
    size_matched_us: float | None = None
    speedup_vs_baseline: float | None = None
    timer: str | None = None
    eager_us: float | None = None
    eager_p10_us: float | None = None
    eager_p90_us: float | None = None
    host_us: float | None = None
    host_p10_us: float | None = None
    host_p90_us: float | None = None

    @property
    def key(self) -> str:
        """Identity of a row across runs: `op/kind[/layer]/impl/bN`."""
        layer = f"/L{self.layer}" if self.layer is not None else ""
        return f"{self.op}/{self.kind}{layer}/{self.impl}/b{self.batch}"

    @property
    def spread_us(self) -> tuple[float, float]:
        """`(p10, p90)` of a timed row, each falling back to the median where it was not recorded."""
        _, p10, p90 = self.time("device")
        return p10, p90

    def time(self, name: str) -> tuple[float | None, float | None, float | None]:
        """`(median, p10, p90)` of the `device`, `eager` or `host` time (p10/p90 fall back to the median)."""
        median, p10, p90 = (getattr(self, f) for f in TIMES[name])
        return median, p10 or median, p90 or median


class GPU(Record, kw_only=True):
    """The device, as NVML and torch report it."""

    name: str
    uuid: str | None = None
    memory_bytes: int | None = None
    sm_clock_mhz: int | None = None
    mem_clock_mhz: int | None = None
    max_sm_clock_mhz: int | None = None
    driver: str | None = None


class Ceiling(Record, kw_only=True):
    """The device-to-device copy measured in the same process: the bandwidth every row is held to."""

    bytes: int
    median_us: float
    gbps: float


class Memory(Record, kw_only=True):
    """The manager's device memory beside the estimate."""

    estimated_bytes: int
    allocated_bytes: int
    torch_allocated_bytes: int | None = None
    torch_reserved_bytes: int | None = None
    nvml_used_delta_bytes: int | None = None


class Meta(Record, kw_only=True):
    """Everything needed to tell whether two runs can be compared.

    `host_reference`: torch's own host cost per call (us) measured in the same run as rows' `host_us`
    (`copy_` and `index_copy_` of a small tensor), the yardstick for a launcher's host cost.
    """

    mcache_version: str
    git_commit: str | None
    created_at: str
    device: str
    comparable: bool
    gpu: GPU | None
    versions: dict[str, str]
    spec_name: str
    spec_file: str
    spec_sha256: str
    layout: dict[str, int | bool]
    runtime: dict[str, int | str | None]
    timer: str
    cuda_graphs: bool
    ceiling: Ceiling | None
    memory: Memory | None
    interrupted: bool = False
    host_reference: dict[str, float] | None = None

    @property
    def device_name(self) -> str:
        """The GPU's name, or the device string where no GPU was read (CPU runs)."""
        return self.gpu.name if self.gpu else self.device


class Results(Record, kw_only=True):
    """A whole run."""

    schema_version: int
    meta: Meta
    rows: list[Row]


def dump(results: Results) -> str:
    """Pretty JSON text of a run."""
    return msgspec.json.format(msgspec.json.encode(results), indent=2).decode() + "\n"


def save(results: Results, path: str | Path) -> None:
    """Write a run atomically: a reader sees the previous file or this one, never half."""
    write_atomic(path, dump(results))


def load(path: str | Path) -> Results:
    """Read and validate a results file; any problem is a one-line `SpecError` naming file and field."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise SpecError(str(path), "file", f"a readable results file ({err.strerror or err.__class__.__name__})") from None
    try:
        data = msgspec.json.decode(raw)
    except msgspec.DecodeError as err:
        raise SpecError(str(path), "json", f"valid JSON ({err})") from None
    if not isinstance(data, dict):
        raise SpecError(str(path), "document", "a JSON object with schema_version, meta and rows")
    version = data.get("schema_version")
    if version not in READABLE_VERSIONS:
        readable = " or ".join(map(str, READABLE_VERSIONS))
        raise SpecError(str(path), "schema_version", f"{readable} (the versions this mcache reads), got {version!r}")
    try:
        return msgspec.convert(data, Results)
    except msgspec.ValidationError as err:
        field, reason = validation_parts(str(err))
        raise SpecError(str(path), field or "document", reason) from None
