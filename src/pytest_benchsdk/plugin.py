"""pytest-benchsdk's pytest hooks: options, collection, fixtures, outcomes, summary.

Only glue lives here; the work is done by the modules it calls.
"""

from __future__ import annotations

import json
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from . import hookspecs
from ._check import run_check
from ._collect import BenchItem, BenchModule, is_bench_path
from ._options import BenchOptions, add_options
from ._running import ProcessRuntime
from ._session import BenchSession, RecordPayload
from ._summary import DRY_RUN_LINE, run_header_lines, summary_lines
from .context import TaskContext, current_context

if TYPE_CHECKING:
    from ._reporting import PlatformBridge

__all__: list[str] = []


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    # --bench-check and --bench-resubmit run no iteration: keep them in this process, where
    # collection (check) and the store (resubmit) are, even when -n is in the ini's addopts.
    option = config.option
    runs_nothing = getattr(option, "bench_check", False) or getattr(option, "bench_resubmit", False)
    if runs_nothing and getattr(option, "numprocesses", None):
        option.numprocesses = None
        option.dist = "no"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "bench: a benchmark iteration run by pytest-benchsdk")
    state = BenchSession.install(config, BenchOptions.from_config(config))
    config.pluginmanager.register(BenchPlugin(state), "benchsdk-session")
    if state.options.enabled:
        _rewrite_asserts_in_bench_files(config, state.options.file_patterns)


def _rewrite_asserts_in_bench_files(config: pytest.Config, patterns: tuple[str, ...]) -> None:
    """Give bench files the assertion rewriting test modules get (python_files only, else)."""
    hook = getattr(config.pluginmanager, "rewrite_hook", None)
    fnpats = getattr(hook, "fnpats", None)
    if isinstance(fnpats, list):
        hook.fnpats = [*fnpats, *(p for p in patterns if p not in fnpats)]  # type: ignore[union-attr]


def _python_collects(file_path: Path, parent: pytest.Collector) -> bool:
    """Whether pytest's python plugin will offer this file to ``pytest_pycollect_makemodule``."""
    from _pytest.python import path_matches_patterns

    return parent.session.isinitpath(file_path) or path_matches_patterns(
        file_path, parent.config.getini("python_files")
    )


