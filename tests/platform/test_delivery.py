"""Run lifecycle and durable delivery against the loopback platform (real HTTP, real store)."""

from __future__ import annotations

import gzip
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from helpers.platform import FAST_RETRY, new_local_run
from helpers.platform_server import API_KEY, LoopbackPlatform, iter_lines
from pytest_benchsdk.platform import (
    BenchmarkClient,
    DeliverySummary,
    PlatformUploader,
    RetryPolicy,
    check_connectivity,
    resubmit,
)
from pytest_benchsdk.platform._delivery import Sender
from pytest_benchsdk.store import ResultStore

SLUG = "sandbox-tti"
SCORING = {"metrics": [{"key": "tti_ms", "ceiling": 1000, "weights": {"median": 1}}]}


def _env(root: str, **extra: str) -> dict[str, str]:
    return {"BENCHMARKS_PLATFORM_API_KEY": API_KEY, "BENCHMARKS_PLATFORM_URL": root, **extra}


def _open(store: ResultStore, root: str, home: Path, **options: Any) -> PlatformUploader:
    env = options.pop("env", None) or _env(root)
    options.setdefault("retry", FAST_RETRY)
    options.setdefault("batch_size", 2)
    options.setdefault("metrics_interval_s", 0.05)
    options.setdefault("heartbeat_interval_s", 30.0)
    options.setdefault("header_wait_s", 10.0)
    return PlatformUploader.open(store, dry_run=False, env=env, home=home, timeout=5.0, **options)


def _record(index: int, status: str = "success") -> dict[str, Any]:
    record: dict[str, Any] = {"taskIndex": index, "status": status, "latencyMs": 10.0 + index}
    if status != "success":
        record["errorCode"] = "TypeError"
    return record


def run_benchmark(
    uploader: PlatformUploader,
    store: ResultStore,
    participants: Mapping[str, int],
    *,
    run_key: str | None = None,
    failing: Sequence[str] = (),
    summary: bool = True,
    close_timeout: float = 20.0,
) -> tuple[str, list[str], DeliverySummary]:
    """Drive the facade the way the plugin does; returns (local run id, header, summary)."""
    names = tuple(participants)
    local = new_local_run(store, SLUG, names)
    total = max(participants.values())
    upload = uploader.begin_benchmark(
        local,
        slug=SLUG,
        name="Sandbox TTI",
        participants=list(participants.items()),
        total_tasks=total,
        run_config={"benchmarkSlug": SLUG, "iterations": total, "trigger": {"source": "manual"}},
        benchmark_config={"scoring": SCORING},
        run_key=run_key,
    )
    header = uploader.header_lines() + upload.header_lines()
    for name, count in participants.items():
        upload.participant_started(name)
        for index in range(count):
            upload.log(name, f"2024-01-01T00:00:00.000Z [task {index}] [info] hello {name}")
            upload.log(name, f"2024-01-01T00:00:00.000Z [task {index}] [debug] noisy", "debug")
            status = "error" if name in failing and index == 0 else "success"
            upload.record(name, _record(index, status))
        upload.participant_finished(name)
    body = {"run": {"triggeredBy": "manual"}, "results": [], "scoring": SCORING}
    upload.finish(body if summary else None)
    return local, header, uploader.close(close_timeout)


def assert_complete(
    server: LoopbackPlatform,
    participants: Mapping[str, int],
    *,
    failing: Sequence[str] = (),
    summaries: int = 1,
) -> str:
    """The platform holds exactly one run with everything, each record exactly once."""
    assert list(server.benchmarks) == [SLUG]
    assert server.benchmarks[SLUG]["name"] == "Sandbox TTI"
    assert server.benchmarks[SLUG]["config"] == {"scoring": SCORING}
    (run_id,) = server.runs
    by_participant: dict[str, list[int]] = {}
    for name, record in server.records(run_id):
        by_participant.setdefault(name, []).append(record["taskIndex"])
    assert by_participant == {name: list(range(n)) for name, n in participants.items()}
    workers = [w for w in server.workers.values() if w["runId"] == run_id]
    assert sorted(w["participant"] for w in workers) == sorted(participants)
    for worker in workers:
        expected = "failed" if worker["participant"] in failing else "completed"
        assert worker["status"] == expected
        seqs = sorted(worker["events"])
        assert seqs == list(range(len(seqs)))
        finals = [worker["events"][s]["isFinal"] for s in seqs]
        assert finals == [False] * (len(seqs) - 1) + [True]
        kinds = sorted(server.artifacts[a]["kind"] for a in worker["artifacts"]
                       if server.artifacts[a]["content"] is not None)  # fmt: skip
        assert kinds == ["coordinator.log", "system-metrics"]
    assert len(server.summaries.get(run_id, [])) == summaries
    return run_id


