"""Per-session state: the plans of collected bench files and, on the controller, the runs.

Every process (plain pytest, xdist controller, xdist worker) has one :class:`BenchSession`.
Workers only collect and execute; the controller (the only process without ``workerinput``)
receives every record through ``pytest_runtest_logreport``, writes the store, scores, calls
``on_complete`` and renders the summary.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest

from ._collect import BenchFile, item_name, load_bench_file, plan_for
from ._options import BenchOptions
from ._runenv import RunEnvironment, collect_run_environment
from .config import BenchmarkConfig
from .context import IterationOutcome
from .records import ParticipantRecords, TaskRecord
from .schedule import BenchmarkPlan, BenchmarkRunOutcome, run_config_to_json
from .scoring import (
    ScoreResult,
    ScoringSpec,
    ScoringSpecError,
    higher_is_better,
    lower_is_better,
    score,
    scoring_config_to_spec,
)
from .store import ResultStore

__all__ = ["BenchSession", "BenchmarkRun", "RecordPayload"]

_SESSION_KEY = pytest.StashKey["BenchSession"]()
NO_INGEST_RUN_ID = "no-ingest"


@attrs.frozen
class RecordPayload:
    """What a call report carries from the process that ran an iteration to the controller.

    Plain JSON types only, so it survives xdist's report serialization.
    """

    file_key: str
    participant: str
    task_index: int
    record: TaskRecord
    log: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, file_key: str, participant: str, outcome: IterationOutcome) -> RecordPayload:
        return cls(
            file_key=file_key,
            participant=participant,
            task_index=outcome.record.task_index,
            record=outcome.record,
            log=tuple((line.level or "info", line.format()) for line in outcome.logs),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file_key,
            "participant": self.participant,
            "task_index": self.task_index,
            "record": self.record.to_wire(),
            "log": [list(line) for line in self.log],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RecordPayload:
        return cls(
            file_key=str(data["file"]),
            participant=str(data["participant"]),
            task_index=int(data["task_index"]),
            record=TaskRecord.from_wire(data["record"]),
            log=tuple((str(level), str(text)) for level, text in data.get("log", ())),
        )


@attrs.define
class BenchmarkRun:
    """One bench file's run on the controller: what was selected, what came back, the scores."""

    file_key: str
    bench_file: BenchFile
    plan: BenchmarkPlan
    selected: dict[str, set[int]]
    local_run_id: str | None = None
    platform_run_id: str | None = None
    dashboard_url: str = ""
    records: dict[str, dict[int, TaskRecord]] = attrs.Factory(dict)
    logs: dict[str, list[tuple[str, str]]] = attrs.Factory(dict)
    results: list[ScoreResult] | None = None
    summary: dict[str, Any] | None = None
    errors: list[str] = attrs.Factory(list)

    @property
    def config(self) -> BenchmarkConfig:
        return self.plan.config

    def status(self, interrupted: bool) -> str:
        """The store's run status: interrupted, failed (any failed record or error), passed."""
        if interrupted:
            return "interrupted"
        failed = any(r.status != "success" for rs in self.records.values() for r in rs.values())
        return "failed" if failed or self.errors else "passed"

    @property
    def participants(self) -> list[str]:
        """Participants with selected items, in declared order."""
        return [name for name in self.plan.participant_names if self.selected.get(name)]

    @property
    def total_tasks(self) -> int:
        return max((len(v) for v in self.selected.values()), default=0)

    def participant_records(self) -> tuple[ParticipantRecords, ...]:
        return tuple(
            ParticipantRecords(
                participant=name,
                records=tuple(r for _, r in sorted(self.records.get(name, {}).items())),
            )
            for name in self.participants
        )

    def outcome(self) -> BenchmarkRunOutcome:
        return BenchmarkRunOutcome(
            run_id=self.platform_run_id or NO_INGEST_RUN_ID,
            dashboard_url=self.dashboard_url,
            participants=self.participant_records(),
            config=self.plan.resolved,
        )

    def config_snapshot(self, environment: RunEnvironment) -> dict[str, Any]:
        return run_config_to_json(
            self.config, self.plan.resolved, self.participants, environment.trigger_to_wire()
        )


