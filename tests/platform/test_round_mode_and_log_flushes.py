"""Upstream's round-mode protocol and mid-run log flushes, in real sessions reporting to the
loopback platform: plan bodies, one shared system-metrics artifact before the workers finish,
a progress heartbeat per iteration, and ``BENCHMARK_LOG_FLUSH_INTERVAL_MS``."""

from __future__ import annotations

import pytest

from helpers.e2e import bench_args, use_platform
from helpers.platform_server import LoopbackPlatform, iter_lines
from helpers.sessions import bench, store_path, stored_runs

ROUND_BENCH = bench(
    'participants=[Participant("p1"), Participant("p2")], iterations=3, group_by="round"',
    """
    @define_task
    def task(participant, task_index, measure, log):
        log(f"{participant.name} {task_index}")
        if participant.name == "p2" and task_index == 1:
            raise TaskError("boom", code="probe_failed")
        measure(value=task_index)
    """,
)


def _workers(server: LoopbackPlatform) -> dict[str, dict[str, object]]:
    return {str(w["participant"]): w for w in server.workers.values()}


@pytest.mark.slow
def test_round_mode_plans_claims_and_heartbeats_as_upstream(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    monkeypatch.delenv("HOSTNAME", raising=False)
    pytester.makepyfile(bench_x=ROUND_BENCH)
    result = pytester.runpytest_inprocess(*bench_args(server))
    result.assert_outcomes(passed=5, failed=1)

    plans = server.calls("plan")
    assert [p.json for p in plans] == [{"workerCount": 1, "targetConcurrency": 3}] * 2
    # Upstream's round mode claims with HOSTNAME ?? 'local'; the local run follows, so a claim
    # whose answer was lost can be found again (README: Nothing is lost).
    (local,) = stored_runs(store_path(pytester))
    assert [c.json for c in server.calls("claim")] == [
        {"processKind": "process", "processKey": f"local/{local.run_id}"}
    ] * 2

    workers = _workers(server)
    for name, errors in (("p1", [0, 0, 0]), ("p2", [0, 1, 1])):
        beats = workers[name]["heartbeats"]
        assert isinstance(beats, list)
        assert all(b["progressInFlight"] == 0 for b in beats)
        assert all(b["progressTotal"] == 3 for b in beats)
        # At the claim, one after each iteration with the counters of that moment (in order,
        # before the worker finishes), and the final counters before completing or failing.
        seen = [(b["progressDone"], b["progressErrors"]) for b in beats]
        per_task = list(zip((1, 2, 3), errors, strict=True))
        assert seen == [(0, 0), *per_task, per_task[-1]]


@pytest.mark.slow
def test_round_mode_uploads_one_shared_metrics_artifact_before_finishing(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    # No periodic sample within the test (upstream's round mode samples per round only).
    monkeypatch.setenv("BENCHMARK_METRICS_INTERVAL_MS", "600000")
    pytester.makepyfile(bench_x=ROUND_BENCH)
    pytester.runpytest_inprocess(*bench_args(server))

    metrics = [a for a in server.uploaded_artifacts() if a["kind"] == "system-metrics"]
    assert len(metrics) == 1
    (artifact,) = metrics
    workers = _workers(server)
    assert artifact["workerId"] == workers["p1"]["id"]
    assert (artifact["name"], artifact["contentType"]) == ("metrics.jsonl", "application/x-ndjson")
    metadata = artifact["metadata"]
    assert metadata["scope"] == "shared-process"
    assert metadata["participants"] == ["p1", "p2"]
    assert metadata["sizeBytes"] == len(artifact["content"])
    # Upstream: one baseline, one sample per round (three here) and a final one.
    assert len(list(iter_lines(artifact["content"]))) == 1 + 3 + 1
    logs = [a for a in server.uploaded_artifacts() if a["kind"] == "coordinator.log"]
    assert sorted(str(a["workerId"]) for a in logs) == sorted(
        str(workers[p]["id"]) for p in ("p1", "p2")
    )
    # The shared metrics come first, then each participant's log and finish.
    order = [
        (r.route, (r.json or {}).get("kind"))
        for r in server.calls()
        if r.route in ("create_artifact", "complete", "fail")
    ]
    assert order[0] == ("create_artifact", "system-metrics")
    assert order[1:] == [
        ("create_artifact", "coordinator.log"),
        ("complete", None),
        ("create_artifact", "coordinator.log"),
        ("fail", None),
    ]


@pytest.mark.slow
def test_participant_mode_keeps_its_own_plan_and_metrics(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    monkeypatch.setenv("HOSTNAME", "ci-runner-7")
    pytester.makepyfile(bench_x=ROUND_BENCH.replace(', group_by="round"', ""))
    pytester.runpytest_inprocess(*bench_args(server))
    assert [p.json for p in server.calls("plan")] == [{}, {}]
    (local,) = stored_runs(store_path(pytester))
    assert {c.json["processKey"] for c in server.calls("claim")} == {f"ci-runner-7/{local.run_id}"}
    metrics = [a for a in server.uploaded_artifacts() if a["kind"] == "system-metrics"]
    assert len(metrics) == 2
    assert all("scope" not in a["metadata"] for a in metrics)


#: A task whose second iteration waits until the first one's log lines have reached the platform
#: through a mid-run flush (polling the platform's own logs endpoint), then logs more. (An
#: iteration's lines reach the uploads with its record.)
FLUSH_BENCH = bench(
    'participants=[Participant("p1")], iterations=2',
    """
    @define_task
    def task(task_index, log):
        log(f"before {task_index}")
        if task_index == 1:
            wait_for_flushed_line("after 0")
        log(f"after {task_index}")
    """,
    prelude="""
    import os, time
    import httpx

    def wait_for_flushed_line(text):
        root = os.environ["FLUSH_TEST_ROOT"] + "/api/v1"
        headers = {"Authorization": "Bearer " + os.environ["BENCHMARKS_PLATFORM_API_KEY"]}
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for run in httpx.get(root + "/benchmarks/runs", headers=headers).json()["items"]:
                url = f"{root}/benchmarks/demo/runs/{run['id']}/participants/p1/logs"
                for worker in httpx.get(url, headers=headers).json()["workers"]:
                    lines = (worker["log"] or {}).get("lines") or []
                    if any(text in line["msg"] for line in lines):
                        return
            time.sleep(0.05)
        raise TaskError("the log line never reached the platform", code="no_flush")
    """,
)


def _log_artifacts(server: LoopbackPlatform) -> list[list[str]]:
    return [
        [line.split("] ", 2)[-1] for line in iter_lines(a["content"])]
        for a in server.uploaded_artifacts()
        if a["kind"] == "coordinator.log"
    ]


def test_log_flush_interval_uploads_the_log_while_the_participant_runs(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    monkeypatch.setenv("FLUSH_TEST_ROOT", server.root_url)
    monkeypatch.setenv("BENCHMARK_LOG_FLUSH_INTERVAL_MS", "1")
    pytester.makepyfile(bench_x=FLUSH_BENCH)
    result = pytester.runpytest_inprocess(*bench_args(server))
    result.assert_outcomes(passed=2)
    parts = _log_artifacts(server)
    assert len(parts) >= 2
    assert parts[0] == ["before 0", "after 0"]
    # Every line reached the platform once, in order, across the parts.
    assert [line for part in parts for line in part] == [
        "before 0",
        "after 0",
        "before 1",
        "after 1",
    ]


def test_without_the_interval_the_log_is_uploaded_once_at_the_end(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    monkeypatch.setenv("BENCHMARK_LOG_FLUSH_INTERVAL_MS", "not-a-number")  # upstream: default 0
    pytester.makepyfile(bench_x=FLUSH_BENCH.replace('wait_for_flushed_line("after 0")', "pass"))
    pytester.runpytest_inprocess(*bench_args(server)).assert_outcomes(passed=2)
    assert _log_artifacts(server) == [["before 0", "after 0", "before 1", "after 1"]]
