"""The controller role: the one process that owns the runs (plain pytest, or xdist's controller).

Workers only collect and execute; the controller (the only process without ``workerinput``)
receives every record through ``pytest_runtest_logreport``, writes the store, reports to the
platform, scores, calls ``on_complete`` and renders the summary.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
import pytest

from .._benchfile import BenchFile, item_name
from .._coordination import StepCoordination
from .._modes import DRY_RUN_LINE, pool_ignored_line
from .._redact import Redactor
from .._runenv import RunEnvironment, collect_run_environment
from .._runs import RecordPayload, resolve_awaitable
from .._views.exports import export_text
from .._views.json import benchmark_json, json_document, json_text
from .._views.markdown import markdown_summary
from ..results import Analyses, BenchmarkRun, analyse, save_summary
from ..schedule import BenchmarkSchedule
from ..scoring import ScoringSpecError
from ..store import ResultStore, StoreError
from .catalog import Catalog
from .comparison import current_setup, find_baseline
from .interrupts import STOPPING_LINE, CtrlC
from .nodes import BenchModule
from .options import unwritable_reason
from .runner import WORKEROUTPUT_KEY, attached_payload
from .terminal import run_header_lines, section_lines, verbose_detail
from .thresholds import threshold_item_names

if TYPE_CHECKING:
    from .upload import PlatformLink

__all__ = ["ControllerPlugin"]

_T = TypeVar("_T")


def describe(exc: BaseException) -> str:
    """``Type: message`` of an exception (``SystemExit: 4``, ``OverflowError: ...``)."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _uses_readiness(path: Path) -> bool:
    """Whether a bench file mentions step readiness (said in the header when barriers cannot
    hold; reading the source is cheaper than running the task to find out)."""
    try:
        return "readiness" in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


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
    """The runs of this pytest session, from collection to the summary."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.config = catalog.config
        self.options = catalog.options
        self.runs: dict[str, BenchmarkRun] = {}
        self.store: ResultStore | None = None
        self.platform: PlatformLink | None = None
        self._session: pytest.Session | None = None
        self._environment: RunEnvironment | None = None
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        # Payloads of reports made in this process, to skip parsing their JSON back.
        self._local: dict[int, RecordPayload] = {}
        # Local run ids whose final status is in the store.
        self._finished: set[str] = set()
        # Why the store stopped taking writes (a full disk, say); the session stops then.
        self._store_broken: str | None = None
        # A KeyboardInterrupt during the session end: skip the user's hooks still to come.
        self._stopping = False
        # Failures at the session end that belong to no one benchmark (the JSON file).
        self.session_errors: list[str] = []
        self._json_written = False
        # --bench-html: the summary's line about the report (written, or why not).
        self._report_line: str | None = None
        self._markdown_written = False
        # --bench-export: the exports written, as (format, path).
        self._exported: list[tuple[str, Path]] = []
        # Per run: how many of its selected items (iterations and warm-up iterations) there
        # are, and how many finished (their teardown, or an xdist crash report): a run with an
        # unfinished item was interrupted, whatever the exit status says.
        self._items: dict[str, int] = {}
        self._finished_items: dict[str, int] = {}
        self._ctrl_c = CtrlC()

    # -- state -------------------------------------------------------------------------------

    @property
    def environment(self) -> RunEnvironment:
        if self._environment is None:
            self._environment = collect_run_environment(self.catalog.environ, self.config.rootpath)
        return self._environment

    def open_store(self) -> ResultStore | None:
        """The results store; with ``--bench-no-store`` outside dry runs, a temporary one that
        only serves as the platform outbox for this session."""
        if self.store is None:
            path = self.options.store_path
            # --bench-no-store: a temporary store still serves as the platform outbox, and
            # as the source of the --bench-html report (its history is this session only).
            if path is None and (not self.options.dry_run or self.options.html_path is not None):
                self._scratch = tempfile.TemporaryDirectory(prefix="benchsdk-")
                path = Path(self._scratch.name) / "outbox.sqlite3"
            if path is not None:
                try:
                    self.store = ResultStore(path)
                except StoreError as exc:
                    # Before any iteration runs: a usage error (exit status 4), not an
                    # INTERNALERROR.
                    raise pytest.UsageError(self.options.store_problem(str(exc))) from None
        return self.store

    def _write(self, line: str) -> None:
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

    def _schedule_of(self, file_key: str) -> tuple[BenchFile, BenchmarkSchedule]:
        """A bench file's schedule, loading a file this process did not collect (the xdist
        controller collects nothing itself)."""
        if file_key not in self.catalog.files:
            assert self._session is not None
            path = self.config.rootpath / file_key
            module = BenchModule.from_parent(self._session, path=path)
            self.catalog.add(path, module.load())
        return self.catalog.files[file_key]

    # -- collection: open the runs -----------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self._session = session
        if self.config.option.collectonly:
            return
        self._ctrl_c.install()
        # Check the store before collection and before xdist starts its workers: an
        # existing file is opened (and validated) now, a new one must be creatable.
        path = self.options.store_path
        if path is not None:
            if os.path.lexists(path):
                self.open_store()
            else:
                problem = unwritable_reason(path)
                if problem is not None:
                    raise pytest.UsageError(
                        self.options.store_problem(f"cannot use results store {path}: {problem}")
                    )

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if self.config.option.collectonly:
            return
        # Iterations and thresholds (a threshold is judged only when its item is selected).
        self._begin([item.nodeid for item in session.items])

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if not self.runs and not self.config.option.collectonly:
            self._begin(ids)

    def _begin(self, nodeids: Sequence[str]) -> None:
        runs = self._open_runs(nodeids)
        if not runs:
            return
        self._write("")
        if self.options.dry_run:
            # No platform at all: a dry run does not even import it (httpx, psutil).
            self._write(f"benchsdk: {DRY_RUN_LINE}")
            if self.options.run_args.worker_pool:
                self._write(f"benchsdk: {pool_ignored_line(self.options.run_args.worker_pool)}")
        else:
            from .upload import PlatformLink

            self.platform = PlatformLink.open(
                self.options, self.open_store(), self.catalog.environ, self.environment, self._write
            )
            # The credentials as resolved (a refreshed token, say) are secrets too.
            self.catalog.add_secrets(self.platform.secrets)
            for line in self.platform.header_lines():
                self._write(f"benchsdk: {line}")
            # Items of this process ask the link (pool claims, step coordination); xdist
            # workers are other processes and get none.
            self.catalog.link = self
        for run in runs:
            for line in run_header_lines(run):
                self._write(line)
            if self.platform is not None:
                for line in self.platform.begin(run):
                    self._write(f"  {line}")
            inactive = self._barriers_inactive()
            if inactive and _uses_readiness(run.bench_file.path):
                self._write(
                    f'  Readiness barriers (step readiness="poll") are inactive {inactive}: '
                    "such steps proceed at once."
                )

    def _barriers_inactive(self) -> str | None:
        """Why no readiness barrier can hold in this session, or ``None``."""
        if self.platform is None:
            return "in a dry run (no platform to coordinate with)"
        if not self.platform.reporting:
            return "without platform credentials"
        if self.config.pluginmanager.get_plugin("dsession") is not None:
            return "under pytest-xdist (the steps run in xdist workers)"
        return None

    # -- the link the items of this process use (catalog.ParticipantLink) --------------------

    def admit(self, file_key: str, participant: str) -> str | None:
        run = self.runs.get(file_key)
        if self.platform is None or run is None:
            return None
        return self.platform.admit(run, participant, self._write)

    def coordination(
        self, file_key: str, participant: str, concurrency: int
    ) -> StepCoordination | None:
        run = self.runs.get(file_key)
        if self.platform is None or run is None:
            return None
        return self.platform.coordination(run, participant, concurrency)

    def _open_runs(self, nodeids: Sequence[str]) -> list[BenchmarkRun]:
        """Open a run for every bench file with selected items (after deselection)."""
        selected: dict[str, list[str]] = {}
        for nodeid in nodeids:
            parts = _bench_item_of(nodeid)
            if parts is not None:
                selected.setdefault(parts[0], []).append(parts[1])
        started: list[BenchmarkRun] = []
        for nodeid_path, names in selected.items():
            file_key = self.catalog.file_key(self.config.rootpath / nodeid_path)
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
            run = BenchmarkRun(
                file_key,
                bench_file,
                schedule,
                chosen,
                whole_plan=sum(len(indexes) for indexes in chosen.values()) == whole,
            )
            run.thresholds = threshold_item_names(schedule, wanted)
            self._items[file_key] = items
            # With --bench-no-store the store is a temporary outbox: on_complete gets no id.
            run.local_run_kept = self.options.store_path is not None
            self.runs[file_key] = run
            store = self.open_store()
            if store is not None and chosen:
                run.local_run_id = store.begin_run(
                    benchmark_slug=run.config.benchmark_slug,
                    benchmark_name=run.config.benchmark_name,
                    file=file_key,
                    knobs=schedule.resolved.to_wire(),
                    participants=run.participants,
                    config_snapshot=run.local_config_snapshot(self.environment),
                    environment=self.environment,
                    dry_run=self.options.dry_run,
                    run_key=self.options.run_args.run_key,
                )
                run.stored_records = partial(store.participant_records, run.local_run_id)
            started.append(run)
        return started

    # -- records -----------------------------------------------------------------------------

    def remember_local(self, report: pytest.TestReport, payload: RecordPayload) -> None:
        """The runner in this process made ``report`` with ``payload``."""
        self._local[id(report)] = payload

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = attached_payload(report)
        if data is None:
            if report.when in ("teardown", "???") or report.failed:
                self._item_reported(report)
            return
        payload = self._local.pop(id(report), None)
        self.keep(payload if payload is not None else RecordPayload.from_json(data))

    def _item_reported(self, report: pytest.TestReport) -> None:
        """An iteration item finished (its teardown, or xdist's report of a crashed worker),
        or failed without a record (setup, teardown, a BaseException): its run did not
        pass. Threshold items are judged again at the session end, from the summary."""
        parts = _bench_item_of(report.nodeid)
        if parts is None or parts[1].startswith("threshold["):
            return
        file_key = self.catalog.file_key(self.config.rootpath / parts[0])
        run = self.runs.get(file_key)
        if run is None:
            return
        if report.when in ("teardown", "???"):
            self._finished_items[file_key] = self._finished_items.get(file_key, 0) + 1
        if report.failed:
            run.failed_items += 1

    def secrets_of(self, run: BenchmarkRun) -> Redactor:
        """The run's secrets (its participants' env values, the platform credentials, also
        those the platform resolved), redacted wherever the controller writes text."""
        return self.catalog.redactor(run.file_key)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        handed_over = getattr(node, "workeroutput", {}).get(WORKEROUTPUT_KEY, ())
        self.keep_all([RecordPayload.from_json(data) for data in handed_over])

    def keep_all(self, payloads: Sequence[RecordPayload]) -> None:
        for payload in payloads:
            self.keep(payload)

    def keep(self, payload: RecordPayload) -> None:
        """Keep one record: durably in the store before anything else happens to it, then the
        platform and the ``pytest_benchsdk_record`` hook."""
        run = self.runs.get(payload.file_key)
        if run is None:
            return
        # Records from this process's runner are redacted already (the payload knows); xdist's
        # and leftovers are redacted here (their strings are scanned, nothing is serialised).
        payload = payload.redacted(self.secrets_of(run))
        if payload.task_index < 0:
            self._keep_warmup(run, payload)
            return
        if self._store_broken is not None:
            run.add(payload)
            return
        if self.store is not None and run.local_run_id is not None:
            try:
                self.store.add_record(
                    run.local_run_id,
                    payload.participant,
                    payload.record,
                    log_lines=[text for _, text in payload.log],
                    wire=payload.wire,
                )
            except Exception as exc:  # a full disk, an I/O error: stop, keep what committed
                run.add(payload)
                self._store_failed(exc)
                return
            run.add(payload, stored=True)
        else:
            run.add(payload)
        if self.platform is not None:
            try:
                self.platform.record(run, payload)
            except Exception as exc:
                self._add_error(run, f"platform upload failed: {describe(exc)}")
        try:
            self.config.hook.pytest_benchsdk_record(
                config=self.config,
                benchmark=run.config.benchmark_slug,
                participant=payload.participant,
                record=payload.record,
            )
        except pytest.exit.Exception:
            raise  # pytest.exit() in the hook stops the session, as in any hook
        except Exception as exc:
            self._add_error(run, f"pytest_benchsdk_record hook failed: {describe(exc)}")

    def _keep_warmup(self, run: BenchmarkRun, payload: RecordPayload) -> None:
        """A warm-up record: kept with the run (the store, ``--bench-json``) and nowhere else
        (no scores, comparisons, thresholds or platform)."""
        run.warmup_records.setdefault(payload.participant, []).append(payload.record)
        store, run_id = self.store, run.local_run_id
        if store is None or run_id is None or self._store_broken is not None:
            return
        try:
            store.add_record(
                run_id,
                payload.participant,
                payload.record,
                log_lines=[text for _, text in payload.log],
                wire=payload.wire,
            )
        except Exception as exc:  # a full disk, an I/O error: stop, keep what committed
            self._store_failed(exc)

    def _add_error(self, run: BenchmarkRun, message: str) -> None:
        message = self.secrets_of(run).text(message)
        if message not in run.errors:
            run.errors.append(message)

    def _store_failed(self, exc: BaseException) -> None:
        """The store stopped taking writes: end the session (what was committed stays)."""
        path = self.store.path if self.store is not None else self.options.store_path
        self._store_broken = (
            f"the results store {path} failed: {describe(exc)}; the records committed "
            "before stay in it, the run is marked interrupted"
        )
        self._write(f"benchsdk: ERROR {self._store_broken}")
        reason = f"benchsdk: {self._store_broken}"
        if self._session is not None:
            self._session.shouldstop = reason
        # pytest-xdist's controller loop watches its own flag, not the session's.
        dsession = self.config.pluginmanager.get_plugin("dsession")
        if dsession is not None and hasattr(dsession, "shouldstop"):
            dsession.shouldstop = reason

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_teststatus(
        self, report: pytest.TestReport, config: pytest.Config
    ) -> tuple[str, str, tuple[str, dict[str, bool]]] | None:
        data = attached_payload(report)
        if data is None or config.get_verbosity() < 1:
            return None
        record = data.get("record", {})
        assert isinstance(record, dict)
        # Rounded for reading; the stored record keeps full precision.
        detail = verbose_detail(record.get("data", {}))
        if report.passed:
            return "passed", ".", (f"PASSED {detail}", {"green": True})
        return None

    # -- session end -------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_keyboard_interrupt(self) -> None:
        # Before pytest formats the traceback (slow: a second Ctrl-C used to land there).
        if self.runs:
            self._write(STOPPING_LINE)

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Finish every run. Each piece (scoring, hooks, the analyses, ``on_complete``, the
        platform summary, the store, the output files, delivery) is isolated: a failure is
        reported under its benchmark, fails the session, and the rest still happens."""
        if not self.runs:
            return
        interrupted = (
            exitstatus in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR)
            or bool(session.shouldstop)
            or bool(session.shouldfail)
            or self._store_broken is not None
            or self._ctrl_c.pressed
        )
        failed = False
        for run in self.runs.values():
            self._finish_run(run)
            if self.platform is not None:
                self._guard(run, "platform summary", partial(self.platform.finish, run))
        for run in self.runs.values():
            self._conclude(run, interrupted or self._stopping or self._unfinished(run))
            failed = failed or bool(run.errors)
        self._json_written = self._write_output(
            "--bench-json", self.options.json_path, self._write_json
        )
        self._markdown_written = self._write_output(
            "--bench-markdown", self.options.markdown_path, self._write_markdown
        )
        for fmt, path in self.options.exports:
            if self._write_output(f"--bench-export {fmt}", path, partial(self._write_export, fmt)):
                self._exported.append((fmt, path))
        if self.options.html_path is not None:
            self._write_report(self.options.html_path)
        if self.platform is not None:
            try:
                # After Ctrl-C (or a broken store) delivery stops at once: everything stays in
                # the outbox for --bench-resubmit.
                delivery = self.platform.close(
                    interrupted=interrupted or self._stopping,
                    timeout_s=self.options.upload_timeout_s,
                )
                if self.options.strict_upload and not delivery.ok:
                    failed = True
            except BaseException as exc:
                self.session_errors.append(f"platform delivery failed: {describe(exc)}")
        if self._store_broken is not None:
            self.session_errors.append(self._store_broken)
        if self._stopping and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.INTERRUPTED
        if (failed or self.session_errors) and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _unfinished(self, run: BenchmarkRun) -> bool:
        """Some selected item of the run never finished: the session stopped under it."""
        return self._finished_items.get(run.file_key, 0) < self._items.get(run.file_key, 0)

    def _guard(self, run: BenchmarkRun, what: str, action: Callable[[], _T]) -> _T | None:
        """One piece of a run's finish: its value, or None with the failure as an error of
        the run (a Ctrl-C skips the user's hooks still to come)."""
        try:
            return action()
        except KeyboardInterrupt:
            self._stopping = True
            self._add_error(run, f"{what} interrupted (KeyboardInterrupt)")
        except ScoringSpecError as exc:
            self._add_error(run, f"{what} failed: {exc}")
        except BaseException as exc:
            self._add_error(run, f"{what} failed: {describe(exc)}")
        return None

    def _storing(self) -> ResultStore | None:
        return self.store if self._store_broken is None else None

    def _finish_run(self, run: BenchmarkRun) -> None:
        """Score the run (if it declares scoring), analyse it and call ``on_complete``; a
        scoring spec error skips the rest, as upstream skips ``on_complete``."""
        if self._stopping:
            return
        config = run.config
        try:
            results = run.score()
        except ScoringSpecError as exc:
            self._add_error(run, f"scoring failed: {exc}")
            return
        except KeyboardInterrupt:
            self._stopping = True
            self._add_error(run, "scoring interrupted (KeyboardInterrupt)")
            return
        except BaseException as exc:
            self._add_error(run, f"scoring failed: {describe(exc)}")
            results = None
        store, run_id = self._storing(), run.local_run_id
        if results is not None:
            run.results = results
            self._guard(
                run,
                "pytest_benchsdk_scores hook",
                lambda: self.config.hook.pytest_benchsdk_scores(
                    config=self.config, benchmark=config.benchmark_slug, results=results
                ),
            )
            if store is not None and run_id is not None:
                self._guard(run, "storing the scores", lambda: store.save_scores(run_id, results))
            summary = self._guard(
                run, "run summary", partial(run.summary_payload, self.environment)
            )
            if summary is not None:
                self._guard(
                    run,
                    "pytest_benchsdk_summary hook",
                    lambda: self.config.hook.pytest_benchsdk_summary(
                        config=self.config, benchmark=config.benchmark_slug, summary=summary
                    ),
                )
            run.platform_summary = summary
        if not self._stopping:
            analyses = self._guard(run, "the run's analyses", partial(self._analyse, run))
            if analyses is not None:
                run.analyses = analyses
                for error in analyses.errors:
                    self._add_error(run, error)
        if config.on_complete is not None and not self._stopping:
            on_complete = config.on_complete
            # The user's hook fails the run, as upstream; SystemExit included.
            self._guard(run, "on_complete", lambda: resolve_awaitable(on_complete(run.outcome())))

    def _analyse(self, run: BenchmarkRun) -> Analyses:
        """The scores' uncertainty, the run warnings, the thresholds and the comparison."""
        baseline = None
        if self.options.compare is not None:
            baseline = find_baseline(self.options.compare, run, self.store)
        display = run.config.display
        scored = run.results is not None
        return analyse(
            run.participant_summaries(),
            samples=run.samples,
            records=run.participant_records() if scored or baseline is not None else (),
            spec=run.scored_spec,
            results=run.results,
            display_metrics=display.metrics if display is not None else None,
            resamples=self.options.score_resamples,
            warnings=self.options.warnings != "off",
            thresholds=run.thresholds,
            baseline=baseline,
            setup=current_setup(run, self.environment),
        )

    def _conclude(self, run: BenchmarkRun, interrupted: bool) -> None:
        """The run's status and summary, kept in the store; the session's verdicts (a
        regression with ``--bench-compare-fail``, warnings with ``--bench-warnings=error``)
        fail it with one line each."""
        slug = run.config.benchmark_slug
        analyses = run.analyses
        regressions = analyses.comparison.regressions if analyses.comparison is not None else ()
        regression = self.options.compare_fail and bool(regressions)
        warnings_failed = self.options.warnings == "error" and bool(analyses.warnings)
        if warnings_failed:
            for warning in analyses.warnings:
                self.session_errors.append(
                    f"run warning (--bench-warnings=error): {slug}: "
                    f"[{warning.code}] {warning.participant}: {warning.message}"
                )
        if regression:
            for row in regressions:
                self.session_errors.append(
                    f"regressed (--bench-compare-fail): {slug}: {row.line()}"
                )
        status = run.run_status(
            interrupted=interrupted, regression=regression, warnings_failed=warnings_failed
        )
        participants = self._guard(run, "the run's summary", run.participant_summaries)
        summary = self._guard(
            run,
            "the run's summary",
            lambda: run.summarise(
                self.environment,
                status,
                participants,
                dry_run=self.options.dry_run,
                run_key=self.options.run_args.run_key,
            ),
        )
        store, run_id = self._storing(), run.local_run_id
        if store is not None and run_id is not None:
            for kind, body in (
                ("uncertainty", analyses.uncertainty),
                ("warnings", analyses.warnings),
                ("thresholds", analyses.thresholds),
            ):
                if body:
                    self._keep_analysis(run, kind, [item.to_json() for item in body])
            if analyses.comparison is not None:
                self._keep_analysis(run, "comparison", analyses.comparison.to_json())
            elif analyses.comparison_note:
                self._keep_analysis(run, "comparison", {"note": analyses.comparison_note})
        if summary is not None:
            # Errors storing the analyses above belong in the summary too.
            run.summary = summary = attrs.evolve(summary, errors=tuple(run.errors))
            if store is not None and run_id is not None:
                kept = summary
                self._guard(
                    run, "storing the run's summary", lambda: save_summary(store, run_id, kept)
                )
        self._store_status(run, status.state)

    def _keep_analysis(self, run: BenchmarkRun, kind: str, body: Any) -> None:
        store, run_id = self._storing(), run.local_run_id
        if store is None or run_id is None:
            return
        self._guard(
            run, f"storing the run's {kind}", partial(store.save_analysis, run_id, kind, body)
        )

    def _store_status(self, run: BenchmarkRun, state: str) -> None:
        store = self.store
        run_id = run.local_run_id
        if store is None or run_id is None or run_id in self._finished:
            return
        try:
            store.finish_run(run_id, state)
            self._finished.add(run_id)
        except BaseException as exc:
            self._add_error(run, f"cannot store the run's status: {describe(exc)}")

    def _run_json(self, run: BenchmarkRun) -> dict[str, Any]:
        try:
            return benchmark_json(run, run.summary, self.environment)
        except Exception as exc:
            self._add_error(run, f"--bench-json: cannot export the run: {describe(exc)}")
            return {
                "file": run.file_key,
                "benchmarkSlug": run.config.benchmark_slug,
                "localRunId": run.local_run_id,
                "errors": list(run.errors),
            }

    def _write_json(self, path: Path) -> None:
        document = json_document(
            [self._run_json(run) for run in self.runs.values()],
            self.environment,
            self.options.dry_run,
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json_text(document), encoding="utf-8")

    def _write_output(self, flag: str, path: Path | None, write: Callable[[Path], None]) -> bool:
        """Write one of the session's output files; a failure is a session error (the runs are
        in the store either way). Returns whether it was written."""
        if path is None:
            return False
        try:
            write(path)
        except BaseException as exc:
            self.session_errors.append(f"{flag} {path}: cannot write: {describe(exc)}")
            return False
        return True

    def _write_markdown(self, path: Path) -> None:
        summaries = [run.summary for run in self.runs.values() if run.summary is not None]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(markdown_summary(summaries), encoding="utf-8")

    def _write_export(self, fmt: str, path: Path) -> None:
        summaries = [run.summary for run in self.runs.values() if run.summary is not None]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(export_text(fmt, summaries), encoding="utf-8")

    # -- --bench-html ------------------------------------------------------------------------

    def _write_report(self, path: Path) -> None:
        """The HTML report of this session's stored runs; a failure is a session error."""
        run_ids = [run.local_run_id for run in self.runs.values() if run.local_run_id]
        if self.store is None or not run_ids:
            self._report_line = f"No report written to {path}: no run was stored"
            return
        try:
            from ..report import write_report

            write_report(self.store, run_ids, path)
            self._report_line = f"Report written to {path}"
        except BaseException as exc:
            self.session_errors.append(f"--bench-html {path}: cannot write: {describe(exc)}")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.runs:
            return
        terminalreporter.section("benchmarks")
        for line in section_lines(
            self.runs.values(),
            self.options,
            verbose=self.config.get_verbosity(),
            json_written=self._json_written,
        ):
            terminalreporter.write_line(line)
        if self._markdown_written:
            terminalreporter.write_line(f"Summary written to {self.options.markdown_path}")
        for fmt, path in self._exported:
            terminalreporter.write_line(f"Export ({fmt}) written to {path}")
        if self._report_line is not None:
            terminalreporter.write_line(self._report_line)
        for error in self.session_errors:
            terminalreporter.write_line(f"ERROR {error}", red=True)
        if self.platform is not None:
            for line in self.platform.pool_lines():
                terminalreporter.write_line(f"benchsdk: {line}")
        delivery = self.platform.delivery if self.platform is not None else None
        if delivery is not None:
            store = self.options.store_path
            for line in delivery.lines(str(store) if store is not None else None):
                terminalreporter.write_line(line)
            if self.options.strict_upload and not delivery.ok:
                terminalreporter.write_line(
                    "benchsdk: platform upload incomplete (--bench-strict-upload): "
                    "the session fails although every benchmark ran.",
                    red=True,
                )

    def pytest_unconfigure(self) -> None:
        self._ctrl_c.restore()
        # The last resort, when the session end did not get there (an error before or in
        # pytest_sessionfinish): stop delivery before the store closes under it, and leave
        # no run "running".
        if self.platform is not None and self.platform.delivery is None:
            with contextlib.suppress(Exception):  # nothing left to report it to
                self.platform.close(interrupted=True)
        for run in self.runs.values():
            self._store_status(run, "interrupted")
        if self.store is not None:
            self.store.close()
            self.store = None
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None
