"""The controller role: the one process that owns the runs (plain pytest, or xdist's controller).

Workers only collect and execute; the controller (the only process without ``workerinput``)
receives every record through ``pytest_runtest_logreport`` and hands it to the session
(:class:`~pytest_benchsdk._session.BenchSession`, the engine-side home of a run's life, shared
with the programmatic runs), which writes the store, reports to the platform, scores, calls
``on_complete`` and makes the summary. This plugin adapts pytest to it: which items are
selected, pytest's hooks as the session's hooks, the exit status and the terminal.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from pytest_benchsdk._base.ctrlc import ctrl_c_can_arrive
from pytest_benchsdk._engine.benchfile import BenchFile, item_name
from pytest_benchsdk._engine.payload import RecordPayload
from pytest_benchsdk._engine.schedule import BenchmarkSchedule
from pytest_benchsdk._plugin.control.comparison import check_ref, start_history_from
from pytest_benchsdk._plugin.control.failures import count_session_failures
from pytest_benchsdk._plugin.control.interrupts import (
    NOT_CTRL_C_LINE,
    STOPPING_LINE,
    CtrlC,
    give_every_frame_a_line,
)
from pytest_benchsdk._plugin.control.terminal import verbose_detail
from pytest_benchsdk._plugin.items.execution import WORKEROUTPUT_KEY, attached_payload
from pytest_benchsdk._plugin.items.nodes import BenchModule
from pytest_benchsdk._plugin.items.thresholds import threshold_item_names
from pytest_benchsdk._plugin.runtime.catalog import Catalog
from pytest_benchsdk._plugin.runtime.process import ProcessRuntime
from pytest_benchsdk._session import BenchSession, Hook, SessionHooks, SessionUsageError
from pytest_benchsdk.results import Baseline, BenchmarkRun, CompareRef, RunSetup, find_baseline
from pytest_benchsdk.store import ResultStore

if TYPE_CHECKING:
    from pytest_benchsdk._session._link import PlatformLink

__all__ = ["BenchmarkedGroups", "ControllerPlugin"]


class BenchmarkedGroups(Protocol):
    """Benchmarked tests, whose runs open as their tests report: the controller's seam for
    the ``benchmark`` fixture's groups
    (:class:`~pytest_benchsdk._plugin.benchmark.measuring.BenchmarkedTests`)."""

    def collect_groups(self, items: Sequence[pytest.Item]) -> int:
        """Note the selected tests' groups; how many tests there are."""

    def close_groups(self) -> None:
        """The session ends: tests that never reported leave their groups."""

    def set_ceilings(self, runs: Mapping[str, BenchmarkRun]) -> None:
        """Each group's scoring, from its figures."""

    def failed_thresholds(self, runs: Mapping[str, BenchmarkRun]) -> list[str]:
        """A line for each threshold a benchmarked test failed."""


#: The names the plugin's items start with: iterations (and warm-up iterations), thresholds.
_ITEM_KINDS = ("task[", "warmup[", "threshold[")


def _bench_item_of(nodeid: str) -> tuple[str, str] | None:
    """``(path, "task[...]")`` of a bench item's node id (an iteration, a warm-up iteration or
    a threshold; xdist's loadgroup may append ``@<group>``), else None."""
    path, sep, name = nodeid.partition("::")
    if sep and name.startswith(_ITEM_KINDS) and "]" in name:
        return path, name[: name.rindex("]") + 1]
    return None


