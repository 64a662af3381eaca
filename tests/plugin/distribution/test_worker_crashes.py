"""An xdist worker SIGKILLed mid-iteration (issue 48, item 4): the session ends, the item it
died in fails (xdist's own report) and runs nowhere else, every other iteration is recorded
exactly once, in the store and on the platform, and the run ends ``failed``.

Real sessions in subprocesses (``-n 2``) reporting to the loopback platform; the victim is the
worker whose iteration wrote its pid, killed once the pid is there (and, for a pool, once the
store holds the records that iteration waited for): observable events, never a timer. The
iteration then waits for a file the test writes after the kill, so the worker is known to be
inside it when it dies, and whoever runs that iteration later does not wait.
"""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from pathlib import Path

import pytest

from helpers.e2e import bench_args, server_records, use_platform
from helpers.platform_server import LoopbackPlatform
from helpers.processes import Session
from helpers.sessions import bench, store_path, stored_records, stored_runs
from pytest_benchsdk.store import ResultStore

pytest.importorskip("xdist")

pytestmark = pytest.mark.slow

#: Iteration ``victim`` of ``participant`` writes its worker's pid and waits to be killed.
_TASK = """
import os, pathlib, time

HERE = pathlib.Path(__file__).parent


@define_task
def task(participant, task_index, measure):
    if (participant.name, task_index) == ({participant!r}, {victim}):
        if not (HERE / "killed").exists():
            (HERE / "victim.pid").write_text(str(os.getpid()))
            end = time.monotonic() + 60
            while not (HERE / "killed").exists() and time.monotonic() < end:
                time.sleep(0.01)
    time.sleep(0.005)
    measure(value=10 + task_index)
"""


def _bench(iterations: int, concurrency: int, participant: str, victim: int) -> str:
    return bench(
        'participants=[Participant("p1"), Participant("p2")], '
        f"iterations={iterations}, concurrency={concurrency}",
        _TASK.format(participant=participant, victim=victim),
        slug="crash",
    )


def _env() -> dict[str, str]:
    # Not this test run's own xdist variables (the inner controller is no worker).
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}


def _wait_for(path: Path, session: Session, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert session.proc.poll() is None, session.output
        assert time.monotonic() < deadline, session.output
        time.sleep(0.01)


def _records_of(path: Path, participant: str) -> int:
    try:
        with ResultStore(path, read_only=True) as store:
            return sum(
                len(pr.records)
                for run in store.list_runs()
                for pr in store.participant_records(run.run_id)
                if pr.participant == participant
            )
    except Exception:  # not created yet, or busy for a moment
        return 0


def _kill_the_victim(
    pytester: pytest.Pytester, session: Session, participant: str, records: int = 0
) -> None:
    """SIGKILL the worker inside the victim iteration, once ``participant`` has ``records``
    records in the store."""
    pid_file = pytester.path / "victim.pid"
    _wait_for(pid_file, session)
    deadline = time.monotonic() + 120
    while _records_of(store_path(pytester), participant) < records:
        assert time.monotonic() < deadline, session.output
        time.sleep(0.01)
    os.kill(int(pid_file.read_text()), signal.SIGKILL)
    (pytester.path / "killed").touch()


def _check_exactly_once(
    server: LoopbackPlatform, pytester: pytest.Pytester, iterations: int, victim: tuple[str, int]
) -> None:
    """Every iteration but the crashed one recorded once, in the store and on the platform;
    the run failed."""
    path = store_path(pytester)
    (run,) = stored_runs(path)
    assert run.status == "failed"
    in_store = stored_records(path, run.run_id)
    indexes = {p: [r["taskIndex"] for r in rs] for p, rs in in_store.items()}
    everything = list(range(iterations))
    assert indexes == {p: [i for i in everything if (p, i) != victim] for p in ("p1", "p2")}
    sent = Counter((p, r["taskIndex"]) for p, r in server.records())
    assert set(sent.values()) == {1}, sent
    assert server_records(server, run.platform_run_id) == in_store


def _check_the_crash_report(session: Session, iterations: int, victim: tuple[str, int]) -> None:
    output = session.output
    assert "replacing crashed worker" in output, output
    name = f"bench_crash.py::task[{victim[0]}-{victim[1]}]"
    assert f"crashed while running '{name}" in output, output
    # The item it died in failed once and ran nowhere else; every other item passed.
    assert f"1 failed, {2 * iterations - 1} passed" in output, output


def _session(pytester: pytest.Pytester, server: LoopbackPlatform, *args: str) -> Session:
    return Session(pytester.path, "-p", "xdist", "-n", "2", *args, *bench_args(server), env=_env())


def test_a_worker_killed_late_in_the_run_ends_the_session(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Concurrency 1: -n 2 spreads the items one by one (loadgroup, each item a unit of its
    # own). Killed in p2's iteration 15 of 20, the worker had finished about 17 units: xdist
    # 3.8 put them all back on the queue, each later sent to a worker as an empty list of
    # tests that never reports done, so the workers were given no more work, never told to
    # stop, and the session waited forever (the run stayed "running").
    server = loopback_platform
    use_platform(monkeypatch)
    victim = ("p2", 15)
    pytester.makepyfile(bench_crash=_bench(20, 1, *victim))
    session = _session(pytester, server)
    try:
        _kill_the_victim(pytester, session, victim[0])
        code = session.finish(timeout=120)
    finally:
        session.kill()
    assert code == pytest.ExitCode.TESTS_FAILED, session.output
    _check_the_crash_report(session, 20, victim)
    _check_exactly_once(server, pytester, 20, victim)


def test_a_worker_killed_inside_a_pool_records_each_iteration_once(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Concurrency 2 (--dist loadgroup): p1's iterations run as one pool on one worker. Killed
    # in iteration 3, once 0-2 are stored: the worker that takes over p1's remaining items
    # plans the whole group, so its pool ran 0-3 again and handed them over at its end (the
    # platform got them twice), and xdist ran the item the worker died in a second time.
    server = loopback_platform
    use_platform(monkeypatch)
    victim = ("p1", 3)
    pytester.makepyfile(bench_crash=_bench(6, 2, *victim))
    session = _session(pytester, server, "--dist", "loadgroup")
    try:
        _kill_the_victim(pytester, session, victim[0], records=victim[1])
        code = session.finish(timeout=120)
    finally:
        session.kill()
    assert code == pytest.ExitCode.TESTS_FAILED, session.output
    _check_the_crash_report(session, 6, victim)
    _check_exactly_once(server, pytester, 6, victim)
