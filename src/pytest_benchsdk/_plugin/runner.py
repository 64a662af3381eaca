"""The runner role: every process that executes bench items (plain pytest, xdist workers).

It attaches each iteration's record to the item's call report, where the controller receives
it through ``pytest_runtest_logreport`` (in this process, or from an xdist worker); at session
end it hands over what finished in the background but never reported, and stops the executor.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Sequence

import pytest

from .._runs import RecordPayload, participant_secrets, redact_text
from .catalog import Catalog
from .nodes import BenchItem
from .runtime import ProcessRuntime

__all__ = ["RunnerPlugin", "attached_payload"]

#: ``TestReport`` attribute holding the iteration's :class:`RecordPayload` as plain JSON, so it
#: crosses xdist (and ``--report-log``) intact.
REPORT_ATTRIBUTE = "benchsdk"


def attached_payload(report: pytest.TestReport) -> dict[str, object] | None:
    """The record payload (JSON) a call report carries, if it is a bench item's."""
    data = getattr(report, REPORT_ATTRIBUTE, None)
    return data if isinstance(data, dict) and report.when == "call" else None


class RunnerPlugin:
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
        self._secrets_by_file: dict[str, tuple[str, ...]] = {}

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if not isinstance(item, BenchItem):
            return report
        # The one place where an item's text leaves for the terminal, junitxml, xdist and the
        # controller: the values of the env vars participants require are redacted here.
        secrets = self._secrets(item)
        if secrets:
            redact_report(report, secrets)
        if call.when == "call" and item.bench_outcome is not None:
            iteration = item.bench
            payload = RecordPayload.of(
                iteration.file_key, iteration.participant.name, item.bench_outcome
            ).redacted(secrets)
            setattr(report, REPORT_ATTRIBUTE, payload.to_json())
            if self._on_payload is not None:
                self._on_payload(report, payload)
        return report

    def _secrets(self, item: BenchItem) -> tuple[str, ...]:
        file_key = item.bench.file_key
        secrets = self._secrets_by_file.get(file_key)
        if secrets is None:
            catalog = Catalog.of(self.config)
            entry = catalog.files.get(file_key)
            secrets = (
                ()
                if entry is None
                else participant_secrets(entry[0].config, catalog.environ, os.environ)
            )
            self._secrets_by_file[file_key] = secrets
        return secrets

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self) -> None:
        # Iterations that finished in the background but whose items never reported are kept
        # too; then whatever still runs is cancelled.
        runtime = ProcessRuntime.started(self.config)
        if runtime is None:
            return
        leftovers = runtime.unreported()
        runtime.shutdown()
        if leftovers:
            self._hand_over(leftovers)

    def pytest_unconfigure(self) -> None:
        runtime = ProcessRuntime.started(self.config)
        if runtime is not None:
            runtime.shutdown()


def redact_report(report: pytest.TestReport, secrets: Sequence[str]) -> None:
    """Replace every secret in the report's failure text, captured sections and user
    properties (what the terminal, ``--showlocals``, junitxml and xdist see)."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        path, lineno, reason = longrepr
        report.longrepr = (path, lineno, redact_text(str(reason), secrets))
    elif longrepr is not None:
        text = str(longrepr)
        redacted = redact_text(text, secrets)
        if redacted != text:
            report.longrepr = redacted
    report.sections = [(title, redact_text(content, secrets)) for title, content in report.sections]
    report.user_properties = [
        (name, redact_text(value, secrets) if isinstance(value, str) else value)
        for name, value in report.user_properties
    ]


def hand_over_to_xdist(config: pytest.Config) -> Callable[[list[RecordPayload]], None]:
    """On an xdist worker: leftovers travel to the controller in ``workeroutput``."""

    def hand_over(leftovers: list[RecordPayload]) -> None:
        workeroutput = getattr(config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput[WORKEROUTPUT_KEY] = [p.to_json() for p in leftovers]

    return hand_over


#: ``workeroutput`` key of the records a worker hands over at its end.
WORKEROUTPUT_KEY = "benchsdk_unreported"