def outbox_all_sent(store: ResultStore, local: str) -> bool:
    counts = store.outbox_counts(local)
    return counts["pending"] == counts["failed"] == counts["rejected"] == 0 and counts["sent"] > 0


# -- the happy path -------------------------------------------------------------------------


@pytest.mark.slow
def test_full_lifecycle(
    loopback_platform: LoopbackPlatform, result_store: ResultStore, tmp_path: Path
) -> None:
    uploader = _open(result_store, loopback_platform.root_url, tmp_path)
    parts = {"e2b": 5, "modal": 5}
    local, header, summary = run_benchmark(uploader, result_store, parts, failing=["modal"])
    run_id = assert_complete(loopback_platform, parts, failing=["modal"])
    assert summary == DeliverySummary(sent=summary.sent, unsent=0)
    assert summary.ok
    assert summary.lines() == []
    assert outbox_all_sent(result_store, local)

    run = loopback_platform.runs[run_id]
    url = f"{loopback_platform.root_url}/acme/benchmarks/{SLUG}/runs/{run_id}"
    assert header == [f"Run created: {run['name']} ({run_id})", f"View at: {url}"]
    stored = result_store.get_run(local)
    assert (stored.platform_run_id, stored.dashboard_url) == (run_id, url)

    # Upstream's keyed flow, with this local run's key: a retried creation gets the same run.
    create = loopback_platform.calls("create_run")[0].json
    assert create == {
        "runKey": f"benchsdk-{local}",
        "config": {"benchmarkSlug": SLUG, "iterations": 5, "trigger": {"source": "manual"}},
    }
    upserts = [
        (r.path.rsplit("/", 1)[1], r.json) for r in loopback_platform.calls("upsert_participant")
    ]
    assert upserts == [("e2b", {"totalTasks": 5}), ("modal", {"totalTasks": 5})]
    assert loopback_platform.calls("upsert_benchmark")[0].json == {
        "name": "Sandbox TTI",
        "config": {"scoring": SCORING},
    }
    assert loopback_platform.calls("get_benchmark") == []
    claim = loopback_platform.calls("claim")[0].json
    assert claim["processKind"] == "process"
    assert claim["processKey"]
    # Batches of 2: 2 + 2 + 1, the last one final.
    sizes = [len(r.json["records"]) for r in loopback_platform.calls("events")]
    assert sizes == [2, 2, 1, 2, 2, 1]
    fail = loopback_platform.calls("fail")[0].json
    assert fail["errorCode"] == "Error"
    assert fail["errorMessage"] == "One or more tasks failed"
    assert loopback_platform.summaries[run_id][0]["scoring"] == SCORING

    logs = [a for a in loopback_platform.uploaded_artifacts() if a["kind"] == "coordinator.log"]
    assert all(a["name"] == "worker.log" and a["contentType"] == "text/plain" for a in logs)
    text = logs[0]["content"].decode()
    assert "hello" in text
    assert "noisy" not in text  # BENCHMARK_LOG_LEVEL defaults to info
    assert logs[0]["metadata"]["sizeBytes"] == len(logs[0]["content"])
    metrics = [a for a in loopback_platform.uploaded_artifacts() if a["kind"] == "system-metrics"]
    assert all(a["name"] == "metrics.jsonl" for a in metrics)
    assert all(a["contentType"] == "application/x-ndjson" for a in metrics)
    lines = [json.loads(line) for line in iter_lines(metrics[0]["content"])]
    assert len(lines) >= 2  # baseline and final sample at least
    assert all(len(sample) == 22 for sample in lines)

    # Order of the lifecycle per worker: claim, events, artifacts, then complete/fail.
    routes = [r.route for r in loopback_platform.requests if r.route != "heartbeat"]
    assert routes[:4] == [
        "upsert_benchmark",
        "create_run",
        "upsert_participant",
        "upsert_participant",
    ]
    assert routes[-1] == "summary"


@pytest.mark.slow
def test_keyed_runs_from_two_sequential_sessions_share_one_run(
    loopback_platform: LoopbackPlatform, tmp_path: Path
) -> None:
    headers = []
    for name in ("e2b", "modal"):
        with ResultStore(tmp_path / "results.sqlite") as store:
            uploader = _open(store, loopback_platform.root_url, tmp_path)
            _, header, summary = run_benchmark(
                uploader, store, {name: 3}, run_key="ci-42", summary=name == "modal"
            )
            assert summary.ok
            headers.append(header)
    run_id = assert_complete(loopback_platform, {"e2b": 3, "modal": 3})
    run = loopback_platform.runs[run_id]
    assert headers[0][0] == f'Shared run (key "ci-42"): {run["name"]} ({run_id})'
    assert headers[0] == headers[1]
    creates = [r.json for r in loopback_platform.calls("create_run")]
    assert all(c.keys() == {"runKey", "config"} for c in creates)
    upserts = [
        (r.path.rsplit("/", 1)[1], r.json) for r in loopback_platform.calls("upsert_participant")
    ]
    assert upserts == [("e2b", {"totalTasks": 3}), ("modal", {"totalTasks": 3})]


