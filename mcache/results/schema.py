"""The results file of `mcache bench`: one versioned JSON with run metadata and fixed-schema rows.

Times are microseconds, bytes are integers, bandwidth is GB/s (1e9 bytes per second, read + write).
Version 2 added each row's eager and host times (`eager_us`, `host_us`) and `meta.host_reference`;
version-1 files are still read (their rows have no eager or host times). Version 3 added the roofline: `meta.compute`
(the fp32 FMA and tf32 rates measured in the run) and each row's `flops`, `mma_flops`, `memory_us`, `arith_us` and
`pct_roofline`; older files are read with none of them.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Literal, get_args

import msgspec
from msgspec import Meta as Bounds

from mcache import __version__
from mcache.core.errors import McacheError, SpecError, validation_parts
from mcache.core.files import json_text, read_bounded, write_atomic

SCHEMA_VERSION = 3
READABLE_VERSIONS = (1, 2, 3)
MAX_US = 1e12  # about 11.6 days: no cache op takes longer, and times in ns (x1000) stay finite numbers
MIN_US = 1e-3  # a nanosecond: no timed op takes less, and a change against it (compare's %) stays a finite number
MAX_COUNT = 1 << 60  # bytes or FLOPs of one op: an exbibyte, past any machine's memory
# Each time of a row: its name -> the fields of its median, p10 and p90.
TIMES = {"device": ("median_us", "p10_us", "p90_us"), "eager": ("eager_us", "eager_p10_us", "eager_p90_us"),
         "host": ("host_us", "host_p10_us", "host_p90_us")}

# What makes two runs a different experiment, by the `meta.runtime` key that records it (files of older runs may lack
# one: unknown, which `compare` refuses to match and `export` names `unknown`).
EXPERIMENT = {"state dtype": "state_dtype", "ring length": "history", "scheme": "spec_scheme"}

Micros = Annotated[float, Bounds(ge=MIN_US, lt=MAX_US)]
Positive = Annotated[float, Bounds(gt=0)]
NonNegative = Annotated[float, Bounds(ge=0)]
Count = Annotated[int, Bounds(ge=0, le=MAX_COUNT)]
Status = Literal["ok", "skipped"]


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
    batch: Annotated[int, Bounds(ge=1)]
    layer: Count | None = None
    status: Status = "ok"
    reason: str | None = None
    median_us: Micros | None = None
    p10_us: Micros | None = None
    p90_us: Micros | None = None
    bytes: Count | None = None
    gbps: NonNegative | None = None
    pct_ceiling: NonNegative | None = None
    pct_size_matched: NonNegative | None = None
    size_matched_us: Micros | None = None
    speedup_vs_baseline: NonNegative | None = None
    timer: str | None = None
    eager_us: Micros | None = None
    eager_p10_us: Micros | None = None
    eager_p90_us: Micros | None = None
    host_us: Micros | None = None
    host_p10_us: Micros | None = None
    host_p90_us: Micros | None = None
    # -- the roofline (version 3): the larger of the memory time (`bytes` at the ceiling) and the arithmetic time
    # (`flops` on the CUDA cores at `meta.compute.fma_tflops`, `mma_flops` on the tensor cores at its `tf32_tflops`,
    # the busier of the two), and the share of it in the row's device time --
    flops: Count | None = None
    mma_flops: Count | None = None
    memory_us: NonNegative | None = None
    arith_us: NonNegative | None = None
    pct_roofline: NonNegative | None = None
    # -- transfer across processes (`--ops transfer --sender-tp/--receiver-tp`): the phases of `median_us` --
    pack_us: Micros | None = None
    wire_us: Micros | None = None
    unpack_us: Micros | None = None

    @property
    def key(self) -> str:
        """Identity of a row across runs: `op/kind[/layer]/impl/bN`."""
        return row_key(self.op, self.kind, self.layer, self.impl, self.batch)

    def time(self, name: str) -> tuple[float | None, float | None, float | None]:
        """`(median, p10, p90)` of the `device`, `eager` or `host` time (p10/p90 fall back to the median)."""
        median, p10, p90 = (getattr(self, f) for f in TIMES[name])
        return median, p10 or median, p90 or median


def row_key(op, kind, layer, impl, batch) -> str:
    """`op/kind[/Llayer]/impl/bN`: the identity of a row across runs."""
    return f"{op}/{kind}{'' if layer is None else f'/L{layer}'}/{impl}/b{batch}"


class GPU(Record, kw_only=True):
    """The device, as NVML and torch report it."""

    name: str
    uuid: str | None = None
    memory_bytes: Count | None = None
    sm_clock_mhz: int | None = None
    mem_clock_mhz: int | None = None
    max_sm_clock_mhz: int | None = None
    driver: str | None = None


class Ceiling(Record, kw_only=True):
    """The device-to-device copy measured in the same process: the bandwidth every row is held to."""

    bytes: Annotated[int, Bounds(gt=0)]
    median_us: Micros
    gbps: Positive


class Compute(Record, kw_only=True):
    """The arithmetic rates measured in the same process (`bench/roofline.py`): the CUDA cores' fp32 FMA rate and the
    tensor cores' tf32 rate, in TFLOP/s."""

    fma_tflops: Positive
    tf32_tflops: Positive | None = None


class Memory(Record, kw_only=True):
    """The manager's device memory beside the estimate."""

    estimated_bytes: Count
    allocated_bytes: Count
    torch_allocated_bytes: Count | None = None
    torch_reserved_bytes: Count | None = None
    nvml_used_delta_bytes: int | None = None