class BenchPlugin:
    """The session-bound hooks (one instance per pytest process)."""

    def __init__(self, state: BenchSession) -> None:
        self.state = state
        self.config = state.config
        self._local: dict[int, RecordPayload] = {}
        self.bridge: PlatformBridge | None = None
        self.resubmit_ok: bool | None = None
        self._collect_errors = {"bench": 0, "other": 0}

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.state.session = session

    # -- collection --------------------------------------------------------------------------

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> BenchModule | None:
        options = self.state.options
        if not options.enabled or file_path.suffix != ".py":
            return None
        if not is_bench_path(file_path, options.file_patterns):
            return None
        if _python_collects(file_path, parent):
            return None
        return BenchModule.from_parent(parent, path=file_path)

    @pytest.hookimpl(tryfirst=True)
    def pytest_pycollect_makemodule(self, module_path: Path, parent: pytest.Collector) -> Any:
        # A bench file named on the command line (or matching python_files) reaches pytest's
        # python plugin too; claiming it here collects it once, as a bench file.
        options = self.state.options
        if options.enabled and is_bench_path(module_path, options.file_patterns):
            return BenchModule.from_parent(parent, path=module_path)
        return None

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            path = Path(report.nodeid.partition("::")[0])
            bench = is_bench_path(path, self.state.options.file_patterns)
            self._collect_errors["bench" if bench else "other"] += 1

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self) -> None:
        errors = self.state.selection_errors()
        if errors:
            raise pytest.UsageError("\n".join(errors))

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        state = self.state
        if not state.is_controller or self.config.option.collectonly or state.options.check:
            return
        self._begin([item.nodeid for item in session.items if isinstance(item, BenchItem)])

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if not self.state.runs and not self.config.option.collectonly:
            self._begin(ids)

    def _begin(self, nodeids: list[str]) -> None:
        runs = self.state.begin(nodeids)
        if not runs:
            return
        self._write("")
        if self.state.options.dry_run:
            self._write(f"benchsdk: {DRY_RUN_LINE}")
        else:
            for line in self._platform().header_lines():
                self._write(f"benchsdk: {line}")
        for run in runs:
            for line in run_header_lines(run):
                self._write(line)
            if self.bridge is not None:
                for line in self.bridge.begin(run):
                    self._write(f"  {line}")

    def _platform(self) -> PlatformBridge:
        if self.bridge is None:
            from ._reporting import PlatformBridge  # httpx/psutil only when reporting

            self.bridge = PlatformBridge(self.state, self._write)
        return self.bridge

    def _write(self, line: str) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(line)

    # -- running -----------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session: pytest.Session) -> bool | None:
        # --bench-resubmit runs no benchmark (and no test): it only empties the outbox.
        return True if self.state.options.resubmit else None

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool | None:
        options = self.state.options
        if options.resubmit:
            from ._reporting import resubmit_outbox

            self.resubmit_ok = resubmit_outbox(self.state, self._write)
            return True
        if not options.check:
            self._continue_past_bench_collect_errors()
        if not options.check or self.config.option.collectonly:
            return None
        if not run_check(self.state, session):
            session.testsfailed += 1
        return True

    def _continue_past_bench_collect_errors(self) -> None:
        # A broken bench file must not stop the others (pytest stops on any collection error);
        # the session still fails. Errors in ordinary test files keep pytest's behaviour.
        errors = self._collect_errors
        option = self.config.option
        if errors["bench"] and not errors["other"] and not option.continue_on_collection_errors:
            option.continue_on_collection_errors = True
            self._write(
                f"benchsdk: {errors['bench']} bench file(s) could not be collected (errors "
                "above); the other benchmarks run and the session fails."
            )

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        outcome = getattr(item, "bench_outcome", None)
        if call.when == "call" and isinstance(item, BenchItem) and outcome is not None:
            payload = RecordPayload.of(item.bench.file_key, item.bench.participant.name, outcome)
            # Plain JSON on the report, so it crosses xdist (and --report-log) intact; this
            # process keeps the object too, to skip parsing it back.
            report.benchsdk = payload.to_json()  # type: ignore[attr-defined]
            if self.state.is_controller:
                self._local[id(report)] = payload
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, "benchsdk", None)
        if data is None or report.when != "call" or not self.state.is_controller:
            return
        payload = self._local.pop(id(report), None)
        self._keep(payload if payload is not None else RecordPayload.from_json(data))

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        for data in getattr(node, "workeroutput", {}).get("benchsdk_unreported", ()):
            self._keep(RecordPayload.from_json(data))

    def _keep(self, payload: RecordPayload) -> None:
        run = self.state.add(payload)
        if run is not None and self.bridge is not None:
            self.bridge.record(run, payload)
        if run is not None:
            self.config.hook.pytest_benchsdk_record(
                config=self.config,
                benchmark=run.config.benchmark_slug,
                participant=payload.participant,
                record=payload.record,
            )

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_teststatus(
        self, report: pytest.TestReport, config: pytest.Config
    ) -> tuple[str, str, tuple[str, dict[str, bool]]] | None:
        data = getattr(report, "benchsdk", None)
        if data is None or report.when != "call" or config.get_verbosity() < 1:
            return None
        record = data.get("record", {})
        detail = json.dumps(record.get("data", {}), separators=(",", ":"), ensure_ascii=False)
        if report.passed:
            return "passed", ".", (f"PASSED {detail}", {"green": True})
        return None

    # -- session end -------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        state = self.state
        # Iterations that finished in the background but whose items never reported (an early
        # stop: -x, --maxfail, Ctrl-C) are kept too; then whatever still runs is cancelled.
        leftovers = ProcessRuntime.unreported(self.config)
        ProcessRuntime.shutdown_if_started(self.config)
        if not state.is_controller:
            workeroutput = getattr(self.config, "workeroutput", None)
            if workeroutput is not None and leftovers:
                workeroutput["benchsdk_unreported"] = [p.to_json() for p in leftovers]
            return
        for payload in leftovers:
            self._keep(payload)
        if state.options.resubmit:
            if self.resubmit_ok is not None:
                session.exitstatus = (
                    pytest.ExitCode.OK if self.resubmit_ok else pytest.ExitCode.TESTS_FAILED
                )
            return
        if not state.runs:
            return
        interrupted = (
            exitstatus == pytest.ExitCode.INTERRUPTED
            or bool(session.shouldstop)
            or bool(session.shouldfail)
        )
        failed = False
        for run in state.runs.values():
            state.finish_run(run)
            failed = failed or bool(run.errors)
            if self.bridge is not None:
                self.bridge.finish(run)
            if state.store is not None and run.local_run_id is not None:
                state.store.finish_run(run.local_run_id, run.status(interrupted))
        if state.options.json_path is not None:
            state.write_json(state.options.json_path)
        if self.bridge is not None:
            delivery = self.bridge.close()
            if state.options.strict_upload and not delivery.ok:
                failed = True
        if failed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.state.is_controller or not self.state.runs:
            return
        terminalreporter.section("benchmarks")
        for line in summary_lines(self.state):
            terminalreporter.write_line(line)
        delivery = self.bridge.delivery if self.bridge is not None else None
        if delivery is not None:
            store = self.state.options.store_path
            for line in delivery.lines(str(store) if store is not None else None):
                terminalreporter.write_line(line)
            if self.state.options.strict_upload and not delivery.ok:
                terminalreporter.write_line(
                    "benchsdk: platform upload incomplete (--bench-strict-upload): "
                    "the session fails although every benchmark ran.",
                    red=True,
                )

    def pytest_unconfigure(self) -> None:
        ProcessRuntime.shutdown_if_started(self.config)
        self.state.close()


