"""Grouped record commits never lose a record: each record is in the store's journal when
``add_record`` returns, a process SIGKILLed before its group commits leaves the journal behind,
and the next writable open of the store (a session, ``--bench-resubmit``) commits every record
and its log lines exactly once. A live session's journal is never taken over."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from helpers.processes import Session
from helpers.sessions import bench, store_path
from helpers.store_processes import ENV, journal_then_wait
from pytest_benchsdk.records import TaskRecord
from pytest_benchsdk.results import stored_status
from pytest_benchsdk.store import ResultStore
from pytest_benchsdk.store._journal import JOURNAL_INFIX


def _journals(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f"{path.name}{JOURNAL_INFIX}*"))


def _begin(store: ResultStore) -> str:
    return store.begin_run(
        benchmark_slug="journal",
        benchmark_name="Journal",
        file=None,
        knobs={},
        participants=["p"],
        config_snapshot={},
        environment=ENV,
        dry_run=True,
    )


def _counts(path: Path) -> tuple[int, int]:
    """(records, log lines) committed, read without replaying anything."""
    with ResultStore(path, read_only=True) as store:
        (run,) = store.list_runs()
        return run.record_count, sum(
            len(store.log_lines(run.run_id, name)) for name in run.participants
        )


@pytest.mark.slow
def test_a_process_killed_before_its_group_commits_loses_no_record(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    ctx = multiprocessing.get_context("spawn")
    journalled, release = ctx.Event(), ctx.Event()
    child = ctx.Process(target=journal_then_wait, args=(str(path), 40, journalled, release))
    child.start()
    try:
        assert journalled.wait(120), "the child never journalled its records"
        # The window: the first record committed at once, the other 39 only journalled.
        assert _counts(path) == (1, 1)
        (journal,) = _journals(path)
        assert len(journal.read_text().splitlines()) == 39
        with ResultStore(path) as store:  # the owner is alive: its journal is left alone
            assert store.list_runs()[0].record_count == 1
        assert journal.exists()
        os.kill(child.pid, signal.SIGKILL)
        child.join(30)
    finally:
        if child.is_alive():
            child.kill()
    assert child.exitcode == -signal.SIGKILL
    with ResultStore(path) as store:  # the next open commits the dead process's journal
        (run,) = store.list_runs()
        (records,) = store.participant_records(run.run_id)
        assert [r.task_index for r in records.records] == list(range(40))
        assert store.log_lines(run.run_id, "p") == [f"line {i}" for i in range(40)]
    assert _journals(path) == []


def test_a_journal_replayed_again_adds_nothing_twice(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    with ResultStore(path, group_records=True) as store:
        run_id = _begin(store)
        store.add_record(run_id, "p", TaskRecord(task_index=0, status="success"), ["zero"])
        store.add_record(run_id, "p", TaskRecord(task_index=1, status="success"), ["one"])
        (journal,) = _journals(path)
        # What a kill right after the group commit, before the journal is emptied, leaves.
        left = journal.read_bytes()
        assert left.count(b"\n") == 1
    orphan = path.with_name(f"{path.name}{JOURNAL_INFIX}orphan")
    # And a line the kill cut short, inside a character of a log line.
    orphan.write_bytes(left + '["torn", "lïne"'.encode()[:-4])
    with ResultStore(path) as store:
        (run,) = store.list_runs()
        assert run.record_count == 2
        assert store.log_lines(run.run_id, "p") == ["zero", "one"]
    assert not orphan.exists()


def test_a_line_torn_inside_its_record_is_skipped_and_earlier_lines_still_replay(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.sqlite3"
    with ResultStore(path, group_records=True) as store:
        run_id = _begin(store)
        store.add_record(run_id, "p", TaskRecord(task_index=0, status="success"), ["zero"])
        store.add_record(run_id, "p", TaskRecord(task_index=1, status="success"), ["one"])
        store.add_record(run_id, "p", TaskRecord(task_index=2, status="success"), ["two"])
        (journal,) = _journals(path)
        one, two = journal.read_bytes().splitlines()
    # The record's JSON follows the line's own JSON after a tab, unescaped.
    _, tab, wire = two.partition(b"\t")
    assert tab
    assert json.loads(wire)["taskIndex"] == 2
    assert b'\\"' not in wire
    orphan = path.with_name(f"{path.name}{JOURNAL_INFIX}orphan")
    # Task 1's line as earlier versions wrote it (the record's JSON inside the line's), and
    # task 2's cut short inside its record, as a kill mid-write leaves it.
    run, participant, index, status, received, logs = json.loads(one.partition(b"\t")[0])
    earlier = json.dumps(
        [run, participant, index, status, one.partition(b"\t")[2].decode(), received, logs]
    )
    orphan.write_bytes(earlier.encode() + b"\n" + two[: len(two) - 5])
    with sqlite3.connect(path) as conn:  # as if only task 0 had committed before the kill
        conn.execute("DELETE FROM records WHERE task_index > 0")
        conn.execute("DELETE FROM log_lines WHERE line != 'zero'")
    conn.close()
    with ResultStore(path) as store:
        (stored,) = store.participant_records(store.list_runs()[0].run_id)
        assert [r.task_index for r in stored.records] == [0, 1]
        assert store.log_lines(run_id, "p") == ["zero", "one"]
    assert not orphan.exists()


def test_every_read_and_write_sees_the_grouped_records(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    with ResultStore(path, group_records=True) as store:
        run_id = _begin(store)
        for i in range(5):
            store.add_record(run_id, "p", TaskRecord(task_index=i, status="success"))
        assert store.get_run(run_id).record_count == 5
        assert _counts(path)[0] == 5  # committed by that read, for other processes too
        store.add_record(run_id, "p", TaskRecord(task_index=5, status="success"))
        store.finish_run(run_id, "passed")
    assert _counts(path)[0] == 6
    assert _journals(path) == []


def test_a_group_no_later_record_completes_is_committed_by_itself(tmp_path: Path) -> None:
    # The benchmark goes quiet after a few records (its next iterations are long): another
    # reader of the store still sees every record, without this store doing anything else.
    path = tmp_path / "s.sqlite3"
    with ResultStore(path, group_records=True) as store:
        run_id = _begin(store)
        for i in range(3):
            store.add_record(run_id, "p", TaskRecord(task_index=i, status="success"))
        deadline = time.monotonic() + 60  # a bound for a stuck test, not a timing claim
        while _counts(path)[0] < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _counts(path)[0] == 3


def test_an_unknown_run_is_refused_at_once(tmp_path: Path) -> None:
    from pytest_benchsdk.store import UnknownRunError

    with ResultStore(tmp_path / "s.sqlite3", group_records=True) as store:
        with pytest.raises(UnknownRunError, match="no run 'nope'"):
            store.add_record("nope", "p", TaskRecord(task_index=0, status="success"))
        _begin(store)  # and the store still works


FAST_THEN_STUCK = bench(
    'participants=[Participant("p1")], iterations=30',
    """
    import pathlib, time

    @define_task
    def task(task_index, log):
        log(f"iteration {task_index}")
        if task_index == 29:
            pathlib.Path("stuck").write_text("")
            time.sleep(120)
    """,
)

#: One group for the whole session (no commit by time), so the kill lands in the window.
ONE_GROUP = """
from pytest_benchsdk.store import _journal

