"""What mcache reads and writes: input documents read whole only below a size limit, strict JSON text (RFC 8259:
NaN and infinity are refused, never written) and files written atomically (a reader sees the old file or the new
one, never half of one)."""

from __future__ import annotations

import math
import os
import re
import stat
from pathlib import Path

from mcache.core.errors import McacheError, SpecError

# A spec, config.json, quantization file or results file is read whole only below this size: the largest real
# config.json is under 100 KiB, a results file of every op at every batch under 2 MiB.
MAX_DOCUMENT_BYTES = 8 << 20
# What a terminal acts on that `json.dumps` leaves as it is: DEL, C1 controls, bidirectional marks and overrides.
_TERMINAL_ACTIVE = re.compile("[\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def read_bounded(path: str | Path, what: str = "a readable file", limit: int = MAX_DOCUMENT_BYTES) -> bytes:
    """The bytes of `path`, read only up to `limit` (`MAX_DOCUMENT_BYTES` unless a kind of document needs more): a
    longer file (or an endless one, /dev/zero) or an unreadable one is a `SpecError` naming the file (`what` says what
    was expected)."""
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as err:
        raise SpecError(str(path), "file", f"{what} ({err.__class__.__name__})") from None
    if len(data) > limit:
        raise SpecError(str(path), "file", f"a file of at most {limit >> 20} MiB (mcache reads documents "
                        "whole; this one is larger)")
    return data


def read_document(path: str | Path, what: str = "a readable UTF-8 file", limit: int = MAX_DOCUMENT_BYTES) -> str:
    """The text of `path`, read as `read_bounded` reads it; a `SpecError` naming the file otherwise (too large,
    unreadable, or not UTF-8: `what` says what was expected)."""
    data = read_bounded(path, what, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:  # the line of the first byte that is not UTF-8
        raise SpecError(str(path), "file", f"{what} (byte 0x{data[err.start]:02x} at offset {err.start} is not UTF-8)",
                        data.count(b"\n", 0, err.start) + 1) from None


def read_json_object(path: Path, holding: str, limit: int = MAX_DOCUMENT_BYTES, **hooks) -> dict:
    """The JSON object in `path` (read as `read_document` reads, `hooks` passed to `json.loads`); a `SpecError` naming
    the file for bad JSON or another top-level type (`holding`: what the object holds, `of config fields`, for the
    message)."""
    import json

    file = str(path)
    text = read_document(path, "a readable UTF-8 JSON file", limit)
    try:
        data = json.loads(text, **hooks)
    except json.JSONDecodeError as err:
        raise SpecError(file, "json", f"valid JSON ({err.msg} at column {err.colno})", err.lineno) from None
    except RecursionError:
        raise SpecError(file, "json", "valid JSON (nested too deeply)") from None
    if not isinstance(data, dict):
        raise SpecError(file, "document", f"a JSON object {holding}, got {type(data).__name__}")
    return data


def json_text(data, indent: int | None = 2) -> str:
    """Strict JSON text of `data` (builtins or msgspec structs); a non-finite number is a one-line `McacheError`."""
    import json  # the readers and `mcache size`'s table output never load the encoder

    import msgspec

    plain = msgspec.to_builtins(data)
    try:
        text = json.dumps(plain, indent=indent, ensure_ascii=False, allow_nan=False)
    except ValueError:
        where, value = _non_finite(plain, "$")
        raise McacheError(f"output: {where} is {value}, which JSON cannot hold; nothing was written") from None
    # json escapes C0 controls; escape the ones a terminal still acts on too (DEL, C1, bidirectional overrides)
    return _TERMINAL_ACTIVE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _non_finite(data, where: str) -> tuple[str, float] | tuple[None, None]:
    """The path (`$.rows[3].median_us`) and value of the first NaN or infinity in `data`."""
    if isinstance(data, float) and not math.isfinite(data):
        return where, data
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        found = _non_finite(value, f"{where}[{key}]" if isinstance(key, int) else f"{where}.{key}")
        if found[0] is not None:
            return found
    return None, None


def write_atomic(path: str | Path, text: str | bytes) -> None:
    """Write `text` (or bytes) to `path` through a temporary file in the same folder and an atomic rename.

    A symlink is followed (the file it names is replaced), an existing file keeps its mode, and a
    device or FIFO (`/dev/null`, `/dev/stdout`, a named pipe) is written to directly, never replaced.
    A missing folder or a directory at `path` is a one-line `McacheError`.
    """
    data = text.encode() if isinstance(text, str) else text
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        mode = None
    if mode is not None and stat.S_ISDIR(mode):
        raise McacheError(f"{path}: is a directory; name a file to write")
    if mode is not None and not stat.S_ISREG(mode):
        with open(path, "wb") as f:  # a device or a pipe (`/dev/stdout` too): write through, as `> path` would
            f.write(data)
        return
    target = Path(os.path.realpath(path))
    if not target.parent.is_dir():
        raise McacheError(f"{path}: cannot write: the folder {target.parent} does not exist")
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    if mode is None:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask  # mkstemp makes the file private; give it the mode open() would
    try:
        os.fchmod(fd, stat.S_IMODE(mode))
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