# -- fixtures --------------------------------------------------------------------------------


def _bench_item(request: pytest.FixtureRequest, fixture: str) -> BenchItem:
    node = request.node
    if not isinstance(node, BenchItem):
        raise pytest.UsageError(
            f"the '{fixture}' fixture is only available to benchmark tasks "
            "(bench files run with --bench)"
        )
    return node


class _LateContext:
    """Stands in for the iteration's context in fixtures that depend on ``step``/``log``...

    The task itself receives the real context objects; this proxy only serves other fixtures
    and forwards to the context once the iteration runs.
    """

    def __init__(self, item: BenchItem, attribute: str) -> None:
        self._item = item
        self._attribute = attribute

    def _target(self) -> Any:
        ctx: TaskContext | None = current_context()
        if ctx is None:
            raise RuntimeError(
                f"'{self._attribute}' can only be used while the benchmark iteration runs"
            )
        return ctx if self._attribute == "bench" else getattr(ctx, self._attribute)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._target()(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target(), name)


@pytest.fixture
def participant(request: pytest.FixtureRequest) -> Any:
    """The participant this iteration runs for (its extra fields are attributes, e.g. ``.sdk``)."""
    return _bench_item(request, "participant").bench.participant


@pytest.fixture
def phase(request: pytest.FixtureRequest) -> str | None:
    """The name of this iteration's phase, or None when the benchmark has no phases."""
    return _bench_item(request, "phase").bench.slot.phase


@pytest.fixture
def task_index(request: pytest.FixtureRequest) -> int:
    """This iteration's 0-based index in its participant's schedule."""
    return _bench_item(request, "task_index").bench.slot.index


@pytest.fixture
def step(request: pytest.FixtureRequest) -> Any:
    """``step(name, fn=None, *, timeout_ms=None, parallel_invocations=None, capture_output=True)``:
    run ``fn`` as a named, timed step (awaitable in async tasks; without ``fn`` a ``with`` /
    ``async with`` block). A timeout raises ``TaskError(code="step_timeout")``."""
    return _LateContext(_bench_item(request, "step"), "step")


@pytest.fixture
def measure(request: pytest.FixtureRequest) -> Any:
    """``measure(**data)`` or ``measure(dict)``: add data to the running step, else to the
    iteration's record (``record.data``), which scoring reads."""
    return _LateContext(_bench_item(request, "measure"), "measure")


@pytest.fixture
def log(request: pytest.FixtureRequest) -> Any:
    """``log(message, meta=None, level="info")``: a line in the participant's log
    (``<ISO> [task <i>] [<level>] <message>``), kept in the store and uploaded to the platform."""
    return _LateContext(_bench_item(request, "log"), "log")


@pytest.fixture
def bench(request: pytest.FixtureRequest) -> Any:
    """The whole task context: ``participant``, ``phase``, ``task_index``, ``step``,
    ``measure``, ``log`` and ``args`` (values of the file's custom flags from ``--bench-arg``)."""
    return _LateContext(_bench_item(request, "bench"), "bench")
