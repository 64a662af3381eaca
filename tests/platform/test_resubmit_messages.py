"""What a resubmit says is true, and its exit status follows (issue 32, item 7): an upload
that could not be sent names the upload it needs and why that one is not done; "the
rejection(s) above" is never said when no rejection was printed."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.e2e import E2E_BENCH, bench_args, use_platform
from helpers.platform_server import API_KEY, LoopbackPlatform
from helpers.sessions import store_path, stored_runs
from pytest_benchsdk.store import ResultStore


def _spawn(pytester: pytest.Pytester, *args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    env["BENCHMARKS_PLATFORM_API_KEY"] = API_KEY
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=pytester.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


def _killed_at_its_pool_claim(pytester: pytest.Pytester, server: LoopbackPlatform) -> Path:
    """A worker-pool session SIGKILLed while its first claim is on the wire: the platform
    applies the claim (its worker is taken), the answer never comes back."""
    pytester.makepyfile(bench_x=E2E_BENCH)
    pool = ("--bench-run-key", "k1", "--bench-worker-pool", "1")
    proc = _spawn(pytester, *bench_args(server, *pool))

    def kill(_request: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)

    server.fault("claim", drop_after=True, call=kill)
    try:
        proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    server.clear_faults()
    return store_path(pytester)


@pytest.mark.slow
def test_a_claim_applied_after_its_session_died_is_named_and_fails_the_resubmit(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe's case. The platform's worker listing does not say who claimed a worker, so
    the resubmit cannot find the worker the dead session's claim took; claiming again finds
    the pool empty, and the participant's end (``finish p1``) cannot be sent. The resubmit
    said "1 dependent platform upload(s) were not sent because of the rejection(s) above"
    with no rejection above, and exited 0."""
    use_platform(monkeypatch)
    with LoopbackPlatform(tokens=(API_KEY,), lists_attempts=False) as server:
        path = _killed_at_its_pool_claim(pytester, server)
        (run,) = stored_runs(path)
        assert run.record_count == 0  # a pool participant runs nothing before its claim
        result = pytester.runpytest_inprocess(
            "--bench-resubmit", "--bench-base-url", server.root_url
        )
        text = result.stdout.str()
        assert result.ret == 1, text
        assert "rejection(s) above" not in text
        assert "Platform rejected" not in text
        result.stdout.fnmatch_lines(
            [
                "benchsdk: 1 dependent platform upload(s) were not sent (finish p1): they need "
                "claim p1, which got no worker: the platform's pool had no pending worker left "
                "for p1 (other processes took them, or the platform applied this run's first "
                "claim after the session that sent it had died; that worker then stays running "
                "on the platform until the platform gives up on it). They stay in the local "
                "store; once the cause is fixed, send them again with: pytest --bench-resubmit "
                "--bench-resubmit-rejected",
            ]
        )
        # Both claims reached the platform: the dead session's took the only worker.
        assert len(server.calls("claim")) == 2
        (worker,) = server.workers.values()
        assert worker["status"] == "running"
        with ResultStore(path) as store:
            (finish,) = store.outbox_entries(run.run_id, "rejected")
        assert finish.kind == "finish"
        assert (finish.last_error or "").startswith(
            "finish p1: not sent because it needs claim p1, which got no worker"
        )


def test_uploads_that_need_a_rejected_one_name_it(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rejections printed in this delivery (the plan, then the claim that found no worker
    planned): the dependants name the upload they needed and what the platform said."""
    server = loopback_platform
    use_platform(monkeypatch)
    server.fault("plan", status=400, body={"error": "plan refused"})
    pytester.makepyfile(bench_x=E2E_BENCH)
    result = pytester.runpytest_inprocess(*bench_args(server))
    text = result.stdout.str()
    assert "Platform rejected: plan p1: " in text
    result.stdout.fnmatch_lines(
        [
            "4 dependent platform upload(s) were not sent (events p1 #0, artifact p1, artifact "
            "p1, finish p1): they need claim p1, which was rejected (claim p1: No pending "
            "worker to claim for run *): no platform worker was claimed for p1. They stay in "
            "the local store; once the cause is fixed, send them again with: pytest "
            "--bench-resubmit --bench-resubmit-rejected",
        ]
    )
    assert "rejection(s) above" not in text
