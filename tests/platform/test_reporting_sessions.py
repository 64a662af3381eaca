"""End-to-end: real pytest sessions (pytester) report to the loopback platform over HTTP.

Everything a session produces must reach the platform exactly once: when it answers, when each
endpoint fails transiently, and (through ``--bench-resubmit``) when it is down for the whole run.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from helpers.e2e import (
    E2E_BENCH,
    assert_delivered,
    bench_args,
    e2e_bench,
    outcome_file,
    server_records,
    use_platform,
)
from helpers.platform_server import LoopbackPlatform
from helpers.sessions import read_json, store_path, stored_runs

RESUBMIT = "pytest --bench-resubmit"
#: The platform answers every request with 503 and asks to come back in a minute: "down" for
#: the whole session without the minute-long backoff a refused connection would cost.
DOWN: dict[str, Any] = {"status": 503, "retry_after": "60", "times": None}


def _writes(server: LoopbackPlatform) -> int:
    """Requests that change platform state (heartbeats excluded: telemetry, never queued)."""
    return sum(1 for r in server.calls() if r.method != "GET" and r.route != "heartbeat")


# -- everything arrives ----------------------------------------------------------------------


@pytest.mark.slow
def test_full_run_reaches_the_platform(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    pytester.makepyfile(bench_x=E2E_BENCH)
    out = pytester.path / "run.json"
    result = pytester.runpytest_inprocess(*bench_args(server, "--bench-json", str(out)))
    result.assert_outcomes(passed=4)
    assert result.ret == 0
    run_id = assert_delivered(server, pytester)
    url = f"{server.root_url}/acme/benchmarks/demo/runs/{run_id}"

    # Header: the run and its dashboard; summary: the dashboard again; nothing left over.
    result.stdout.fnmatch_lines(
        [
            "benchsdk: Demo [[]bench_x.py[]]",
            "  Knobs: *",
            f"  Run created: demo #1 ({run_id})",
            f"  View at: {url}",
            "*= benchmarks =*",
            "Demo (demo) [[]bench_x.py[]]",
            "*Scores:*",
            f"  View at: {url}",
        ]
    )
    text = result.stdout.str()
    assert "Local only" not in text
    assert "Dry run" not in text
    assert "not delivered" not in text
    assert "Platform" not in text

    # --bench-json and on_complete's outcome know the platform run.
    (entry,) = read_json(out)["benchmarks"]
    assert (entry["runId"], entry["dashboardUrl"]) == (run_id, url)
    assert outcome_file(pytester) == {"run_id": run_id, "dashboard_url": url}

    # The run and benchmark configs are the ones the session used (ignoring nothing).
    (local,) = stored_runs(store_path(pytester))
    assert server.runs[run_id]["config"] == local.config_snapshot == entry["config"]
    # Keyed by the local run (idempotent creation), sized by its participants.
    assert server.runs[run_id]["runKey"] == f"benchsdk-{local.run_id}"
    assert {
        name: part["totalTasks"]
        for (rid, name), part in server.participants.items()
        if rid == run_id
    } == {"p1": 2, "p2": 2}
    assert server.benchmarks["demo"]["config"]["scoring"] == json.loads(
        json.dumps(entry["summary"]["scoring"])
    )
    # The summary on the platform is the one --bench-json shows.
    assert server.summaries[run_id] == [entry["summary"]]
    # Records on the platform equal those in --bench-json too.
    assert server_records(server, run_id) == {
        p["participant"]: p["records"] for p in entry["participants"]
    }


@pytest.mark.slow
def test_two_bench_files_each_get_their_own_run(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    pytester.makepyfile(bench_a=e2e_bench("alpha"), bench_b=e2e_bench("beta"))
    result = pytester.runpytest_inprocess(*bench_args(server))
    result.assert_outcomes(passed=8)
    assert result.ret == 0
    alpha = assert_delivered(server, pytester, slug="alpha")
    beta = assert_delivered(server, pytester, slug="beta")
    assert alpha != beta
    result.stdout.fnmatch_lines(
        [
            f"  Run created: alpha #1 ({alpha})",
            f"  View at: {server.root_url}/acme/benchmarks/alpha/runs/{alpha}",
            f"  Run created: beta #2 ({beta})",
            f"  View at: {server.root_url}/acme/benchmarks/beta/runs/{beta}",
        ]
    )


@pytest.mark.slow
def test_log_lines_are_filtered_by_benchmark_log_level(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_platform(monkeypatch)
    monkeypatch.setenv("BENCHMARK_LOG_LEVEL", "warn")
    pytester.makepyfile(bench_x=E2E_BENCH)
    result = pytester.runpytest_inprocess(*bench_args(loopback_platform))
    assert result.ret == 0
    assert_delivered(loopback_platform, pytester, log_levels=("warn", "error"))


@pytest.mark.slow
def test_debug_log_level_uploads_every_line(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_platform(monkeypatch)
    monkeypatch.setenv("BENCHMARK_LOG_LEVEL", "debug")
    pytester.makepyfile(bench_x=E2E_BENCH)
    result = pytester.runpytest_inprocess(*bench_args(loopback_platform))
    assert result.ret == 0
    assert_delivered(loopback_platform, pytester, log_levels=("debug", "info", "warn", "error"))


@pytest.mark.slow
def test_no_store_still_delivers_through_a_temporary_outbox(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    pytester.makepyfile(bench_x=E2E_BENCH)
    out = pytester.path / "run.json"
    result = pytester.runpytest_inprocess(
        *bench_args(server, "--bench-no-store", "--bench-json", str(out))
    )
    assert result.ret == 0
    assert not store_path(pytester).exists()  # (pytest-benchmark may create .benchmarks/)
    (entry,) = read_json(out)["benchmarks"]
    (run_id,) = server.runs
    assert entry["runId"] == run_id
    assert server_records(server, run_id) == {
        p["participant"]: p["records"] for p in entry["participants"]
    }
    assert len(server.uploaded_artifacts(run_id)) == 4
    assert {w["status"] for w in server.workers.values()} == {"completed"}
    assert server.summaries[run_id] == [entry["summary"]]
    assert "not delivered" not in result.stdout.str()


# -- transient failures ----------------------------------------------------------------------

DELIVERY_ROUTES = (
    "upsert_benchmark",
    "create_run",
    "plan",
    "claim",
    "events",
    "create_artifact",
    "upload",
    "complete",
    "summary",
)


@pytest.mark.slow
@pytest.mark.parametrize("route", DELIVERY_ROUTES)
def test_each_endpoint_failing_transiently_loses_nothing(
    pytester: pytest.Pytester,
    loopback_platform: LoopbackPlatform,
    monkeypatch: pytest.MonkeyPatch,
    route: str,
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    server.fault(route, status=503, times=2)
    pytester.makepyfile(bench_x=E2E_BENCH)
    result = pytester.runpytest_inprocess(*bench_args(server))
    assert result.ret == 0
    assert [r.status for r in server.calls(route)][:2] == [503, 503]
    assert_delivered(server, pytester)
    assert "not delivered" not in result.stdout.str()


@pytest.mark.parametrize(
    "fault",
    [
        pytest.param({"status": 429, "retry_after": "0", "times": 3}, id="429-retry-after"),
        pytest.param({"status": 500, "times": 1}, id="500"),
        pytest.param({"status": 502, "times": 1}, id="502"),
        pytest.param({"drop": True, "times": 1}, id="connection-dropped"),
        pytest.param({"delay": 0.2, "times": 2}, id="slow"),
    ],
)
def test_every_endpoint_failing_at_once_loses_nothing(
    pytester: pytest.Pytester,
    loopback_platform: LoopbackPlatform,
    monkeypatch: pytest.MonkeyPatch,
    fault: dict[str, Any],
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    for route in DELIVERY_ROUTES:
        server.fault(route, **fault)
    pytester.makepyfile(bench_x=E2E_BENCH)
    result = pytester.runpytest_inprocess(*bench_args(server))
    assert result.ret == 0
    assert_delivered(server, pytester)


@pytest.mark.slow
@pytest.mark.parametrize(
    "route", ["upsert_benchmark", "plan", "events", "create_artifact", "upload", "complete"]
)
def test_a_lost_answer_is_not_stored_twice(
    pytester: pytest.Pytester,
    loopback_platform: LoopbackPlatform,
    monkeypatch: pytest.MonkeyPatch,
    route: str,
) -> None:
    """The platform handled the request but the answer never came back: the retry must not
    duplicate anything (event batches keep their sequence number)."""
    server = loopback_platform
    use_platform(monkeypatch)
    server.fault(route, drop_after=True, times=1)
    pytester.makepyfile(bench_x=E2E_BENCH)
    result = pytester.runpytest_inprocess(*bench_args(server))
    assert result.ret == 0
    assert len(server.calls(route)) >= 2
    assert_delivered(server, pytester)


@pytest.mark.slow
def test_a_lost_claim_answer_loses_nothing(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    server.fault("claim", drop_after=True, times=1)
    pytester.makepyfile(bench_x=E2E_BENCH)
    result = pytester.runpytest_inprocess(*bench_args(server))
    assert result.ret == 0
    assert "Platform rejected" not in result.stdout.str()
    assert_delivered(server, pytester)


@pytest.mark.slow
def test_a_lost_run_creation_answer_creates_one_run(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    server.fault("create_run", drop_after=True, times=1)
    pytester.makepyfile(bench_x=E2E_BENCH)
    assert pytester.runpytest_inprocess(*bench_args(server)).ret == 0
    assert len(server.runs) == 1


@pytest.mark.slow
def test_a_lost_summary_answer_sends_the_same_summary_again(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At least once: the summary is posted again, identical (the platform keeps the last)."""
    server = loopback_platform
    use_platform(monkeypatch)
    server.fault("summary", drop_after=True, times=1)
    pytester.makepyfile(bench_x=E2E_BENCH)
    assert pytester.runpytest_inprocess(*bench_args(server)).ret == 0
    (run_id,) = server.runs
    first, second = server.summaries[run_id]
    assert first == second
    server.summaries[run_id] = [first]
    assert_delivered(server, pytester)


