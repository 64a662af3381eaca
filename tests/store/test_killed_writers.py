"""Whole-or-nothing writers killed on the way (issue 49), with real SIGKILLs.

``store recover -o NEW`` builds the copy in a partial file beside NEW and moves it there when it
is whole: a recover killed at any moment leaves no NEW (never one that ``store check`` passes
and that lacks rows), and the next recover removes what the killed one left. Every other
whole-or-nothing writer (the HTML report, ``--bench-json``, ``--bench-markdown``, exports,
credentials) writes through ``write_atomically``: its next writer of the same file removes the
partial files of writers that are gone, never a live writer's.

Each kill waits for an observable event (the copy's file appearing, a writer announcing that
its bytes are written), then strikes at spread moments of the work; nothing sleeps to hope a
process got somewhere.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from helpers.report_pages import write_runs
from helpers.store_processes import begin_run
from pytest_benchsdk import cli
from pytest_benchsdk._base.files import remove_abandoned_partials, write_atomically
from pytest_benchsdk.records import TaskRecord
from pytest_benchsdk.store import ResultStore, check_store

#: Records in the store a recover copies: tens of thousands, as the issue found it.
RECORDS = 20_000
_BATCH = 500


def _big_store(path: Path) -> str:
    """A store with one run of :data:`RECORDS` records: the first batch written with the
    store's API, the rest copies of its rows under other task indexes (a session's rows, many
    times, without a session's time)."""
    with ResultStore(path) as store:
        run_id = begin_run(store, "big")
        for i in range(_BATCH):
            record = TaskRecord(task_index=i, status="success", data={"value": i, "pad": "x" * 200})
            store.add_record(run_id, "p", record, [f"line {i}"])
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        columns = [row[1] for row in conn.execute("PRAGMA table_info(records)")]
        others = [c for c in columns if c not in ("task_index", "id")]
        for k in range(1, RECORDS // _BATCH):
            conn.execute(
                f"INSERT INTO records (task_index, {', '.join(others)}) "
                f"SELECT task_index + {k * _BATCH}, {', '.join(others)} FROM records "
                f"WHERE task_index < {_BATCH}"
            )
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    assert _records(path) == RECORDS
    return run_id


def _records(path: Path) -> int:
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT count(*) FROM records").fetchone()[0])
    except sqlite3.OperationalError:  # no records table at all (a store still being made)
        return 0
    finally:
        conn.close()


def _recover(store: Path, new: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pytest_benchsdk", "--store", str(store), "store", "recover",
         "-o", str(new)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip


def _copy_begun(new: Path) -> bool:
    """The recover has started writing: its copy (or, before issue 49, NEW itself) exists."""
    return new.exists() or any(new.parent.glob(f".{new.name}.*.partial"))


def test_a_killed_recover_never_leaves_a_new_store_that_looks_healthy_and_lacks_rows(
    tmp_path: Path,
) -> None:
    store = tmp_path / "benchsdk.sqlite3"
    _big_store(store)
    # How long one recover takes here (under whatever load the machine has now): the kills
    # strike at spread moments of that.
    started = time.monotonic()
    whole = _recover(store, tmp_path / "whole.sqlite3")
    out, _ = whole.communicate(timeout=300)
    duration = time.monotonic() - started
    assert whole.returncode == 0, out
    assert _records(tmp_path / "whole.sqlite3") == RECORDS

    kills = 0
    for attempt, fraction in enumerate((0.0, 0.05, 0.15, 0.3, 0.5, 0.7, 0.9)):
        new = tmp_path / f"new{attempt}.sqlite3"
        process = _recover(store, new)
        deadline = time.monotonic() + 300
        while not _copy_begun(new) and process.poll() is None:
            assert time.monotonic() < deadline, "recover never began writing"
            time.sleep(0.001)
        time.sleep(fraction * duration)
        if process.poll() is None:
            kills += 1
        process.kill()
        process.communicate(timeout=60)
        if new.exists():  # it finished before the kill: then it must be whole
            assert check_store(new).ok
            assert _records(new) == RECORDS, f"killed at {fraction:.0%}: a NEW that lacks rows"
            continue
        # Nothing at NEW: the next recover to the same path goes on, says what it removed,
        # and leaves no partial file behind.
        left = sorted(p.name for p in tmp_path.glob(f".{new.name}.*.partial"))
        again = _recover(store, new)
        out, _ = again.communicate(timeout=300)
        assert again.returncode == 0, out
        for name in left:
            assert f"Removed {tmp_path / name}" in out
        assert out.count("a recover that was killed left it (not a store)") == len(left)
        assert list(tmp_path.glob(f".{new.name}.*.partial*")) == []
        assert check_store(new).ok
        assert _records(new) == RECORDS
    # Most kills landed while the copy was being made (the last ones may come too late on a
    # fast machine): the loop proved something.
    assert kills >= 3, kills


#: A writer that stops where its bytes are written (at its fsync) and says so, to be killed
#: there: what a SIGKILLed ``pytest-benchsdk report`` leaves.
_STOPPED_WRITER = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    from pytest_benchsdk._base import files

    def stop(fd):
        print("written", flush=True)
        time.sleep(600)

    os.fsync = stop
    files.write_atomically(Path(sys.argv[1]), "new " * 500_000)
    """
)


def _stopped_writer(path: Path) -> subprocess.Popen[str]:
    writer = subprocess.Popen(
        [sys.executable, "-c", _STOPPED_WRITER, str(path)], stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout is not None
    assert writer.stdout.readline().strip() == "written"
    return writer


def test_the_next_writer_removes_the_partial_files_of_killed_writers_not_of_live_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("plotly")
    store = tmp_path / "benchsdk.sqlite3"
    write_runs(store, runs=2)
    report = tmp_path / "r.html"
    assert cli.main(["--store", str(store), "report", "-o", str(report)]) == 0
    before = report.read_text()

    killed = [_stopped_writer(report) for _ in range(2)]
    for writer in killed:
        writer.kill()
        writer.wait()
    partials = sorted(tmp_path.glob(".r.html.*.partial"))
    assert len(partials) == 2  # what the issue found: left behind, nothing removes them
    assert all(p.stat().st_size == 2_000_000 for p in partials)
    assert report.read_text() == before  # the old report stays whole

    live = _stopped_writer(report)  # a writer at work now
    try:
        (live_partial,) = set(tmp_path.glob(".r.html.*.partial")) - set(partials)
        # The real CLI writer of the same file is the next writer.
        assert cli.main(["--store", str(store), "report", "-o", str(report)]) == 0
        capsys.readouterr()
        assert sorted(tmp_path.glob(".r.html.*.partial")) == [live_partial]
        assert report.read_text().startswith("<!DOCTYPE html>")
    finally:
        live.kill()
        live.wait()
    # Once that writer is gone too, its partial file goes with the next write (any writer).
    write_atomically(report, "third")
    assert list(tmp_path.glob(".r.html.*.partial")) == []
    assert report.read_text() == "third"


def test_only_partial_files_of_the_same_target_are_removed(tmp_path: Path) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    pid = int(gone.stdout)  # a process that has exited (and been reaped)
    ours = [
        tmp_path / f".out.json.{pid}-0a1b2c3d.partial",
        tmp_path / f".out.json.{pid}-0a1b2c3d.partial-wal",
    ]
    others = [
        tmp_path / f".out.json.other.{pid}-0a1b2c3d.partial",  # another file's
        tmp_path / f".out.jsonx.{pid}-0a1b2c3d.partial",
        tmp_path / f".out.json.{pid}-notahex.partial",
        tmp_path / "out.json.partial",
    ]
    for path in (*ours, *others):
        path.write_text("x")
    assert sorted(remove_abandoned_partials(tmp_path / "out.json")) == sorted(ours)
    assert all(path.exists() for path in others)
    assert remove_abandoned_partials(tmp_path / "missing" / "out.json") == []
