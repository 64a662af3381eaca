"""What the CLI writes to a terminal has its control characters escaped; a pipe gets the data
as it is (issue 32, item 10): a participant named with an escape sequence, exported as CSV on
stdout, shown, listed."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.sessions import bench, store_path, stored_runs

#: A participant name that would turn a terminal red, set its title and ring its bell.
HOSTILE = "ok\x1b[31mRED\x1b]0;title\x07"


def _on_a_terminal(args: list[str], cwd: Path) -> bytes:
    """``python -m pytest_benchsdk ARGS`` with its stdout and stderr on a pseudo-terminal."""
    controller, terminal = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytest_benchsdk", *args],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=terminal,
            stderr=terminal,
        )
        os.close(terminal)
        terminal = -1
        chunks: list[bytes] = []
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        assert proc.wait(timeout=120) == 0, b"".join(chunks)
        return b"".join(chunks)
    finally:
        os.close(controller)
        if terminal >= 0:
            os.close(terminal)


@pytest.fixture
def hostile_store(pytester: pytest.Pytester) -> str:
    pytester.makepyfile(bench_names=bench(f"participants=[Participant({HOSTILE!r})], iterations=2"))
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    (run,) = stored_runs(store_path(pytester))
    return run.run_id


@pytest.mark.slow
@pytest.mark.parametrize(
    "command",
    [["export", "RUN", "--format", "csv"], ["export", "RUN", "--format", "json"], ["show", "RUN"]],
    ids=["export-csv", "export-json", "show"],
)
def test_control_characters_never_reach_a_terminal(
    pytester: pytest.Pytester, hostile_store: str, command: list[str]
) -> None:
    args = [hostile_store if a == "RUN" else a for a in command]
    shown = _on_a_terminal(args, pytester.path)
    # JSON has its own escapes for control characters; the others show Python's.
    escaped = b"ok\\u001b[31mRED" if "json" in command else b"ok\\x1b[31mRED\\x1b]0;title\\x07"
    assert escaped in shown
    assert b"\x1b" not in shown
    assert b"\x07" not in shown


@pytest.mark.slow
def test_a_pipe_gets_the_csv_as_stored(pytester: pytest.Pytester, hostile_store: str) -> None:
    """Data for a program: the name exactly as the store has it, rows ending in CRLF."""
    out = subprocess.run(
        [sys.executable, "-m", "pytest_benchsdk", "export", hostile_store, "--format", "csv"],
        cwd=pytester.path,
        capture_output=True,
        check=True,
    ).stdout
    assert HOSTILE.encode() in out
    assert out.count(b"\r\n") == 3  # the header and two rows
