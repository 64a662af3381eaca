"""Local results store: round trips, idempotency, ordering, outbox, durability, concurrency."""

from __future__ import annotations

import inspect
import json
import math
import multiprocessing
import os
import pickle
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

import pytest_benchsdk.store as store_package
from helpers.store_processes import ENV, concurrent_writer, open_fresh
from pytest_benchsdk._base.js import js_json
from pytest_benchsdk.records import StepRecord, TaskRecord
from pytest_benchsdk.scoring import ScoreResult
from pytest_benchsdk.store import (
    OUTBOX_STATES,
    SCHEMA_VERSION,
    ResultStore,
    StoreError,
    UnknownRunError,
)


def begin(store: ResultStore, participants: tuple[str, ...] = ("e2b", "modal"), **kw: Any) -> str:
    fields: dict[str, Any] = {
        "benchmark_slug": "sandbox-tti",
        "benchmark_name": "Sandbox TTI",
        "file": "bench_sandbox.py",
        "knobs": {"iterations": 3, "concurrency": 1, "staggerDelayMs": 0, "groupBy": "participant"},
        "participants": participants,
        "config_snapshot": {"benchmarkSlug": "sandbox-tti", "trigger": ENV.trigger_to_wire()},
        "environment": ENV,
        "dry_run": False,
    }
    fields.update(kw)
    return store.begin_run(**fields)


def record(index: int, status: str = "success", **data: Any) -> TaskRecord:
    return TaskRecord(
        task_index=index,
        status=status,
        started_at="2024-01-02T03:04:05.000Z",
        completed_at="2024-01-02T03:04:05.250Z",
        latency_ms=250.5,
        data=data or {"ttiMs": 40 + index},
    )


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ResultStore]:
    with ResultStore(tmp_path / "results.sqlite3") as opened:
        yield opened


# --- public interface -----------------------------------------------------------------------------

STORE_API = [
    "OUTBOX_STATES",
    "RUN_STATUSES",
    "SCHEMA_VERSION",
    "NamedBaseline",
    "OutboxEntry",
    "OutboxTarget",
    "ResultStore",
    "StoreCheck",
    "StoreCorruptError",
    "StoreError",
    "StoreReadOnlyError",
    "StoreRecovery",
    "StoredRun",
    "UnknownRunError",
    "check_store",
    "recover_store",
]


def test_store_all_is_pinned_and_sorted() -> None:
    assert list(store_package.__all__) == STORE_API
    # sorted as ruff's RUF022 wants it: CONSTANTS first, then classes, each alphabetically
    assert sorted(STORE_API, key=lambda name: (not name.isupper(), name)) == STORE_API
    assert len(set(STORE_API)) == len(STORE_API)


@pytest.mark.parametrize("name", STORE_API)
def test_store_public_name_belongs_to_the_package(name: str) -> None:
    value = getattr(store_package, name)
    if isinstance(value, type) or inspect.isfunction(value):
        assert value.__module__ == "pytest_benchsdk.store"
        assert value.__qualname__ == name
    else:  # constants carry no __module__
        assert isinstance(value, (int, tuple))


def test_store_public_classes_pickle_by_their_public_name(tmp_path: Path) -> None:
    error = pickle.loads(pickle.dumps(UnknownRunError("no run 'x' in the results store")))
    assert type(error) is UnknownRunError
    assert str(error) == "no run 'x' in the results store"
    with ResultStore(tmp_path / "results.sqlite3") as opened:
        run_id = begin(opened)
        opened.outbox_put(run_id, "record", "k", {"a": 1})
        entry = opened.outbox_get("k")
        run = opened.get_run(run_id)
    assert pickle.loads(pickle.dumps(entry)) == entry
    assert pickle.loads(pickle.dumps(run)) == run
    for value in (error, entry, run):
        data = pickle.dumps(value)
        assert b"pytest_benchsdk.store" in data
        assert b"pytest_benchsdk.store._" not in data  # never a private module's name


# --- opening, schema, migrations ------------------------------------------------------------------


