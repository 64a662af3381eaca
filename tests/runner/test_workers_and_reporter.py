"""``run_worker``, ``BenchmarkReporter`` / ``claim_benchmark_reporter`` and ``create_api_client``
against the loopback platform: the requests (paths, bodies, sequence numbers) asserted."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.platform_server import API_KEY, LoopbackPlatform
from pytest_benchsdk import (
    BenchmarkReporter,
    Participant,
    TaskError,
    claim_benchmark_reporter,
    create_api_client,
    run_worker,
)
from pytest_benchsdk.platform import AuthError, BenchmarkClient


def _planned_run(client: BenchmarkClient, *, tasks: int, workers: int = 1, target: int = 2) -> str:
    client.upsert_benchmark("qd", {"name": "Queue driven"})
    run = client.create_run("qd", {"config": {"iterations": tasks}})
    run_id = str(run["run"]["id"]) if "run" in run else str(run["id"])
    client.upsert_participant("qd", run_id, "p1", {"totalTasks": tasks, "workerCount": workers})
    client.plan_workers("qd", run_id, "p1", {"workerCount": workers, "targetConcurrency": target})
    return run_id


@pytest.mark.slow
def test_run_worker_claims_runs_its_range_and_completes(
    loopback_platform: LoopbackPlatform, platform_client: BenchmarkClient
) -> None:
    run_id = _planned_run(platform_client, tasks=5)
    seen: list[int] = []
    finished: list[str] = []
    result = run_worker(
        platform_client,
        benchmark_slug="qd",
        run_id=run_id,
        participant_slug="p1",
        task=lambda task_index, measure: measure(ms=task_index),
        process_key="host-1",
        batch_size=2,
        on_result=lambda record: seen.append(record.task_index),
        on_finish=lambda info: finished.append(str(info["status"])),
    )
    assert result.assignment is not None
    assert result.status == "completed"
    assert [r.task_index for r in result.records] == [0, 1, 2, 3, 4]
    assert sorted(seen) == [0, 1, 2, 3, 4]
    assert finished == ["completed"]
    (claim,) = loopback_platform.calls("claim")
    assert claim.path.endswith(f"/benchmarks/qd/runs/{run_id}/participants/p1/workers/claim")
    assert claim.json == {"processKey": "host-1"}
    worker_id = str(result.assignment["workerId"])
    batches = loopback_platform.events_for(worker_id)
    assert sorted(batches) == [0, 1, 2]
    assert [len(batches[n]["records"]) for n in (0, 1, 2)] == [2, 2, 1]
    assert [batches[n]["isFinal"] for n in (0, 1, 2)] == [False, False, True]
    beats = [call.json for call in loopback_platform.calls("heartbeat")]
    assert beats[-1]["progressDone"] == 5
    assert beats[-1]["progressTotal"] == 5
    (complete,) = loopback_platform.calls("complete")
    assert complete.json == {"attemptId": result.assignment["attemptId"]}
    assert loopback_platform.calls("fail") == []


def test_run_worker_fails_the_worker_when_a_task_fails(
    loopback_platform: LoopbackPlatform, platform_client: BenchmarkClient
) -> None:
    run_id = _planned_run(platform_client, tasks=3)

    def task(task_index: int) -> None:
        if task_index == 1:
            raise TaskError("no capacity", code="capacity")

    result = run_worker(
        platform_client,
        benchmark_slug="qd",
        run_id=run_id,
        participant_slug="p1",
        task=task,
        participant=Participant("p1"),
    )
    assert result.status == "failed"
    assert [r.status for r in result.records] == ["success", "error", "success"]
    (fail,) = loopback_platform.calls("fail")
    assert fail.json["errorCode"] == "Error"
    assert fail.json["errorMessage"] == "One or more tasks failed"
    assert loopback_platform.calls("complete") == []


def test_run_worker_with_nothing_to_claim_makes_no_further_request(
    loopback_platform: LoopbackPlatform, platform_client: BenchmarkClient
) -> None:
    run_id = _planned_run(platform_client, tasks=2)
    first = run_worker(
        platform_client,
        benchmark_slug="qd",
        run_id=run_id,
        participant_slug="p1",
        task=lambda: None,
    )
    assert first.assignment is not None
    before = len(loopback_platform.calls())
    second = run_worker(
        platform_client,
        benchmark_slug="qd",
        run_id=run_id,
        participant_slug="p1",
        task=lambda: None,
    )
    assert second.assignment is None
    assert second.records == ()
    assert [c.route for c in loopback_platform.calls()[before:]] == ["claim"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"concurrency": 0}, "Benchmark concurrency must be a positive integer."),
        ({"batch_size": 0}, "Benchmark batchSize must be a positive integer."),
        ({"batch_size": 5001}, "Benchmark batchSize must be at most 5000."),
    ],
)
def test_run_worker_rejects_bad_options_with_upstreams_messages(
    platform_client: BenchmarkClient, options: dict[str, int], message: str
) -> None:
    with pytest.raises(ValueError) as info:
        run_worker(
            platform_client,
            benchmark_slug="qd",
            run_id="r",
            participant_slug="p1",
            task=lambda: None,
            **options,  # type: ignore[arg-type]
        )
    assert str(info.value) == message


def test_a_reporter_keeps_a_failed_batch_and_resends_it_with_its_sequence_number(
    loopback_platform: LoopbackPlatform,
    platform_client: BenchmarkClient,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_id = _planned_run(platform_client, tasks=3)
    reporter = claim_benchmark_reporter(
        benchmark_slug="qd",
        run_id=run_id,
        participant_slug="p1",
        base_url=loopback_platform.root_url,
        api_key=API_KEY,
        batch_size=10,
    )
    assert isinstance(reporter, BenchmarkReporter)
    assert (reporter.task_index_start, reporter.task_count) == (0, 3)
    record = {"taskIndex": 0, "status": "success", "latencyMs": 1.0, "data": {}, "steps": []}
    reporter.record_result(record)
    loopback_platform.fault("events", status=503)
    assert reporter.flush() is False
    assert "[benchsdk] telemetry failure (flush):" in capsys.readouterr().err
    assert reporter.pending == 1
    reporter.record_result({**record, "taskIndex": 1})
    reporter.set_progress(done=2)
    reporter.heartbeat(current_step="boot")
    reporter.finish()
    events = [call.json for call in loopback_platform.calls("events")]
    assert [(e["sequenceNumber"], e["isFinal"], len(e["records"])) for e in events] == [
        (0, False, 1),
        (0, True, 2),
    ]
    beat = loopback_platform.calls("heartbeat")[-1].json
    assert beat == {
        "attemptId": reporter.attempt_id,
        "progressDone": 2,
        "progressInFlight": 0,
        "progressErrors": 0,
        "progressTotal": 3,
        "currentStep": "boot",
    }
    assert len(loopback_platform.calls("complete")) == 1
    assert API_KEY not in capsys.readouterr().err


def test_claiming_without_credentials_warns_and_gives_none(
    capsys: pytest.CaptureFixture[str],
) -> None:
    reporter = BenchmarkReporter.claim(benchmark_slug="qd", run_id="r1", participant_slug="p1")
    assert reporter is None
    err = capsys.readouterr().err
    assert err.startswith("[benchsdk] failed to claim worker for qd/p1: ")


def test_create_api_client_gives_the_client_and_the_credentials(
    loopback_platform: LoopbackPlatform, tmp_path: Path
) -> None:
    client, auth = create_api_client(base_url=loopback_platform.root_url, api_key=API_KEY)
    with client:
        assert auth.source == "option"
        assert auth.api_base_url == loopback_platform.api_url
        assert client.list_benchmarks(limit=1) is not None
    (call,) = loopback_platform.calls("list_benchmarks")
    assert call.query == {"limit": ["1"]}
    with pytest.raises(AuthError):
        create_api_client(env={})
