"""The execution role: every process that executes bench items (plain pytest, xdist workers).

It attaches each iteration's record to the item's call report, where the controller receives
it through ``pytest_runtest_logreport`` (in this process, or from an xdist worker); at session
end it hands over what finished in the background but never reported, and stops the executor.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Final

import pytest

from pytest_benchsdk._base.redact import LogRedaction, Redactor
from pytest_benchsdk._engine.payload import RecordPayload
from pytest_benchsdk._plugin.items.nodes import BenchItem
from pytest_benchsdk._plugin.runtime.catalog import Catalog
from pytest_benchsdk._plugin.runtime.currenttest import KeepCurrentTest
from pytest_benchsdk._plugin.runtime.heap import FrozenHeap
from pytest_benchsdk._plugin.runtime.process import ProcessRuntime
from pytest_benchsdk.results import record_phase

__all__ = ["ExecutionPlugin", "attached_payload"]

#: ``TestReport`` attribute holding the iteration's :class:`RecordPayload` as plain JSON, so it
#: crosses xdist (and ``--report-log``) intact.
REPORT_ATTRIBUTE = "benchsdk"


def attached_payload(report: pytest.TestReport) -> dict[str, object] | None:
    """The record payload (JSON) a call report carries, if it is a bench item's."""
    data = getattr(report, REPORT_ATTRIBUTE, None)
    return data if isinstance(data, dict) and report.when == "call" else None


class ExecutionPlugin:
    """Runs bench items through this process's :class:`ProcessRuntime`.

    ``hand_over`` receives the records of iterations whose items never reported (an early
    stop: ``-x``, ``--maxfail``, Ctrl-C): the controller in this process, or xdist's
    ``workeroutput`` on a worker.
    """

    def __init__(
        self,
        config: pytest.Config,
        hand_over: Callable[[list[RecordPayload]], None],
        *,
        on_payload: Callable[[pytest.TestReport, RecordPayload], None] | None = None,
    ) -> None:
        self.config = config
        self._hand_over = hand_over
        self._on_payload = on_payload
        self._heap = FrozenHeap()
        self._heap.install(config)
        self._current_test = KeepCurrentTest()
        # Every log record made while the session runs (pytest's live log, --log-file, any
        # handler) is redacted as it is made, with the secrets of every bench file known.
        self._log_redaction = LogRedaction(Catalog.of(config).secrets.every_file)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self) -> None:
        self._log_redaction.install()

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        # What collection made lives until the session ends: out of the cyclic GC's reach,
        # every full collection while the benchmarks run scans only what the run itself
        # creates (see .heap). Only for sessions that run bench items.
        if any(isinstance(i, BenchItem) for i in session.items):
            self._heap.freeze()
            self._current_test.install()

    def pytest_runtest_logfinish(self) -> None:
        self._heap.item_ran()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if not isinstance(item, BenchItem):
            return report
        # The one place where an item's text leaves for the terminal, junitxml, xdist and the
        # controller: the bench file's secrets (the values of the env vars participants
        # require, the platform credentials) are redacted here.
        redactor = Catalog.of(self.config).redactor(item.bench.file_key)
        if redactor:
            redact_report(report, redactor)
        outcome = item.bench_outcome
        if call.when == "call" and outcome is not None:
            iteration = item.bench
            if isinstance(outcome, RecordPayload):  # made in an A/B session's side B
                payload = outcome.redacted(redactor) if redactor else outcome
            else:
                payload = RecordPayload.of(
                    iteration.file_key, iteration.participant.name, outcome, redactor
                )
            # pytest keeps every item until the session ends; the record travels on from here.
            item.bench_outcome = None
            setattr(report, REPORT_ATTRIBUTE, payload.to_json())
            _describe_iteration(item, report, payload)
            if self._on_payload is not None:
                self._on_payload(report, payload)
        return report

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> Generator[None, None, None]:
        try:
            return (yield)
        finally:
            # Every plugin has had the record by now (xdist sent it on, the controller stored
            # it, junitxml and --report-log wrote it); pytest keeps each report until the
            # session ends, so the record's JSON would stay for every iteration.
            report.__dict__.pop(REPORT_ATTRIBUTE, None)

    @pytest.hookimpl(tryfirst=True)
    def pytest_keyboard_interrupt(self) -> None:
        # The session stops: no iteration starts from here (the controller's Ctrl-C handler
        # did so already where it runs; an xdist worker, or a KeyboardInterrupt of a hook's,
        # gets here first).
        runtime = ProcessRuntime.started(self.config)
        if runtime is not None:
            runtime.executor.stop_starting()

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        # Iterations that finished in the background but whose items never reported are kept
        # too; then whatever still runs is cancelled.
        runtime = ProcessRuntime.started(self.config)
        if runtime is None:
            return
        leftovers = runtime.unreported()
        abandoned = runtime.shutdown()
        if leftovers:
            self._hand_over(leftovers)
        if abandoned:
            self._say_abandoned(abandoned)
        threads = runtime.executor.abandoned_threads
        if threads:
            _exit_without_waiting_for(threads, session)

    def _say_abandoned(self, abandoned: Sequence[str]) -> None:
        lines = [
            f"benchsdk: abandoned {len(abandoned)} thread(s) still running benchmark code at "
            "session end (Python cannot stop a thread; nothing waits for them):",
            *(f"  {line}" for line in abandoned),
        ]
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            for line in lines:
                reporter.write_line(line, yellow=True)
        else:
            sys.stderr.write("\n".join(lines) + "\n")

    def pytest_unconfigure(self) -> None:
        runtime = ProcessRuntime.started(self.config)
        if runtime is not None:
            runtime.shutdown()
        self._heap.release()
        self._current_test.uninstall()
        self._log_redaction.uninstall()