def test_identity_not_ours_touches_an_existing_benchmark(
    loopback_platform: LoopbackPlatform, result_store: ResultStore, tmp_path: Path
) -> None:
    loopback_platform.benchmarks["other"] = {"id": "bm_x", "slug": "other", "name": "Other"}
    uploader = _open(result_store, loopback_platform.root_url, tmp_path)
    for slug in ("other", "fresh"):
        local = new_local_run(result_store, slug)
        uploader.begin_benchmark(
            local, slug=slug, name="Mine", participants=[("e2b", 1)], total_tasks=1,
            run_config={}, benchmark_config={}, identity_is_ours=False,
        )  # fmt: skip
    uploader.close(10)
    assert [r.path for r in loopback_platform.calls("get_benchmark")] == [
        "/api/v1/benchmarks/other",
        "/api/v1/benchmarks/fresh",
    ]
    assert [r.json for r in loopback_platform.calls("upsert_benchmark")] == [{}, {"name": "Mine"}]
    assert loopback_platform.benchmarks["other"]["name"] == "Other"


@pytest.mark.slow
def test_heartbeats_carry_progress(
    loopback_platform: LoopbackPlatform, result_store: ResultStore, tmp_path: Path
) -> None:
    uploader = _open(result_store, loopback_platform.root_url, tmp_path, heartbeat_interval_s=0.05)
    local = new_local_run(result_store)
    upload = uploader.begin_benchmark(
        local, slug=SLUG, name="x", participants=[("e2b", 4)], total_tasks=4, run_config={}
    )
    upload.participant_started("e2b")
    upload.record("e2b", _record(0), in_flight=1)
    upload.record("e2b", _record(1, "error"), in_flight=1)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        beats = [r.json for r in loopback_platform.calls("heartbeat")]
        if any(b["progressDone"] == 2 for b in beats):
            break
        time.sleep(0.05)
    upload.participant_finished("e2b")
    uploader.close(10)
    beat = next(b for b in beats if b["progressDone"] == 2)
    attempt = next(iter(loopback_platform.workers.values()))["attempts"][0]["id"]
    assert beat == {
        "attemptId": attempt,
        "progressDone": 2,
        "progressInFlight": 1,
        "progressErrors": 1,
        "progressTotal": 4,
    }


def test_log_level_threshold_and_gzip(
    loopback_platform: LoopbackPlatform, result_store: ResultStore, tmp_path: Path
) -> None:
    env = _env(
        loopback_platform.root_url, BENCHMARK_LOG_LEVEL="debug", BENCHMARK_LOG_COMPRESSION="gzip"
    )
    uploader = _open(result_store, loopback_platform.root_url, tmp_path, env=env)
    run_benchmark(uploader, result_store, {"e2b": 2})
    (log,) = [a for a in loopback_platform.uploaded_artifacts() if a["kind"] == "coordinator.log"]
    assert log["contentType"] == "application/gzip"
    text = gzip.decompress(log["content"]).decode()
    assert "noisy" in text
    assert "hello" in text


# -- failures -------------------------------------------------------------------------------

TRANSIENT_ROUTES = [
    "upsert_benchmark", "create_run", "plan", "claim", "events", "create_artifact", "upload",
    "complete", "summary",
]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("route", TRANSIENT_ROUTES)
def test_each_endpoint_failing_transiently_loses_nothing(
    route: str, loopback_platform: LoopbackPlatform, result_store: ResultStore, tmp_path: Path
) -> None:
    loopback_platform.fault(route, status=503, times=2)
    loopback_platform.fault(route, drop=True)
    loopback_platform.fault(route, status=429, retry_after="0")
    loopback_platform.fault(route, delay=0.5, status=502)
    # Five failures in a row are transient, not an offline platform, however slow the machine
    # is today: the offline cut-off and the delivery wait are far beyond them.
    patient = RetryPolicy(base_delay_s=0.01, max_delay_s=0.05, offline_after_s=60)
    uploader = _open(result_store, loopback_platform.root_url, tmp_path, retry=patient)
    parts = {"e2b": 3, "modal": 3}
    local, _, summary = run_benchmark(uploader, result_store, parts, close_timeout=120)
    assert summary.ok, summary
    assert_complete(loopback_platform, parts)
    assert outbox_all_sent(result_store, local)
    assert len(loopback_platform.calls(route)) >= 5


