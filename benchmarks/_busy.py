"""Busy-loop neighbours for the load benchmarks: processes that keep cores busy, as other
jobs on a shared CI machine do. Imported by the scripts beside it (``python benchmarks/x.py``
puts this folder first on the import path)."""

from __future__ import annotations

import atexit
import contextlib
import signal
import subprocess
import sys
from collections.abc import Iterator


class BusyLoops:
    """``count`` busy-loop subprocesses, switched on and off (``off`` waits for them)."""

    def __init__(self, count: int = 2) -> None:
        self.count = count
        self.procs: list[subprocess.Popen[bytes]] = []

    def on(self) -> None:
        if not self.procs:
            # Stopped with the script, however it ends (a SIGTERM included).
            atexit.register(self.off)
            signal.signal(signal.SIGTERM, _exit)
            self.procs = [
                subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(self.count)
            ]

    def off(self) -> None:
        for proc in self.procs:
            proc.kill()
        for proc in self.procs:
            proc.wait()
        self.procs = []


def _exit(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def busy_loops(count: int) -> Iterator[BusyLoops]:
    """``count`` busy loops running for the ``with`` block (none for 0), stopped however it
    ends."""
    loops = BusyLoops(count)
    if count:
        loops.on()
    try:
        yield loops
    finally:
        loops.off()