#: Measured metrics an iteration's junitxml properties carry at most (a task may measure
#: thousands of keys; ``--bench-json`` has them all).
MAX_METRIC_PROPERTIES: Final = 32


def _describe_iteration(item: BenchItem, report: pytest.TestReport, payload: RecordPayload) -> None:
    """What junitxml (and ``--report-log``) show of an iteration.

    Its participant, phase, status, ``latency_ms``, ``errorCode`` and what it measured (each
    number of the record's data: ``measure(value=…)``, ``cpu_ms``; the first
    :data:`MAX_METRIC_PROPERTIES`) become user properties:
    on the item, which pytest copies into the teardown report junitxml reads them from (under
    xdist too), and on the call report. The call report's ``duration`` becomes the iteration's
    own latency: at concurrency > 1 an item's call phase only waits for an iteration that ran
    alongside others, so pytest's measure of it (junitxml's ``time``, ``--durations``) says
    nothing about the iteration.
    """
    record = payload.record
    phase = record_phase(record)
    properties: list[tuple[str, object]] = [_text_property("participant", payload.participant)]
    if isinstance(phase, str):
        properties.append(_text_property("phase", phase))
    properties.append(_text_property("status", record.status))
    latency = record.latency_ms
    if isinstance(latency, (int, float)) and not isinstance(latency, bool):
        properties.append(("latency_ms", latency))
        if math.isfinite(latency) and latency >= 0:
            report.duration = latency / 1000
    if isinstance(record.error_code, str):
        properties.append(_text_property("errorCode", record.error_code))
    if isinstance(record.data, Mapping):
        taken = {name for name, _ in properties}
        metrics = [
            (key, value)
            for key, value in record.data.items()
            if isinstance(key, str)
            and key not in taken
            and isinstance(value, (int, float))
            and not isinstance(value, bool)
            # An int of any size is a number (math.isfinite would overflow on a huge one).
            and (isinstance(value, int) or math.isfinite(value))
        ]
        properties.extend(metrics[:MAX_METRIC_PROPERTIES])
    item.user_properties.extend(properties)
    report.user_properties.extend(properties)


@functools.lru_cache(maxsize=1024)
def _text_property(name: str, value: str) -> tuple[str, str]:
    # Items and reports hold their properties until the session ends: one tuple per
    # participant, phase or status, not one per iteration.
    return (name, value)


def redact_report(report: pytest.TestReport, redactor: Redactor) -> None:
    """Replace every secret in the report's failure text, captured sections and user
    properties (what the terminal, ``--showlocals``, junitxml and xdist see). The failure
    text is already serialised (``data:`` JSON, reprs of locals): the redactor replaces the
    escaped forms too."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        path, lineno, reason = longrepr
        report.longrepr = (path, lineno, redactor.text(str(reason)))
    elif longrepr is not None:
        text = str(longrepr)
        redacted = redactor.text(text)
        if redacted != text:
            report.longrepr = redacted
    report.sections = [(title, redactor.text(content)) for title, content in report.sections]
    report.user_properties = [
        (name, redactor.text(value) if isinstance(value, str) else value)
        for name, value in report.user_properties
    ]


#: How long the interpreter's exit still waits for threads that tasks left running.
EXIT_GRACE_SECONDS = 2.0


def _exit_without_waiting_for(threads: Sequence[threading.Thread], session: pytest.Session) -> None:
    """Bound the interpreter's wait for non-daemon threads that tasks left running.

    Python joins every non-daemon thread at exit, forever. Just before that join (a
    ``threading`` exit hook, after pytest has written everything), wait up to
    :data:`EXIT_GRACE_SECONDS` for these threads, then end the process with the session's exit
    status without waiting for the rest.
    """
    register = getattr(threading, "_register_atexit", None)
    if register is None:  # pragma: no cover - every supported Python has it
        return

    def guard() -> None:
        deadline = time.monotonic() + EXIT_GRACE_SECONDS
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        alive = [t.name for t in threads if t.is_alive()]
        if not alive:
            return
        with contextlib.suppress(Exception):
            sys.stderr.write(
                f"benchsdk: exiting without waiting for {len(alive)} non-daemon thread(s) "
                f"that benchmark tasks left running: {', '.join(alive)}\n"
            )
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(int(session.exitstatus))

    with contextlib.suppress(RuntimeError):  # already shutting down
        register(guard)


def hand_over_to_xdist(config: pytest.Config) -> Callable[[list[RecordPayload]], None]:
    """On an xdist worker: leftovers travel to the controller in ``workeroutput``."""

    def hand_over(leftovers: list[RecordPayload]) -> None:
        workeroutput = getattr(config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput[WORKEROUTPUT_KEY] = [p.to_json() for p in leftovers]

    return hand_over


#: ``workeroutput`` key of the records a worker hands over at its end.
WORKEROUTPUT_KEY = "benchsdk_unreported"
