"""Errors that the CLI turns into one clear line and a non-zero exit."""

from __future__ import annotations

import re

_AT = re.compile(r" - at `\$(.*)`$")


class McacheError(Exception):
    """Base class for errors a user can fix; `str(err)` is the one line to show."""

    exit_code = 2


class OutputError(McacheError):
    """The output could not be written: stdout closed (a broken pipe) or failing, a full disk."""

    exit_code = 4


class SpecError(McacheError):
    """A model spec (or HF config) is malformed: names the file, the field, and what was expected."""

    def __init__(self, file: str, field: str, expected: str, line: int | None = None):
        self.file, self.field, self.expected, self.line = file, field, expected, line
        where = f"{file}:{line}" if line else file
        super().__init__(f"{where}: {field}: {expected}")


class LayoutError(McacheError):
    """A parallel layout or runtime setting that cannot work with the model (e.g. heads % tp != 0).

    Names the setting or spec field and what was expected, like `SpecError`.
    """

    def __init__(self, field: str, expected: str):
        self.field, self.expected = field, expected
        super().__init__(f"{field}: {expected}")


class ReceiverError(LayoutError):
    """The receiver layout of a transfer (`mcache size --transfer-to-tp/--transfer-to-pp`, `field`) cannot take the
    model: `inner` is the layout's own error (a stage count, or a spec field its TP cannot split)."""

    def __init__(self, field: str, inner: LayoutError):
        self.inner = inner
        super().__init__(field, inner.expected)


class DoesNotFit(McacheError):
    """The model or layout does not fit on the GPU (or the engine would refuse to start): exit code 3."""

    exit_code = 3


class CapacityError(McacheError):
    """The cache manager ran out of slots or KV blocks; nothing was changed."""

    exit_code = 1


def first_line(err: Exception) -> str:
    """The first line of an exception's message (at most 200 characters), or its type's name."""
    text = str(err).strip()
    return text.splitlines()[0][:200] if text else type(err).__name__


def allocation_error(command: str, err: Exception, device: object) -> McacheError:
    """A failed pool allocation (out of memory, or too large for the device) as one line."""
    return McacheError(f"{command}: cannot allocate the cache on {device}: {first_line(err)}")


def validation_parts(message: str) -> tuple[str, str]:
    """`(field path, reason)` of a msgspec validation message (`"... - at `$.a.b`"`); path "" at the top."""
    match = _AT.search(message)
    return (match.group(1).lstrip(".") if match else ""), _AT.sub("", message)
