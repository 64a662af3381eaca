"""The session: the runs of one bench session, from their opening to the summary, without pytest.

One :class:`BenchSession` owns a session's runs (one :class:`~pytest_benchsdk.results.BenchmarkRun`
per bench file), the results store and the platform link. It keeps every record (the store
first, then the platform and the record hook), and at the end scores each run, runs the hooks,
:func:`~pytest_benchsdk.results.analyse`, ``on_complete``, the status and the
:class:`~pytest_benchsdk.results.RunSummary`, keeps them in the store, writes ``--bench-json``,
``--bench-markdown`` and ``--bench-html`` and closes delivery. Both paths drive it: the pytest
glue (:class:`~pytest_benchsdk._plugin.control.controller.ControllerPlugin`, whose pytest hooks
become
the :class:`SessionHooks` here) and the programmatic runs (:mod:`pytest_benchsdk.runner`).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from pytest_benchsdk._analysis.baseline.metrics import COUNT_METRICS, CPU_METRIC
from pytest_benchsdk._analysis.scoring import ScoreResult, ScoringSpecError
from pytest_benchsdk._base.awaitables import resolve_awaitable
from pytest_benchsdk._base.coordination import StepCoordination
from pytest_benchsdk._base.files import creation_problem, write_atomically
from pytest_benchsdk._base.js import js_json
from pytest_benchsdk._base.modes import DRY_RUN_LINE, pool_ignored_line
from pytest_benchsdk._base.redact import Redactor
from pytest_benchsdk._base.runenv import RunEnvironment, collect_run_environment
from pytest_benchsdk._base.spelling import closest_within
from pytest_benchsdk._config.thresholds import Threshold
from pytest_benchsdk._engine.benchfile import BenchFile
from pytest_benchsdk._engine.payload import RecordPayload
from pytest_benchsdk._engine.schedule import BenchmarkSchedule, NoAvailableParticipantsError
from pytest_benchsdk._instruments.launch import count_setup
from pytest_benchsdk._session._lines import run_header_lines, section_lines
from pytest_benchsdk._session._options import SessionOptions
from pytest_benchsdk._session._secrets import SessionSecrets
from pytest_benchsdk._views.exports import export_text
from pytest_benchsdk._views.json import benchmark_json, json_document, json_text
from pytest_benchsdk._views.markdown import markdown_summary
from pytest_benchsdk._views.pytest_benchmark import benchmark_entries, pytest_benchmark_document
from pytest_benchsdk.records import TaskRecord
from pytest_benchsdk.results import (
    LATENCY,
    Analyses,
    Baseline,
    BaselineRefused,
    BenchmarkRun,
    ComparisonOptions,
    HygieneOptions,
    RunSummary,
    analyse,
    save_analyses,
    save_baseline,
    save_summary,
    start_history,
)
from pytest_benchsdk.store import ResultStore, StoreCorruptError, StoreError

if TYPE_CHECKING:
    from pytest_benchsdk._session._link import PlatformLink

__all__ = [
    "BenchSession",
    "Hook",
    "SessionHooks",
    "SessionUsageError",
    "describe",
    "unwritable_reason",
]

_T = TypeVar("_T")


class SessionUsageError(Exception):
    """The session cannot start as asked (a store that cannot be used, say): a usage error
    before any iteration runs (pytest's exit status 4; ``pytest-benchsdk run``'s 1)."""


def describe(exc: BaseException) -> str:
    """``Type: message`` of an exception (``SystemExit: 4``, ``OverflowError: ...``)."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def unwritable_reason(path: Path) -> str | None:
    """Why a file cannot be written at *path* (None when it can, as far as can be told
    without writing): it is a directory or not a regular file, or its nearest existing
    parent is not a directory or not writable. Creates nothing."""
    if path.is_dir():
        return "is a directory; give a file path"
    if path.exists():
        if not path.is_file():
            return "is not a regular file; give a file path"
        if not os.access(path, os.W_OK):
            return "is not writable"
        return None
    return creation_problem(path)


def _uses_readiness(path: Path) -> bool:
    """Whether a bench file mentions step readiness (said in the header when barriers cannot
    hold; reading the source is cheaper than running the task to find out)."""
    try:
        return "readiness" in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


@attrs.frozen
class Hook:
    """A user hook the session calls, by the name its failures are reported under
    (``pytest_benchsdk_record hook failed: ...``)."""

    name: str
    call: Callable[..., Any]


def _ignore(line: str) -> None:
    return None


