"""Kills, signals and resubmits: faults a user can cause end in complete data on the platform.

Real pytest sessions in subprocesses killed with SIGKILL / SIGTERM / SIGINT, resubmits to the
wrong platform, 404s, overlapping resubmits, and heartbeats, all against the loopback platform,
counting what it received: every stored record exactly once.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from helpers.e2e import (
    E2E_BENCH,
    assert_delivered,
    bench_args,
    server_records,
    use_platform,
)
from helpers.platform import new_local_run
from helpers.platform_server import API_KEY, LoopbackPlatform, iter_lines
from helpers.processes import Session
from helpers.sessions import bench, store_path, stored_records, stored_runs
from pytest_benchsdk._plugin.control.interrupts import STOPPING_LINE
from pytest_benchsdk.store import ResultStore

RESUBMIT = "pytest --bench-resubmit"
DOWN: dict[str, Any] = {"status": 503, "retry_after": "60", "times": None}

#: Two participants, 30 iterations of 100 ms each, one after the other.
SLOW_BENCH = bench(
    'participants=[Participant("p1"), Participant("p2")], iterations=30',
    """
    import time

    @define_task
    def task(participant, task_index, measure, log):
        time.sleep(0.1)
        log(f"iteration {task_index}")
        measure(value=10 + task_index)
    """,
)


# -- helpers ---------------------------------------------------------------------------------


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    env["BENCHMARKS_PLATFORM_API_KEY"] = API_KEY
    env.update(extra)
    return env


def _run_while_the_platform_is_down(
    pytester: pytest.Pytester, server: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session whose uploads all stay in the outbox; the platform is back afterwards."""
    use_platform(monkeypatch)
    server.fault("*", **DOWN)
    pytester.makepyfile(bench_x=E2E_BENCH)
    assert pytester.runpytest_inprocess(*bench_args(server)).ret == 0
    server.clear_faults()


def _spawn(pytester: pytest.Pytester, *args: str) -> subprocess.Popen[str]:
    """``python -m pytest ARGS`` in the pytester directory, output captured."""
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=pytester.path,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _stored_count(path: Path) -> int:
    if not path.exists():
        return 0
    try:
        with ResultStore(path) as store:
            return sum(r.record_count for r in store.list_runs(limit=100))
    except Exception:  # the session is still creating the file
        return 0


def _wait_for_records(path: Path, proc: subprocess.Popen[str], at_least: int) -> int:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        count = _stored_count(path)
        if count >= at_least:
            return count
        assert proc.poll() is None, proc.communicate()[0]
        time.sleep(0.05)
    proc.kill()
    raise AssertionError(f"no {at_least} records in the store: {proc.communicate()[0]}")


def _only_local_run(path: Path) -> Any:
    (run,) = stored_runs(path)
    return run


def _assert_stored_records_delivered_once(server: LoopbackPlatform, path: Path) -> str:
    """Every record in the store is on the platform exactly once; returns the platform run id."""
    local = _only_local_run(path)
    (run_id,) = server.runs
    assert local.platform_run_id == run_id
    in_store = {p: rs for p, rs in stored_records(path, local.run_id).items() if rs}
    assert server_records(server, run_id) == in_store
    keys = Counter((p, r["taskIndex"]) for p, r in server.records(run_id))
    assert set(keys.values()) == {1}
    assert sum(keys.values()) == local.record_count
    return str(run_id)


