"""A second (and third) Ctrl-C at every stage of the session end, not only where it lands.

The session is stopped by a first Ctrl-C while an iteration runs; a conftest then holds the
main thread at the first call of each named function of the session end (pytest formatting
the first press's traceback, the executor's shutdown, scoring, the store's last writes, the
output files, the summary, the unconfigure, handing Ctrl-C back …) and says so in a file; the
test presses Ctrl-C right there (a signal handler runs on the main thread between two
instructions: a held call is exactly such a point). Stepping through every stage in one
session, the conftest counts each press as the session's second (it sets the plugin's count
back to one), so each stage sees what a second press sees there.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from helpers.processes import Session
from helpers.sessions import bench, read_json, store_path, stored_records, stored_runs
from pytest_benchsdk._plugin.control.interrupts import STOPPED_LINE, STOPPING_LINE

SLOW = bench(
    'participants=[Participant("p1"), Participant("p2")], iterations=30',
    """
    import pathlib
    import time

    @define_task
    def task(participant, task_index, measure):
        if task_index == 3:
            with pathlib.Path("stages").open("a") as f:
                f.write("iteration p1-3 runs\\n")
            time.sleep(60)  # the first Ctrl-C lands here
        measure(value=10 + task_index)
    """,
    prelude="import os\n",
)

#: Holds the main thread at the first call of each function named in $HOLD_AT (in order;
#: ``CALLER>NAME`` for NAME called from CALLER),
#: writing ``holding at NAME`` to the ``stages`` file, until the plugin has counted $PRESSES
#: more Ctrl-C (``pressed at NAME: COUNT`` each); with $REWIND, the count goes back to one
#: after each press. (A file: pytest captures the output where the first stages are.)
CONFTEST = """
import atexit
import os
import pathlib
import sys
import time

import pytest

STAGES = pathlib.Path(__file__).with_name("stages")
HOLD_AT = [name for name in os.environ.get("HOLD_AT", "").split(",") if name]
REWIND = bool(os.environ.get("REWIND"))
PRESSES = int(os.environ.get("PRESSES", "1"))
CTRL_C = []


def say(text):
    with STAGES.open("a") as f:
        f.write(text + "\\n")


def hold(name):
    ctrl_c = CTRL_C[0]
    seen = ctrl_c.presses  # before saying so: the press may come right after
    say(f"holding at {name}")
    deadline = time.monotonic() + 60
    for _ in range(PRESSES):
        while ctrl_c.presses == seen and time.monotonic() < deadline:
            time.sleep(0.005)
        seen = ctrl_c.presses
        say(f"pressed at {name}: {seen}")
    if REWIND and ctrl_c.presses == 2:
        ctrl_c.presses = 1


FIRST_AT = os.environ.get("FIRST_AT")


def called(frame, name):
    # Whether frame runs name ("CALLER>NAME": called from CALLER).
    caller, _, callee = name.rpartition(">")
    if frame.f_code.co_qualname != callee:
        return False
    return not caller or (frame.f_back is not None and frame.f_back.f_code.co_qualname == caller)


def first(frame, event, arg):
    if event == "call" and called(frame, FIRST_AT):
        sys.setprofile(None)
        hold(FIRST_AT)


def pytest_runtest_logreport(report):
    if FIRST_AT and report.nodeid.endswith("task[p1-2]") and report.when == "call":
        sys.setprofile(first)


def profile(frame, event, arg):
    if event == "call" and HOLD_AT and called(frame, HOLD_AT[0]):
        sys.setprofile(None)  # not while holding (the wait's own calls)
        hold(HOLD_AT.pop(0))
        sys.setprofile(profile)


def follow():
    if HOLD_AT and CTRL_C[0].presses and sys.getprofile() is None:
        sys.setprofile(profile)


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session):
    CTRL_C.append(session.config.pluginmanager.get_plugin("benchsdk-controller")._ctrl_c)


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_call(item):
    try:
        return (yield)
    finally:
        follow()  # the first press unwinds from here


