"""The store CLI (``pytest-benchsdk ARGS``) run in this process, as a subprocess would report it.

``cli.main`` is what ``python -m pytest_benchsdk`` calls: with the working directory set and
its streams captured, a test reads the exit status, stdout and stderr a process would give
without starting one (an interpreter's start-up and the package's imports, ~1 s of CPU each).
Tests whose subject is the process itself (no traceback on exit, ``__main__``, a terminal)
start one.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from pytest_benchsdk.cli import main

__all__ = ["cli"]


def cli(
    *args: str | os.PathLike[str],
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``pytest-benchsdk ARGS`` in ``cwd`` (default: here) with ``env`` as the whole
    environment (default: this one): its exit status and output."""
    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    previous = Path.cwd()
    saved = dict(os.environ)
    if cwd is not None:
        os.chdir(cwd)
    if env is not None:
        os.environ.clear()
        os.environ.update(env)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exc:  # as the interpreter would map it
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.chdir(previous)
        if env is not None:
            os.environ.clear()
            os.environ.update(saved)
    return subprocess.CompletedProcess(
        ["pytest-benchsdk", *argv], code, out.getvalue(), err.getvalue()
    )
