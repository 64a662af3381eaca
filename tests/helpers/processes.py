"""Real pytest sessions in subprocesses, for tests that send them signals or kill them.

A test that signals a session waits for what the session prints (or stores) before each
signal, never for a fixed time, so it holds on a loaded machine: :class:`Session` reads the
output as it comes (unbuffered) and :meth:`Session.wait_for` blocks until a line appears. The
sessions load only the plugins under test (``-p no:...`` for the others installed in the test
environment: their own work at start-up or at the end is not what these tests are about).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

__all__ = ["OTHER_PLUGINS", "Session", "sigint_as_in_a_terminal"]

#: Plugins of the test environment that a signalled session does not need.
OTHER_PLUGINS = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:anyio")


@contextlib.contextmanager
def sigint_as_in_a_terminal() -> Iterator[None]:
    """Children started meanwhile (``pytester.runpytest_subprocess``) get SIGINT's default, as
    in a terminal, also when this test process inherited it ignored (a shell's background
    job): a Ctrl-C a test sends its session must reach it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is not signal.SIG_IGN:
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class Session:
    """``python -m pytest ARGS`` in ``cwd``, its output collected line by line."""

    def __init__(
        self,
        cwd: Path,
        *args: str,
        env: Mapping[str, str] | None = None,
        plugins: tuple[str, ...] = OTHER_PLUGINS,
    ) -> None:
        environ = dict(os.environ if env is None else env)
        environ["PYTHONUNBUFFERED"] = "1"
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pytest", *plugins, *args],
            cwd=cwd,
            env=environ,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
            # A shell's background jobs ignore SIGINT: give the child the default handler.
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def wait_for(self, text: str, timeout: float = 120) -> None:
        """Block until a line containing ``text`` was printed (or fail with the output)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not any(text in line for line in self.lines):
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._reader.is_alive()):
                    raise AssertionError(f"no line with {text!r} in:\n{self.output}")
                self._changed.wait(min(left, 0.5))

    def interrupt(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)

    def finish(self, timeout: float = 120) -> int:
        """Wait for the session to end; its exit status."""
        try:
            code = self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        self._reader.join(timeout=30)
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self._reader.join(timeout=30)
