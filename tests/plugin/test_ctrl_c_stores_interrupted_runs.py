"""Ctrl-C in a bench session, once or twice: the run is stored ``interrupted`` with what ran,
no traceback is printed, the session ends soon, and an interrupted run is never a baseline."""

from __future__ import annotations

import time

import pytest

from helpers.processes import Session
from helpers.sessions import bench, store_path, stored_records, stored_runs
from pytest_benchsdk._plugin.interrupts import STOPPING_LINE

SLOW = bench(
    'participants=[Participant("p1"), Participant("p2")], iterations=30',
    """
    import time

    @define_task
    def task(participant, task_index, measure):
        time.sleep(0.1)
        measure(value=10 + task_index)
    """,
)


def _session_with_records(pytester: pytest.Pytester, *args: str) -> Session:
    pytester.makepyfile(bench_slow=SLOW)
    session = Session(pytester.path, "--bench", "--bench-dry-run", "-v", *args)
    session.wait_for("task[p1-2] PASSED")  # three records are stored by now
    return session


def _assert_stored_interrupted(pytester: pytest.Pytester, session: Session) -> None:
    output = session.output
    assert "Traceback" not in output
    assert STOPPING_LINE in output
    assert "status: interrupted (" in output
    (run,) = stored_runs(store_path(pytester))
    assert run.status == "interrupted"
    records = stored_records(store_path(pytester), run.run_id)
    assert 3 <= run.record_count < 60
    assert len(records["p1"]) == run.record_count


@pytest.mark.parametrize("wait", [True, False], ids=["after-the-line", "0.1s-apart"])
def test_a_second_ctrl_c_is_absorbed_while_the_session_stores_what_ran(
    pytester: pytest.Pytester, wait: bool
) -> None:
    session = _session_with_records(pytester)
    try:
        session.interrupt()
        if wait:
            session.wait_for(STOPPING_LINE)  # the second one lands in the session end
        else:
            time.sleep(0.1)  # wherever it lands
        session.interrupt()
        assert session.finish() == pytest.ExitCode.INTERRUPTED, session.output
    finally:
        session.kill()
    _assert_stored_interrupted(pytester, session)


def test_an_interrupted_run_is_never_the_latest_baseline(pytester: pytest.Pytester) -> None:
    session = _session_with_records(pytester)
    try:
        session.interrupt()
        assert session.finish() == pytest.ExitCode.INTERRUPTED, session.output
    finally:
        session.kill()
    _assert_stored_interrupted(pytester, session)
    again = pytester.runpytest_subprocess(
        "--bench", "--bench-dry-run", "--bench-compare", "-p", "no:cacheprovider"
    )
    again.stdout.fnmatch_lines(["  Baseline: none (no complete run of demo *"])


def test_a_third_ctrl_c_stops_at_once(pytester: pytest.Pytester) -> None:
    session = _session_with_records(pytester)
    try:
        session.interrupt()
        session.wait_for(STOPPING_LINE)
        session.interrupt()
        session.interrupt()
        # Python's own Ctrl-C now: the session ends, whatever it was doing.
        assert session.finish() != 0, session.output
    finally:
        session.kill()
