"""The controller role: the one process that owns the runs (plain pytest, or xdist's controller).

Workers only collect and execute; the controller (the only process without ``workerinput``)
receives every record through ``pytest_runtest_logreport``, writes the store, reports to the
platform, scores, calls ``on_complete`` and renders the summary.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from .._benchfile import BenchFile, item_name
from .._runenv import RunEnvironment, collect_run_environment
from .._runs import BenchmarkRun, RecordPayload, resolve_awaitable
from ..schedule import BenchmarkSchedule
from ..scoring import ScoringSpecError
from ..store import ResultStore
from .catalog import Catalog
from .nodes import BenchItem, BenchModule
from .runner import WORKEROUTPUT_KEY, attached_payload
from .terminal import run_header_lines, summary_lines
from .upload import PlatformLink

__all__ = ["ControllerPlugin"]


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

    # -- state -------------------------------------------------------------------------------

    @property
    def environment(self) -> RunEnvironment:
        if self._environment is None:
            self._environment = collect_run_environment(
                self.catalog.environ, self.config.rootpath
            )
        return self._environment

    def open_store(self) -> ResultStore | None:
        """The results store; with ``--bench-no-store`` outside dry runs, a temporary one that
        only serves as the platform outbox for this session."""
        if self.store is None:
            path = self.options.store_path
            if path is None and not self.options.dry_run:
                self._scratch = tempfile.TemporaryDirectory(prefix="benchsdk-")
                path = Path(self._scratch.name) / "outbox.sqlite3"
            if path is not None:
                self.store = ResultStore(path)
        return self.store

    def _write(self, line: str) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
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

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self._session = session

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if self.config.option.collectonly:
            return
        self._begin([item.nodeid for item in session.items if isinstance(item, BenchItem)])

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if not self.runs and not self.config.option.collectonly:
            self._begin(ids)

    def _begin(self, nodeids: Sequence[str]) -> None:
        runs = self._open_runs(nodeids)
        if not runs:
            return
        self._write("")
        self.platform = PlatformLink.open(
            self.options, self.open_store(), self.catalog.environ, self.environment, self._write
        )
        for line in self.platform.header_lines():
            self._write(f"benchsdk: {line}")
        for run in runs:
            for line in run_header_lines(run):
                self._write(line)
            for line in self.platform.begin(run):
                self._write(f"  {line}")

    def _open_runs(self, nodeids: Sequence[str]) -> list[BenchmarkRun]:
        """Open a run for every bench file with selected items (after deselection)."""
        selected: dict[str, list[str]] = {}
        for nodeid in nodeids:
            path, sep, name = nodeid.partition("::")
            if sep and name.startswith("task[") and "]" in name:
                # xdist's loadgroup appends "@<group>" to node ids.
                selected.setdefault(path, []).append(name[: name.rindex("]") + 1])
        started: list[BenchmarkRun] = []
        for nodeid_path, names in selected.items():
            file_key = self.catalog.file_key(self.config.rootpath / nodeid_path)
            if file_key in self.runs:
                continue
            bench_file, schedule = self._schedule_of(file_key)
            wanted = set(names)
            chosen: dict[str, set[int]] = {}
            for name, slot, skipped in schedule.items():
                if skipped is None and item_name(name, slot) in wanted:
                    chosen.setdefault(name, set()).add(slot.index)
            if not chosen and not schedule.skipped:
                continue
            run = BenchmarkRun(file_key, bench_file, schedule, chosen)
            self.runs[file_key] = run
            store = self.open_store()
            if store is not None and chosen:
                run.local_run_id = store.begin_run(
                    benchmark_slug=run.config.benchmark_slug,
                    benchmark_name=run.config.benchmark_name,
                    file=file_key,
                    knobs=schedule.resolved.to_wire(),
                    participants=run.participants,
                    config_snapshot=run.config_snapshot(self.environment),
                    environment=self.environment,
                    dry_run=self.options.dry_run,
                )
            started.append(run)
        return started

    # -- records -----------------------------------------------------------------------------

    def remember_local(self, report: pytest.TestReport, payload: RecordPayload) -> None:
        """The runner in this process made ``report`` with ``payload``."""
        self._local[id(report)] = payload

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = attached_payload(report)
        if data is None:
            return
        payload = self._local.pop(id(report), None)
        self.keep(payload if payload is not None else RecordPayload.from_json(data))

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
        run.add(payload)
        if self.store is not None and run.local_run_id is not None:
            self.store.add_record(
                run.local_run_id,
                payload.participant,
                payload.record,
                log_lines=[text for _, text in payload.log],
            )
        if self.platform is not None:
            self.platform.record(run, payload)
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
        data = attached_payload(report)
        if data is None or config.get_verbosity() < 1:
            return None
        record = data.get("record", {})
        assert isinstance(record, dict)
        detail = json.dumps(record.get("data", {}), separators=(",", ":"), ensure_ascii=False)
        if report.passed:
            return "passed", ".", (f"PASSED {detail}", {"green": True})
        return None

    # -- session end -------------------------------------------------------------------------

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if not self.runs:
            return
        interrupted = (
            exitstatus == pytest.ExitCode.INTERRUPTED
            or bool(session.shouldstop)
            or bool(session.shouldfail)
        )
        failed = False
        for run in self.runs.values():
            self._finish_run(run)
            failed = failed or bool(run.errors)
            if self.platform is not None:
                self.platform.finish(run)
            if self.store is not None and run.local_run_id is not None:
                self.store.finish_run(run.local_run_id, run.status(interrupted))
        if self.options.json_path is not None:
            self._write_json(self.options.json_path)
        if self.platform is not None:
            delivery = self.platform.close()
            if self.options.strict_upload and not delivery.ok:
                failed = True
        if failed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _finish_run(self, run: BenchmarkRun) -> None:
        """Score the run (if it declares scoring) and call ``on_complete``."""
        config = run.config
        try:
            results = run.score()
        except ScoringSpecError as exc:
            run.errors.append(f"scoring failed: {exc}")
            return
        if results is not None:
            self.config.hook.pytest_benchsdk_scores(
                config=self.config, benchmark=config.benchmark_slug, results=results
            )
            run.results = results
            if self.store is not None and run.local_run_id is not None:
                self.store.save_scores(run.local_run_id, results)
            summary = run.summary_payload(self.environment)
            if summary is not None:
                self.config.hook.pytest_benchsdk_summary(
                    config=self.config, benchmark=config.benchmark_slug, summary=summary
                )
            run.summary = summary
        if config.on_complete is not None:
            try:
                resolve_awaitable(config.on_complete(run.outcome()))
            except Exception as exc:  # the user's hook fails the run, as upstream
                run.errors.append(f"on_complete failed: {type(exc).__name__}: {exc}")

    def _write_json(self, path: Path) -> None:
        document = {
            "version": 1,
            "environment": self.environment.to_dict(),
            "dryRun": self.options.dry_run,
            "benchmarks": [run.to_json(self.environment) for run in self.runs.values()],
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.runs:
            return
        terminalreporter.section("benchmarks")
        for line in summary_lines(self.runs.values(), self.options):
            terminalreporter.write_line(line)
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
        if self.store is not None:
            self.store.close()
            self.store = None
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None