class ControllerPlugin:
    """The runs of this pytest session, from collection to the summary: pytest's side of the
    session (:attr:`session`)."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.config = catalog.config
        self.options = catalog.options
        hook = self.config.hook
        self.session = BenchSession(
            self.options,
            environ=catalog.environ,
            rootpath=self.config.rootpath,
            secrets=catalog.secrets,
            hooks=SessionHooks(
                write=self.write,
                record=Hook(
                    "pytest_benchsdk_record hook",
                    partial(hook.pytest_benchsdk_record, config=self.config),
                ),
                scores=Hook(
                    "pytest_benchsdk_scores hook",
                    partial(hook.pytest_benchsdk_scores, config=self.config),
                ),
                summary=Hook(
                    "pytest_benchsdk_summary hook",
                    partial(hook.pytest_benchsdk_summary, config=self.config),
                ),
                baseline=self._baseline,
                setup=self._setup,
                store_broken=self._stop_session,
                passthrough=(pytest.exit.Exception,),
            ),
        )
        self._session: pytest.Session | None = None
        # Payloads of reports made in this process, to skip parsing their JSON back.
        self._local: dict[int, RecordPayload] = {}
        # Per run: how many of its selected items (iterations and warm-up iterations) there
        # are, and how many finished (their teardown, or an xdist crash report): a run with an
        # unfinished item was interrupted, whatever the exit status says.
        self._items: dict[str, int] = {}
        self._finished_items: dict[str, int] = {}
        # Iteration items that failed with a record (--bench-failed-iterations=record).
        self._failed_iterations = 0
        # Iterations whose xdist worker died while running them, (file key, participant,
        # task index): xdist reported their items failed, so no record of them is kept.
        self._crashed: set[tuple[str, str, int]] = set()
        self._recorded_line: str | None = None
        self._ctrl_c = CtrlC()
        self._ctrl_c.on_deferred = self._stop_after_the_item
        self._ctrl_c.on_first_press = self._start_no_iteration
        # --bench-compare's REF, resolved when the session starts.
        self._compare_ref: CompareRef | None = None
        #: Where a run's baseline comes from instead of ``--bench-compare``'s REF (A/B sets it:
        #: side A's run of the same file).
        self.baseline_source: Callable[[BenchmarkRun], Baseline | str | None] | None = None
        #: The groups of benchmarked tests (the ``benchmark`` fixture's), where they are measured.
        self.test_groups: BenchmarkedGroups | None = None

    # -- state -------------------------------------------------------------------------------

    @property
    def runs(self) -> Mapping[str, BenchmarkRun]:
        return self.session.runs

    @property
    def store(self) -> ResultStore | None:
        return self.session.store

    @property
    def platform(self) -> PlatformLink | None:
        return self.session.platform

    @property
    def session_errors(self) -> list[str]:
        return self.session.session_errors

    def write(self, line: str) -> None:
        """One line on the terminal, also while an item runs (past its output capture)."""
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        # Also while an item runs (a pool worker's claim): past its output capture.
        capture = self.config.pluginmanager.get_plugin("capturemanager")
        with (
            capture.global_and_fixture_disabled()
            if capture is not None
            else contextlib.nullcontext()
        ):
            # Progress dots (-q) leave the cursor mid-line without pytest knowing.
            if reporter._tw.width_of_current_line:
                reporter._tw.line()
            reporter.write_line(line)

    def _usage(self, action: Any) -> Any:
        """``action()``, with the session's usage errors as pytest's (exit status 4)."""
        try:
            return action()
        except SessionUsageError as exc:
            raise pytest.UsageError(str(exc)) from None

    def _schedule_of(self, file_key: str) -> tuple[BenchFile, BenchmarkSchedule]:
        """A bench file's schedule, loading a file this process did not collect (the xdist
        controller collects nothing itself)."""
        if file_key not in self.catalog.files:
            assert self._session is not None
            path = self.config.rootpath / file_key
            module = BenchModule.from_parent(self._session, path=path)
            self.catalog.add(path, module.load())
        return self.catalog.files[file_key]

    # -- the comparison (--bench-compare) and a broken store, for the session ------------------

    def _baseline(self, run: BenchmarkRun) -> Baseline | str | None:
        if self.baseline_source is not None:
            return self.baseline_source(run)
        ref = self._compare_ref
        if ref is None:
            return None
        # The store the runs go to (not --bench-no-store's temporary outbox).
        store = self.store if self.options.store_path is not None else None
        setup = RunSetup.of_live(run, self.options.dry_run)
        return find_baseline(ref, store, setup, run.local_run_id)

    def _setup(self, run: BenchmarkRun) -> dict[str, Any]:
        return RunSetup.of_live(run, self.options.dry_run).describe(self.session.environment)

    def _stop_session(self, reason: str) -> None:
        if self._session is not None:
            self._session.shouldstop = reason
        # pytest-xdist's controller loop watches its own flag, not the session's.
        dsession = self.config.pluginmanager.get_plugin("dsession")
        if dsession is not None and hasattr(dsession, "shouldstop"):
            dsession.shouldstop = reason

    # -- collection: open the runs -----------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self._session = session
        for line in self.options.compat_lines:
            self.write(line)  # pytest-benchmark's options with no meaning here: what instead
        if self.config.option.collectonly:
            return
        self._ctrl_c.install()
        # Check the store before collection and before xdist starts its workers: an
        # existing file is opened (and validated) now, a new one must be creatable.
        self._usage(self.session.check_store)
        # Before anything runs: a REF that names nothing is a usage error, not a line at the end.
        self._compare_ref = check_ref(self.options, self.store)
        # --bench-history-from=RUN: the history starts afresh with RUN (now=: as runs begin).
        started = start_history_from(self.options, self.store)
        if started is not None:
            self.write(f"benchsdk: {started}")

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        # pytest calls this hook even when the collection stopped on a usage error (an
        # unknown --bench-provider name ...): no run is opened, nothing is stored then.
        if self.config.option.collectonly or self.catalog.usage_error:
            return
        # Iterations and thresholds (a threshold is judged only when its item is selected);
        # the groups of benchmarked tests (the benchmark fixture's) open as their tests report.
        benchmarked = self.test_groups
        tests = benchmarked.collect_groups(session.items) if benchmarked is not None else 0
        self._begin([item.nodeid for item in session.items], opening_later=tests > 0)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if not self.runs and not self.config.option.collectonly:
            # The workers leave upstream's --bench-provider check to the controller.
            for path in dict.fromkeys(p[0] for p in map(_bench_item_of, ids) if p is not None):
                self._schedule_of(self.catalog.node_file_key(path))
            unknown = self.catalog.unknown_providers()
            if unknown is not None:
                raise pytest.UsageError(f"--bench-provider: {unknown}")
            self._begin(ids)

    def _begin(self, nodeids: Sequence[str], *, opening_later: bool = False) -> None:
        runs = self._usage(partial(self._open_runs, nodeids))
        distributed = self.config.pluginmanager.get_plugin("dsession") is not None
        self.session.begin(
            runs,
            distributed=distributed,
            opening_later=opening_later,
            verbose=self.config.get_verbosity(),
        )
        if self.session.platform is not None:
            # Items of this process ask the session (pool claims, step coordination); xdist
            # workers are other processes and get none.
            self.catalog.link = self.session

    def _open_runs(self, nodeids: Sequence[str]) -> list[BenchmarkRun]:
        """Open a run for every bench file with selected items (after deselection)."""
        selected: dict[str, list[str]] = {}
        for nodeid in nodeids:
            parts = _bench_item_of(nodeid)
            if parts is not None:
                selected.setdefault(parts[0], []).append(parts[1])
        started: list[BenchmarkRun] = []
        for nodeid_path, names in selected.items():
            file_key = self.catalog.node_file_key(nodeid_path)
            if file_key in self.runs:
                continue
            bench_file, schedule = self._schedule_of(file_key)
            wanted = set(names)
            chosen: dict[str, set[int]] = {}
            items = whole = 0
            for name, slot, skipped in schedule.items():
                if skipped is not None:
                    continue
                whole += not slot.warmup
                if item_name(name, slot) in wanted:
                    items += 1
                    if not slot.warmup:
                        chosen.setdefault(name, set()).add(slot.index)
            if not chosen and not schedule.skipped:
                continue
            self._items[file_key] = items
            started.append(
                self.session.open_run(
                    file_key,
                    bench_file,
                    schedule,
                    chosen,
                    whole_plan=sum(len(indexes) for indexes in chosen.values()) == whole,
                    thresholds=threshold_item_names(schedule, wanted),
                )
            )
        return started

    # -- records -----------------------------------------------------------------------------

    def remember_local(self, report: pytest.TestReport, payload: RecordPayload) -> None:
        """The runner in this process made ``report`` with ``payload``."""
        self._local[id(report)] = payload

    def local_payload(self, report: pytest.TestReport) -> RecordPayload | None:
        """The record this process attached to ``report``, until the report is logged."""
        return self._local.get(id(report))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = attached_payload(report)
        if data is None:
            if report.when in ("teardown", "???") or report.failed:
                self._item_reported(report)
            return
        if report.failed:
            self._failed_iterations += 1
        payload = self._local.pop(id(report), None)
        self.keep(payload if payload is not None else RecordPayload.from_json(data))

    def _item_reported(self, report: pytest.TestReport) -> None:
        """An iteration item finished (its teardown, or xdist's report of a crashed worker),
        or failed without a record (setup, teardown, a BaseException): its run did not
        pass. Threshold items are judged again at the session end, from the summary."""
        parts = _bench_item_of(report.nodeid)
        if parts is None or parts[1].startswith("threshold["):
            return
        file_key = self.catalog.node_file_key(parts[0])
        run = self.runs.get(file_key)
        if run is None:
            return
        if report.when in ("teardown", "???"):
            self._finished_items[file_key] = self._finished_items.get(file_key, 0) + 1
        if str(report.when) == "???":  # xdist's report of a crashed worker
            self._note_crashed(file_key, parts[1])
        if report.failed:
            run.failed_items += 1

    def _note_crashed(self, file_key: str, name: str) -> None:
        """xdist's worker died while running the iteration item ``name``: the item failed
        (xdist's report), and a record of its iteration that still arrives is not kept (a
        replacement worker's pool may run it again, or hand it over unreported)."""
        _, schedule = self._schedule_of(file_key)
        for participant, slot, skipped in schedule.items():
            if skipped is None and not slot.warmup and item_name(participant, slot) == name:
                self._crashed.add((file_key, participant, slot.index))
                return

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        handed_over = getattr(node, "workeroutput", {}).get(WORKEROUTPUT_KEY, ())
        self.keep_all([RecordPayload.from_json(data) for data in handed_over])

    def keep_all(self, payloads: Sequence[RecordPayload]) -> None:
        for payload in payloads:
            self.keep(payload)

    def keep(self, payload: RecordPayload) -> None:
        """Keep one record (the session's: durably in the store before anything else happens
        to it, then the platform and the ``pytest_benchsdk_record`` hook).

        Each iteration is kept once: after an xdist worker died, the worker that takes over
        its items may run iterations whose records arrived already (its pool plans the whole
        group) and hand them over at its end; the first record stays, the later one is
        dropped before the store and the platform see it (the platform would count it
        twice), and so is one of an iteration whose worker died while running it.
        """
        if payload.task_index >= 0:
            run = self.runs.get(payload.file_key)
            if run is not None and (
                run.has_record(payload.participant, payload.task_index)
                or (payload.file_key, payload.participant, payload.task_index) in self._crashed
            ):
                return
        self.session.keep(payload)

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_teststatus(
        self, report: pytest.TestReport, config: pytest.Config
    ) -> tuple[str, str, tuple[str, dict[str, bool]]] | None:
        data = attached_payload(report)
        if data is None or config.get_verbosity() < 1:
            return None
        record = data.get("record", {})
        assert isinstance(record, dict)
        detail = verbose_detail(record)
        if report.passed:
            return "passed", ".", (f"PASSED {detail}".rstrip(), {"green": True})
        return None

    # -- Ctrl-C between an item's phases (see .interrupts) ------------------------------------

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, object, object]:
        self._ctrl_c.in_protocol = True
        try:
            return (yield)
        finally:
            self._ctrl_c.in_protocol = False

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, None, None]:
        with self._ctrl_c.phase():
            return (yield)

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        with self._ctrl_c.phase():
            return (yield)

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, None, None]:
        with self._ctrl_c.phase():
            return (yield)

    def _start_no_iteration(self) -> None:
        # In the signal handler: the executor's pools start nothing more (a flag).
        runtime = ProcessRuntime.started(self.config)
        if runtime is not None:
            runtime.executor.stop_starting()

    def _stop_after_the_item(self) -> None:
        if self._session is not None:
            self._session.shouldstop = "Ctrl-C"

    # -- session end -------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        give_every_frame_a_line(excinfo.value)
        # Before pytest formats the traceback (slow: a second Ctrl-C used to land there).
        # Only a Ctrl-C is called one: pytest stops on any KeyboardInterrupt (a fixture's or a
        # hook's own too; a task's own fails its iteration instead), and a store that failed
        # stopped the session (said in its own line).
        if self.runs and self.session.store_broken is None:
            pressed = self._ctrl_c.pressed or (not self._ctrl_c.counting and ctrl_c_can_arrive())
            self.write(STOPPING_LINE if pressed else NOT_CTRL_C_LINE)

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Finish every run (the session's :meth:`~BenchSession.finish`), then the exit
        status: a failure of the session end fails it; with
        ``--bench-failed-iterations=record`` failed iterations alone do not."""
        benchmarked = self.test_groups
        if benchmarked is not None:
            benchmarked.close_groups()
        if not self.runs:
            return
        interrupted = (
            exitstatus in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR)
            or bool(session.shouldstop)
            or bool(session.shouldfail)
            or self._ctrl_c.pressed
        )
        if benchmarked is not None:
            benchmarked.set_ceilings(self.runs)
        failed = self.session.finish(interrupted=interrupted, unfinished=self._unfinished)
        if benchmarked is not None:
            # A bench file's thresholds are items that fail; a group's are judged here.
            self.session_errors.extend(benchmarked.failed_thresholds(self.runs))
        if self.session.stopping and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.INTERRUPTED
        if self.session.store_broken is not None and session.exitstatus in (
            pytest.ExitCode.OK,
            pytest.ExitCode.TESTS_FAILED,
        ):
            # The store failed at the session end: as when it fails mid-run.
            session.exitstatus = pytest.ExitCode.INTERRUPTED
        if self.session.usage_failed and session.exitstatus in (
            pytest.ExitCode.OK,
            pytest.ExitCode.TESTS_FAILED,
        ):
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
        elif (failed or self.session_errors) and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        elif (
            self.options.failed_iterations == "record"
            and session.exitstatus == pytest.ExitCode.TESTS_FAILED
            and not failed
            and not self.session_errors
            and self._failed_iterations
            and session.testsfailed == self._failed_iterations
        ):
            # Every failure was an iteration's, and each is in its run's records: data.
            session.exitstatus = pytest.ExitCode.OK
            self._recorded_line = (
                f"benchsdk: {self._failed_iterations} failed iteration(s) recorded as data "
                "(--bench-failed-iterations=record): the session passes."
            )
        count_session_failures(self.config, self.session.failures())

    def _unfinished(self, run: BenchmarkRun) -> bool:
        """Some selected item of the run never finished: the session stopped under it."""
        return self._finished_items.get(run.file_key, 0) < self._items.get(run.file_key, 0)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.runs:
            return
        terminalreporter.section("benchmarks")
        verbose = self.config.get_verbosity()
        wanted = self.options.summary_verbosity  # --benchmark-verbose (1) / -quiet (-1)
        if wanted is not None:
            verbose = max(verbose, wanted) if wanted > 0 else min(verbose, wanted)
        for line, failure in self.session.summary_lines(verbose=verbose):
            if failure:
                terminalreporter.write_line(line, red=True)
            else:
                terminalreporter.write_line(line)
        if self._recorded_line is not None:
            terminalreporter.write_line(self._recorded_line)

    def release_ctrl_c(self) -> None:
        """pytest is done with the session (``pytest_cmdline_main`` returns): Ctrl-C is handed
        back only now, as a second press still lands in what other plugins and the config's
        cleanups do after this plugin's unconfigure (see :mod:`.interrupts`)."""
        self._ctrl_c.release()

    def pytest_unconfigure(self) -> None:
        # The last resort, when the session end did not get there (an error before or in
        # pytest_sessionfinish): stop delivery, leave no run "running", close the store.
        self.session.close()