@pytest.mark.slow
@pytest.mark.parametrize(
    "route",
    ["events", "plan", "upsert_benchmark", "complete", "summary", "claim", "create_run"],
)
def test_lost_answers_are_not_applied_twice(
    route: str, loopback_platform: LoopbackPlatform, result_store: ResultStore, tmp_path: Path
) -> None:
    loopback_platform.fault(route, drop_after=True, times=2)
    uploader = _open(result_store, loopback_platform.root_url, tmp_path)
    parts = {"e2b": 3}
    _, _, summary = run_benchmark(uploader, result_store, parts)
    assert summary.ok, summary
    summaries = 3 if route == "summary" else 1  # the summary endpoint is a plain POST
    assert_complete(loopback_platform, parts, summaries=summaries)
    if route == "events":
        answers = [r.status for r in loopback_platform.calls("events")]
        assert answers.count(200) >= 2


def test_a_lost_claim_answer_is_recovered_from_the_worker_listing(
    loopback_platform: LoopbackPlatform, result_store: ResultStore, tmp_path: Path
) -> None:
    """The platform claimed the worker but the answer was lost: the retry finds the worker
    whose current attempt carries this run's process key, instead of claiming again."""
    loopback_platform.fault("claim", drop_after=True, times=1)
    uploader = _open(result_store, loopback_platform.root_url, tmp_path)
    local, _, summary = run_benchmark(uploader, result_store, {"e2b": 3})
    assert summary.ok, summary
    assert_complete(loopback_platform, {"e2b": 3})
    assert len(loopback_platform.calls("claim")) == 1
    (listing,) = loopback_platform.calls("list_workers")
    assert listing.status == 200
    (worker,) = loopback_platform.workers.values()
    (attempt,) = worker["attempts"]
    assert attempt["processKey"] == f"{os.environ.get('HOSTNAME') or socket.gethostname()}/{local}"
    claim = result_store.outbox_get(f"{local}/claim/e2b")
    assert claim is not None
    assert claim.response == {
        "workerId": worker["id"],
        "attemptId": attempt["id"],
        "recovered": True,
    }


@pytest.mark.slow
def test_a_lost_claim_answer_in_a_pool_finds_this_process_s_own_worker(
    loopback_platform: LoopbackPlatform, tmp_path: Path
) -> None:
    """Two processes of a pool on one host: the one whose claim answer was lost adopts the
    worker it claimed, never the other process's."""
    stores = [ResultStore(tmp_path / f"s{i}.sqlite3") for i in (0, 1)]
    try:
        # The second process claims first (worker 0); then the first one's answer is lost.
        second = _open(stores[1], loopback_platform.root_url, tmp_path)
        second_local = _pool_member(second, stores[1])
        loopback_platform.fault("claim", drop_after=True, times=1)
        first = _open(stores[0], loopback_platform.root_url, tmp_path)
        first_local = _pool_member(first, stores[0])
        for uploader in (second, first):
            assert uploader.close(20).ok
        workers = sorted(loopback_platform.workers.values(), key=lambda w: w["workerIndex"])
        assert [w["status"] for w in workers] == ["completed", "completed"]
        keys = [w["attempts"][-1]["processKey"].rsplit("/", 1)[1] for w in workers]
        assert keys == [second_local, first_local]
        assert [len(w["attempts"]) for w in workers] == [1, 1]
        assert sorted(r["taskIndex"] for _, r in loopback_platform.records()) == [0, 1, 2, 3]
    finally:
        for store in stores:
            store.close()


def _pool_member(uploader: PlatformUploader, store: ResultStore) -> str:
    """One process of a two-worker pool of participant e2b (2 iterations); its local run id."""
    local = new_local_run(store, SLUG, ("e2b",))
    upload = uploader.begin_benchmark(
        local, slug=SLUG, name="Sandbox TTI", participants=[("e2b", 2)], total_tasks=2,
        run_config={"benchmarkSlug": SLUG}, run_key="pool-1", pool=2,
    )  # fmt: skip
    claim = uploader.claim_worker(upload, "e2b", 20)
    assert claim.state == "claimed", claim
    for index in range(2):
        upload.record("e2b", _record(index))
    upload.participant_finished("e2b")
    upload.finish(None)
    return local