class Meta(Record, kw_only=True):
    """Everything needed to tell whether two runs can be compared.

    `spec_file`: the spec relative to the working directory, or its file name alone when it lies outside (files of
    older runs may hold an absolute path; they are read the same). `host_reference`: torch's own host cost per call
    (us) measured in the same run as rows' `host_us` (`copy_` and `index_copy_` of a small tensor), the yardstick for
    a launcher's host cost.
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
    compute: Compute | None = None

    @classmethod
    def collect(cls, spec_name: str, spec_path: Path, **fields) -> Meta:
        """A run's metadata as of now: mcache's version, the time (UTC), the spec's name, place (`spec_file`) and
        SHA-256 (of its `config.json` for a Hugging Face folder), and `fields`: the machine's (`bench.device_info.machine`)
        and the run's own."""
        spec_bytes = (spec_path / "config.json" if spec_path.is_dir() else spec_path).read_bytes()
        return cls(mcache_version=__version__, created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                   spec_name=spec_name, spec_file=shareable_path(spec_path),
                   spec_sha256=hashlib.sha256(spec_bytes).hexdigest(), **fields)

    @property
    def device_name(self) -> str:
        """The GPU's name, or the device string where no GPU was read (CPU runs)."""
        return self.gpu.name if self.gpu else self.device


def shareable_path(path: Path) -> str:
    """`path` relative to the working directory when it lies inside it, else its name alone: no machine's folders."""
    path = path.resolve()
    try:
        return path.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.name


class Results(Record, kw_only=True):
    """A whole run."""

    schema_version: int
    meta: Meta
    rows: list[Row]


def dump(results: Results) -> str:
    """Pretty JSON text of a run."""
    return json_text(results) + "\n"


def save(results: Results, path: str | Path) -> None:
    """Write a run atomically: a reader sees the previous file or this one, never half."""
    write_atomic(path, dump(results))


# Other JSON documents mcache writes, told apart by keys of their own.
OTHER_REPORTS = {"mcache size": {"ranks", "tightest_stage"}, "mcache plan": {"candidates", "best_by_gpu"},
                 "mcache compare": {"changes", "threshold_pct"}}


def load(path: str | Path) -> Results:
    """Read and validate a results file; any problem is a one-line `SpecError` naming file, row and field."""
    path = Path(path)
    raw = read_bounded(path, "a readable results file")
    try:
        data = msgspec.json.decode(raw)
    except msgspec.DecodeError as err:
        raise SpecError(str(path), "json", f"valid JSON ({err})") from None
    except RecursionError:
        raise SpecError(str(path), "json", "a results file (3 levels deep), not JSON nested too deep to read") from None
    if not isinstance(data, dict):
        raise SpecError(str(path), "document", "a JSON object with schema_version, meta and rows")
    for command, keys in OTHER_REPORTS.items():
        if keys <= data.keys():
            raise McacheError(f"{path}: this is an `{command}` report, not a `mcache bench` results file")
    version = data.get("schema_version")
    if version not in READABLE_VERSIONS:
        readable = ", ".join(map(str, READABLE_VERSIONS[:-1])) + f" or {READABLE_VERSIONS[-1]}"
        raise SpecError(str(path), "schema_version", f"{readable} (the versions this mcache reads), got {version!r}")
    try:
        run = msgspec.convert(data, Results)
    except msgspec.ValidationError as err:
        field, reason = validation_parts(str(err))
        raise SpecError(str(path), _row_named(field, data), _with_value(field, reason, data)) from None
    check_rows(run, str(path))
    return run


def check_rows(run: Results, path: str) -> None:
    """What the row type cannot say: times in order, a time on every `ok` row, and each key once."""
    seen: dict[str, int] = {}
    for i, row in enumerate(run.rows):
        where = f"rows[{i}] ({row.key})"
        if row.status == "ok" and row.median_us is None:
            raise SpecError(path, f"{where}: median_us", "a time on a row with status ok (only skipped rows have none)")
        for fields in TIMES.values():
            values = [getattr(row, f) for f in (fields[1], fields[0], fields[2])]
            times = [t for t in values if t is not None]
            if times != sorted(times):
                raise SpecError(path, f"{where}: {fields[1]}, {fields[0]}, {fields[2]}",
                                f"in that order (p10 <= median <= p90), got {', '.join(map(str, values))}")
        if row.key in seen:
            raise SpecError(path, where, f"each row once, but rows[{seen[row.key]}] has the same key (op/kind/layer/impl/batch)")
        seen[row.key] = i


def _row_named(field: str, data: dict) -> str:
    """`rows[3].median_us` -> `rows[3] (copy/mamba2/triton/b8): median_us`, where the row has a key's fields."""
    match = re.fullmatch(r"rows\[(\d+)\](?:\.(.+))?", field)
    if not match:
        return field or "document"
    try:
        raw = data["rows"][int(match[1])]
        key = row_key(raw["op"], raw["kind"], raw.get("layer"), raw["impl"], raw["batch"])
    except (KeyError, TypeError, IndexError):
        return field
    return f"rows[{match[1]}] ({key})" + (f": {match[2]}" if match[2] else "")


def _with_value(field: str, reason: str, data) -> str:
    """msgspec's reason, with the value it refused (`Expected `float` > 0.0, got -5.0`)."""
    value = data
    for part in field.replace("[", ".").replace("]", "").split("."):
        try:
            value = value[int(part)] if part.isdigit() else value[part]
        except (KeyError, TypeError, IndexError):
            return reason
    if isinstance(value, dict | list):
        return reason
    if reason.startswith("Invalid enum value"):  # `status`, the one Literal field
        return f"one of {', '.join(get_args(Status))}, got {value!r:.60}"
    return f"{reason}, got {value!r:.60}"