class BenchSession:
    """The plugin's state for one pytest process."""

    def __init__(self, config: pytest.Config, options: BenchOptions) -> None:
        self.config = config
        self.options = options
        self.environ: dict[str, str] = dict(os.environ)
        self.is_controller = not hasattr(config, "workerinput")
        self.bench_files: dict[str, tuple[BenchFile, BenchmarkPlan]] = {}
        self.runs: dict[str, BenchmarkRun] = {}
        self.store: ResultStore | None = None
        self.session: pytest.Session | None = None
        self._environment: RunEnvironment | None = None
        self._scratch: tempfile.TemporaryDirectory[str] | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    @classmethod
    def install(cls, config: pytest.Config, options: BenchOptions) -> BenchSession:
        state = cls(config, options)
        config.stash[_SESSION_KEY] = state
        return state

    @classmethod
    def of(cls, config: pytest.Config) -> BenchSession:
        return config.stash[_SESSION_KEY]

    @property
    def environment(self) -> RunEnvironment:
        if self._environment is None:
            self._environment = collect_run_environment(self.environ, self.config.rootpath)
        return self._environment

    def file_key(self, path: Path) -> str:
        """A bench file's identity: its path relative to the rootdir (never a node id)."""
        try:
            return Path(path).resolve().relative_to(self.config.rootpath.resolve()).as_posix()
        except ValueError:
            return Path(path).resolve().as_posix()

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

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
            self.store = None
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None

    # -- plans (every process) ---------------------------------------------------------------

    def register_plan(self, path: Path, bench_file: BenchFile) -> BenchmarkPlan:
        plan = plan_for(bench_file, self.options.run_args, self.environ)
        self.bench_files[self.file_key(path)] = (bench_file, plan)
        return plan

    def custom_args_for(self, config: BenchmarkConfig) -> dict[str, str]:
        declared = {flag.lstrip("-") for flag in config.custom_cli_flags or ()}
        return {k: v for k, v in self.options.custom_args.items() if k in declared}

    def selection_errors(self) -> list[str]:
        """Providers or custom args that no collected bench file declares."""
        if not self.bench_files:
            return []
        errors: list[str] = []
        configs = [bench_file.config for bench_file, _ in self.bench_files.values()]
        providers = self.options.run_args.providers or ()
        declared = list(dict.fromkeys(p.name for c in configs for p in c.participants))
        unknown = [n for n in dict.fromkeys(providers) if n not in declared]
        if unknown:
            errors.append(
                f"Unknown participant(s): {', '.join(unknown)}. Available: {', '.join(declared)}"
            )
        flags = {f.lstrip("-") for c in configs for f in c.custom_cli_flags or ()}
        undeclared = [name for name in self.options.custom_args if name not in flags]
        if undeclared:
            known = ", ".join(sorted(f"--{f}" for f in flags)) or "none"
            errors.append(
                f"--bench-arg {', '.join(undeclared)}: not declared in any collected bench "
                f"file's custom_cli_flags (declared: {known})"
            )
        return errors

    def ensure_plan(self, file_key: str) -> tuple[BenchFile, BenchmarkPlan]:
        """The plan of a bench file this process did not collect itself (xdist controller)."""
        if file_key not in self.bench_files:
            from ._collect import BenchModule

            assert self.session is not None
            path = self.config.rootpath / file_key
            module = BenchModule.from_parent(self.session, path=path)
            self.register_plan(path, load_bench_file(path, module.obj))
        return self.bench_files[file_key]

    # -- controller: runs --------------------------------------------------------------------

    def begin(self, nodeids: Sequence[str]) -> list[BenchmarkRun]:
        """Open a run for every bench file with selected items (after deselection)."""
        selected: dict[str, list[str]] = {}
        for nodeid in nodeids:
            path, sep, name = nodeid.partition("::")
            if sep and name.startswith("task[") and "]" in name:
                # xdist's loadgroup appends "@<group>" to node ids.
                selected.setdefault(path, []).append(name[: name.rindex("]") + 1])
        started: list[BenchmarkRun] = []
        for nodeid_path, names in selected.items():
            file_key = self.file_key(self.config.rootpath / nodeid_path)
            if file_key in self.runs:
                continue
            bench_file, plan = self.ensure_plan(file_key)
            wanted = set(names)
            chosen: dict[str, set[int]] = {}
            for name, slot, skipped in plan.items():
                if skipped is None and item_name(name, slot) in wanted:
                    chosen.setdefault(name, set()).add(slot.index)
            if not chosen and not plan.skipped:
                continue
            run = BenchmarkRun(file_key, bench_file, plan, chosen)
            self.runs[file_key] = run
            store = self.open_store()
            if store is not None and chosen:
                run.local_run_id = store.begin_run(
                    benchmark_slug=run.config.benchmark_slug,
                    benchmark_name=run.config.benchmark_name,
                    file=file_key,
                    knobs=plan.resolved.to_wire(),
                    participants=run.participants,
                    config_snapshot=run.config_snapshot(self.environment),
                    environment=self.environment,
                    dry_run=self.options.dry_run,
                )
            started.append(run)
        return started

    def add(self, payload: RecordPayload) -> BenchmarkRun | None:
        """Keep one record (durably, in the store, before anything else happens to it)."""
        run = self.runs.get(payload.file_key)
        if run is None:
            return None
        run.records.setdefault(payload.participant, {})[payload.task_index] = payload.record
        if payload.log:
            run.logs.setdefault(payload.participant, []).extend(payload.log)
        if self.store is not None and run.local_run_id is not None:
            self.store.add_record(
                run.local_run_id,
                payload.participant,
                payload.record,
                log_lines=[text for _, text in payload.log],
            )
        return run

    def finish_run(self, run: BenchmarkRun) -> None:
        """Score the run (if it declares scoring) and call ``on_complete``."""
        outcome = run.outcome()
        config = run.config
        if config.on_score is not None or config.scoring is not None:
            try:
                spec = self._scoring_spec(config)
                display_metrics = config.display.metrics if config.display is not None else None
                results = score(outcome, spec, display_metrics)
            except ScoringSpecError as exc:
                run.errors.append(f"scoring failed: {exc}")
                return
            self.config.hook.pytest_benchsdk_scores(
                config=self.config, benchmark=run.config.benchmark_slug, results=results
            )
            run.results = results
            if self.store is not None and run.local_run_id is not None:
                self.store.save_scores(run.local_run_id, results)
            run.summary = self.summary_payload(run)
        if config.on_complete is not None:
            try:
                _resolve(config.on_complete(outcome))
            except Exception as exc:  # the user's hook fails the run, as upstream
                run.errors.append(f"on_complete failed: {type(exc).__name__}: {exc}")

    def _scoring_spec(self, config: BenchmarkConfig) -> ScoringSpec:
        if config.on_score is not None:
            spec = _resolve(config.on_score(lower_is_better, higher_is_better))
            if not isinstance(spec, ScoringSpec):
                raise ScoringSpecError(
                    f"on_score must return a ScoringSpec (got {type(spec).__name__})"
                )
            return spec
        assert config.scoring is not None
        return scoring_config_to_spec(config.scoring, config.dimensions, config.display)

    def summary_payload(self, run: BenchmarkRun) -> dict[str, Any] | None:
        """The run summary for the platform (upstream §6.6), after the summary hook has seen it."""
        if run.results is None:
            return None
        payload: dict[str, Any] = {
            "run": self.environment.to_wire(),
            "results": [r.to_wire() for r in run.results],
        }
        if run.config.scoring is not None:
            payload["scoring"] = run.config.scoring.to_wire()
        self.config.hook.pytest_benchsdk_summary(
            config=self.config, benchmark=run.config.benchmark_slug, summary=payload
        )
        return payload

    def write_json(self, path: Path) -> None:
        document = {
            "version": 1,
            "environment": self.environment.to_dict(),
            "dryRun": self.options.dry_run,
            "benchmarks": [self._run_json(run) for run in self.runs.values()],
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")

    def _run_json(self, run: BenchmarkRun) -> dict[str, Any]:
        return {
            "file": run.file_key,
            "benchmarkSlug": run.config.benchmark_slug,
            "benchmarkName": run.config.benchmark_name,
            "localRunId": run.local_run_id,
            "runId": run.platform_run_id,
            "dashboardUrl": run.dashboard_url or None,
            "config": run.config_snapshot(self.environment),
            "skipped": [s.to_wire() for s in run.plan.skipped],
            "participants": [
                {"participant": pr.participant, "records": [r.to_wire() for r in pr.records]}
                for pr in run.participant_records()
            ],
            "scores": None if run.results is None else [r.to_wire() for r in run.results],
            "summary": run.summary,
            "errors": list(run.errors),
        }


def _resolve(value: Any) -> Any:
    """Await a coroutine returned by a user hook (``on_score``/``on_complete`` may be async)."""
    if inspect.isawaitable(value):

        async def wait() -> Any:
            return await value

        return asyncio.run(wait())
    return value
