"""Randomised kills: a reporting session, then a resubmit, each SIGKILLed at a random moment,
then a resubmit that runs to its end. Every record the store holds must reach the loopback
platform exactly once, or stay visibly outstanding (``--bench-resubmit`` exits non-zero and
says how many).

A kill lands at a random request the platform receives (before it is handled, or after it was
handled and before the answer leaves: a lost answer), or once a random number of records is
stored: observable events, never a timer. Each round draws its moments from its own seed,
printed when it fails; ``BENCHSDK_KILL_SEED=<seed>`` replays it.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from helpers.e2e import bench_args, server_records, use_platform
from helpers.platform_server import API_KEY, LoopbackPlatform
from helpers.sessions import bench, store_path, stored_records, stored_runs
from pytest_benchsdk.store import ResultStore

#: Rounds in the regular suite (each a test item, so xdist spreads them); more with
#: ``BENCHSDK_KILL_ROUNDS=<n>`` when hunting.
ROUNDS = int(os.environ.get("BENCHSDK_KILL_ROUNDS") or 4)
#: This run's seed: each round's is derived from it (set the variable to replay one).
BASE_SEED = int(os.environ.get("BENCHSDK_KILL_SEED") or random.SystemRandom().randrange(2**32))

ITERATIONS = 8
BENCH = bench(
    f'participants=[Participant("p1"), Participant("p2")], iterations={ITERATIONS}',
    """
    import time

    @define_task
    def task(participant, task_index, measure, log):
        time.sleep(0.01)
        log(f"iteration {task_index}")
        measure(value=10 + task_index)
    """,
    slug="kills",
)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    env["BENCHMARKS_PLATFORM_API_KEY"] = API_KEY
    return env


def _spawn(cwd: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", *args],
        cwd=cwd,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _stored(path: Path) -> int:
    try:
        # Read-only: the watcher never takes the session's write lock.
        with ResultStore(path, read_only=True) as store:
            return sum(run.record_count for run in store.list_runs())
    except Exception:  # not created yet, or locked for a moment
        return 0


def _arm(
    server: LoopbackPlatform,
    proc: subprocess.Popen[str],
    path: Path,
    rng: random.Random,
    plan: list[str],
    *,
    records: bool,
) -> threading.Thread | None:
    """Kill ``proc`` at a random moment: the n-th request (before it is handled, or after:
    its answer is lost) or, when ``records``, possibly once k records are stored."""

    def kill(*_: object) -> None:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)

    if records and rng.random() < 0.3:
        count = rng.randrange(1, 2 * ITERATIONS)
        plan.append(f"kill at {count} stored records")

        def watch() -> None:
            while proc.poll() is None:
                if _stored(path) >= count:
                    kill()
                    return
                time.sleep(0.01)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        return watcher
    nth = rng.randrange(30)
    handled = rng.random() < 0.5
    plan.append(f"kill at request #{nth + 1}, {'after' if handled else 'before'} handling it")
    server.fault("*", skip=nth, drop_after=handled, drop=not handled, call=kill)
    return None


def _wait(proc: subprocess.Popen[str], watcher: threading.Thread | None) -> str:
    try:
        output = proc.communicate(timeout=120)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
    if watcher is not None:
        watcher.join(5)
    return output


def _check(server: LoopbackPlatform, path: Path, final: pytest.RunResult, plan: list[str]) -> None:
    """Exactly once, or visibly outstanding."""
    why = f"seed plan: {plan}\n{final.stdout.str()}"
    (local,) = stored_runs(path)
    in_store = {p: rs for p, rs in stored_records(path, local.run_id).items() if rs}
    assert local.status != "running", why
    runs = [r for r in server.runs.values() if r["benchmarkSlug"] == "kills"]
    assert len(runs) <= 1, why  # a retried run creation never makes a second run
    on_platform = server_records(server, runs[0]["id"]) if runs else {}
    keys = Counter((p, r["taskIndex"]) for p, r in server.records())
    assert all(n == 1 for n in keys.values()), (keys, why)
    # Whatever reached the platform is what the store holds.
    for participant, records in on_platform.items():
        stored = {r["taskIndex"]: r for r in in_store.get(participant, [])}
        assert all(stored.get(r["taskIndex"]) == r for r in records), why
    missing = sum(len(rs) for rs in in_store.values()) - sum(keys.values())
    if final.ret == 0:
        assert on_platform == in_store, why
        assert missing == 0, why
        # Remembered, so later resubmits need not compare the records again.
        with ResultStore(path) as store:
            delivered = store.state_get(local.run_id, "platform.delivered-records")
        assert delivered == local.record_count, why
    else:
        assert missing > 0, why
        final.stdout.fnmatch_lines(
            [f"benchsdk: {missing} stored record(s) have not reached the platform (see above)*"]
        )
        assert "nothing to resubmit" not in final.stdout.str(), why


@pytest.mark.slow
@pytest.mark.parametrize("round_", range(ROUNDS))
def test_random_kills_of_a_session_and_a_resubmit_lose_nothing(
    pytester: pytest.Pytester,
    loopback_platform: LoopbackPlatform,
    monkeypatch: pytest.MonkeyPatch,
    round_: int,
) -> None:
    seed = BASE_SEED + round_
    rng = random.Random(seed)
    plan: list[str] = [f"BENCHSDK_KILL_SEED={seed - round_} round {round_}"]
    server = loopback_platform
    use_platform(monkeypatch)
    pytester.makepyfile(bench_kills=BENCH)
    path = store_path(pytester)

    session = _spawn(pytester.path, *bench_args(server))
    watcher = _arm(server, session, path, rng, plan, records=True)
    _wait(session, watcher)
    server.clear_faults()
    plan.append(f"session exit {session.returncode}, {_stored(path)} records stored")

    if rng.random() < 0.7:
        resubmit = _spawn(pytester.path, "--bench-resubmit", "--bench-base-url", server.root_url)
        watcher = _arm(server, resubmit, path, rng, plan, records=False)
        _wait(resubmit, watcher)
        server.clear_faults()
        plan.append(f"resubmit exit {resubmit.returncode}")

    final = pytester.runpytest_inprocess("--bench-resubmit", "--bench-base-url", server.root_url)
    _check(server, path, final, plan)
    # And nothing is sent twice by another resubmit.
    requests = _records_sent(server)
    again = pytester.runpytest_inprocess("--bench-resubmit", "--bench-base-url", server.root_url)
    assert _records_sent(server) == requests, plan
    assert again.ret == final.ret, (plan, again.stdout.str())


def _records_sent(server: LoopbackPlatform) -> Any:
    return Counter((p, r["taskIndex"]) for p, r in server.records())
