"""No run stays ``running`` once its process is gone (issue 32, item 6): a session SIGKILLed
after its run was created and before anything else (no record, nothing queued), then the next
session, CLI command or resubmit that opens the store marks the run ``interrupted`` with what it
holds and says so; a live session's run, in another process on the same store, is never
touched."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from helpers.cli import cli
from helpers.processes import Session
from helpers.sessions import bench, store_path
from pytest_benchsdk.store import ResultStore

#: Each iteration waits for the file ``release``: a session holds its run open, with no record,
#: until the test lets it go (or kills it).
HELD = bench(
    'participants=[Participant("p1")], iterations=2',
    """
    import pathlib, time

    @define_task
    def task(task_index, measure):
        while not pathlib.Path("release").exists():
            time.sleep(0.02)
        measure(value=task_index)
    """,
    slug="held",
    name="Held",
)
OTHER = bench(slug="other", name="Other")


def _held_session(pytester: pytest.Pytester) -> Session:
    """A session on ``bench_held.py`` whose run is in the store (its header is printed after
    the run was begun) and whose first iteration waits."""
    pytester.makepyfile(bench_held=HELD, bench_other=OTHER)
    session = Session(pytester.path, "--bench", "--bench-dry-run", "bench_held.py")
    session.wait_for("benchsdk: Held [bench_held.py]")
    return session


def _status(path: Path) -> dict[str, tuple[str, int]]:
    """``{slug: (status, records)}``, read without writing (a read-only open marks nothing)."""
    with ResultStore(path, read_only=True) as store:
        return {run.benchmark_slug: (run.status, run.record_count) for run in store.list_runs()}


def _open_by(pytester: pytest.Pytester, opener: str) -> str:
    """Open the store the way ``opener`` does; what it printed. Each opener runs in this
    process: the session under test, the owner of the run, is the process apart."""
    if opener == "cli":
        done = cli("runs", cwd=pytester.path)
        assert done.returncode == 0, done.stderr
        return done.stderr + done.stdout
    if opener == "session":
        result = pytester.runpytest_inprocess("--bench", "--bench-dry-run", "bench_other.py")
        assert result.ret == 0, result.stdout.str()
        return result.stdout.str()
    result = pytester.runpytest_inprocess("--bench-resubmit")
    assert result.ret == 0, result.stdout.str()
    return result.stdout.str()


@pytest.mark.slow
@pytest.mark.parametrize("opener", ["cli", "session", "resubmit"])
def test_a_run_whose_session_was_killed_is_interrupted_by_the_next_open(
    pytester: pytest.Pytester, opener: str
) -> None:
    session = _held_session(pytester)
    session.kill()  # SIGKILL: nothing of the session's end runs
    assert session.proc.wait(60) == -signal.SIGKILL
    path = store_path(pytester)
    assert _status(path) == {"held": ("running", 0)}
    printed = _open_by(pytester, opener)
    (run,) = (
        r for r in ResultStore(path, read_only=True).list_runs() if r.benchmark_slug == "held"
    )
    assert (run.status, run.record_count) == ("interrupted", 0)
    assert run.finished_at == run.started_at  # it ended, as far as anyone knows, when it began
    assert (
        f"run {run.run_id} (held) was left running by a session that is gone: marked "
        "interrupted, with the 0 record(s) it holds"
    ) in printed
    if opener == "cli":
        assert "interrupted (0 of 2 iterations ran)" in printed
    if opener == "resubmit":
        assert "nothing to resubmit" in printed
    # Said once: the next open finds nothing left running.
    assert "left running" not in _open_by(pytester, "cli")


@pytest.mark.slow
def test_a_live_sessions_run_is_never_marked(pytester: pytest.Pytester) -> None:
    session = _held_session(pytester)
    path = store_path(pytester)
    try:
        # A command, another session and a resubmit open the store while it runs.
        for opener in ("cli", "session", "resubmit"):
            assert "left running" not in _open_by(pytester, opener)
        with ResultStore(path) as store:
            assert store.abandoned == ()
        assert _status(path)["held"] == ("running", 0)
        (pytester.path / "release").touch()
        assert session.finish() == 0, session.output
    finally:
        session.kill()
    assert _status(path) == {"held": ("passed", 2), "other": ("passed", 4)}


@pytest.mark.slow
def test_the_owner_is_recorded_per_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_other=OTHER)
    result = pytester.runpytest_subprocess("--bench", "--bench-dry-run")
    assert result.ret == 0
    with ResultStore(store_path(pytester), read_only=True) as store:
        (run,) = store.list_runs()
    host, pid, *_ = (run.session_id or "").split("|")
    assert host == os.uname().nodename
    assert pid.isdigit()
    assert int(pid) != os.getpid()  # the session's own process