# -- platform down, resubmit -----------------------------------------------------------------


@pytest.mark.slow
def test_platform_down_for_the_whole_run_then_resubmit_delivers_everything_once(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    server.fault("*", **DOWN)
    pytester.makepyfile(bench_x=E2E_BENCH)
    out = pytester.path / "run.json"
    result = pytester.runpytest_inprocess(*bench_args(server, "--bench-json", str(out)))
    # The run completes, and undelivered data does not change the exit status.
    result.assert_outcomes(passed=4)
    assert result.ret == 0
    assert server.benchmarks == {}
    assert server.runs == {}
    path = store_path(pytester)
    (local,) = stored_runs(path)
    assert local.record_count == 4
    assert local.platform_run_id is None
    result.stdout.fnmatch_lines(
        [
            "  Platform not reachable yet (benchmark: PUT /benchmarks/demo: *503*); results are "
            f"kept locally and sent when it answers, or later with: {RESUBMIT}",
            "*= benchmarks =*",
            "Not delivered to the platform: 4 record(s) of 1 run (* queued upload(s): the run, "
            f"its participants, record batches, logs, summary); they are kept in {path}. "
            f"Send them later with: {RESUBMIT}",
        ]
    )
    assert "--bench-strict-upload" not in result.stdout.str()
    (entry,) = read_json(out)["benchmarks"]
    assert entry["runId"] is None
    assert entry["dashboardUrl"] is None

    # The platform is back: resubmit sends everything, exactly once.
    server.clear_faults()
    again = pytester.runpytest_inprocess(*bench_args(server, "--bench-resubmit"))
    assert again.ret == 0, again.stdout.str()
    again.stdout.fnmatch_lines([f"benchsdk: resubmitting 1 run(s) from {path} ...*"])
    run_id = assert_delivered(server, pytester)
    assert server.summaries[run_id] == [entry["summary"]]
    (local,) = stored_runs(path)
    assert local.dashboard_url == f"{server.root_url}/acme/benchmarks/demo/runs/{run_id}"

    # A second resubmit finds nothing and sends nothing.
    writes = _writes(server)
    third = pytester.runpytest_inprocess(*bench_args(server, "--bench-resubmit"))
    assert third.ret == 0
    third.stdout.fnmatch_lines([f"benchsdk: nothing to resubmit in {path}."])
    assert _writes(server) == writes
    assert_delivered(server, pytester)


@pytest.mark.slow
def test_resubmit_with_refused_credentials_keeps_everything_and_fails(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    server.fault("*", **DOWN)
    pytester.makepyfile(bench_x=E2E_BENCH)
    assert pytester.runpytest_inprocess(*bench_args(server)).ret == 0
    server.clear_faults()
    server.tokens = {"another-key"}
    again = pytester.runpytest_inprocess(*bench_args(server, "--bench-resubmit"))
    assert again.ret == 1
    again.stdout.fnmatch_lines(
        [
            "benchsdk: Platform delivery stopped: the platform refused the credentials (*401*",
            "benchsdk: still unsent: * record(s) of 1 run (* queued upload(s): *); run "
            f"`{RESUBMIT}` again once the problem reported above is fixed.",
        ]
    )
    assert server.benchmarks == {}
    server.tokens = set()
    assert pytester.runpytest_inprocess(*bench_args(server, "--bench-resubmit")).ret == 0
    assert_delivered(server, pytester)


@pytest.mark.slow
def test_resubmit_without_credentials_says_so(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    server.fault("*", **DOWN)
    pytester.makepyfile(bench_x=E2E_BENCH)
    assert pytester.runpytest_inprocess(*bench_args(server)).ret == 0
    monkeypatch.delenv("BENCHMARKS_PLATFORM_API_KEY")
    server.clear_faults()
    again = pytester.runpytest_inprocess(*bench_args(server, "--bench-resubmit"))
    assert again.ret == 1
    again.stdout.fnmatch_lines(["benchsdk: cannot resubmit: *"])
    assert server.runs == {}


# -- strict upload ---------------------------------------------------------------------------

STRICT_MESSAGE = (
    "benchsdk: platform upload incomplete (--bench-strict-upload): the session fails although "
    "every benchmark ran."
)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["option", "ini"])
def test_strict_upload_fails_the_session_with_a_distinct_message(
    pytester: pytest.Pytester,
    loopback_platform: LoopbackPlatform,
    monkeypatch: pytest.MonkeyPatch,
    how: str,
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    server.fault("*", **DOWN)
    pytester.makepyfile(bench_x=E2E_BENCH)
    args = bench_args(server)
    if how == "option":
        args += ("--bench-strict-upload",)
    else:
        pytester.makeini("[pytest]\nbench_strict_upload = true\n")
    result = pytester.runpytest_inprocess(*args)
    result.assert_outcomes(passed=4, errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [f"Not delivered to the platform: *Send them later with: {RESUBMIT}", STRICT_MESSAGE]
    )


@pytest.mark.slow
def test_strict_upload_passes_when_everything_is_delivered(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_platform(monkeypatch)
    pytester.makepyfile(bench_x=E2E_BENCH)
    result = pytester.runpytest_inprocess(*bench_args(loopback_platform, "--bench-strict-upload"))
    assert result.ret == 0
    assert "--bench-strict-upload" not in result.stdout.str()
    assert_delivered(loopback_platform, pytester)


@pytest.mark.slow
def test_strict_upload_fails_on_a_rejection(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    server.fault("summary", status=400, body={"error": "summary too large"}, times=None)
    pytester.makepyfile(bench_x=E2E_BENCH)
    lenient = pytester.runpytest_inprocess(*bench_args(server))
    assert lenient.ret == 0
    lenient.stdout.fnmatch_lines(["*Platform rejected: summary: *summary too large*"])
    strict = pytester.runpytest_inprocess(*bench_args(server, "--bench-strict-upload"))
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    strict.stdout.fnmatch_lines(
        ["*Platform rejected: summary: *summary too large*", STRICT_MESSAGE]
    )
