"""An output file is the old one or the whole new one, never a fragment: a write that fails
half-way (here a real file-size limit, as a full disk would) leaves the old file as it was."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.sessions import bench

#: A new document is larger than this; the old one fits.
LIMIT = 2_000


def _limited(limit: int) -> None:
    # Past the limit a write fails with EFBIG instead of killing the process (SIGXFSZ).
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def _run(cwd: Path, *args: str, limit: int = LIMIT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        preexec_fn=lambda: _limited(limit),
        timeout=300,
        check=False,
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("option", "name"),
    [("--bench-json", "out.json"), ("--bench-markdown", "out.md"), ("--bench-export", "out.bmf")],
)
def test_a_session_that_cannot_write_its_output_leaves_the_old_file_whole(
    pytester: pytest.Pytester, option: str, name: str
) -> None:
    pytester.makepyfile(
        bench_many=bench('participants=[Participant(f"p{i}") for i in range(12)], iterations=5')
    )
    old = pytester.path / name
    old.write_text("the good file of an earlier session\n")
    target = f"bmf:{name}" if option == "--bench-export" else name
    done = _run(
        pytester.path,
        "-m", "pytest", "--bench", "--bench-dry-run", "--bench-no-store", "-p", "no:cacheprovider",
        f"{option}={target}",
    )  # fmt: skip
    assert done.returncode != 0, done.stdout
    assert old.read_text() == "the good file of an earlier session\n"
    assert sorted(p.name for p in pytester.path.iterdir() if p.name.startswith(".out")) == []
    assert "File too large" in done.stdout + done.stderr


@pytest.mark.slow
def test_an_export_that_cannot_be_written_leaves_the_old_file_whole(
    pytester: pytest.Pytester,
) -> None:
    # Records enough for an export larger than the limit, which the store (only read here,
    # and its shared-memory file) stays under.
    pytester.makepyfile(
        bench_many=bench('participants=[Participant(f"p{i}") for i in range(12)], iterations=100')
    )
    assert pytester.runpytest_inprocess("--bench", "--bench-dry-run", "-q").ret == 0
    old = pytester.path / "out.json"
    old.write_text("the good file of an earlier export\n")
    listing = subprocess.run(
        [sys.executable, "-m", "pytest_benchsdk", "runs"],
        cwd=pytester.path, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    run_id = listing.splitlines()[1].split()[0].rstrip("…")
    done = _run(
        pytester.path, "-m", "pytest_benchsdk", "export", run_id, "--format", "json", "-o",
        "out.json", limit=256_000,
    )  # fmt: skip
    assert done.returncode != 0, done.stdout
    assert "File too large" in done.stdout + done.stderr
    assert old.read_text() == "the good file of an earlier export\n"
    assert not (pytester.path / ".out.json.partial").exists()
