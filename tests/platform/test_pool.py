"""Distributed runs: worker pools across pytest processes, readiness barriers, step heartbeats
and the run close, end to end against the loopback platform (several real pytest processes at
once, each with its own store, as on separate machines)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from typing import Any

import pytest

from helpers.e2e import bench_args, use_platform
from helpers.platform_server import LoopbackPlatform
from helpers.sessions import assert_usage_error, bench
from pytest_benchsdk._base.coordination import StepCoordination
from pytest_benchsdk.context import TaskContext, run_task, run_task_async
from pytest_benchsdk.platform import BenchmarkClient, _barrier
from pytest_benchsdk.platform._barrier import PoolBarrier

KEY = "ci-4711"

#: Two iterations at concurrency 2: a 200 ms "warm" step, then a barrier step that records the
#: wall-clock time at which the barrier let it through.
POOL_BENCH = bench(
    'participants=[Participant("p1")], iterations=2, concurrency=2',
    """
    import asyncio, time

    @define_task
    async def task(step, measure):
        await step("warm", asyncio.sleep(0.2))
        await step("burst", asyncio.sleep(0.01), readiness="poll",
                   ready_poll_interval_ms=50, ready_timeout_ms=READY_TIMEOUT_MS)
        measure(released=time.time())
    """,
    slug="pool",
    prelude="READY_TIMEOUT_MS = 60000\n",
)


def _popen(pytester: pytest.Pytester, args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=pytester.path,
        env=dict(os.environ),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _pool_args(server: LoopbackPlatform, pool: int, store: str, *extra: str) -> list[str]:
    return [
        *bench_args(server, "--bench-run-key", KEY, "--bench-worker-pool", str(pool)),
        f"--bench-store={store}",
        *extra,
    ]


def _only_run(server: LoopbackPlatform) -> dict[str, Any]:
    (run,) = server.runs.values()
    assert run["runKey"] == KEY
    return run


def _task_indices(server: LoopbackPlatform, run_id: str) -> Counter[int]:
    return Counter(int(record["taskIndex"]) for _, record in server.records(run_id))


@pytest.mark.slow
def test_pool_of_three_processes_at_once_shares_one_run_and_the_barrier_holds(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    pytester.makepyfile(bench_pool=POOL_BENCH)
    procs = []
    for index in range(3):
        if index:
            time.sleep(1.0)  # the late ones must hold the early ones at the barrier
        last_launch = time.time()
        procs.append(
            _popen(
                pytester,
                _pool_args(server, 3, f"s{index}.sqlite3", "--bench-close-after-ms", "60000"),
            )
        )
    outputs = []
    for proc in procs:
        output, _ = proc.communicate(timeout=180)
        outputs.append(output)
        assert proc.returncode == 0, output

    run = _only_run(server)
    run_id = run["id"]
    part = server.participants[(run_id, "p1")]
    assert (part["totalTasks"], part["workerCount"]) == (6, 3)
    assert run["config"]["closeAfterMs"] == 60000
    workers = [w for w in server.workers.values() if w["runId"] == run_id]
    assert sorted(w["status"] for w in workers) == ["completed"] * 3
    assert sorted(w["workerIndex"] for w in workers) == [0, 1, 2]
    # Every task index of the pool exactly once: each process sent its claimed range.
    assert _task_indices(server, run_id) == Counter(range(6))
    # The barrier let nobody through before the last process had arrived.
    released = [record["data"]["released"] for _, record in server.records(run_id)]
    assert min(released) >= last_launch
    # Exactly one process (the last worker's) closed the run, and said so.
    assert run["closeRequests"] == [{"closeAfterMs": 60000}]
    closers = [out for out in outputs if "benchsdk: Closed run " in out]
    assert len(closers) == 1
    assert f"Closed run {run_id} (" in closers[0]
    # One process planned the pool; the two others joined it.
    joined = [out for out in outputs if "Worker pool already planned for p1 — joining it." in out]
    assert len(joined) == 2
    assert sorted(
        next(line for line in out.splitlines() if "pool worker" in line).split(",")[0].strip()
        for out in outputs
    ) == ["p1: pool worker 1/3", "p1: pool worker 2/3", "p1: pool worker 3/3"]
    # Heartbeats described the work: each worker reported both steps while they ran, with
    # the worker's concurrency as target, and the barrier step as its current step.
    for worker in workers:
        beats = worker["heartbeats"]
        samples = [s for beat in beats for s in beat.get("concurrency") or []]
        assert {"step": "warm", "active": 2, "target": 2} in samples, beats
        assert {"step": "burst", "active": 2, "target": 2} in samples, beats
        assert any(beat.get("currentStep") == "burst" for beat in beats), beats
        assert all("currentStep" not in beat for beat in beats if not beat.get("concurrency")), (
            beats
        )


@pytest.mark.slow
def test_a_process_finding_no_pending_worker_skips_its_iterations(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Upstream's case: a pool of 2, three invocations → exactly one close.
    server = loopback_platform
    use_platform(monkeypatch)
    pytester.makepyfile(bench_x=bench('participants=[Participant("p1")], iterations=2'))
    results = [
        pytester.runpytest_inprocess("-ra", *_pool_args(server, 2, f"s{i}.sqlite3"))
        for i in range(3)
    ]
    run_id = _only_run(server)["id"]
    for result in results[:2]:
        assert result.ret == 0, result.stdout.str()
        result.assert_outcomes(passed=2)
    third = results[2]
    assert third.ret == 0, third.stdout.str()
    third.assert_outcomes(skipped=2)
    message = f"No pending worker to claim for run {run_id} — it may already be fully claimed."
    third.stdout.fnmatch_lines([f"  {message}", f"SKIPPED [[]2[]] *: {message}"])
    assert _task_indices(server, run_id) == Counter(range(4))
    assert len(server.calls("close")) == 1
    assert "benchsdk: Closed run" in results[1].stdout.str()  # the last worker's process
    assert "Closed run" not in results[0].stdout.str() + third.stdout.str()
    assert "rejected" not in third.stdout.str().lower()  # a full pool is an answer
    # The third process sent nothing for the participant: no events, no finish, no artifacts.
    assert len(server.calls("events")) == 2
    assert len(server.calls("complete")) == 2


@pytest.mark.slow
def test_readiness_barrier_times_out_when_the_pool_never_fills(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    pytester.makepyfile(
        bench_pool=POOL_BENCH.replace("READY_TIMEOUT_MS = 60000", "READY_TIMEOUT_MS = 300")
    )
    result = pytester.runpytest_inprocess(*_pool_args(server, 2, "s.sqlite3"))
    assert result.ret == 1, result.stdout.str()
    result.assert_outcomes(failed=2)
    message = 'Timed out waiting for benchmark step "burst" to become ready.'
    assert message in result.stdout.str()
    run_id = _only_run(server)["id"]
    records = [record for _, record in server.records(run_id)]
    assert [r["errorCode"] for r in records] == ["step_ready_timeout"] * 2
    assert all(r["data"]["errorMessage"] == message for r in records)
    assert [s["errorCode"] for r in records for s in r["steps"] if s["name"] == "burst"] == [
        "step_ready_timeout"
    ] * 2
    assert server.calls("progress")  # it did ask the platform
    # The failed worker still ends its attempt (fail), and, holding no last worker, no close.
    assert len(server.calls("fail")) == 1
    assert server.calls("close") == []


@pytest.mark.slow
def test_heartbeat_samples_are_capped_unique_sorted_and_honour_report_concurrency(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1")], iterations=1',
            """
            import asyncio

            @define_task
            async def task(step):
                await asyncio.gather(
                    step("big", lambda: asyncio.sleep(0.6), parallel_invocations=3),
                    step("hidden", asyncio.sleep(0.6), report_concurrency=False),
                    *(step(f"s{i:02}", asyncio.sleep(0.6)) for i in range(24)),
                )
            """,
        )
    )
    result = pytester.runpytest_inprocess(*bench_args(server))
    assert result.ret == 0, result.stdout.str()
    beats = [r.json for r in server.calls("heartbeat")]
    full = [b for b in beats if b.get("concurrency")]
    assert full, beats
    for beat in full:
        samples = beat["concurrency"]
        steps = [s["step"] for s in samples]
        assert len(samples) <= 20
        assert len(set(steps)) == len(steps)
        assert "hidden" not in steps
        actives = [s["active"] for s in samples]
        assert actives == sorted(actives, reverse=True)
        assert beat["currentStep"] == steps[0]
    widest = max(full, key=lambda b: len(b["concurrency"]))
    assert len(widest["concurrency"]) == 20  # 25 steps active at once, capped at 20
    assert widest["concurrency"][0] == {"step": "big", "active": 3, "target": 3}
    # Once the steps ended, a heartbeat said so (no samples, no current step).
    assert "currentStep" not in beats[-1]


@pytest.mark.slow
def test_a_failed_close_warns_and_changes_nothing_else(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    server.fault("close", status=409, body={"error": "Run already closed"}, times=None)
    pytester.makepyfile(bench_x=bench('participants=[Participant("p1")], iterations=2'))
    result = pytester.runpytest_inprocess(
        *_pool_args(server, 1, "s.sqlite3", "--bench-strict-upload")
    )
    assert result.ret == 0, result.stdout.str()
    run_id = _only_run(server)["id"]
    result.stdout.fnmatch_lines(
        [f"benchsdk: Failed to close run {run_id}: POST */close: * 409 * — Run already closed"]
    )
    assert _task_indices(server, run_id) == Counter(range(2))
    assert len(server.calls("close")) == 1  # a verdict, not retried


@pytest.mark.slow
def test_resubmit_finishes_a_pool_worker_without_claiming_another(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    pytester.makepyfile(bench_x=bench('participants=[Participant("p1")], iterations=3'))
    # The worker is claimed, then the platform stops taking results.
    server.fault("events", status=503, times=None)
    first = pytester.runpytest_inprocess(
        *_pool_args(server, 2, "s.sqlite3", "--bench-upload-timeout", "1")
    )
    assert first.ret == 0, first.stdout.str()
    assert "pytest --bench-resubmit" in first.stdout.str()
    run_id = _only_run(server)["id"]
    assert server.records(run_id) == []
    server.clear_faults()
    again = pytester.runpytest_inprocess(
        "--bench-resubmit", "--bench-base-url", server.root_url, "--bench-store=s.sqlite3"
    )
    assert again.ret == 0, again.stdout.str()
    assert len(server.calls("claim")) == 1
    assert _task_indices(server, run_id) == Counter(range(3))
    workers = [w for w in server.workers.values() if w["runId"] == run_id]
    assert sorted(w["status"] for w in workers) == ["completed", "pending"]
    assert server.calls("close") == []  # worker 1 of 2 is not the last one


# -- options and modes -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bench-worker-pool", "2"], "--bench-worker-pool requires --bench-run-key"),
        (
            ["--bench-run-key", "k", "--bench-worker-pool", "0"],
            '--bench-worker-pool expects an integer >= 1 (got "0")',
        ),
        (
            ["--bench-run-key", "k", "--bench-worker-pool", "1.5"],
            '--bench-worker-pool expects an integer >= 1 (got "1.5")',
        ),
        (
            ["--bench-run-key", "k", "--bench-worker-pool", "2", "--bench-close-after-ms", "-1"],
            '--bench-close-after-ms expects a number >= 0 (got "-1")',
        ),
        (
            ["--bench-run-key", "k", "--bench-worker-pool", "2", "-p", "xdist", "-n", "2"],
            "--bench-worker-pool makes this pytest process one worker of a platform pool; "
            "it cannot be split with pytest-xdist (-n).*",
        ),
    ],
)
def test_worker_pool_usage_errors(pytester: pytest.Pytester, args: list[str], message: str) -> None:
    assert_usage_error(pytester, args, message)


def test_worker_pool_in_round_mode_is_a_collection_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench())
    result = pytester.runpytest_inprocess(
        "--bench",
        "--bench-dry-run",
        "--bench-run-key",
        "k",
        "--bench-worker-pool",
        "2",
        "--bench-group-by",
        "round",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["*bench_x.py: --bench-worker-pool is only supported with --bench-group-by participant"]
    )


def test_dry_run_ignores_the_pool_and_barriers_proceed_at_once(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_pool=POOL_BENCH)
    started = time.monotonic()
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "--bench-run-key", "k", "--bench-worker-pool", "3"
    )
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "benchsdk: Dry run: no platform ingest or reporting.",
            "benchsdk: --bench-worker-pool 3 has no effect without the platform: every "
            "iteration runs in this process.",
            '  Readiness barriers (step readiness="poll") are inactive in a dry run (no '
            "platform to coordinate with): such steps proceed at once.",
        ]
    )
    assert time.monotonic() - started < 30  # not the 60 s barrier timeout


def test_local_only_mode_says_barriers_are_inactive(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(pytester.path))
    pytester.makepyfile(bench_pool=POOL_BENCH)
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-run-key", "k", "--bench-worker-pool", "2"
    )
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "benchsdk: --bench-worker-pool 2 has no effect without the platform: every "
            "iteration runs in this process.",
            '  Readiness barriers (step readiness="poll") are inactive without platform '
            "credentials: such steps proceed at once.",
        ]
    )


# -- the barrier against the real platform, without pytest ------------------------------------


class _ClaimedWorker:
    """A claimed worker of the loopback platform: what a barrier needs from its run upload."""

    slug = "pool"

    def __init__(self, client: BenchmarkClient, run_id: str, worker_id: str, attempt: str) -> None:
        self.run_id, self.worker_id, self.attempt = run_id, worker_id, attempt

    def heartbeat_body(self, name: str) -> tuple[str, str, dict[str, Any]] | None:
        return self.run_id, self.worker_id, {"attemptId": self.attempt}


@pytest.fixture
def claimed(platform_client: BenchmarkClient) -> _ClaimedWorker:
    client = platform_client
    client.upsert_benchmark("pool", {"name": "Pool"})
    run_id = client.create_run("pool", {"participants": ["p1"], "totalTasks": 5})["run"]["id"]
    client.plan_workers("pool", run_id, "p1", {})
    assignment = client.claim_worker("pool", run_id, "p1", {})
    assert assignment is not None
    return _ClaimedWorker(client, run_id, assignment["workerId"], assignment["attemptId"])


def test_concurrent_waits_for_one_step_share_one_poller(
    loopback_platform: LoopbackPlatform,
    platform_client: BenchmarkClient,
    claimed: _ClaimedWorker,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = loopback_platform
    # The first poll answers only once the four other waiters wait on it (a fixed delay let a
    # waiter that a loaded machine held back arrive after it, and poll again).
    joined = threading.Semaphore(0)

    class CountedDone(threading.Event):
        def wait(self, timeout: float | None = None) -> bool:
            joined.release()
            return super().wait(timeout)

    class CountedWait(_barrier._Wait):
        def __init__(self) -> None:
            super().__init__()
            self.done = CountedDone()

    def hold(_request: object) -> None:
        for _ in range(4):
            joined.acquire(timeout=30)

    monkeypatch.setattr(_barrier, "_Wait", CountedWait)
    server.fault("progress", call=hold, times=1)
    barrier = PoolBarrier(claimed, "p1", platform_client)
    coordination = StepCoordination(5, barrier=barrier)
    start = threading.Barrier(5)
    results: list[bool] = []

    def wait() -> None:
        coordination.enter("go", 5)
        start.wait()
        results.append(coordination.wait_ready("go", 5, 10.0, 0.05))

    threads = [threading.Thread(target=wait) for _ in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert results == [True] * 5
    assert len(server.calls("progress")) == 1
    (beat,) = [r.json for r in server.calls("heartbeat")]
    assert beat["currentStep"] == "go"
    assert beat["concurrency"] == [{"step": "go", "active": 5, "target": 5}]


def test_a_barrier_wait_gives_up_at_its_timeout(
    loopback_platform: LoopbackPlatform, platform_client: BenchmarkClient, claimed: _ClaimedWorker
) -> None:
    barrier = PoolBarrier(claimed, "p1", platform_client)
    coordination = StepCoordination(2, barrier=barrier)
    coordination.enter("go", 2)  # one of two arrived: never ready
    started = time.monotonic()
    assert coordination.wait_ready("go", 2, 0.3, 0.05) is False
    assert time.monotonic() - started < 5
    assert len(loopback_platform.calls("progress")) >= 2


def test_readiness_options_are_validated(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1")], iterations=3',
            """
            @define_task
            def task(step, task_index):
                options = [{"readiness": "later"}, {"ready_poll_interval_ms": 0},
                           {"ready_timeout_ms": -1}][task_index]
                step("go", lambda: None, **options)
            """,
        )
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run")
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(
        [
            """*step "go" readiness must be "poll" or "internal" (got 'later')*""",
            '*step "go" ready_poll_interval_ms must be a number >= 1 (got 0)*',
            '*step "go" ready_timeout_ms must be a number >= 0 (got -1)*',
        ],
        consecutive=False,
    )


@pytest.mark.slow
@pytest.mark.parametrize("form", ["sync-fn", "sync-block", "async-block"])
def test_the_barrier_wait_is_not_part_of_the_step_latency(
    loopback_platform: LoopbackPlatform,
    platform_client: BenchmarkClient,
    claimed: _ClaimedWorker,
    form: str,
) -> None:
    # The barrier's answer comes 3 s late; the step itself takes 50 ms. The bounds are far
    # apart so a loaded machine cannot blur them.
    loopback_platform.fault("progress", delay=3.0, times=1)
    coordination = StepCoordination(1, barrier=PoolBarrier(claimed, "p1", platform_client))
    ctx = TaskContext(
        participant=None, participant_name="p1", task_index=0, coordination=coordination
    )

    def sync_task(ctx: TaskContext) -> None:
        if form == "sync-fn":
            ctx.step("go", lambda: time.sleep(0.05), readiness="poll")
        else:
            with ctx.step("go", readiness="poll"):
                time.sleep(0.05)

    async def async_task(ctx: TaskContext) -> None:
        async with ctx.step("go", readiness="poll"):
            await asyncio.sleep(0.05)

    if form == "async-block":
        ctx.is_async = True
        outcome = asyncio.run(run_task_async(ctx, async_task))
    else:
        outcome = run_task(ctx, sync_task)
    record = outcome.record
    assert record.status == "success", record
    (go,) = record.steps
    assert go.latency_ms < 1500  # the step's own 50 ms, not the 3 s wait
    assert record.latency_ms >= 3000  # the iteration did wait
    assert coordination.samples() == []  # left the step again
    assert len(loopback_platform.calls("progress")) == 1