@pytest.hookimpl(tryfirst=True)
def pytest_keyboard_interrupt(excinfo):
    follow()


def at_exit():
    sys.setprofile(None)
    if HOLD_AT:
        say(f"never reached: {HOLD_AT[0]}")


atexit.register(at_exit)
"""

#: The session end in the order it happens, after a first Ctrl-C while an iteration runs.
STAGES = [
    # The first press unwinds through pytest's wrappers; pytest reports it.
    "CaptureManager.item_capture",
    "ControllerPlugin.pytest_keyboard_interrupt",
    "CaptureManager.pytest_keyboard_interrupt",
    "TerminalReporter.pytest_keyboard_interrupt",
    "ExceptionInfo.getrepr",
    # The session finishes: the executor stops, the runs are scored, stored, written,
    # summarised; pytest's KeyboardInterrupt line.
    "ExecutionPlugin.pytest_sessionfinish",
    "ProcessRuntime.unreported",
    "Executor.shutdown",
    "ControllerPlugin.pytest_sessionfinish",
    "BenchSession.finish",
    "BenchSession._commit_grouped_records",
    "BenchSession._finish_run",
    "BenchmarkRun.score",
    "BenchSession._analyse",
    "BenchSession._conclude",
    "BenchSession._store_status",
    "BenchSession._write_json",
    "TerminalReporter.pytest_sessionfinish",
    "ControllerPlugin.pytest_terminal_summary",
    "BenchSession.summary_lines",
    "TerminalReporter._report_keyboardinterrupt",
    "TerminalReporter.summary_stats",
    # pytest unconfigures: the store closes, Ctrl-C is handed back.
    "ControllerPlugin.pytest_unconfigure",
    "BenchSession.close",
    "ResultStore.close",
    "CtrlC.release",
]


#: Between two items' phases, where pytest reports, swaps its capture and log handlers and
#: sets up the next item; a first press there used to leave pytest's own state half done (a
#: capture generator failing with a traceback when it was collected).
BETWEEN_PHASES = [
    "TerminalReporter.pytest_runtest_logreport",
    "ControllerPlugin.pytest_runtest_logreport",
    "call_and_report",
    "CallInfo.from_call",
    "CaptureManager.item_capture",
    "TerminalReporter.pytest_runtest_logstart",
    # Where a probe saw it: capture's context manager closing after the next item's setup.
    "CaptureManager.pytest_runtest_setup>_GeneratorContextManager.__exit__",
]


class StagedSession:
    """A bench session whose conftest holds at ``stages`` once Ctrl-C was pressed."""

    def __init__(
        self,
        pytester: pytest.Pytester,
        stages: list[str],
        rewind: bool,
        presses: int = 1,
        first_at: str | None = None,
    ) -> None:
        pytester.makepyfile(bench_slow=SLOW)
        pytester.makeconftest(CONFTEST)
        self.file = pytester.path / "stages"
        env = {**os.environ, "HOLD_AT": ",".join(stages)}
        if first_at is not None:
            env["FIRST_AT"] = first_at
        if rewind:
            env["REWIND"] = "1"
        env["PRESSES"] = str(presses)
        self.session = Session(
            pytester.path, "--bench", "--bench-dry-run", "-v", "--bench-json=run.json", env=env
        )

    def said(self) -> str:
        return self.file.read_text() if self.file.exists() else ""

    def wait_for(self, line: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while line not in self.said().splitlines():
            if time.monotonic() > deadline or self.session.proc.poll() is not None:
                raise AssertionError(
                    f"no {line!r} in:\n{self.said()}\n--- output:\n{self.session.output}"
                )
            time.sleep(0.01)


def _assert_stored_interrupted(pytester: pytest.Pytester, output: str) -> None:
    assert "Traceback" not in output
    assert STOPPING_LINE in output
    assert "status: interrupted (" in output
    (run,) = stored_runs(store_path(pytester))
    assert run.status == "interrupted"
    assert run.record_count == 3
    assert len(stored_records(store_path(pytester), run.run_id)["p1"]) == 3
    (written,) = read_json(Path(pytester.path / "run.json"))["benchmarks"]
    assert written["status"]["state"] == "interrupted"


@pytest.mark.slow
def test_a_second_ctrl_c_at_every_stage_of_the_session_end_is_absorbed(
    pytester: pytest.Pytester,
) -> None:
    staged = StagedSession(pytester, STAGES, rewind=True)
    try:
        staged.wait_for("iteration p1-3 runs")
        staged.session.interrupt()
        for stage in STAGES:
            staged.wait_for(f"holding at {stage}")
            staged.session.interrupt()
            staged.wait_for(f"pressed at {stage}: 2")
        assert staged.session.finish() == pytest.ExitCode.INTERRUPTED, staged.session.output
    finally:
        staged.session.kill()
    assert "never reached" not in staged.said()
    _assert_stored_interrupted(pytester, staged.session.output)


@pytest.mark.slow
@pytest.mark.parametrize(
    "stage",
    ["TerminalReporter.pytest_keyboard_interrupt", "BenchSession._conclude", "CtrlC.release"],
)
def test_a_second_ctrl_c_at_one_stage_is_absorbed_to_the_end(
    pytester: pytest.Pytester, stage: str
) -> None:
    """As a real second press: counted as the second to the end of the session."""
    staged = StagedSession(pytester, [stage], rewind=False)
    try:
        staged.wait_for("iteration p1-3 runs")
        staged.session.interrupt()
        staged.wait_for(f"holding at {stage}")
        staged.session.interrupt()
        staged.wait_for(f"pressed at {stage}: 2")
        assert staged.session.finish() == pytest.ExitCode.INTERRUPTED, staged.session.output
    finally:
        staged.session.kill()
    _assert_stored_interrupted(pytester, staged.session.output)


@pytest.mark.slow
@pytest.mark.parametrize(
    "stage", ["TerminalReporter.pytest_keyboard_interrupt", "BenchSession._conclude"]
)
def test_a_third_ctrl_c_at_a_stage_stops_at_once_with_one_line(
    pytester: pytest.Pytester, stage: str
) -> None:
    """The third press ends the process there (killed by SIGINT, as Python's own Ctrl-C),
    with one line and no traceback; the records stored so far stay."""
    staged = StagedSession(pytester, [stage], rewind=False, presses=2)
    try:
        staged.wait_for("iteration p1-3 runs")
        staged.session.interrupt()
        staged.wait_for(f"holding at {stage}")
        staged.session.interrupt()
        staged.wait_for(f"pressed at {stage}: 2")
        staged.session.interrupt()
        assert staged.session.finish(timeout=60) == -signal.SIGINT, staged.session.output
    finally:
        staged.session.kill()
    output = staged.session.output
    assert "Traceback" not in output
    assert STOPPED_LINE in output
    (run,) = stored_runs(store_path(pytester))
    assert run.record_count == 3


@pytest.mark.slow
@pytest.mark.parametrize("stage", BETWEEN_PHASES)
def test_a_first_ctrl_c_between_two_phases_stops_at_the_next_one(
    pytester: pytest.Pytester, stage: str
) -> None:
    """A first press landing in pytest's bookkeeping between two phases takes effect at the
    next phase (or after the item): the run is stored interrupted with the three records, no
    traceback, even when a second press follows at once."""
    staged = StagedSession(pytester, [], rewind=False, first_at=stage)
    try:
        staged.wait_for(f"holding at {stage}")
        staged.session.interrupt()
        staged.session.wait_for(STOPPING_LINE)
        staged.session.interrupt()
        assert staged.session.finish() == pytest.ExitCode.INTERRUPTED, staged.session.output
    finally:
        staged.session.kill()
    _assert_stored_interrupted(pytester, staged.session.output)
    assert "iteration p1-3 runs" not in staged.said()