def test_without_a_listing_of_claims_a_lost_claim_answer_is_a_rejection(
    result_store: ResultStore, tmp_path: Path
) -> None:
    """A platform whose worker listing says nothing about claims: the lost claim cannot be
    found again; the claim is rejected and the records stay in the store, counted."""
    with LoopbackPlatform(tokens=(API_KEY,), lists_attempts=False) as server:
        server.fault("claim", drop_after=True, times=1)
        uploader = _open(result_store, server.root_url, tmp_path)
        local, _, summary = run_benchmark(uploader, result_store, {"e2b": 3})
        assert not summary.ok
        (message,) = summary.rejected
        assert "No pending worker to claim" in message
        assert server.records() == []
        # The claim and what needed it stay in the store, rejected (resubmittable).
        rejected = [e.kind for e in result_store.outbox_entries(local, "rejected")]
        assert rejected[0] == "claim"
        assert "events" in rejected


@pytest.mark.slow
def test_retry_after_is_honoured(
    loopback_platform: LoopbackPlatform, result_store: ResultStore, tmp_path: Path
) -> None:
    loopback_platform.fault("events", status=429, retry_after="1")
    uploader = _open(result_store, loopback_platform.root_url, tmp_path)
    _, _, summary = run_benchmark(uploader, result_store, {"e2b": 1})
    assert summary.ok
    first, second = loopback_platform.calls("events")
    assert first.status == 429
    assert second.status == 200
    index = loopback_platform.requests.index
    # Recorded in arrival order; the gap is measured on the client side by the store times.
    assert index(second) > index(first)
    entries = [e for e in _entries(result_store) if e["kind"] == "events"]
    assert entries[0]["attempts"] == 2
    assert entries[0]["gap_s"] >= 0.9


