"""Ctrl-C in a bench session, once or twice: the run is stored ``interrupted`` with what ran,
no traceback is printed, the session ends soon, and an interrupted run is never a baseline."""

from __future__ import annotations

import os
import signal
import time

import pytest

from helpers.processes import Session
from helpers.sessions import bench, store_path, stored_records, stored_runs
from pytest_benchsdk._plugin.control.interrupts import STOPPING_LINE

SLOW = bench(
    'participants=[Participant("p1"), Participant("p2")], iterations=30',
    """
    import time

    @define_task
    def task(participant, task_index, measure):
        if task_index == 3 and os.environ.get("HOLD_AT_THE_FOURTH"):
            time.sleep(60)  # the first Ctrl-C lands here (the tests wait for p1-2's line)
        measure(value=10 + task_index)
    """,
    prelude="import os\n",
)


def _session_with_records(pytester: pytest.Pytester, *args: str) -> Session:
    pytester.makepyfile(bench_slow=SLOW)
    env = {**os.environ, "HOLD_AT_THE_FOURTH": "1"}
    session = Session(pytester.path, "--bench", "--bench-dry-run", "-v", *args, env=env)
    session.wait_for("task[p1-2] PASSED")  # three records are stored by now, the fourth waits
    return session


def _assert_stored_interrupted(pytester: pytest.Pytester, session: Session) -> None:
    output = session.output
    assert "Traceback" not in output
    assert STOPPING_LINE in output
    assert "status: interrupted (" in output
    (run,) = stored_runs(store_path(pytester))
    assert run.status == "interrupted"
    records = stored_records(store_path(pytester), run.run_id)
    assert run.record_count == 3
    assert len(records["p1"]) == run.record_count


@pytest.mark.slow
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


#: A conftest holding the session at a point after the session end proper (WHERE: every
#: plugin's unconfigure, the config's cleanups, the interpreter's exit): it says so, and says
#: each Ctrl-C the plugin counts, until the test's ``go`` file appears; so that a press lands
#: exactly there, and the next one only once the last one was counted.
LATE = """
import atexit
import pathlib
import time

import pytest

GO = pathlib.Path(__file__).with_name("go")
CONFIG = []


def hold(where):
    ctrl_c = CONFIG[0].pluginmanager.get_plugin("benchsdk-controller")._ctrl_c
    seen = ctrl_c.presses  # before saying so: a press may land right after
    print(f"holding at {where}", flush=True)
    deadline = time.monotonic() + 60
    while not GO.exists() and time.monotonic() < deadline:
        if ctrl_c.presses != seen:
            seen = ctrl_c.presses
            print(f"Ctrl-C pressed {seen} times", flush=True)
        time.sleep(0.01)
    print(f"released at {where}", flush=True)


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    CONFIG.append(config)
    if WHERE == "cleanup":
        config.add_cleanup(lambda: hold("cleanup"))


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    if WHERE == "unconfigure":
        hold("unconfigure")


if WHERE == "exit":
    atexit.register(hold, "exit")
"""


@pytest.mark.slow
@pytest.mark.parametrize("where", ["unconfigure", "cleanup", "exit"])
def test_a_second_ctrl_c_is_absorbed_until_the_process_ends(
    pytester: pytest.Pytester, where: str
) -> None:
    """The second press lands after the runs are stored, in what other plugins (pytest's own
    unraisable-exception check collects the whole heap there), the config's cleanups or the
    interpreter still do: absorbed too, the exit status stays 2, no traceback."""
    pytester.makeconftest(f"WHERE = {where!r}\n" + LATE)
    session = _session_with_records(pytester)
    try:
        session.interrupt()
        session.wait_for(f"holding at {where}")
        session.interrupt()
        if where != "exit":  # at the exit the press is ignored, not counted
            session.wait_for("Ctrl-C pressed 2 times")
        (pytester.path / "go").touch()
        assert session.finish() == pytest.ExitCode.INTERRUPTED, session.output
    finally:
        session.kill()
    assert f"released at {where}" in session.output
    _assert_stored_interrupted(pytester, session)


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_third_ctrl_c_stops_at_once(pytester: pytest.Pytester) -> None:
    """Python's own Ctrl-C at the third press: the session ends there, whatever it was doing
    (here: held at the end, which would otherwise last a minute)."""
    pytester.makeconftest("WHERE = 'unconfigure'\n" + LATE)
    session = _session_with_records(pytester)
    try:
        session.interrupt()
        session.wait_for("holding at unconfigure")
        session.interrupt()
        # Counted, not coalesced with the third (two signals pending at once are one call).
        session.wait_for("Ctrl-C pressed 2 times")
        session.interrupt()
        assert session.finish(timeout=30) == -signal.SIGINT, session.output
    finally:
        session.kill()
    assert "released at unconfigure" not in session.output
    (run,) = stored_runs(store_path(pytester))
    assert run.status == "interrupted"
    assert run.record_count == 3


@pytest.mark.slow
def test_pytest_main_in_a_program_gets_its_ctrl_c_back_after_an_interrupted_session(
    pytester: pytest.Pytester,
) -> None:
    """Only pytest's command line keeps the handler to the end (its process exits): a program
    that called ``pytest.main()`` goes on, and its next Ctrl-C is its own again."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        pytester.makepyfile(
            bench_intr=bench(
                'participants=[Participant("p1")], iterations=5',
                """
                import os, signal

                @define_task
                def task(task_index, measure):
                    if task_index == 2:  # a real Ctrl-C while the third iteration runs
                        os.kill(os.getpid(), signal.SIGINT)
                    measure(value=task_index)
                """,
            )
        )
        result = pytester.runpytest_inprocess(
            "--bench", "--bench-dry-run", "-p", "no:cacheprovider", no_reraise_ctrlc=True
        )
        assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()
        result.stdout.fnmatch_lines([STOPPING_LINE])
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, previous)


NO_LINE = bench(
    'participants=[Participant("p1")], iterations=3',
    """
    def _frame_with_a_line_less_instruction():
        try:
            return sys._getframe()
        finally:
            pass

    @define_task
    def task(task_index, measure):
        measure(value=1)
        if task_index == 1:
            # Where a signal handler's KeyboardInterrupt can land (the instruction has no line).
            frame = _frame_with_a_line_less_instruction()
            offset = next(s for s, _e, line in frame.f_code.co_lines() if line is None)
            tb = types.TracebackType(None, frame, offset, -1)
            assert tb.tb_lineno is None, "this Python gives every instruction a line"
            # (Marked as the plugin's Ctrl-C handler marks it: a task's own would fail only
            # its iteration.)
            raise ctrl_c_interrupt().with_traceback(tb)
    """,
    prelude=(
        "import sys\nimport types\n\nfrom pytest_benchsdk._base.ctrlc import ctrl_c_interrupt\n"
    ),
)


@pytest.mark.slow
def test_a_ctrl_c_landing_where_no_line_is_ends_the_session_as_interrupted(
    pytester: pytest.Pytester,
) -> None:
    """pytest cannot format a traceback entry without a line number (it exited 1 with a
    ``TypeError`` instead of 2); the plugin gives such entries their nearest line first."""
    pytester.makepyfile(bench_no_line=NO_LINE)
    result = pytester.runpytest_subprocess("--bench", "--bench-dry-run", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()
    assert "TypeError" not in result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["*bench_no_line.py:*: KeyboardInterrupt"])
    (run,) = stored_runs(store_path(pytester))
    assert run.status == "interrupted"
    assert run.record_count == 1