# -- 1: kill -9 / SIGTERM --------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_killed_session_then_resubmit_delivers_every_stored_record_once(
    pytester: pytest.Pytester,
    loopback_platform: LoopbackPlatform,
    monkeypatch: pytest.MonkeyPatch,
    sig: signal.Signals,
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    pytester.makepyfile(bench_slow=SLOW_BENCH)
    path = store_path(pytester)
    proc = _spawn(pytester, *bench_args(server))
    try:
        _wait_for_records(path, proc, 8)
        os.kill(proc.pid, sig)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    local = _only_local_run(path)
    assert 8 <= local.record_count < 60
    # The original failure: the records waited in memory, the platform has none of them. (A
    # SIGTERM that pytest one day turns into an orderly stop may deliver some itself.)
    before = server.records()
    if sig == signal.SIGKILL:
        assert before == []

    result = pytester.runpytest_inprocess("--bench-resubmit", "--bench-base-url", server.root_url)
    assert result.ret == 0, result.stdout.str()
    if not before:
        result.stdout.fnmatch_lines([f"benchsdk: resubmitting 1 run(s) from {path} ..."])
    run_id = _assert_stored_records_delivered_once(server, path)

    # The started worker is finished: failed as Interrupted (not every iteration ran), after a
    # heartbeat carrying the final counters. Nothing is left in the outbox.
    workers = [w for w in server.workers.values() if w["runId"] == run_id]
    assert {w["status"] for w in workers} == {"failed"}
    for worker in workers:
        assert worker["error"]["errorCode"] == "Interrupted"
        count = len(server_records(server, run_id)[worker["participant"]])
        assert worker["heartbeats"][-1]["progressDone"] == count
    with ResultStore(path) as store:
        counts = store.outbox_counts()
        assert counts["pending"] == counts["failed"] == counts["rejected"] == 0
        assert store.get_run(local.run_id).status == "interrupted"
        # The worker.log is rebuilt from the stored log lines.
        for worker in workers:
            (log,) = [
                a
                for a in server.uploaded_artifacts(run_id)
                if a["workerId"] == worker["id"] and a["kind"] == "coordinator.log"
            ]
            stored = store.log_lines(local.run_id, worker["participant"])
            assert list(iter_lines(log["content"])) == stored
            assert len(stored) == len(server_records(server, run_id)[worker["participant"]])

    # A second resubmit finds nothing and sends nothing.
    requests = len(server.requests)
    again = pytester.runpytest_inprocess("--bench-resubmit", "--bench-base-url", server.root_url)
    assert again.ret == 0
    again.stdout.fnmatch_lines([f"benchsdk: nothing to resubmit in {path}."])
    assert len(server.requests) == requests