def _parse_iso(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _entries(store: ResultStore) -> list[dict[str, Any]]:
    """Outbox rows with the time from queueing to delivery."""
    rows = store._read("SELECT kind, attempts, created_at, sent_at FROM outbox ORDER BY id")
    return [
        {
            "kind": kind,
            "attempts": attempts,
            "gap_s": (_parse_iso(sent) - _parse_iso(created)).total_seconds() if sent else None,
        }
        for kind, attempts, created, sent in rows
    ]


def test_permanent_4xx_is_reported_and_not_retried(
    loopback_platform: LoopbackPlatform, result_store: ResultStore, tmp_path: Path
) -> None:
    loopback_platform.fault(
        "summary", status=400, times=None, body={"error": "results[0] is missing compositeScore"}
    )
    messages: list[str] = []
    uploader = _open(result_store, loopback_platform.root_url, tmp_path, on_message=messages.append)
    local, _, summary = run_benchmark(uploader, result_store, {"e2b": 2})
    assert len(loopback_platform.calls("summary")) == 1
    (rejected,) = summary.rejected
    assert rejected.startswith("summary: POST /benchmarks/sandbox-tti/runs/")
    assert rejected.endswith(
        "Benchmark API request failed: 400 Bad Request — results[0] is missing compositeScore"
    )
    assert summary.unsent == 0
    assert not summary.ok
    assert summary.lines() == [
        f"Platform rejected: {rejected}",
        "Rejected uploads stay in the local store; once the cause is fixed, send them again "
        "with: pytest --bench-resubmit --bench-resubmit-rejected",
    ]
    assert messages == [f"Platform rejected: {rejected}"]
    assert result_store.outbox_counts(local)["rejected"] == 1
    # Everything else arrived.
    assert len(loopback_platform.records()) == 2


@pytest.mark.slow
def test_unauthorized_stops_delivery_then_resubmit_delivers(
    loopback_platform: LoopbackPlatform, result_store: ResultStore, tmp_path: Path
) -> None:
    loopback_platform.fault("events", status=401, times=None, body={"error": "token revoked"})
    uploader = _open(result_store, loopback_platform.root_url, tmp_path)
    local, _, summary = run_benchmark(uploader, result_store, {"e2b": 3})
    assert summary.stopped is not None
    assert "refused the credentials" in summary.stopped
    assert "token revoked" in summary.stopped
    assert summary.unsent > 0
    assert "pytest --bench-resubmit" in summary.lines()[-1]
    loopback_platform.clear_faults()
    with BenchmarkClient(base_url=loopback_platform.api_url, api_key=API_KEY) as client:
        again = resubmit(result_store, client, retry=FAST_RETRY, timeout=20)
    assert again.ok
    assert_complete(loopback_platform, {"e2b": 3})
    assert outbox_all_sent(result_store, local)


def test_refused_credentials_header_says_so(
    loopback_platform: LoopbackPlatform, result_store: ResultStore, tmp_path: Path
) -> None:
    loopback_platform.fault(
        "upsert_benchmark", status=401, times=None, body={"error": "token revoked"}
    )
    uploader = _open(result_store, loopback_platform.root_url, tmp_path)
    local, header, summary = run_benchmark(uploader, result_store, {"e2b": 1}, close_timeout=3)
    (line,) = header
    assert line.startswith("Platform refused the credentials (benchmark: ")
    assert "token revoked" in line
    assert line.endswith(
        "; results are kept locally. Fix the credentials, then run: pytest --bench-resubmit"
    )
    assert "not reachable" not in line
    assert summary.stopped is not None
    assert "refused the credentials" in summary.stopped
    counts = result_store.outbox_counts(local)
    assert counts["sent"] == 0
    assert summary.unsent == counts["pending"] + counts["failed"] > 0


def test_close_right_after_an_empty_look_still_delivers(
    loopback_platform: LoopbackPlatform, result_store: ResultStore
) -> None:
    """close() lands between the sender finding nothing to send and its check for close: what
    was queued before close() is still delivered (the sender used to quit with it unsent)."""
    local = new_local_run(result_store)
    looked, closed = threading.Event(), threading.Event()

    class EmptyLookOutlivesClose:
        """The store, except that the first empty look answers only after close() began."""

        def __getattr__(self, name: str) -> Any:
            return getattr(result_store, name)

        def outbox_pending(self, run_id: str | None = None, **kw: Any) -> list[Any]:
            entries = result_store.outbox_pending(run_id, **kw)
            if not entries and not looked.is_set():
                looked.set()
                closed.wait(10)
            return entries

    summaries: list[DeliverySummary] = []
    with BenchmarkClient(base_url=loopback_platform.api_url, api_key=API_KEY) as client:
        sender = Sender(EmptyLookOutlivesClose(), client, retry=FAST_RETRY, run_ids={local})
        sender.start()
        assert looked.wait(10)
        payload = {"slug": SLUG, "name": "Sandbox TTI", "identityIsOurs": True}
        result_store.outbox_put(local, "benchmark", f"{local}/benchmark", payload)
        closer = threading.Thread(target=lambda: summaries.append(sender.close(10)))
        closer.start()
        # close() has set its flag (and only waits for the thread) before the look answers.
        deadline = time.monotonic() + 30
        while not sender._closing and time.monotonic() < deadline:
            time.sleep(0.005)
        assert sender._closing
        closed.set()
        closer.join(30)
    assert summaries == [DeliverySummary(sent=1, unsent=0)]
    assert list(loopback_platform.benchmarks) == [SLUG]


@pytest.mark.slow
def test_platform_down_for_the_whole_run_then_resubmit(tmp_path: Path) -> None:
    down = LoopbackPlatform()
    root = down.root_url
    down.stop()  # nothing listens on this port any more
    store = ResultStore(tmp_path / "results.sqlite")
    uploader = _open(store, root, tmp_path, header_wait_s=0.5)
    parts = {"e2b": 3, "modal": 2}
    local, header, summary = run_benchmark(uploader, store, parts, close_timeout=3)
    # A refused connection is a definite answer (issue 48, item 3): delivery stops at once.
    assert header[-1] == (
        "Platform delivery stopped (see above); results are kept locally. Send them later "
        "with: pytest --bench-resubmit"
    )
    assert uploader.stopped is not None
    assert uploader.stopped.startswith(f"benchmark: Cannot reach {root} (PUT /benchmarks/")
    counts = store.outbox_counts(local)
    assert counts["sent"] == 0
    assert counts["rejected"] == 0
    assert summary.unsent == counts["pending"] + counts["failed"] > 0
    # benchmark, run, summary; per participant its registration, plan, claim, log, metrics,
    # finish; and the event batches (batch size 2): e2b 2 + 1 records, modal 2 records.
    assert summary.unsent == 3 + 2 * 6 + 2 + 1
    assert summary.lines(str(store.path))[-1].startswith(
        "Not delivered to the platform: 5 record(s) of 1 run (18 queued upload(s): "
    )
    store.close()

    with (
        LoopbackPlatform(tokens=(API_KEY,)) as server,
        ResultStore(tmp_path / "results.sqlite") as reopened,
        BenchmarkClient(base_url=server.api_url, api_key=API_KEY) as client,
    ):
        # The platform is back on another port: another URL than the run was reported to.
        refused = resubmit(reopened, client, retry=FAST_RETRY, timeout=30)
        assert not refused.ok
        assert refused.sent == 0
        assert "--bench-resubmit-to-other-platform" in refused.skipped[0]
        assert server.requests == []
        first = resubmit(reopened, client, retry=FAST_RETRY, timeout=30, other_platform=True)
        assert first.ok
        assert first.sent == summary.unsent
        assert_complete(server, parts)
        assert outbox_all_sent(reopened, local)
        requests = len(server.requests)
        second = resubmit(reopened, client, retry=FAST_RETRY, timeout=30)
        assert second == DeliverySummary()
        assert len(server.requests) == requests
        run_id = next(iter(server.runs))
        assert reopened.get_run(local).platform_run_id == run_id


@pytest.mark.slow
def test_offline_detection_bounds_the_session(tmp_path: Path) -> None:
    # Connections accepted and dropped without an answer: transient, unlike a refused one.
    with (
        LoopbackPlatform(tokens=(API_KEY,)) as down,
        ResultStore(tmp_path / "results.sqlite") as store,
    ):
        down.fault("*", drop=True, times=None)
        uploader = _open(store, down.root_url, tmp_path, header_wait_s=5)
        started = time.monotonic()
        local = new_local_run(store)
        uploader.begin_benchmark(
            local, slug=SLUG, name="x", participants=[("e2b", 1)], total_tasks=1, run_config={}
        )
        # offline_after_s is 1.5 in FAST_RETRY: the header wait ends when delivery stops.
        assert uploader.stopped is not None
        assert "has not answered successfully" in uploader.stopped
        summary = uploader.close(60)
        assert time.monotonic() - started < 30
        assert summary.unsent == 3  # benchmark, run, the participant's registration


# -- modes and secrets ----------------------------------------------------------------------


def test_dry_run_and_local_only(result_store: ResultStore, tmp_path: Path) -> None:
    dry = PlatformUploader.open(result_store, dry_run=True, env={}, home=tmp_path)
    assert dry.mode == "dry-run"
    assert dry.header_lines() == ["Dry run: no platform ingest or reporting."]
    local = PlatformUploader.open(result_store, dry_run=False, env={}, home=tmp_path)
    assert local.mode == "local-only"
    (line,) = local.header_lines()
    assert line.startswith("Local only: no platform credentials found")
    for uploader in (dry, local):
        run = new_local_run(result_store)
        upload = uploader.begin_benchmark(
            run, slug=SLUG, name="x", participants=[("e2b", 1)], total_tasks=1, run_config={}
        )
        upload.participant_started("e2b")
        upload.record("e2b", _record(0))
        upload.participant_finished("e2b")
        upload.finish({"run": {}, "results": []})
        assert upload.header_lines() == []
        assert upload.dashboard_url == ""
        assert uploader.close(1) == DeliverySummary()
        assert result_store.outbox_counts(run)["pending"] == 0


def test_secret_never_reaches_store_or_output(
    loopback_platform: LoopbackPlatform,
    result_store: ResultStore,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    echo = {"error": f"bad request, you sent Authorization: Bearer {API_KEY}"}
    loopback_platform.fault("summary", status=400, times=None, body=echo)
    loopback_platform.fault("events", status=503, times=1, body=echo)
    messages: list[str] = []
    uploader = _open(result_store, loopback_platform.root_url, tmp_path, on_message=messages.append)
    _, header, summary = run_benchmark(uploader, result_store, {"e2b": 2})
    print("\n".join(header + summary.lines() + messages))
    assert "***" in summary.rejected[0]
    assert repr(uploader.client) == f"BenchmarkClient(base_url={loopback_platform.api_url!r})"
    result_store.close()
    captured = capsys.readouterr()
    assert API_KEY not in captured.out + captured.err
    for path in tmp_path.glob("results.sqlite*"):
        assert API_KEY.encode() not in path.read_bytes(), path


def test_check_connectivity(loopback_platform: LoopbackPlatform, tmp_path: Path) -> None:
    env = _env(loopback_platform.root_url)
    assert check_connectivity(dry_run=False, env=env, home=tmp_path).api_ok
    assert check_connectivity(dry_run=True, env={}, home=tmp_path).api_ok
    missing = check_connectivity(dry_run=False, env={}, home=tmp_path)
    assert (missing.api_ok, missing.env_ok) == (False, False)
    assert missing.warnings[-1] == (
        "[benchsdk] BENCHMARKS_PLATFORM_API_KEY or BENCHMARKS_PLATFORM_TOKEN is not set"
    )
    bad = check_connectivity(
        dry_run=False, api_key="bp_wrong_key_42", base_url=loopback_platform.root_url,
        env={}, home=tmp_path,
    )  # fmt: skip
    assert (bad.api_ok, bad.env_ok) == (False, True)
    (warning,) = bad.warnings
    assert warning.startswith("[benchsdk] API connectivity check failed: GET /benchmarks?limit=1")
    assert "401 Unauthorized" in warning
    assert "bp_wrong_key_42" not in warning


_PROCESS_SCRIPT = """
import json, os, sys
sys.path.insert(0, os.environ["TESTS_DIR"])
from helpers.platform import FAST_RETRY, new_local_run
from pytest_benchsdk.platform import PlatformUploader
from pytest_benchsdk.store import ResultStore

store_path, name, run_key = sys.argv[1:4]
with ResultStore(store_path) as store:
    uploader = PlatformUploader.open(store, dry_run=False, retry=FAST_RETRY, batch_size=2)
    print("\\n".join(uploader.header_lines()))
    local = new_local_run(store, "sandbox-tti", (name,))
    upload = uploader.begin_benchmark(
        local, slug="sandbox-tti", name="Sandbox TTI", participants=[(name, 3)], total_tasks=3,
        run_config={"trigger": {"source": "manual"}}, run_key=run_key,
    )
    print("\\n".join(upload.header_lines()))
    upload.participant_started(name)
    for index in range(3):
        upload.record(name, {"taskIndex": index, "status": "success", "latencyMs": 1.0})
    upload.participant_finished(name)
    upload.finish({"run": {"triggeredBy": "manual"}, "results": []})
    summary = uploader.close(20)
    print(json.dumps({"ok": summary.ok, "sent": summary.sent}))
"""


@pytest.mark.slow
def test_two_processes_share_a_keyed_run(
    loopback_platform: LoopbackPlatform, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "TESTS_DIR": str(Path(__file__).parent.parent),
        "HOME": str(tmp_path),
        "BENCHMARK_METRICS_INTERVAL_MS": "50",
        **_env(loopback_platform.root_url),
    }
    outputs = []
    for name in ("e2b", "modal"):
        done = subprocess.run(
            [sys.executable, "-c", _PROCESS_SCRIPT, str(tmp_path / "r.sqlite"), name, "gh-7-1"],
            env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert API_KEY not in done.stdout + done.stderr
        outputs.append(done.stdout)
        assert json.loads(done.stdout.splitlines()[-1])["ok"] is True
    (run_id,) = loopback_platform.runs
    assert 'Shared run (key "gh-7-1"): ' in outputs[0]
    assert f"({run_id})" in outputs[1]
    by_participant: dict[str, list[int]] = {}
    for name, record in loopback_platform.records(run_id):
        by_participant.setdefault(name, []).append(record["taskIndex"])
    assert by_participant == {"e2b": [0, 1, 2], "modal": [0, 1, 2]}
    assert {w["status"] for w in loopback_platform.workers.values()} == {"completed"}
    assert len(loopback_platform.summaries[run_id]) == 2


def test_failing_heartbeats_are_never_fatal(
    loopback_platform: LoopbackPlatform, result_store: ResultStore, tmp_path: Path
) -> None:
    loopback_platform.fault("heartbeat", status=500, times=None)
    loopback_platform.fault("heartbeat", drop=True, times=None)
    uploader = _open(result_store, loopback_platform.root_url, tmp_path, heartbeat_interval_s=0.01)
    local = new_local_run(result_store)
    upload = uploader.begin_benchmark(
        local, slug=SLUG, name="Sandbox TTI", participants=[("e2b", 2)], total_tasks=2,
        run_config={}, benchmark_config={"scoring": SCORING},
    )  # fmt: skip
    upload.participant_started("e2b")
    upload.log("e2b", "2024-01-01T00:00:00.000Z [task 0] [warn] slow", "warn")
    upload.record("e2b", _record(0))
    deadline = time.monotonic() + 10
    while not loopback_platform.calls("heartbeat") and time.monotonic() < deadline:
        time.sleep(0.02)
    upload.record("e2b", _record(1))
    upload.participant_finished("e2b")
    upload.finish({"run": {}, "results": []})
    summary = uploader.close(10)
    assert summary.ok
    assert loopback_platform.calls("heartbeat")
    assert_complete(loopback_platform, {"e2b": 2})


@pytest.mark.slow
def test_nothing_left_to_claim_blocks_only_that_participant(
    loopback_platform: LoopbackPlatform, result_store: ResultStore, tmp_path: Path
) -> None:
    loopback_platform.fault("claim", status=200, body={"assignment": None})
    uploader = _open(result_store, loopback_platform.root_url, tmp_path)
    local, _, summary = run_benchmark(uploader, result_store, {"e2b": 3, "modal": 2})
    (run_id,) = loopback_platform.runs
    (rejected,) = summary.rejected
    assert rejected.startswith(
        f"claim e2b: No pending worker to claim for run {run_id} — it may already be fully claimed."
    )
    assert summary.blocked == 2 + 3  # two event batches, log, metrics, finish
    assert summary.lines()[-1].startswith("5 dependent platform upload(s) were not sent")
    assert summary.unsent == 0
    assert [p for p, _ in loopback_platform.records(run_id)] == ["modal", "modal"]
    assert len(loopback_platform.summaries[run_id]) == 1
    assert result_store.outbox_counts(local)["rejected"] == 6
