"""A damaged store (issue 32, item 1) and runs whose process is gone (item 6), on real files
and real processes: random bytes written over a real store's pages, SIGKILLed writers.

A damaged store is refused when it is opened (SQLite's quick_check) and never written to;
damage met by a later statement stops every write after it, and the journal keeps the
records; ``check_store`` and ``recover_store`` (the ``store`` CLI) check one and salvage what
can be read into a new file. A run still ``running`` whose process is certainly gone is marked
``interrupted`` by the next writable open; a live process's run never is.
"""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from helpers.damage import PAGE, damage, digest
from helpers.store_processes import ENV
from pytest_benchsdk.records import TaskRecord
from pytest_benchsdk.store import (
    ResultStore,
    StoreCorruptError,
    StoreError,
    _connection,
    _journal,
    check_store,
    recover_store,
)
from pytest_benchsdk.store._owner import current_owner, owner_gone


def _begin(store: ResultStore, slug: str = "demo", participants: tuple[str, ...] = ("p",)) -> str:
    return store.begin_run(
        benchmark_slug=slug,
        benchmark_name=slug.title(),
        file=None,
        knobs={},
        participants=list(participants),
        config_snapshot={},
        environment=ENV,
        dry_run=True,
    )


def _filled(path: Path, records: int = 3000) -> str:
    """A store with one run of ``records`` records (a log line each): about 1.5 MB of pages."""
    with ResultStore(path) as store:
        run_id = _begin(store)
        for i in range(records):
            record = TaskRecord(task_index=i, status="success", data={"value": i, "pad": "x" * 200})
            store.add_record(run_id, "p", record, [f"line {i} " + "y" * 100])
    return run_id


# --- a damaged store --------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("read_only", [False, True], ids=["writable", "read-only"])
def test_a_damaged_store_is_refused_when_opened_and_left_as_it_was(
    tmp_path: Path, read_only: bool
) -> None:
    path = tmp_path / "s.sqlite3"
    _filled(path)
    damage(path)
    before = digest(path)
    with pytest.raises(StoreCorruptError) as caught:
        ResultStore(path, read_only=read_only)
    message = str(caught.value)
    assert f"the results store {path} is damaged (SQLite: " in message
    assert "nothing more is written to it" in message
    assert f"pytest-benchsdk --store {path} store check" in message
    assert f"pytest-benchsdk --store {path} store recover -o NEW.sqlite3" in message
    assert "\n" not in message
    assert digest(path) == before


