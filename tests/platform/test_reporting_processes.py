"""End-to-end across processes: ``--bench-run-key`` shared by two sequential pytest processes,
and pytest-xdist workers whose records the controller reports once."""

from __future__ import annotations

from collections import Counter

import pytest

from helpers.e2e import (
    E2E_BENCH,
    assert_delivered,
    bench_args,
    server_records,
    use_platform,
)
from helpers.platform_server import LoopbackPlatform
from helpers.sessions import store_path, stored_records, stored_runs

KEY = "nightly-2026-11-30"


def _keyed_run(server: LoopbackPlatform) -> str:
    (run,) = server.runs.values()
    assert run["runKey"] == KEY
    return str(run["id"])


@pytest.mark.slow
def test_run_key_shares_one_run_between_two_sequential_processes(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    pytester.makepyfile(bench_x=E2E_BENCH)
    args = bench_args(server, "--bench-run-key", KEY)
    first = pytester.runpytest_subprocess(*args, "--bench-provider", "p1", timeout=120)
    assert first.ret == 0, first.stdout.str()
    run_id = _keyed_run(server)
    url = f"{server.root_url}/acme/benchmarks/demo/runs/{run_id}"
    first.stdout.fnmatch_lines(
        [f'  Shared run (key "{KEY}"): demo #1 ({run_id})', f"  View at: {url}"]
    )
    second = pytester.runpytest_subprocess(*args, "--bench-provider", "p2", timeout=120)
    assert second.ret == 0, second.stdout.str()
    second.stdout.fnmatch_lines(
        [f'  Shared run (key "{KEY}"): demo #1 ({run_id})', f"  View at: {url}"]
    )

    # One run, both participants, one completed worker each, every record exactly once and
    # equal to what each process stored locally.
    assert _keyed_run(server) == run_id
    assert {name for (rid, name) in server.participants if rid == run_id} == {"p1", "p2"}
    workers = [w for w in server.workers.values() if w["runId"] == run_id]
    assert sorted((w["participant"], w["status"]) for w in workers) == [
        ("p1", "completed"),
        ("p2", "completed"),
    ]
    local = stored_runs(store_path(pytester))
    assert [r.participants for r in local] == [("p1",), ("p2",)]
    assert {r.platform_run_id for r in local} == {run_id}
    expected = {**stored_records(store_path(pytester), local[0].run_id)}
    expected.update(stored_records(store_path(pytester), local[1].run_id))
    assert server_records(server, run_id) == expected
    assert set(Counter((p, r["taskIndex"]) for p, r in server.records(run_id)).values()) == {1}
    kinds = Counter((a["workerId"], a["kind"]) for a in server.uploaded_artifacts(run_id))
    assert kinds == Counter(
        {(w["id"], k): 1 for w in workers for k in ("coordinator.log", "system-metrics")}
    )
    # Each process scores and summarises the participants it ran.
    assert [[row["provider"] for row in s["results"]] for s in server.summaries[run_id]] == [
        ["p1"],
        ["p2"],
    ]


@pytest.mark.slow
def test_run_key_participant_registration_failing_transiently_loses_nothing(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    server.fault("upsert_participant", status=503, times=2)
    server.fault("create_run", status=503, times=1)
    pytester.makepyfile(bench_x=E2E_BENCH)
    result = pytester.runpytest_inprocess(*bench_args(server, "--bench-run-key", KEY))
    assert result.ret == 0
    assert [r.status for r in server.calls("upsert_participant")][:2] == [503, 503]
    assert assert_delivered(server, pytester) == _keyed_run(server)


@pytest.mark.slow
def test_xdist_workers_records_reach_the_platform_exactly_once(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("xdist")
    server = loopback_platform
    use_platform(monkeypatch)
    pytester.makepyfile(bench_x=E2E_BENCH)
    result = pytester.runpytest_subprocess(
        "-p", "xdist", "-n", "2", "--dist", "loadgroup", *bench_args(server), timeout=180
    )
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=4)
    run_id = assert_delivered(server, pytester)
    result.stdout.fnmatch_lines([f"  Run created: demo #1 ({run_id})", "  View at: *"])