def test_creates_parent_directories_and_current_schema(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "results.sqlite3"
    with ResultStore(path) as store:
        assert store.path == path
        assert store.list_runs() == []
    assert path.is_file()
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        assert {"runs", "records", "log_lines", "scores", "outbox", "run_state"} <= tables
    finally:
        conn.close()


def test_migrates_an_existing_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite3"
    path.write_bytes(b"")
    with ResultStore(path) as store:
        run_id = begin(store)
        assert store.get_run(run_id).status == "running"


def test_migrates_an_empty_database(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite3"
    sqlite3.connect(path).close()
    with ResultStore(path) as store:
        begin(store)
    with ResultStore(path) as store:  # second open: nothing to migrate, data kept
        assert len(store.list_runs()) == 1


def test_refuses_a_newer_schema(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StoreError, match="newer than this pytest-benchsdk") as info:
        ResultStore(path)
    assert str(path) in str(info.value)


def test_a_reader_refuses_an_empty_database_it_cannot_migrate(tmp_path: Path) -> None:
    # What a command meets when it opens a store a session has only just created (the file,
    # not yet its schema): a reader migrates nothing, and says why it cannot read.
    path = tmp_path / "results.sqlite3"
    sqlite3.connect(path).close()
    with pytest.raises(StoreError) as info:
        ResultStore(path, read_only=True)
    assert str(info.value) == (
        f"cannot read results store {path}: it holds no results yet (an empty database)"
    )
    assert path.stat().st_size == 0  # nothing written


def test_a_reader_creates_no_store(tmp_path: Path) -> None:
    # A command reading a store that is not there says so, and leaves nothing behind.
    path = tmp_path / "results.sqlite3"
    with pytest.raises(StoreError) as info:
        ResultStore(path, read_only=True)
    assert str(info.value) == f"cannot open results store {path}: no such file"
    assert list(tmp_path.iterdir()) == []


def test_refuses_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite3"
    path.write_bytes(b"this is not sqlite at all, " * 100)
    with pytest.raises(StoreError, match="cannot use results store") as info:
        ResultStore(path)
    assert str(path) in str(info.value)


def test_a_file_locked_too_long_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite3"
    ResultStore(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        with pytest.raises(StoreError, match=r"kept it locked for more than 0\.2 s"):
            ResultStore(path, busy_timeout_s=0.2)
    finally:
        holder.close()


def test_unusable_path_is_a_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreError, match="cannot open results store"):
        ResultStore(blocker / "results.sqlite3")


# --- runs -----------------------------------------------------------------------------------------


def test_run_round_trip(store: ResultStore) -> None:
    run_id = begin(store, session_id="sess-1", dry_run=True)
    assert len(run_id) == 32
    int(run_id, 16)
    run = store.get_run(run_id)
    assert run.run_id == run_id
    assert run.benchmark_slug == "sandbox-tti"
    assert run.benchmark_name == "Sandbox TTI"
    assert run.file == "bench_sandbox.py"
    assert run.knobs == {
        "iterations": 3,
        "concurrency": 1,
        "staggerDelayMs": 0,
        "groupBy": "participant",
    }
    assert run.participants == ("e2b", "modal")
    assert run.config_snapshot["trigger"] == {"source": "schedule", "event": "schedule"}
    assert run.environment == ENV
    assert run.dry_run is True
    assert run.session_id == "sess-1"
    assert run.status == "running"
    assert run.started_at.endswith("Z")
    assert run.finished_at is None
    assert run.platform_run_id is None
    assert run.dashboard_url is None
    assert run.record_count == 0


def test_finish_and_platform_run(store: ResultStore) -> None:
    run_id = begin(store)
    store.set_platform_run(run_id, "run-1", "https://p.example/acme/benchmarks/s/runs/run-1")
    store.finish_run(run_id, "interrupted")
    run = store.get_run(run_id)
    assert run.status == "interrupted"
    assert run.finished_at is not None
    assert run.platform_run_id == "run-1"
    assert run.dashboard_url == "https://p.example/acme/benchmarks/s/runs/run-1"
    with pytest.raises(ValueError, match="passed, failed, interrupted"):
        store.finish_run(run_id, "done")


def test_a_record_is_stored_as_its_js_json_text(store: ResultStore) -> None:
    # One write statement per record: the text is JSON.stringify's, NaN and Infinity as null.
    run_id = begin(store)
    plain = record(0, ttiMs=40.5, label="é", nested={"a": [1, 2.5, None]})
    odd = record(1, ttiMs=math.nan, other=math.inf)
    store.add_record(run_id, "e2b", plain)
    store.add_record(run_id, "e2b", odd, log_lines=["one", "two"])
    conn = sqlite3.connect(store.path)
    try:
        texts = [w for (w,) in conn.execute("SELECT wire FROM records ORDER BY task_index")]
    finally:
        conn.close()
    assert texts == [js_json(plain.to_wire()), js_json(odd.to_wire())]
    assert json.loads(texts[1])["data"] == {"ttiMs": None, "other": None}
    assert store.log_lines(run_id, "e2b") == ["one", "two"]


def test_unknown_run(store: ResultStore) -> None:
    with pytest.raises(UnknownRunError, match="no run 'nope'"):
        store.get_run("nope")
    with pytest.raises(KeyError):
        store.finish_run("nope", "passed")
    with pytest.raises(UnknownRunError):
        store.set_platform_run("nope", "r", None)
    with pytest.raises(UnknownRunError):
        store.add_record("nope", "e2b", record(0))
    with pytest.raises(UnknownRunError):
        store.add_log_lines("nope", "e2b", ["x"])
    with pytest.raises(UnknownRunError):
        store.save_scores("nope", [])
    with pytest.raises(UnknownRunError):
        store.outbox_put("nope", "record", "k", {})
    with pytest.raises(UnknownRunError):
        store.state_set("nope", "k", 1)
    assert store.list_runs() == []


def test_list_runs_newest_first_limit_and_slug(store: ResultStore) -> None:
    first = begin(store)
    other = begin(store, benchmark_slug="storage", benchmark_name="Storage")
    last = begin(store)
    store.add_record(last, "e2b", record(0))
    store.add_record(last, "modal", record(0))
    assert [r.run_id for r in store.list_runs()] == [last, other, first]
    assert [r.run_id for r in store.list_runs(limit=2)] == [last, other]
    assert [r.run_id for r in store.list_runs(benchmark_slug="sandbox-tti")] == [last, first]
    assert store.list_runs(benchmark_slug="none") == []
    assert store.list_runs()[0].record_count == 2


# --- records --------------------------------------------------------------------------------------

RICH_WIRE: dict[str, Any] = {
    "taskIndex": 7,
    "status": "error",
    "startedAt": "2024-01-02T03:04:05.000Z",
    "completedAt": "2024-01-02T03:04:06.500Z",
    "latencyMs": 1500.25,
    "firstCommandMs": None,
    "errorCode": "step_timeout",
    "steps": [
        {"name": "create", "status": "success", "latencyMs": 12.5, "data": {"id": "sb-1"}},
        {
            "name": "exec",
            "status": "error",
            "errorCode": "step_timeout",
            "timeoutMs": 10,
            "concurrency": 3,
        },
        {"name": "task", "status": "success", "errorCode": None},
    ],
    "data": {"phase": "cold", "nested": {"list": [1, 2.5, "x", None, True]}, "unicode": "ä✓"},
}


def test_record_wire_round_trip(store: ResultStore) -> None:
    run_id = begin(store, participants=("e2b",))
    rich = TaskRecord.from_wire(RICH_WIRE)
    store.add_record(run_id, "e2b", rich)
    (participant,) = store.participant_records(run_id)
    assert participant.participant == "e2b"
    assert participant.records == (rich,)
    assert participant.records[0].to_wire() == RICH_WIRE


def test_record_built_in_python_round_trips(store: ResultStore) -> None:
    run_id = begin(store, participants=("e2b",))
    built = TaskRecord(
        task_index=0,
        status="success",
        latency_ms=3.0,
        steps=(StepRecord("probe", "success", latency_ms=5),),
        data={"bytes": 10},
    )
    store.add_record(run_id, "e2b", built)
    assert store.participant_records(run_id)[0].records == (built,)


def test_add_record_is_idempotent(store: ResultStore) -> None:
    run_id = begin(store)
    store.add_record(run_id, "e2b", record(0, "error"))
    store.add_record(run_id, "e2b", record(0, "success", ttiMs=99))
    store.add_record(run_id, "modal", record(0))  # same index, other participant: separate
    records = {p.participant: p.records for p in store.participant_records(run_id)}
    assert records["e2b"] == (record(0, "success", ttiMs=99),)
    assert records["modal"] == (record(0),)
    assert store.get_run(run_id).record_count == 2


def test_participants_in_declared_order_and_records_by_task_index(store: ResultStore) -> None:
    run_id = begin(store, participants=("modal", "e2b", "daytona"))
    for index in (2, 0, 1):
        store.add_record(run_id, "e2b", record(index))
    store.add_record(run_id, "stray", record(0))  # not declared: kept, listed last
    store.add_record(run_id, "modal", record(1))
    store.add_record(run_id, "modal", record(0))
    result = store.participant_records(run_id)
    assert [p.participant for p in result] == ["modal", "e2b", "daytona", "stray"]
    assert [r.task_index for r in result[0].records] == [0, 1]
    assert [r.task_index for r in result[1].records] == [0, 1, 2]
    assert result[2].records == ()


def test_records_are_kept_per_run(store: ResultStore) -> None:
    one, two = begin(store), begin(store)
    store.add_record(one, "e2b", record(0))
    assert [p.records for p in store.participant_records(two)] == [(), ()]


def test_non_finite_numbers_are_stored_as_null_like_json_stringify(store: ResultStore) -> None:
    run_id = begin(store, participants=("e2b",))
    store.add_record(run_id, "e2b", record(0, ratio=math.nan, big=math.inf))
    (participant,) = store.participant_records(run_id)
    assert participant.records[0].data == {"ratio": None, "big": None}


# --- logs -----------------------------------------------------------------------------------------


def test_log_lines_append_in_order_per_participant(store: ResultStore) -> None:
    run_id = begin(store)
    store.add_log_lines(run_id, "e2b", ["[0] info one", "[0] info two"])
    store.add_log_lines(run_id, "modal", ["[0] warn other"])
    store.add_log_lines(run_id, "e2b", ["[1] error three ✓"])
    store.add_log_lines(run_id, "e2b", [])
    assert store.log_lines(run_id, "e2b") == ["[0] info one", "[0] info two", "[1] error three ✓"]
    assert store.log_lines(run_id, "modal") == ["[0] warn other"]
    assert store.log_lines(run_id, "nobody") == []
    with pytest.raises(TypeError, match="not one string"):
        store.add_log_lines(run_id, "e2b", "one string")


# --- scores ---------------------------------------------------------------------------------------


def score_wire(provider: str, composite: float) -> dict[str, Any]:
    return {
        "provider": provider,
        "dimensions": {"region": "eu"},
        "metrics": [{"name": "ttiMs", "unit": "ms", "median": 41.5, "p95": 80, "p99": 99.25}],
        "compositeScore": composite,
        "successRate": 0.5,
        "skipped": False,
    }


def test_scores_round_trip_and_replace(store: ResultStore) -> None:
    run_id = begin(store)
    assert store.scores(run_id) == []
    first = [
        ScoreResult.from_wire(score_wire("e2b", 88.12)),
        ScoreResult.from_wire(score_wire("modal", 70)),
    ]
    store.save_scores(run_id, first)
    assert store.scores(run_id) == first
    assert [s.to_wire() for s in store.scores(run_id)] == [
        score_wire("e2b", 88.12),
        score_wire("modal", 70),
    ]
    second = [ScoreResult.from_wire(score_wire("modal", 91))]
    store.save_scores(run_id, second)
    assert store.scores(run_id) == second
    store.save_scores(run_id, [])
    assert store.scores(run_id) == []


# --- outbox ---------------------------------------------------------------------------------------


def test_outbox_put_is_idempotent_on_key(store: ResultStore) -> None:
    run_id = begin(store)
    first = store.outbox_put(run_id, "record", f"{run_id}:record:e2b:0", {"taskIndex": 0})
    again = store.outbox_put(run_id, "record", f"{run_id}:record:e2b:0", {"taskIndex": 999})
    assert again == first
    (entry,) = store.outbox_pending(run_id)
    assert entry.id == first
    assert entry.payload == {"taskIndex": 0}
    assert entry.kind == "record"
    assert entry.key == f"{run_id}:record:e2b:0"
    assert entry.state == "pending"
    assert entry.attempts == 0
    assert entry.last_error is None
    assert entry.response is None
    assert entry.depends_on is None
    assert entry.created_at.endswith("Z")
    assert entry.sent_at is None


def test_outbox_pending_in_insertion_order_and_sent(store: ResultStore) -> None:
    run_id = begin(store)
    ids = [store.outbox_put(run_id, "batch", f"k{i}", [i, {"x": i}]) for i in (3, 1, 2)]
    assert [e.id for e in store.outbox_pending()] == ids
    assert [e.payload for e in store.outbox_pending(run_id)] == [
        [3, {"x": 3}],
        [1, {"x": 1}],
        [2, {"x": 2}],
    ]
    store.outbox_mark_sent(ids[1], {"ok": True, "runId": "run-1"})
    assert [e.id for e in store.outbox_pending()] == [ids[0], ids[2]]
    sent = store.outbox_get("k1")
    assert sent is not None
    assert sent.state == "sent"
    assert sent.response == {"ok": True, "runId": "run-1"}
    assert sent.attempts == 1
    assert sent.sent_at is not None
    assert store.outbox_get("missing") is None


def test_outbox_failures_retry_or_reject(store: ResultStore) -> None:
    run_id = begin(store)
    retry = store.outbox_put(run_id, "summary", "retry", {"a": 1})
    reject = store.outbox_put(run_id, "summary", "reject", {"b": 2})
    store.outbox_mark_failed(retry, "HTTP 503 Service Unavailable")
    store.outbox_mark_failed(retry, "connection reset")
    store.outbox_mark_failed(reject, "HTTP 422 invalid payload", permanent=True)
    (pending,) = store.outbox_pending()
    assert pending.key == "retry"
    assert pending.state == "failed"
    assert pending.attempts == 2
    assert pending.last_error == "connection reset"
    rejected = store.outbox_get("reject")
    assert rejected is not None
    assert (rejected.state, rejected.attempts) == ("rejected", 1)
    assert rejected.last_error == "HTTP 422 invalid payload"
    store.outbox_mark_sent(retry)
    store.outbox_mark_failed(retry, "late report from a racing sender")
    done = store.outbox_get("retry")
    assert done is not None
    assert (done.state, done.attempts, done.last_error) == ("sent", 3, "connection reset")
    assert store.outbox_pending() == []
    with pytest.raises(KeyError):
        store.outbox_mark_sent(12345)
    with pytest.raises(KeyError):
        store.outbox_mark_failed(12345, "x")


def test_outbox_counts_and_runs_with_pending(store: ResultStore) -> None:
    one, two, three = begin(store), begin(store), begin(store)
    assert store.outbox_counts() == dict.fromkeys(OUTBOX_STATES, 0)
    a = store.outbox_put(two, "record", "a", {})
    store.outbox_put(two, "record", "b", {})
    c = store.outbox_put(one, "record", "c", {})
    d = store.outbox_put(three, "record", "d", {})
    store.outbox_mark_sent(a)
    store.outbox_mark_failed(c, "boom")
    store.outbox_mark_failed(d, "bad", permanent=True)
    assert store.outbox_counts() == {"pending": 1, "failed": 1, "sent": 1, "rejected": 1}
    assert store.outbox_counts(two) == {"pending": 1, "failed": 0, "sent": 1, "rejected": 0}
    assert store.outbox_runs_with_pending() == [two, one]
    assert [e.key for e in store.outbox_pending(one)] == ["c"]


def test_outbox_dependencies(store: ResultStore) -> None:
    run_id = begin(store)
    create = store.outbox_put(run_id, "create-run", "create", {})
    store.outbox_put(run_id, "record", "rec", {}, depends_on="create")
    store.outbox_put(run_id, "record", "orphan", {}, depends_on="not-queued-yet")
    assert [e.key for e in store.outbox_pending(ready_only=True)] == ["create"]
    assert [e.key for e in store.outbox_pending()] == ["create", "rec", "orphan"]
    assert store.outbox_get("rec") is not None
    assert store.outbox_pending()[1].depends_on == "create"
    store.outbox_mark_failed(create, "503")
    assert [e.key for e in store.outbox_pending(ready_only=True)] == ["create"]
    store.outbox_mark_sent(create, {"runId": "run-1"})
    assert [e.key for e in store.outbox_pending(run_id, ready_only=True)] == ["rec"]


def test_outbox_payload_json_values(store: ResultStore) -> None:
    run_id = begin(store)
    for i, payload in enumerate([None, 0, "text", [1, [2]], {"k": {"nested": math.nan}}, True]):
        store.outbox_put(run_id, "raw", f"p{i}", payload)
    assert [e.payload for e in store.outbox_pending()] == [
        None,
        0,
        "text",
        [1, [2]],
        {"k": {"nested": None}},
        True,
    ]


# --- per-run state --------------------------------------------------------------------------------


def test_state_values(store: ResultStore) -> None:
    run_id, other = begin(store), begin(store)
    assert store.state_get(run_id, "platform_run_id") is None
    assert store.state_get(run_id, "platform_run_id", "dflt") == "dflt"
    store.state_set(run_id, "platform_run_id", "run-1")
    store.state_set(run_id, "workers", {"e2b": {"workerId": "w-1", "attemptId": "a-1"}})
    store.state_set(run_id, "platform_run_id", "run-2")
    assert store.state_get(run_id, "platform_run_id") == "run-2"
    assert store.state_get(other, "platform_run_id") is None
    assert store.state_items(run_id) == {
        "platform_run_id": "run-2",
        "workers": {"e2b": {"workerId": "w-1", "attemptId": "a-1"}},
    }
    store.state_set(run_id, "nothing", None)
    assert store.state_get(run_id, "nothing", "dflt") is None


def test_state_increment(store: ResultStore) -> None:
    run_id = begin(store)
    assert store.state_increment(run_id, "seq") == 1
    assert store.state_increment(run_id, "seq") == 2
    assert store.state_increment(run_id, "seq", by=10) == 12
    assert store.state_get(run_id, "seq") == 12
    store.state_set(run_id, "name", "x")
    with pytest.raises(TypeError, match="not an integer"):
        store.state_increment(run_id, "name")


# --- threads --------------------------------------------------------------------------------------


@pytest.mark.slow
def test_main_thread_and_sender_thread_share_one_store(store: ResultStore) -> None:
    run_id = begin(store, participants=("e2b",))
    errors: list[BaseException] = []

    def sender() -> None:
        try:
            for i in range(150):
                entry = store.outbox_put(run_id, "record", f"k{i}", {"i": i})
                store.outbox_pending(run_id)
                store.outbox_mark_sent(entry, {"ok": i})
                store.state_increment(run_id, "seq")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    thread = threading.Thread(target=sender)
    thread.start()
    for i in range(150):
        store.add_record(run_id, "e2b", record(i))
        store.participant_records(run_id) if i % 50 == 0 else None
    thread.join()
    assert errors == []
    assert len(store.participant_records(run_id)[0].records) == 150
    assert store.outbox_counts(run_id)["sent"] == 150
    assert store.state_get(run_id, "seq") == 150


# --- durability and processes ---------------------------------------------------------------------

_WRITER = textwrap.dedent(
    """
    import sys
    from pytest_benchsdk.store import ResultStore
    from pytest_benchsdk.records import TaskRecord

    store = ResultStore(sys.argv[1])
    run_id = sys.argv[2]
    index = 0
    while True:
        store.add_record(run_id, "e2b", TaskRecord(task_index=index, status="success",
                                                   data={"i": index}))
        store.outbox_put(run_id, "record", f"rec-{index}", {"taskIndex": index})
        print(index, flush=True)
        index += 1
    """
)


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_records_survive_sigkill_right_after_add_record(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite3"
    with ResultStore(path) as store:
        run_id = begin(store, participants=("e2b",))
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path), run_id],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    acknowledged = -1
    try:
        while acknowledged < 40:
            line = proc.stdout.readline()
            assert line, f"writer exited early with {proc.wait()}"
            acknowledged = int(line)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    with ResultStore(path) as store:
        (participant,) = store.participant_records(run_id)
        indices = [r.task_index for r in participant.records]
        # Everything acknowledged is there (one more may have committed before the kill).
        assert indices[: acknowledged + 1] == list(range(acknowledged + 1))
        assert len(store.outbox_pending(run_id)) >= acknowledged + 1
        assert store.get_run(run_id).status == "running"


@pytest.mark.slow
def test_two_processes_append_to_one_store(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite3"
    with ResultStore(path) as store:
        shared = begin(store, participants=("p0", "p1"), benchmark_slug="shared")
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs = [
        ctx.Process(target=concurrent_writer, args=(str(path), f"p{i}", 200, barrier))
        for i in range(2)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=300)
    assert [proc.exitcode for proc in procs] == [0, 0]
    with ResultStore(path) as store:
        assert [len(p.records) for p in store.participant_records(shared)] == [200, 200]
        assert store.outbox_counts(shared)["pending"] == 400
        assert store.state_get(shared, "seq") == 400
        own_runs = [r for r in store.list_runs() if r.run_id != shared]
        assert sorted(r.record_count for r in own_runs) == [200, 200]
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()


@pytest.mark.slow
def test_two_processes_create_and_migrate_one_new_file(tmp_path: Path) -> None:
    path = tmp_path / "new" / "results.sqlite3"
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=open_fresh, args=(str(path), barrier)) for _ in range(2)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=120)
    assert [proc.exitcode for proc in procs] == [0, 0]
    with ResultStore(path) as store:
        assert len(store.list_runs()) == 2


