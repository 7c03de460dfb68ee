"""Ctrl-C during `mcache bench`: never lost, and answered where the run can keep what it measured.

Python raises `KeyboardInterrupt` wherever the main thread happens to be, and code that catches too
much (a compiler, a library's retry loop) can swallow it. `Interrupts` takes SIGINT over for the
run: each one is recorded, and raised only while the runner is `armed` (inside its own try block);
the runner also asks `check()` between measurements, so a swallowed interrupt still ends the run.
"""

from __future__ import annotations

import contextlib
import signal
import threading


class Interrupts:
    """SIGINT handler for one bench run; use as a context manager around everything the command does."""

    def __init__(self) -> None:
        self.requested = False
        self._armed = False
        self._previous = None

    def __enter__(self) -> Interrupts:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None

    def _handle(self, signum, frame) -> None:
        self.requested = True
        if self._armed:
            raise KeyboardInterrupt

    @contextlib.contextmanager
    def armed(self):
        """Raise `KeyboardInterrupt` at once inside this block (and now, if one came before it)."""
        self._armed = True
        try:
            self.check()
            yield
        finally:
            self._armed = False

    def check(self) -> None:
        """Raise `KeyboardInterrupt` if one was requested (and perhaps swallowed) since the run began."""
        if self.requested:
            raise KeyboardInterrupt