@attrs.define
class SessionHooks:
    """What the session's driver hands in: where lines go while the session runs, the user's
    hooks (keyword calls: ``record(benchmark=, participant=, record=)``,
    ``scores(benchmark=, results=)``, ``summary(benchmark=, summary=)``), where a run's
    baseline comes from (``--bench-compare``) with the run's setup to compare, what to do when
    the store breaks (stop the session), and exceptions of the hooks that must not be caught
    (``pytest.exit``)."""

    write: Callable[[str], None] = _ignore
    record: Hook | None = None
    scores: Hook | None = None
    summary: Hook | None = None
    baseline: Callable[[BenchmarkRun], Baseline | str | None] | None = None
    setup: Callable[[BenchmarkRun], Mapping[str, Any]] | None = None
    store_broken: Callable[[str], None] | None = None
    passthrough: tuple[type[BaseException], ...] = ()


def _save_name(store: ResultStore, name: str, run: BenchmarkRun) -> str:
    """``--bench-save NAME``: the line of the baselines' one rule (:func:`save_baseline`), a
    refusal included."""
    run_id, summary = run.local_run_id, run.summary
    if run_id is None or summary is None:
        slug = run.config.benchmark_slug
        return f"Baseline {name} of {slug}: not saved (the run has no stored summary)"
    try:
        return save_baseline(store, name, store.get_run(run_id), summary.status)
    except BaselineRefused as exc:
        return str(exc)