def test_sequential_sessions_accumulate_runs(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite3"
    ids = []
    for _ in range(3):
        with ResultStore(path) as store:
            run_id = begin(store)
            store.add_record(run_id, "e2b", record(0))
            store.finish_run(run_id, "passed")
            ids.append(run_id)
    with ResultStore(path) as store:
        runs = store.list_runs()
        assert [r.run_id for r in runs] == ids[::-1]
        assert {r.status for r in runs} == {"passed"}


def test_stored_text_is_the_wire_json(tmp_path: Path) -> None:
    """Other tools (sqlite3 CLI, datasette) can read records and scores as upstream JSON."""
    path = tmp_path / "results.sqlite3"
    with ResultStore(path) as store:
        run_id = begin(store, participants=("e2b",))
        store.add_record(run_id, "e2b", TaskRecord.from_wire(RICH_WIRE))
    conn = sqlite3.connect(path)
    try:
        (wire,) = conn.execute("SELECT wire FROM records").fetchone()
    finally:
        conn.close()
    assert json.loads(wire) == RICH_WIRE


# --- copying and merging runs (the store CLI's merge) -------------------------------------------


def test_put_run_stores_a_run_under_its_own_id_and_replaces_its_metadata(
    store: ResultStore, tmp_path: Path
) -> None:
    run_id = begin(store, run_key="ci-1")
    store.add_record(run_id, "e2b", record(0))
    store.finish_run(run_id, "failed")
    original = store.get_run(run_id)
    with ResultStore(tmp_path / "copy.sqlite3") as other:
        other.put_run(original)
        copied = other.get_run(run_id)
        assert copied == attrs.evolve(original, record_count=0)
        assert copied.run_key == "ci-1"
        assert copied.status == "failed"
        assert copied.finished_at == original.finished_at
        other.put_run(attrs.evolve(original, participants=("modal",), status="passed"))
        again = other.get_run(run_id)
        assert again.participants == ("modal",)
        assert again.status == "passed"
        assert len(other.list_runs()) == 1
    # Replacing the metadata keeps what the run holds.
    store.put_run(attrs.evolve(original, benchmark_name="Renamed"))
    assert store.get_run(run_id).record_count == 1
    assert store.get_run(run_id).benchmark_name == "Renamed"


def test_record_wires_and_replace_records(store: ResultStore) -> None:
    run_id = begin(store)
    store.add_record(run_id, "e2b", record(1), log_lines=["one"])
    store.add_record(
        run_id, "e2b", TaskRecord.from_wire({**record(0).to_wire(), "taskIndex": -1}, warmup=True)
    )
    store.add_record(run_id, "modal", record(0), log_lines=["m", "m"])
    wires = store.record_wires(run_id)
    assert [(name, wire["taskIndex"]) for name, wire in wires] == [
        ("e2b", 1),
        ("e2b", -1),
        ("modal", 0),
    ]
    assert store.all_log_lines(run_id) == {"e2b": ["one"], "modal": ["m", "m"]}
    target = begin(store)
    for _ in range(2):  # the same content twice: the same run
        store.replace_records(target, wires, store.all_log_lines(run_id))
        assert store.record_wires(target) == wires
        assert store.all_log_lines(target) == {"e2b": ["one"], "modal": ["m", "m"]}
        assert store.warmup_records(target)[0].records[0].task_index == -1
    # What the run held before is gone; a later record of a (participant, index) wins.
    later = {**record(1).to_wire(), "status": "error"}
    store.replace_records(target, [("e2b", record(1).to_wire()), ("e2b", later)], {})
    assert store.record_wires(target) == [("e2b", later)]
    assert store.all_log_lines(target) == {}
    with pytest.raises(UnknownRunError):
        store.replace_records("nope", wires, {})
    with pytest.raises(UnknownRunError):
        store.record_wires("nope")
    with pytest.raises(ValueError, match="taskIndex"):
        store.replace_records(target, [("e2b", {"status": "success"})], {})


def test_analyses_and_delete_analysis(store: ResultStore) -> None:
    run_id = begin(store)
    assert store.analyses(run_id) == {}
    store.save_analysis(run_id, "warnings", [{"code": "trend"}])
    store.save_analysis(run_id, "comparison", {"note": "none"})
    assert store.analyses(run_id) == {
        "comparison": {"note": "none"},
        "warnings": [{"code": "trend"}],
    }
    store.delete_analysis(run_id, "warnings")
    store.delete_analysis(run_id, "warnings")
    assert store.analyses(run_id) == {"comparison": {"note": "none"}}


def test_named_baselines_are_per_benchmark_and_move(store: ResultStore) -> None:
    first = begin(store)
    second = begin(store)
    other = begin(store, benchmark_slug="other")
    assert store.set_baseline("main", first) is None
    assert store.set_baseline("main", other) is None  # the same name, another benchmark
    assert store.set_baseline("main", second) == first  # moved: the run it named before
    assert [(b.name, b.benchmark_slug, b.run_id) for b in store.baselines()] == [
        ("main", "other", other),
        ("main", "sandbox-tti", second),
    ]
    assert [b.run_id for b in store.baselines("main", "sandbox-tti")] == [second]
    assert store.baselines("nope") == []
    with pytest.raises(UnknownRunError):
        store.set_baseline("main", "no-such-run")
    assert store.delete_baseline("main", "other") == 1
    assert store.delete_baseline("main") == 1
    assert store.baselines() == []


def test_a_store_of_schema_4_gets_the_baselines_table(tmp_path: Path) -> None:
    from pytest_benchsdk.store import _schema

    path = tmp_path / "results.sqlite3"
    conn = sqlite3.connect(path, isolation_level=None)
    for script in _schema._MIGRATIONS[:4]:
        for statement in _schema._split_statements(script):
            conn.execute(statement)
    conn.execute("PRAGMA user_version = 4")
    conn.close()
    with ResultStore(path) as store:
        run_id = begin(store)
        store.set_baseline("main", run_id)
        assert [b.run_id for b in store.baselines()] == [run_id]