def test_damage_met_by_a_statement_stops_every_later_write_and_the_journal_keeps_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.sqlite3"
    _filled(path)
    # Group every record until the store is closed: the damage is met by the group's commit.
    monkeypatch.setattr(_journal, "GROUP_SECONDS", 3600.0)
    store = ResultStore(path, group_records=True)
    run_id = _begin(store, "second")
    store.add_record(run_id, "p", TaskRecord(task_index=0, status="success"))  # commits at once
    # The pages the connection holds in memory are dropped, then the file is damaged under it.
    conn = store._db._conn
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("PRAGMA shrink_memory")
    damage(path, start=4 * PAGE, length=(path.stat().st_size // PAGE - 8) * PAGE)
    for i in range(1, 6):
        store.add_record(run_id, "p", TaskRecord(task_index=i, status="success"), [f"l{i}"])
    with pytest.raises(StoreCorruptError):
        store.save_analysis(run_id, "warnings", [])  # commits the group first: meets the damage
    assert store.damaged is not None
    damaged = digest(path)
    wal = Path(f"{path}-wal")
    wal_before = wal.read_bytes() if wal.exists() else b""
    # Every later write is refused without touching the file; records go to the journal.
    with pytest.raises(StoreCorruptError):
        store.finish_run(run_id, "interrupted")
    for i in range(6, 9):
        store.add_record(run_id, "p", TaskRecord(task_index=i, status="success"))
    journal = store.journal_path
    assert journal is not None
    store.close()
    assert digest(path) == damaged
    assert (wal.read_bytes() if wal.exists() else b"") == wal_before
    assert Path(journal).exists()  # kept for recover
    # The next open finds the damage too, and leaves the journal alone.
    with pytest.raises(StoreCorruptError):
        ResultStore(path)
    assert Path(journal).exists()
    done = recover_store(path, tmp_path / "new.sqlite3")
    assert done.journals == 1
    assert done.journal_records == 8  # tasks 1 to 8: task 0 was committed to the damaged file
    with ResultStore(tmp_path / "new.sqlite3") as new:
        (records,) = new.participant_records(run_id)
        assert {r.task_index for r in records.records} >= set(range(1, 9))
        assert new.log_lines(run_id, "p")[-5:] == [f"l{i}" for i in range(1, 6)]


def test_check_store_runs_sqlites_integrity_check(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    _filled(path, 500)
    healthy = check_store(path)
    assert healthy.ok
    assert (healthy.schema, healthy.runs) == (_connection.SCHEMA_VERSION, 1)
    damage(path)
    before = digest(path)
    found = check_store(path)
    assert not found.ok
    assert found.problems
    assert digest(path) == before
    with pytest.raises(StoreError, match="no results store"):
        check_store(tmp_path / "missing.sqlite3")


@pytest.mark.slow
def test_recover_copies_what_can_be_read_into_a_new_file(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    run_id = _filled(path)
    damage(path)
    before = digest(path)
    target = tmp_path / "new.sqlite3"
    done = recover_store(path, target)
    assert digest(path) == before  # never in place
    assert done.copied["runs"] == 1
    assert 0 < done.copied["records"] < 3000
    assert done.damaged_parts  # the damaged pages were skipped, not the rest of the table
    assert check_store(target).ok
    with ResultStore(target) as new:
        (run,) = new.list_runs()
        assert run.run_id == run_id
        (records,) = new.participant_records(run_id)
        indexes = [r.task_index for r in records.records]
        # Rows on both sides of the damage came back, each one whole.
        assert indexes[0] == 0
        assert indexes[-1] == 2999
        assert all(r.data["pad"] == "x" * 200 for r in records.records)
    # A second recover into the same file, or into the store itself, is refused.
    for wrong in (target, path):
        with pytest.raises(StoreError, match="recover"):
            recover_store(path, wrong)
    assert digest(path) == before


def test_recover_rebuilds_a_run_whose_own_row_is_lost(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    with ResultStore(path) as store:
        lost = _begin(store, "lost", ("a", "b"))
        for name in ("b", "a"):
            store.add_record(lost, name, TaskRecord(task_index=0, status="success"))
    conn = sqlite3.connect(path)  # foreign keys off: the run's row goes, its records stay
    conn.execute("DELETE FROM runs WHERE run_id = ?", (lost,))
    conn.commit()
    conn.close()
    done = recover_store(path, tmp_path / "new.sqlite3")
    assert done.rebuilt_runs == 1
    with ResultStore(tmp_path / "new.sqlite3") as new:
        run = new.get_run(lost)
        assert (run.benchmark_slug, run.status, run.participants) == (
            "unknown",
            "interrupted",
            ("b", "a"),
        )
        assert run.record_count == 2


# --- runs whose process is gone ---------------------------------------------------------------

WRITER = textwrap.dedent(
    """
    import sys, time
    from helpers.store_processes import ENV
    from pytest_benchsdk.records import TaskRecord
    from pytest_benchsdk.store import ResultStore

    store = ResultStore(sys.argv[1])
    run_id = store.begin_run(
        benchmark_slug="killed", benchmark_name="Killed", file=None, knobs={},
        participants=["p"], config_snapshot={}, environment=ENV, dry_run=True,
    )
    for i in range(int(sys.argv[2])):
        store.add_record(run_id, "p", TaskRecord(task_index=i, status="success"))
    print(run_id, flush=True)
    time.sleep(600)
    """
)


def _writer(path: Path, records: int) -> tuple[subprocess.Popen[str], str]:
    """A process that begins a run, stores ``records`` records, says the run id and waits."""
    tests = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([tests, *sys.path])}
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), str(records)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    run_id = proc.stdout.readline().strip()
    assert run_id, "the writer died before it began its run"
    return proc, run_id


@pytest.mark.slow
@pytest.mark.parametrize("reaped", [True, False], ids=["reaped", "zombie"])
def test_a_run_whose_process_was_killed_is_marked_interrupted_by_the_next_open(
    tmp_path: Path, reaped: bool
) -> None:
    path = tmp_path / "s.sqlite3"
    ResultStore(path).close()
    proc, run_id = _writer(path, 3)
    try:
        with ResultStore(path) as store:  # alive: left alone
            assert store.get_run(run_id).status == "running"
            assert store.abandoned == ()
        os.kill(proc.pid, signal.SIGKILL)
        if reaped:
            proc.wait(60)
        else:  # killed but not reaped yet: a zombie is gone too
            deadline = time.monotonic() + 60
            while _state(proc.pid) != "Z" and time.monotonic() < deadline:
                time.sleep(0.01)
        with ResultStore(path, read_only=True) as reader:  # reading marks nothing
            assert reader.get_run(run_id).status == "running"
        with ResultStore(path) as store:
            run = store.get_run(run_id)
            assert run.status == "interrupted"
            assert run.record_count == 3
            assert [r.run_id for r in store.abandoned] == [run_id]
            (line,) = store.abandoned_lines()
            assert line == (
                f"run {run_id} (killed) was left running by a session that is gone: marked "
                "interrupted, with the 3 record(s) it holds"
            )
            # It ended when its last record came, as far as the store can tell.
            rows = store._db.read(
                "SELECT MAX(received_at) FROM records WHERE run_id = ?", (run_id,)
            )
            assert run.finished_at == rows[0][0]
        with ResultStore(path) as again:
            assert again.abandoned == ()
    finally:
        proc.kill()
        proc.wait(60)


def _state(pid: int) -> str:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "?"
    return text.rpartition(")")[2].split()[0]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="start times from /proc")
def test_only_a_process_that_is_certainly_gone_counts_as_gone() -> None:
    mine = current_owner()
    host, pid, start, boot, namespace = mine.split("|")
    assert (host, pid) == (socket.gethostname(), str(os.getpid()))
    assert all((start, boot, namespace))
    assert not owner_gone(mine)
    # The same process id with another start time: a later process reuses the id.
    assert owner_gone("|".join((host, pid, str(int(start) + 1), boot, namespace)))
    # The host restarted since.
    assert owner_gone("|".join((host, pid, start, "another-boot", namespace)))
    # Cannot be told from here: another host, another container's PID namespace, no owner, an
    # owner written by something else.
    assert not owner_gone("|".join(("elsewhere", pid, "1", boot, namespace)))
    assert not owner_gone("|".join((host, "999999999", "1", boot, "pid:[1]")))
    assert not owner_gone(None)
    assert not owner_gone("sess-1")
    assert not owner_gone(f"{host}|0")