@pytest.mark.slow
def test_killed_while_the_platform_was_down_resubmit_sends_the_whole_run(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    server.fault("*", **DOWN)
    pytester.makepyfile(bench_slow=SLOW_BENCH)
    path = store_path(pytester)
    proc = _spawn(pytester, *bench_args(server))
    try:
        _wait_for_records(path, proc, 5)
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert server.runs == {}
    server.clear_faults()
    result = pytester.runpytest_inprocess("--bench-resubmit", "--bench-base-url", server.root_url)
    assert result.ret == 0, result.stdout.str()
    run_id = _assert_stored_records_delivered_once(server, path)
    workers = [w for w in server.workers.values() if w["runId"] == run_id]
    assert [w["error"]["errorCode"] for w in workers] == ["Interrupted"]


# -- 2: the wrong platform, 404, rejected data -------------------------------------------------


@pytest.mark.slow
def test_resubmit_to_another_platform_is_refused_without_the_flag(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = loopback_platform
    _run_while_the_platform_is_down(pytester, server, monkeypatch)
    with LoopbackPlatform(tokens=(API_KEY,)) as other:
        wrong = pytester.runpytest_inprocess("--bench-resubmit", "--bench-base-url", other.root_url)
        assert wrong.ret == 1
        wrong.stdout.fnmatch_lines(
            [
                f"benchsdk: Run * was reported to {server.api_url}, not {other.api_url}: not "
                "sent. Pass --bench-base-url for that platform, or "
                "--bench-resubmit-to-other-platform to send the whole run to this one."
            ]
        )
        assert other.requests == []
    assert server.requests == [r for r in server.requests if r.status == 503]
    right = pytester.runpytest_inprocess("--bench-resubmit", "--bench-base-url", server.root_url)
    assert right.ret == 0, right.stdout.str()
    assert_delivered(server, pytester)


@pytest.mark.slow
def test_resubmit_to_other_platform_flag_sends_the_whole_run_there(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_platform(monkeypatch)
    with LoopbackPlatform(tokens=(API_KEY,)) as typo:
        typo.fault("*", **DOWN)
        pytester.makepyfile(bench_x=E2E_BENCH)
        assert pytester.runpytest_inprocess(*bench_args(typo)).ret == 0
    server = loopback_platform
    result = pytester.runpytest_inprocess(
        "--bench-resubmit",
        "--bench-resubmit-to-other-platform",
        "--bench-base-url",
        server.root_url,
    )
    assert result.ret == 0, result.stdout.str()
    assert_delivered(server, pytester)


@pytest.mark.slow
def test_a_404_during_resubmit_keeps_the_data_for_the_right_platform(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run exists on the platform, but the platform answers 404 "Run not found" (another
    deployment behind the same URL, a restored database…): nothing is given up."""
    server = loopback_platform
    use_platform(monkeypatch)
    for route in ("plan", "claim", "events", "create_artifact", "complete", "summary"):
        server.fault(route, **DOWN)
    pytester.makepyfile(bench_x=E2E_BENCH)
    assert pytester.runpytest_inprocess(*bench_args(server)).ret == 0
    assert len(server.runs) == 1
    server.clear_faults()
    server.fault("*", status=404, body={"error": "Run not found"}, times=None)
    lost = pytester.runpytest_inprocess("--bench-resubmit", "--bench-base-url", server.root_url)
    assert lost.ret == 1
    lost.stdout.fnmatch_lines(["*answered 404*Run not found*stay queued*"])
    with ResultStore(store_path(pytester)) as store:
        counts = store.outbox_counts()
    assert counts["rejected"] == 0
    assert counts["pending"] + counts["failed"] > 0
    server.clear_faults()
    again = pytester.runpytest_inprocess("--bench-resubmit", "--bench-base-url", server.root_url)
    assert again.ret == 0, again.stdout.str()
    assert_delivered(server, pytester)


@pytest.mark.slow
def test_rejected_uploads_can_be_sent_again(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    server.fault("summary", status=400, body={"error": "summary too large"}, times=None)
    pytester.makepyfile(bench_x=E2E_BENCH)
    first = pytester.runpytest_inprocess(*bench_args(server))
    first.stdout.fnmatch_lines(
        [
            "*Platform rejected: summary: *summary too large*",
            "Rejected uploads stay in the local store; once the cause is fixed, send them again "
            "with: pytest --bench-resubmit --bench-resubmit-rejected",
        ]
    )
    path = store_path(pytester)
    local = _only_local_run(path)
    with ResultStore(path) as store:
        (entry,) = store.outbox_entries(local.run_id, "rejected")
    assert entry.kind == "summary"
    assert "summary too large" in (entry.last_error or "")
    server.clear_faults()
    plain = pytester.runpytest_inprocess(*bench_args(server, "--bench-resubmit"))
    plain.stdout.fnmatch_lines([f"benchsdk: nothing to resubmit in {path}."])
    again = pytester.runpytest_inprocess(
        *bench_args(server, "--bench-resubmit", "--bench-resubmit-rejected")
    )
    assert again.ret == 0, again.stdout.str()
    assert_delivered(server, pytester)


# -- 5: overlapping resubmits ----------------------------------------------------------------


@pytest.mark.slow
def test_overlapping_resubmits_deliver_once(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = loopback_platform
    _run_while_the_platform_is_down(pytester, server, monkeypatch)
    server.fault("*", delay=0.3, times=None)  # a slow platform: the first resubmit takes a while
    args = ("--bench-resubmit", "--bench-base-url", server.root_url)
    procs = [_spawn(pytester, *args) for _ in range(2)]
    outputs = [proc.communicate(timeout=180)[0] for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], outputs
    server.clear_faults()
    # One platform run, 4 artifacts, one summary, every record once.
    run_id = assert_delivered(server, pytester)
    assert len(server.uploaded_artifacts(run_id)) == 4
    assert len(server.calls("create_run")) == 1
    assert any("is delivering it right now; left to that process." in o for o in outputs), outputs


@pytest.mark.slow
def test_resubmit_leaves_a_live_session_alone(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A resubmit while a session is still running does not touch the session's run."""
    server = loopback_platform
    use_platform(monkeypatch)
    pytester.makepyfile(bench_slow=SLOW_BENCH)
    path = store_path(pytester)
    proc = _spawn(pytester, *bench_args(server))
    try:
        _wait_for_records(path, proc, 3)
        during = pytester.runpytest_inprocess(
            "--bench-resubmit", "--bench-base-url", server.root_url
        )
        assert during.ret == 0, during.stdout.str()
        during.stdout.fnmatch_lines(["*is delivering it right now; left to that process."])
        output = proc.communicate(timeout=120)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, output
    _assert_stored_records_delivered_once(server, path)
    assert {w["status"] for w in server.workers.values()} == {"completed"}


@pytest.mark.slow
def test_store_lease_is_exclusive_and_freed_by_a_dead_holder(tmp_path: Path) -> None:
    with ResultStore(tmp_path / "s.sqlite3") as store:
        run = new_local_run(store)
        me = f"{os.uname().nodename}|{os.getpid()}|a"
        assert store.outbox_lease(run, me) is None
        assert store.outbox_lease(run, me) is None  # renewing is fine
        assert store.outbox_lease(run, f"{os.uname().nodename}|{os.getpid()}|b") == me
        store.outbox_release(run, me)
        dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True)  # fmt: skip
        gone = f"{os.uname().nodename}|{dead.stdout.strip()}|c"
        assert store.outbox_lease(run, gone) is None
        assert store.outbox_lease(run, me) is None  # its process is gone: free at once
        elsewhere = "another-host|1|d"
        assert store.outbox_lease(run, elsewhere, ttl_s=60) == me
        store.outbox_release(run, me)
        assert store.outbox_lease(run, elsewhere, ttl_s=-1) is None  # already expired
        assert store.outbox_lease(run, me) is None


# -- 13: Ctrl-C while the platform is unreachable -----------------------------------------------


def _hanging_platform_session(pytester: pytest.Pytester, server: LoopbackPlatform) -> Session:
    # Every request hangs 20 s and then fails: an unreachable platform without the wait for a
    # connect timeout.
    server.fault("*", delay=20, status=503, times=None)
    pytester.makepyfile(bench_slow=SLOW_BENCH)
    session = Session(pytester.path, *bench_args(server), env=_env())
    _wait_for_records(store_path(pytester), session.proc, 3)
    return session


def _resubmit_delivers_everything(pytester: pytest.Pytester, server: LoopbackPlatform) -> None:
    server.clear_faults()
    again = pytester.runpytest_inprocess("--bench-resubmit", "--bench-base-url", server.root_url)
    assert again.ret == 0, again.stdout.str()
    _assert_stored_records_delivered_once(server, store_path(pytester))


@pytest.mark.slow
@pytest.mark.parametrize("ctrl_c", [1, 2], ids=["ctrl-c", "ctrl-c-twice"])
def test_ctrl_c_with_the_platform_unreachable_stops_delivery_at_once(
    pytester: pytest.Pytester,
    loopback_platform: LoopbackPlatform,
    monkeypatch: pytest.MonkeyPatch,
    ctrl_c: int,
) -> None:
    # Twice: the second Ctrl-C arrives once the session says it is stopping (while it stores
    # what ran and would deliver it), wherever that is on a loaded machine.
    server = loopback_platform
    use_platform(monkeypatch)
    session = _hanging_platform_session(pytester, server)
    try:
        session.interrupt()
        if ctrl_c == 2:
            session.wait_for(STOPPING_LINE)
            session.interrupt()
        assert session.finish() == pytest.ExitCode.INTERRUPTED, session.output
    finally:
        session.kill()
    output = session.output
    assert "Traceback" not in output
    assert "_delivery.py" not in output
    assert "Platform delivery stopped: interrupted: delivery stopped at once" in output
    assert (
        f"queued upload(s): the run, its participants, record batches, logs, summary); they "
        f"are kept in {store_path(pytester)}. Send them later with: {RESUBMIT}" in output
    )
    if ctrl_c == 1:
        _resubmit_delivers_everything(pytester, server)
        return
    # Known defect (README, Known limitations): a second Ctrl-C can land after the
    # participant's last batch was queued and before the iteration it cut short was stored;
    # that record then stays visibly outstanding (never lost, never sent twice) instead of
    # being sent by the resubmit. Either outcome is checked for what it promises.
    server.clear_faults()
    again = pytester.runpytest_inprocess("--bench-resubmit", "--bench-base-url", server.root_url)
    if again.ret == 0:
        _assert_stored_records_delivered_once(server, store_path(pytester))
    else:
        text = again.stdout.str()
        assert "stored after the participant's last batch" in text, text
        assert "they stay in the local store" in text, text


@pytest.mark.slow
def test_upload_timeout_bounds_the_wait_for_an_unreachable_platform(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The documented knob: the session end waits --bench-upload-timeout seconds for delivery,
    # then leaves the rest in the outbox (the platform here answers every request after 20 s).
    server = loopback_platform
    use_platform(monkeypatch)
    server.fault("*", delay=20, status=503, times=None)
    pytester.makepyfile(bench_x=bench('participants=[Participant("p1")], iterations=2'))
    proc = _spawn(pytester, *bench_args(server, "--bench-upload-timeout", "1"))
    try:
        output = proc.communicate(timeout=90)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
    # The session says which wait ran out (without the knob: 30 s), not the wall clock.
    assert (
        "the delivery deadline (1 s, --bench-upload-timeout) passed with a request in flight"
        in output
    )
    assert f"Send them later with: {RESUBMIT}" in output
    _resubmit_delivers_everything(pytester, server)


# -- 15: heartbeats ----------------------------------------------------------------------------


def _assert_heartbeats(server: LoopbackPlatform) -> None:
    """Every claimed worker heartbeated at claim (progress 0) and with its final counters before
    it was completed or failed."""
    assert server.workers
    ends = {
        r.path.split("/")[-2]: i
        for i, r in enumerate(server.calls())
        if r.route in ("complete", "fail") and r.status == 200
    }
    for worker_id, worker in server.workers.items():
        beats = worker["heartbeats"]
        assert len(beats) >= 2, worker
        assert beats[0]["progressDone"] == 0
        total = worker["taskRange"]["count"]
        assert beats[0]["progressTotal"] == total
        done = sum(len(batch["records"]) for batch in server.events_for(worker_id).values())
        assert beats[-1]["progressDone"] == done
        calls = server.calls()
        final = [
            i
            for i, r in enumerate(calls)
            if r.route == "heartbeat"
            and r.path.split("/")[-2] == worker_id
            and r.json["progressDone"] == done
        ]
        assert final
        assert final[0] < ends[worker_id]


@pytest.mark.slow
def test_fast_participants_heartbeat_at_claim_and_before_finishing(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    pytester.makepyfile(bench_x=E2E_BENCH)
    assert pytester.runpytest_inprocess(*bench_args(server)).ret == 0
    assert_delivered(server, pytester)
    _assert_heartbeats(server)
    for worker in server.workers.values():
        assert worker["heartbeats"][-1]["progressDone"] == 2
        assert worker["heartbeats"][-1]["progressTotal"] == 2


@pytest.mark.slow
def test_resubmitted_workers_heartbeat_too(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = loopback_platform
    _run_while_the_platform_is_down(pytester, server, monkeypatch)
    assert pytester.runpytest_inprocess(*bench_args(server, "--bench-resubmit")).ret == 0
    assert_delivered(server, pytester)
    _assert_heartbeats(server)


# -- the store's side: schema 2, targets, reset, unfinished runs -------------------------------


def test_a_schema_1_store_is_upgraded_and_keeps_its_outbox(tmp_path: Path) -> None:
    import sqlite3

    from pytest_benchsdk.store import _schema

    path = tmp_path / "old.sqlite3"
    conn = sqlite3.connect(path, isolation_level=None)
    for statement in _schema._split_statements(_schema._MIGRATIONS[0]):
        conn.execute(statement)
    conn.execute("PRAGMA user_version = 1")
    conn.close()
    with ResultStore(path) as store:
        run = new_local_run(store)
        store.outbox_put(run, "benchmark", f"{run}/benchmark", {"slug": "s"})
        assert store.outbox_target(run) is None  # a run queued before schema 2: no target
        store.outbox_set_target(run, "http://a/api/v1", "acme")
        target = store.outbox_target(run)
        assert target is not None
        assert (target.url, target.org, target.lease_holder) == ("http://a/api/v1", "acme", None)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == _schema.SCHEMA_VERSION
    conn.close()


def test_rejected_entries_are_listed_and_reset(result_store: ResultStore) -> None:
    run = new_local_run(result_store)
    first = result_store.outbox_put(run, "benchmark", f"{run}/benchmark", {"slug": "s"})
    second = result_store.outbox_put(run, "run", f"{run}/run", {"slug": "s"})
    result_store.outbox_mark_failed(first, "400 nope", permanent=True)
    result_store.outbox_mark_sent(second)
    assert result_store.outbox_runs_with_rejected() == [run]
    (rejected,) = result_store.outbox_entries(run, "rejected")
    assert (rejected.id, rejected.last_error) == (first, "400 nope")
    assert result_store.outbox_runs_with_pending() == []
    assert result_store.outbox_reset(run) == 1
    assert [e.id for e in result_store.outbox_pending(run)] == [first]
    assert result_store.outbox_entries(run, "sent")[0].id == second


def test_unfinished_runs_are_those_with_a_participant_left_open(result_store: ResultStore) -> None:
    from pytest_benchsdk.records import TaskRecord

    def record(index: int) -> TaskRecord:
        return TaskRecord.from_wire({"taskIndex": index, "status": "success"})

    local_only = new_local_run(result_store, participants=("a",))
    result_store.add_record(local_only, "a", record(0))  # no outbox: never reported
    killed = new_local_run(result_store, participants=("a", "b"))
    result_store.outbox_put(killed, "run", f"{killed}/run", {"slug": "s"})
    result_store.add_record(killed, "a", record(0))
    finished = new_local_run(result_store, participants=("a",))
    result_store.outbox_put(finished, "run", f"{finished}/run", {"slug": "s"})
    result_store.add_record(finished, "a", record(0))
    result_store.outbox_put(finished, "finish", f"{finished}/finish/a", {"slug": "s"})
    claimed = new_local_run(result_store, participants=("a",))
    result_store.outbox_put(claimed, "run", f"{claimed}/run", {"slug": "s"})
    result_store.outbox_put(claimed, "claim", f"{claimed}/claim/a", {"participant": "a"})
    assert result_store.outbox_unfinished_runs() == [killed, claimed]


# -- kills in the worker claim (issue 19, point 1) ---------------------------------------------


def _kill_at(
    server: LoopbackPlatform,
    route: str,
    proc: subprocess.Popen[str],
    path: Path,
    *,
    handled: bool,
    records: int = 3,
) -> None:
    """SIGKILL the session at the first request of ``route``, once ``records`` records are
    stored: after the platform handled the request (``handled``: its answer is lost) or
    before. Every request of ``route`` until then is held too: two threads may send the
    route (the heartbeat thread and the claim's own heartbeat), and the one that got through
    while the other waited for the records let the session go past the window being tested
    (a loaded CI run found the claim marked sent)."""
    lock = threading.Lock()
    killed: list[bool] = []

    def kill(_request: object) -> None:
        with lock:  # one kill; a request that waited here finds the session killed
            if killed:
                return
            deadline = time.monotonic() + 60
            while _stored_count(path) < records and time.monotonic() < deadline:
                time.sleep(0.02)
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
            killed.append(True)

    server.fault(route, drop_after=handled, drop=not handled, call=kill, times=None)


def _killed_session(
    pytester: pytest.Pytester, server: LoopbackPlatform, route: str, *, handled: bool
) -> Path:
    pytester.makepyfile(bench_slow=SLOW_BENCH)
    path = store_path(pytester)
    proc = _spawn(pytester, *bench_args(server))
    _kill_at(server, route, proc, path, handled=handled)
    try:
        proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    server.clear_faults()
    return path


def _resubmit(pytester: pytest.Pytester, server: LoopbackPlatform) -> pytest.RunResult:
    return pytester.runpytest_inprocess("--bench-resubmit", "--bench-base-url", server.root_url)


@pytest.mark.slow
def test_killed_after_the_platform_claimed_the_worker_the_resubmit_finds_it_again(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Window A: the platform processed the claim, its answer never came back (the session
    died). The resubmit finds the worker by the claim's process key instead of claiming a
    second time (which finds no pending worker)."""
    server = loopback_platform
    use_platform(monkeypatch)
    path = _killed_session(pytester, server, "claim", handled=True)
    with ResultStore(path) as store:
        (local,) = store.list_runs()
        claim = store.outbox_get(f"{local.run_id}/claim/p1")
        assert claim is not None
        assert claim.state == "pending"  # the answer never arrived
    result = _resubmit(pytester, server)
    assert result.ret == 0, result.stdout.str()
    assert "Platform rejected" not in result.stdout.str()
    _assert_stored_records_delivered_once(server, path)
    # p2 never started before the kill: nothing of it to deliver.
    assert {w["participant"]: len(w["attempts"]) for w in server.workers.values()} == {"p1": 1}
    assert {w["status"] for w in server.workers.values()} == {"failed"}  # Interrupted
    assert len(server.calls("list_workers")) == 1


@pytest.mark.slow
def test_killed_after_the_claim_answer_was_stored_the_resubmit_reuses_it(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Window B: the claim's answer was stored, the session died at the heartbeat that
    follows, before the claim was marked sent: the resubmit uses the stored assignment."""
    server = loopback_platform
    use_platform(monkeypatch)
    path = _killed_session(pytester, server, "heartbeat", handled=False)
    with ResultStore(path) as store:
        (local,) = store.list_runs()
        claim = store.outbox_get(f"{local.run_id}/claim/p1")
        assert claim is not None
        assert claim.state != "sent"
        assert store.state_get(local.run_id, "platform.worker.p1")
    result = _resubmit(pytester, server)
    assert result.ret == 0, result.stdout.str()
    assert "Platform rejected" not in result.stdout.str()
    _assert_stored_records_delivered_once(server, path)
    assert len([c for c in server.calls("claim") if c.path.endswith("/p1/workers/claim")]) == 1
    rejected = pytester.runpytest_inprocess(
        "--bench-resubmit", "--bench-resubmit-rejected", "--bench-base-url", server.root_url
    )
    assert rejected.ret == 0, rejected.stdout.str()


@pytest.mark.slow
def test_records_whose_claim_cannot_be_recovered_stay_visibly_outstanding(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A platform whose worker listing does not say who claimed a worker: the lost claim
    cannot be found again. Every resubmit says how many stored records have not reached the
    platform and why, exits non-zero, and never says there is nothing to resubmit."""
    use_platform(monkeypatch)
    with LoopbackPlatform(tokens=(API_KEY,), lists_attempts=False) as server:
        path = _killed_session(pytester, server, "claim", handled=True)
        for _ in range(2):
            result = _resubmit(pytester, server)
            assert result.ret == 1, result.stdout.str()
            text = result.stdout.str()
            assert "nothing to resubmit" not in text
            (local,) = stored_runs(path)
            with ResultStore(path) as store:
                missing = store.undelivered_records(local.run_id)
            count = len(missing["p1"])
            assert count >= 3
            result.stdout.fnmatch_lines(
                [
                    f"benchsdk: Run {local.run_id}: {count} stored record(s) have not reached "
                    f"the platform — p1: {count} (rejected: claim p1: No pending worker to "
                    "claim for run *; they stay in the local store; once the cause is fixed, "
                    "send them with: pytest --bench-resubmit --bench-resubmit-rejected",
                    f"benchsdk: {count} stored record(s) have not reached the platform (see "
                    "above); the resubmit fails until they have.",
                ]
            )
        # p2 never ran, and p1's records are all still in the store.
        assert [p for p, _ in server.records()] == []


KILLED_IN_ON_COMPLETE = bench(
    'participants=[Participant("p1"), Participant("p2")], iterations=2,\non_complete=on_complete',
    """
    @define_task
    def task(task_index, measure):
        measure(value=task_index)
    """,
    prelude="""
    import os, signal

    @define_on_complete
    def on_complete(outcome):
        os.kill(os.getpid(), signal.SIGKILL)
    """,
)


@pytest.mark.slow
def test_a_run_whose_session_died_after_every_participant_finished_is_not_left_running(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    pytester.makepyfile(bench_x=KILLED_IN_ON_COMPLETE)
    proc = _spawn(pytester, *bench_args(server))
    proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL
    path = store_path(pytester)
    with ResultStore(path, read_only=True) as store:  # (a writable open would mark it)
        assert store.list_runs()[0].status == "running"
    result = _resubmit(pytester, server)
    assert result.ret == 0, result.stdout.str()
    assert _only_local_run(path).status == "interrupted"
    _assert_stored_records_delivered_once(server, path)
    assert {w["status"] for w in server.workers.values()} == {"completed"}
    again = _resubmit(pytester, server)
    again.stdout.fnmatch_lines([f"benchsdk: nothing to resubmit in {path}."])