_journal.GROUP_SECONDS = 3600.0
"""


def _wait_for_file(path: Path, session: Session, timeout: float = 120) -> None:
    """Until the task says it is stuck (it creates ``path``), or fail with the output."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert session.proc.poll() is None, session.output
        assert time.monotonic() < deadline, session.output
        time.sleep(0.02)


@pytest.mark.slow
def test_a_session_killed_in_the_journal_window_is_whole_after_a_resubmit(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(bench_stuck=FAST_THEN_STUCK)
    pytester.makeconftest(ONE_GROUP)
    path = store_path(pytester)
    session = Session(pytester.path, "--bench", "--bench-dry-run", "-p", "no:xdist")
    try:
        _wait_for_file(pytester.path / "stuck", session)
        # 29 records accepted: the first committed, 28 only in the journal.
        assert _counts(path) == (1, 1)
        assert len(_journals(path)) == 1
        os.kill(session.proc.pid, signal.SIGKILL)
        session.proc.wait(30)
    finally:
        session.kill()
    result = pytester.runpytest_inprocess("--bench-resubmit")
    assert result.ret == 0, result.stdout.str()
    assert _counts(path) == (29, 29)
    assert _journals(path) == []
    with ResultStore(path, read_only=True) as store:
        (run,) = store.list_runs()
        # Killed before any status was written: the replay of its journal says the run did
        # not finish (it would otherwise read "running" for ever).
        assert run.status == "interrupted"
        # What ran against what the benchmark planned (not "29 of 29": the kill left no count).
        assert stored_status(store, run).text() == "interrupted (29 of 30 iterations ran)"
        lines = store.log_lines(run.run_id, "p1")
    assert [line.rsplit("] ", 1)[-1] for line in lines] == [f"iteration {i}" for i in range(29)]