class BenchSession:
    """The runs of one bench session, from their opening to the summary (see the module)."""

    def __init__(
        self,
        options: SessionOptions,
        *,
        environ: Mapping[str, str],
        rootpath: Path,
        secrets: SessionSecrets,
        hooks: SessionHooks | None = None,
    ) -> None:
        self.options = options
        self.environ = environ
        self.rootpath = rootpath
        self.secrets = secrets
        self.hooks = hooks if hooks is not None else SessionHooks()
        self.runs: dict[str, BenchmarkRun] = {}
        self.store: ResultStore | None = None
        self.platform: PlatformLink | None = None
        self._environment: RunEnvironment | None = None
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        # Local run ids whose final status is in the store.
        self._finished: set[str] = set()
        #: Why the store stopped taking writes (a full disk, say); the session stops then.
        self.store_broken: str | None = None
        #: The store was found damaged (it takes no more writes; the journal keeps records).
        self.store_damaged = False
        #: A KeyboardInterrupt during the session end: skip the user's hooks still to come.
        self.stopping = False
        #: Failures at the session end that belong to no one benchmark (the JSON file).
        self.session_errors: list[str] = []
        #: Some error above is the user's way of asking (``--bench-compare-on`` naming a key
        #: nothing measured): the session ends as a usage error.
        self.usage_failed = False
        self.json_written = False
        #: --bench-html: the summary's line about the report (written, or why not).
        self.report_line: str | None = None
        self.markdown_written = False
        #: --bench-export: the exports written, as (format, path).
        self.exported: list[tuple[str, Path]] = []
        #: --bench-save: per run, the line that says under which name it was kept (or why not).
        self.saved: list[str] = []
        #: Knobs stored with every run this session opens beside the resolved ones (an A/B
        #: session's side and revision: such runs are each other's history only).
        self.extra_knobs: dict[str, Any] = {}
        #: Runs opened as their participants report (:meth:`add_participant`): begun on the
        #: platform at the session end, once every participant is known.
        self._opened_late: list[BenchmarkRun] = []
        #: :meth:`begin` found nothing to run yet (``(distributed, verbose)``): the first run
        #: opened later says the header then.
        self._begin_later: tuple[bool, int] | None = None
        #: Seams the glue fills: what completes the run environment once it is collected
        #: (pytest-benchmark's machine and commit info, from its hooks), and writers that
        #: replace an export format's (pytest-benchmark's JSON, through its hooks).
        self.complete_environment: Callable[[RunEnvironment], RunEnvironment] | None = None
        self.export_writers: dict[str, Callable[[Sequence[RunSummary]], str]] = {}
        #: pytest-benchmark's JSON through its hooks, ``(summaries, include_data)`` (the
        #: plugin sets it; else the plain document).
        self.pytest_benchmark_writer: Callable[[Sequence[RunSummary], bool], str] | None = None

    # -- state -------------------------------------------------------------------------------

    @property
    def environment(self) -> RunEnvironment:
        if self._environment is None:
            setup = None
            if self.options.instructions:
                counted = count_setup(self.options.instructions_calls, self.environ)
                setup = None if counted is None else counted.to_dict()
            environment = collect_run_environment(self.environ, self.rootpath, instructions=setup)
            if self.complete_environment is not None:
                environment = self.complete_environment(environment)
            self._environment = environment
        return self._environment

    def check_store(self) -> None:
        """Before anything runs: an existing store file is opened (and validated) now, a new
        one must be creatable (else :class:`SessionUsageError`)."""
        path = self.options.store_path
        if path is None:
            return
        if os.path.lexists(path):
            self.open_store()
            return
        problem = unwritable_reason(path)
        if problem is not None:
            raise SessionUsageError(
                self.options.store_problem(f"cannot use results store {path}: {problem}")
            )

    def open_store(self) -> ResultStore | None:
        """The results store; with no store path outside dry runs, a temporary one that only
        serves as the platform outbox (and the source of the HTML report) for this session."""
        if self.store is None:
            path = self.options.store_path
            if path is None and (not self.options.dry_run or self.options.html_path is not None):
                self._scratch = tempfile.TemporaryDirectory(prefix="benchsdk-")
                path = Path(self._scratch.name) / "outbox.sqlite3"
            if path is not None:
                try:
                    # Records commit in groups behind a journal (store/_journal.py).
                    self.store = ResultStore(path, group_records=True)
                except StoreError as exc:
                    # Before any iteration runs: a usage error, not a crash (a damaged store
                    # included: nothing of this session is in it yet).
                    raise SessionUsageError(self.options.store_problem(str(exc))) from None
                for line in self.store.abandoned_lines():
                    self._write(f"benchsdk: {line}")
        return self.store

    def _write(self, line: str) -> None:
        self.hooks.write(line)

    # -- opening the runs --------------------------------------------------------------------

    def open_run(
        self,
        file_key: str,
        bench_file: BenchFile,
        schedule: BenchmarkSchedule,
        chosen: Mapping[str, Iterable[int]],
        *,
        whole_plan: bool,
        thresholds: dict[str, list[Threshold]],
        knobs: Mapping[str, Any] | None = None,
    ) -> BenchmarkRun:
        """Open the run of one bench file: ``chosen`` are the selected iterations (task
        indexes) per participant, ``thresholds`` the selected thresholds per participant,
        ``knobs`` the run's own knobs stored beside the resolved ones (a group of benchmarked
        tests' rounds), with the session's (an A/B session's side). A run with iterations is
        begun in the store."""
        run = BenchmarkRun(file_key, bench_file, schedule, chosen, whole_plan=whole_plan)
        run.thresholds = thresholds
        run.extra_knobs = {**self.extra_knobs, **(knobs or {})}
        # Without a store path the store is a temporary outbox: on_complete gets no id.
        run.local_run_kept = self.options.store_path is not None
        self.runs[file_key] = run
        store = self.open_store() if self.store_broken is None else None
        if store is not None and chosen:
            run.local_run_id = store.begin_run(
                benchmark_slug=run.config.benchmark_slug,
                benchmark_name=run.config.benchmark_name,
                file=file_key,
                knobs={**schedule.resolved.to_wire(), **run.extra_knobs},
                participants=run.participants,
                config_snapshot=run.local_config_snapshot(self.environment),
                environment=self.environment,
                dry_run=self.options.dry_run,
                run_key=self.options.run_args.run_key,
            )
            run.stored_records = partial(store.participant_records, run.local_run_id)
            if self.options.history_from == "now":
                # --bench-history-from=now: this run starts its benchmark's history afresh.
                start_history(store, run.config.benchmark_slug, run.local_run_id)
        return run

    def add_participant(
        self,
        file_key: str,
        bench_file: BenchFile,
        schedule: BenchmarkSchedule,
        participant: str,
        indexes: set[int],
        *,
        thresholds: list[Threshold],
        knobs: Mapping[str, Any],
        skipped: str | None = None,
    ) -> BenchmarkRun:
        """A participant known only when it reports (a benchmarked test, whose group is
        set as it runs), with its selected iterations: the run of ``bench_file`` and
        ``schedule`` (declaring this participant) opens with it, or it joins that open run,
        in the store too. Such a run begins on the platform at the session end, when every
        participant is known (:meth:`finish`). ``skipped``: why the participant was skipped
        (it has no iteration then, and is listed as skipped)."""
        run = self.runs.get(file_key)
        if run is None:
            if self._begin_later is not None:
                distributed, verbose = self._begin_later
                self.begin([], distributed=distributed, opening_later=True, verbose=verbose)
            try:
                run = self.open_run(
                    file_key,
                    bench_file,
                    schedule,
                    {participant: set(indexes)},
                    whole_plan=True,
                    thresholds={participant: thresholds},
                    knobs=knobs,
                )
            except Exception as exc:  # the store failed: the session stops, nothing is lost
                self._store_failed(exc)
                run = self.runs[file_key]
            if skipped is not None:
                run.skipped_participants[participant] = skipped
            self._opened_late.append(run)
            return run
        run.declare(participant, indexes, thresholds=thresholds, knobs=knobs, skipped=skipped)
        store, run_id = self._storing(), run.local_run_id
        if store is not None and run_id is not None:
            try:
                store.declare_participants(
                    run_id,
                    run.participants,
                    knobs={**run.schedule.resolved.to_wire(), **run.extra_knobs},
                    config_snapshot=run.local_config_snapshot(self.environment),
                )
            except Exception as exc:
                self._store_failed(exc)
        return run

    def begin(
        self,
        runs: Sequence[BenchmarkRun],
        *,
        distributed: bool = False,
        opening_later: bool = False,
        verbose: int = 0,
    ) -> None:
        """Say what runs (the mode, each run's header) and open their platform runs.
        ``distributed``: the steps run in other processes (pytest-xdist); ``opening_later``:
        more runs open as their participants report (:meth:`add_participant`); ``verbose``:
        pytest's verbosity (the headers' length)."""
        if not runs and not opening_later:
            # Under xdist a benchmarked test may still open a run as it reports (the workers
            # collect): the header is said then (:meth:`add_participant`).
            self._begin_later = (distributed, verbose)
            return
        self._begin_later = None
        self._write("")
        if self.options.dry_run:
            # No platform at all: a dry run does not even import it (httpx, psutil).
            self._write(f"benchsdk: {DRY_RUN_LINE}")
            if self.options.run_args.worker_pool:
                self._write(f"benchsdk: {pool_ignored_line(self.options.run_args.worker_pool)}")
        else:
            from pytest_benchsdk._session._link import PlatformLink

            self.platform = PlatformLink.open(
                self.options, self.open_store(), self.environ, self.environment, self._write
            )
            # The credentials as resolved (a refreshed token, say) are secrets too.
            self.secrets.add(self.platform.secrets)
            for line in self.platform.header_lines():
                self._write(f"benchsdk: {line}")
        for line in self._compare_on_lines(runs):
            self._write(f"benchsdk: {line}")
        for run in runs:
            for line in run_header_lines(run, verbose=verbose):
                self._write(line)
            if not run.schedule.participants and run.schedule.skipped:
                # Upstream's NoAvailableParticipantsError, which is not a failure (exit 0).
                self._write(f"  {NoAvailableParticipantsError(run.schedule.skipped)}")
            if self.platform is not None:
                for line in self.platform.begin(run):
                    self._write(f"  {line}")
            inactive = self._barriers_inactive(distributed)
            if inactive and _uses_readiness(run.bench_file.path):
                self._write(
                    f'  Readiness barriers (step readiness="poll") are inactive {inactive}: '
                    "such steps proceed at once."
                )

    def _compare_on_lines(self, runs: Sequence[BenchmarkRun]) -> list[str]:
        """Before anything runs: a ``--bench-compare-on`` key that is no key the benchmarks
        declare (scored, displayed, thresholded) or the runner records, and is one or two edits
        from one (``cpu_msx``). Said at once, as a likely typo; only the end knows what the
        tasks measured, and fails the session on a key nobody did."""
        if self.options.compare is None or not self.options.compare_on:
            return []
        known = {LATENCY, CPU_METRIC, *COUNT_METRICS}
        for run in runs:
            catalog = run.catalog()
            known.update(info.key for info in catalog.scored)
            known.update(catalog.display)
            known.update(t.metric for t in run.config.thresholds or ())
        lines = []
        for key in self.options.compare_on:
            closest = None if key in known else closest_within(key, sorted(known))
            if closest is not None:
                lines.append(
                    f"--bench-compare-on: {key} is no key the benchmarks declare or the runner "
                    f"records (did you mean {closest}?); if a task measures it, the comparison "
                    "judges it, else the session fails when the run ends"
                )
        return lines

    def _barriers_inactive(self, distributed: bool) -> str | None:
        """Why no readiness barrier can hold in this session, or ``None``."""
        if self.platform is None:
            return "in a dry run (no platform to coordinate with)"
        if not self.platform.reporting:
            return "without platform credentials"
        if distributed:
            return "under pytest-xdist (the steps run in xdist workers)"
        return None

    # -- the link the iterations of this process use -----------------------------------------

    def admit(self, file_key: str, participant: str) -> str | None:
        """``None`` to run the participant's iterations here, else why they are skipped (a
        worker pool with no worker left). May block while the pool worker is claimed."""
        run = self.runs.get(file_key)
        if self.platform is None or run is None:
            return None
        return self.platform.admit(run, participant, self._write)

    def coordination(
        self, file_key: str, participant: str, concurrency: int
    ) -> StepCoordination | None:
        """The participant's step coordination while reporting (heartbeats, barriers)."""
        run = self.runs.get(file_key)
        if self.platform is None or run is None:
            return None
        return self.platform.coordination(run, participant, concurrency)

    # -- records -----------------------------------------------------------------------------

    def secrets_of(self, run: BenchmarkRun) -> Redactor:
        """The run's secrets (its participants' env values, the platform credentials, also
        those the platform resolved), redacted wherever the session writes text."""
        return self.secrets.redactor(run.file_key)

    def keep_all(self, payloads: Iterable[RecordPayload]) -> None:
        for payload in payloads:
            self.keep(payload)

    def keep(self, payload: RecordPayload) -> None:
        """Keep one record: durably in the store before anything else happens to it, then the
        platform and the record hook."""
        run = self.runs.get(payload.file_key)
        if run is None:
            return
        # Records redacted in this process already are left as they are (the payload knows);
        # others (xdist's, leftovers) are redacted here (their strings are scanned).
        payload = payload.redacted(self.secrets_of(run))
        if payload.task_index < 0:
            self._keep_warmup(run, payload)
            return
        if self.store_broken is not None:
            run.add(payload)
            self._journal_only(run, payload)
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
                self.add_error(run, f"platform upload failed: {describe(exc)}")
        hook = self.hooks.record
        if hook is not None:
            self._call_record_hook(hook, run, payload.participant, payload.record)

    def _call_record_hook(
        self, hook: Hook, run: BenchmarkRun, participant: str, record: TaskRecord
    ) -> None:
        try:
            hook.call(benchmark=run.config.benchmark_slug, participant=participant, record=record)
        except self.hooks.passthrough:
            raise  # pytest.exit() in the hook stops the session, as in any hook
        except Exception as exc:
            self.add_error(run, f"{hook.name} failed: {describe(exc)}")

    def _keep_warmup(self, run: BenchmarkRun, payload: RecordPayload) -> None:
        """A warm-up record: kept with the run (the store, ``--bench-json``) and nowhere else
        (no scores, comparisons, thresholds or platform)."""
        run.warmup_records.setdefault(payload.participant, []).append(payload.record)
        store, run_id = self.store, run.local_run_id
        if store is None or run_id is None or self.store_broken is not None:
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

    def _journal_only(self, run: BenchmarkRun, payload: RecordPayload) -> None:
        """A record that came after the store was found damaged: into the store's journal
        (all a damaged store takes), so ``store recover`` finds it."""
        store, run_id = self.store, run.local_run_id
        if store is None or store.damaged is None or run_id is None:
            return
        with contextlib.suppress(Exception):
            store.add_record(
                run_id,
                payload.participant,
                payload.record,
                log_lines=[text for _, text in payload.log],
                wire=payload.wire,
            )

    def add_error(self, run: BenchmarkRun, message: str) -> None:
        message = self.secrets_of(run).text(message)
        if message not in run.errors:
            run.errors.append(message)

    def _store_failed(self, exc: BaseException) -> None:
        """The store stopped taking writes: end the session (what was committed stays)."""
        path = self.store.path if self.store is not None else self.options.store_path
        if isinstance(exc, StoreCorruptError):
            journal = self.store.journal_path if self.store is not None else None
            kept = (
                f"; this session's records it had not committed yet are kept in {journal}, "
                "which `store recover` reads too"
                if journal is not None
                else ""
            )
            self.store_broken = f"{exc}{kept}; the session stops"
            self.store_damaged = True
        else:
            self.store_broken = (
                f"the results store {path} failed: {describe(exc)}; the records committed "
                "before stay in it, the run is marked interrupted"
            )
        self._write(f"benchsdk: ERROR {self.store_broken}")
        if self.hooks.store_broken is not None:
            reason = self.store_broken
            if self.store_damaged:  # its line above is long: pytest's banner only points at it
                reason = f"the results store {path} is damaged (see the ERROR line above)"
            self.hooks.store_broken(f"benchsdk: {reason}")

    # -- the end -----------------------------------------------------------------------------

    def finish(
        self,
        *,
        interrupted: bool,
        unfinished: Callable[[BenchmarkRun], bool] | None = None,
    ) -> bool:
        """Finish every run. Each piece (scoring, hooks, the analyses, ``on_complete``, the
        platform summary, the store, the output files, delivery) is isolated: a failure is
        reported under its benchmark, fails the session, and the rest still happens.

        ``interrupted``: the session stopped early (Ctrl-C, ``-x``, a broken store);
        ``unfinished(run)``: whether some selected item of the run never finished. Returns
        whether the session failed beyond its runs' statuses (a run's error, an incomplete
        upload with ``strict_upload``); :attr:`session_errors` has the rest."""
        if not self.runs:
            return False
        self._commit_grouped_records()
        interrupted = interrupted or self.store_broken is not None
        failed = False
        for run in self._opened_late:
            self._guard(run, "platform run", partial(self._begin_late, run))
        for run in self.runs.values():
            self._finish_run(run)
            if self.platform is not None:
                self._guard(run, "platform summary", partial(self.platform.finish, run))
        for run in self.runs.values():
            stopped = interrupted or self.stopping or (unfinished is not None and unfinished(run))
            self._conclude(run, stopped)
            failed = failed or bool(run.errors)
        self.json_written = self._write_output(
            "--bench-json", self.options.json_path, self._write_json
        )
        self.markdown_written = self._write_output(
            "--bench-markdown", self.options.markdown_path, self._write_markdown
        )
        for fmt, path in self.options.exports:
            if self._write_output(f"--bench-export {fmt}", path, partial(self._write_export, fmt)):
                self.exported.append((fmt, path))
        if self.options.pytest_benchmark_save is not None:
            path, include_data = self.options.pytest_benchmark_save
            self._write_output(
                "--benchmark-save", path, partial(self._write_pytest_benchmark_save, include_data)
            )
        if self.options.html_path is not None:
            self._write_report(self.options.html_path)
        if self.platform is not None:
            try:
                # After Ctrl-C (or a broken store) delivery stops at once: everything stays in
                # the outbox for --bench-resubmit.
                delivery = self.platform.close(
                    interrupted=interrupted or self.stopping,
                    timeout_s=self.options.upload_timeout_s,
                )
                if self.options.strict_upload and not delivery.ok:
                    failed = True
            except BaseException as exc:
                self.session_errors.append(f"platform delivery failed: {describe(exc)}")
        if self.store_broken is not None:
            self.session_errors.append(self.store_broken)
        return failed

    def _begin_late(self, run: BenchmarkRun) -> None:
        """A run opened as its participants reported: its platform run, now that every
        participant is known (as a bench file's is declared before it runs), with the
        records it holds."""
        if self.platform is None or self.stopping:
            return
        lines = self.platform.begin(run)
        if lines:
            self._write(f"benchsdk: {run.config.benchmark_name} [{run.file_key}]")
            for line in lines:
                self._write(f"  {line}")
        for records in run.participant_records():
            for record in records.records:
                payload = RecordPayload.of_record(run.file_key, records.participant, record)
                self.platform.record(run, payload)

    def _commit_grouped_records(self) -> None:
        """The records the store still groups, committed before anything reads them: a
        failure is the store's failure, as a write that fails mid-run (the records stay in
        its journal for the next open of the store), never one analysis's error."""
        store = self._storing()
        if store is None:
            return
        try:
            store.commit_records()
        except Exception as exc:
            self._store_failed(exc)

    def _guard(self, run: BenchmarkRun, what: str, action: Callable[[], _T]) -> _T | None:
        """One piece of a run's finish: its value, or None with the failure as an error of
        the run (a Ctrl-C skips the user's hooks still to come)."""
        try:
            return action()
        except KeyboardInterrupt:
            self.stopping = True
            self.add_error(run, f"{what} interrupted (KeyboardInterrupt)")
        except ScoringSpecError as exc:
            self.add_error(run, f"{what} failed: {exc}")
        except BaseException as exc:
            self.add_error(run, f"{what} failed: {describe(exc)}")
        return None

    def _storing(self) -> ResultStore | None:
        return self.store if self.store_broken is None else None

    def _finish_run(self, run: BenchmarkRun) -> None:
        """Score the run (if it declares scoring), analyse it and call ``on_complete``; a
        scoring spec error skips the rest, as upstream skips ``on_complete``."""
        if self.stopping:
            return
        config = run.config
        try:
            results = run.score()
        except ScoringSpecError as exc:
            self.add_error(run, f"scoring failed: {exc}")
            return
        except KeyboardInterrupt:
            self.stopping = True
            self.add_error(run, "scoring interrupted (KeyboardInterrupt)")
            return
        except BaseException as exc:
            self.add_error(run, f"scoring failed: {describe(exc)}")
            results = None
        store, run_id = self._storing(), run.local_run_id
        if results is not None:
            run.results = results
            scores_hook = self.hooks.scores
            if scores_hook is not None:
                self._guard(run, scores_hook.name, partial(self._call_scores, scores_hook, run))
            if store is not None and run_id is not None:
                self._guard(run, "storing the scores", lambda: store.save_scores(run_id, results))
            summary = self._guard(
                run, "run summary", partial(run.summary_payload, self.environment)
            )
            summary_hook = self.hooks.summary
            if summary is not None and summary_hook is not None:
                self._guard(
                    run,
                    summary_hook.name,
                    lambda: summary_hook.call(benchmark=config.benchmark_slug, summary=summary),
                )
            run.platform_summary = summary
        if not self.stopping:
            analyses = self._guard(run, "the run's analyses", partial(self._analyse, run))
            if analyses is not None:
                run.analyses = analyses
                for error in (*analyses.errors, *analyses.unmeasured):
                    self.add_error(run, error)
        if config.on_complete is not None and not self.stopping:
            on_complete = config.on_complete
            # The user's hook fails the run, as upstream; SystemExit included.
            self._guard(run, "on_complete", lambda: resolve_awaitable(on_complete(run.outcome())))

    def _call_scores(self, hook: Hook, run: BenchmarkRun) -> None:
        results: list[ScoreResult] | None = run.results
        hook.call(benchmark=run.config.benchmark_slug, results=results)

    def _analyse(self, run: BenchmarkRun) -> Analyses:
        """The scores' uncertainty, the run warnings, the thresholds and the comparison."""
        baseline = None
        if self.hooks.baseline is not None:
            baseline = self.hooks.baseline(run)
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
            score_intervals=run.score_intervals,
            hygiene=None
            if self.options.warnings == "off"
            else HygieneOptions(
                ignore=self.options.warnings_ignore,
                warmup=run.schedule.resolved.warmup,
                phase_warmup={
                    entry.phase: entry.count
                    for entry in run.schedule.warmup_plan
                    if entry.phase is not None
                },
                rounds=run.benchmarked_tests,
            ),
            thresholds=run.thresholds,
            comparison=None
            if baseline is None
            else ComparisonOptions(
                baseline=baseline,
                setup=(self.hooks.setup(run) if self.hooks.setup is not None else None) or {},
                noise_threshold=self.options.compare_noise,
                count_threshold=self.options.compare_count_noise,
                compare_on=self.options.compare_on,
                rules=self.options.compare_rules,
            ),
        )

    def _conclude(self, run: BenchmarkRun, interrupted: bool) -> None:
        """The run's status and summary, kept in the store; the session's verdicts (a
        regression with ``--bench-compare-fail``, warnings with ``--bench-warnings=error``)
        fail it with one line each."""
        slug = run.config.benchmark_slug
        analyses = run.analyses
        comparison = analyses.comparison
        regressions = comparison.regressions if comparison is not None else ()
        failed_rules = comparison.failed_rules if comparison is not None else ()
        regression = (self.options.compare_fail and bool(regressions)) or bool(failed_rules)
        warnings_failed = self.options.warnings == "error" and bool(analyses.warnings)
        if warnings_failed:
            for warning in analyses.warnings:
                metrics = f" ({', '.join(warning.metrics)})" if warning.metrics else ""
                self.session_errors.append(
                    f"run warning (--bench-warnings=error): {slug}: "
                    f"[{warning.code}] {warning.subject}{metrics}: {warning.message}"
                )
        if analyses.usage_error is not None:
            self.session_errors.extend(
                f"{slug}: {line}" for line in analyses.usage_error.split("\n")
            )
            self.usage_failed = True
        gated = self.options.compare_fail or bool(self.options.compare_rules)
        named = self.options.compare not in (None, "latest")
        if gated and named and comparison is None and analyses.comparison_note:
            # A gate given a baseline (a file, a name, a run) that holds nothing of this
            # benchmark never passes silently (issue 47). "latest" without an earlier run is a
            # history's first run: it says so and becomes the next run's baseline.
            self.session_errors.append(
                f"no baseline (--bench-compare-fail): {slug}: {analyses.comparison_note}; "
                "the gate judged nothing"
            )
        elif gated and comparison is not None and not any(r.comparison for r in comparison.rows):
            # A baseline that names none of this run's participants (a pytest-benchmark file
            # of other tests, participants renamed): every row "not in the baseline run".
            self.session_errors.append(
                f"no baseline (--bench-compare-fail): {slug}: {comparison.baseline} has none of "
                "this run's participants (tests are matched by fullname or name); the gate "
                "judged nothing"
            )
        if regression:
            for row in regressions if self.options.compare_fail else ():
                self.session_errors.append(
                    f"regressed (--bench-compare-fail): {slug}: {row.line()}"
                )
            for rule in failed_rules:
                self.session_errors.append(
                    f"regressed (--bench-compare-fail={rule.rule}): {slug}: {rule.line()}"
                )
        status = run.run_status(
            interrupted=interrupted,
            regression=regression,
            warnings_failed=warnings_failed,
            iterations_fail=self.options.failed_iterations == "fail",
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
            save_analyses(
                store,
                run_id,
                analyses,
                guard=lambda kind, save: self._guard(run, f"storing the run's {kind}", save),
            )
        if summary is not None:
            # Errors storing the analyses above belong in the summary too.
            run.summary = summary = attrs.evolve(summary, errors=tuple(run.errors))
            if store is not None and run_id is not None:
                kept = summary
                self._guard(
                    run, "storing the run's summary", lambda: save_summary(store, run_id, kept)
                )
        self._store_status(run, status.state)
        name = self.options.save_as
        if name is not None and store is not None and run_id is not None:
            line = self._guard(run, f"--bench-save {name}", partial(_save_name, store, name, run))
            if line is not None:
                self.saved.append(line)

    def _store_status(self, run: BenchmarkRun, state: str) -> None:
        store = self.store
        run_id = run.local_run_id
        if store is None or run_id is None or run_id in self._finished:
            return
        if store.damaged is not None:
            # Never written to again (said once, by _store_failed); the next open of a copy
            # that `store recover` made finds the run's process gone and marks it interrupted.
            return
        try:
            store.finish_run(run_id, state)
            self._finished.add(run_id)
        except BaseException as exc:
            self.add_error(run, f"cannot store the run's status: {describe(exc)}")

    def _run_json(self, run: BenchmarkRun) -> dict[str, Any]:
        try:
            return benchmark_json(run, run.summary, self.environment)
        except Exception as exc:
            self.add_error(run, f"--bench-json: cannot export the run: {describe(exc)}")
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
        write_atomically(path, json_text(document))

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
        write_atomically(path, markdown_summary(summaries))

    def _write_export(self, fmt: str, path: Path) -> None:
        summaries = [run.summary for run in self.runs.values() if run.summary is not None]
        path.parent.mkdir(parents=True, exist_ok=True)
        writer = self.export_writers.get(fmt)
        write_atomically(
            path, writer(summaries) if writer is not None else export_text(fmt, summaries)
        )

    def _write_pytest_benchmark_save(self, include_data: bool, path: Path) -> None:
        """pytest-benchmark's saved file (``--benchmark-save``/``-autosave``), when a
        benchmarked test passed (as pytest-benchmark, which saves nothing otherwise)."""
        summaries = [run.summary for run in self.runs.values() if run.summary is not None]
        if not benchmark_entries(summaries):
            self.saved.append(f"Not saved to {path}: no benchmarked test passed")
            return
        writer = self.pytest_benchmark_writer
        if writer is not None:
            text = writer(summaries, include_data)
        else:
            document = pytest_benchmark_document(summaries, include_data=include_data)
            text = js_json(document, indent=4) + "\n"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, text)
        self.saved.append(f"Saved benchmark data in: {path}")

    def _write_report(self, path: Path) -> None:
        """The HTML report of this session's stored runs; a failure is a session error."""
        run_ids = [run.local_run_id for run in self.runs.values() if run.local_run_id]
        if self.store is None or not run_ids:
            self.report_line = f"No report written to {path}: no run was stored"
            return
        try:
            from pytest_benchsdk.report import write_report

            write_report(self.store, run_ids, path)
            self.report_line = f"Report written to {path}"
        except BaseException as exc:
            self.session_errors.append(f"--bench-html {path}: cannot write: {describe(exc)}")

    # -- the summary -------------------------------------------------------------------------

    def summary_lines(self, *, verbose: int = 0) -> list[tuple[str, bool]]:
        """The session's summary section, each line with whether it reports a failure (the
        terminal shows those red)."""
        if not self.runs:
            return []
        lines = [
            (line, False)
            for line in section_lines(
                self.runs.values(),
                self.options,
                verbose=verbose,
                json_written=self.json_written,
                stored=not self.store_damaged,
            )
        ]
        if self.markdown_written:
            lines.append((f"Summary written to {self.options.markdown_path}", False))
        lines.extend((f"Export ({fmt}) written to {path}", False) for fmt, path in self.exported)
        if self.report_line is not None:
            lines.append((self.report_line, False))
        lines.extend((line, False) for line in self.saved)
        lines.extend((f"ERROR {error}", True) for error in self.session_errors)
        if self.platform is not None:
            lines.extend((f"benchsdk: {line}", False) for line in self.platform.pool_lines())
        delivery = self.platform.delivery if self.platform is not None else None
        if delivery is not None:
            store = self.options.store_path
            lines.extend(
                (line, False) for line in delivery.lines(str(store) if store is not None else None)
            )
            if self.options.strict_upload and not delivery.ok:
                lines.append(
                    (
                        "benchsdk: platform upload incomplete (--bench-strict-upload): "
                        "the session fails although every benchmark ran.",
                        True,
                    )
                )
        return lines

    def failures(self) -> list[str]:
        """Why the session fails beyond its items, one line each: its own errors (a
        regression with ``--bench-compare-fail``, warnings as errors, the store, an output
        file), each run's errors, an incomplete upload with ``--bench-strict-upload``."""
        lines = list(self.session_errors)
        for run in self.runs.values():
            slug = run.config.benchmark_slug
            lines.extend(f"{slug}: {error}" for error in run.errors)
        delivery = self.platform.delivery if self.platform is not None else None
        if self.options.strict_upload and delivery is not None and not delivery.ok:
            lines.append("platform upload incomplete (--bench-strict-upload)")
        return lines

    @property
    def passed(self) -> bool:
        """Every run passed (its status) and the session has no errors of its own."""
        return not self.session_errors and all(
            run.summary is not None and run.summary.status.state == "passed"
            for run in self.runs.values()
        )

    def close(self, *, close_store: bool = True) -> None:
        """The last resort, also when the session end did not get there: stop delivery before
        the store closes under it, leave no run "running", close the store (unless
        ``close_store`` is False: another session shares it and closes it)."""
        if self.platform is not None and self.platform.delivery is None:
            with contextlib.suppress(Exception):  # nothing left to report it to
                self.platform.close(interrupted=True)
        for run in self.runs.values():
            self._store_status(run, "interrupted")
        if self.store is not None:
            if close_store:
                self.store.close()
            self.store = None
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None
