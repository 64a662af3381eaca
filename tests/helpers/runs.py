"""Finished runs built in the test, without a session: records made here, a
:class:`~pytest_benchsdk.results.BenchmarkRun` fed with them, and its
:class:`~pytest_benchsdk.results.RunSummary` made the way the session end makes it (score,
:func:`~pytest_benchsdk.results.analyse`, status, summary); and stores holding such runs.

Imported as ``from helpers.runs import ...``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from helpers.store_processes import ENV
from pytest_benchsdk._base.runenv import RunEnvironment
from pytest_benchsdk._config.models import BenchmarkConfig, define_benchmark_config
from pytest_benchsdk._config.thresholds import Threshold
from pytest_benchsdk._engine.benchfile import BenchFile
from pytest_benchsdk._engine.payload import RecordPayload
from pytest_benchsdk._engine.schedule import RunArgs, schedule_benchmark
from pytest_benchsdk.records import JSONObject, StepRecord, TaskRecord
from pytest_benchsdk.results import (
    BenchmarkRun,
    ComparisonOptions,
    HygieneOptions,
    RunSummary,
    analyse,
    save_analyses,
    save_summary,
)
from pytest_benchsdk.store import ResultStore

#: What a bench file's test scores: ``value`` (ms, lower is better), upstream's weights.
SCORING: dict[str, Any] = {
    "metrics": [
        {
            "key": "value",
            "unit": "ms",
            "ceiling": 100,
            "weights": {"median": 0.6, "p95": 0.25, "p99": 0.15},
        }
    ]
}

#: When the records of :func:`record` start (one second apart by task index).
START = datetime(2026, 12, 1, 8, 0, tzinfo=timezone.utc)


def iso(at: datetime) -> str:
    """A time as records write it (``2026-12-01T08:00:00.000Z``)."""
    return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"


def record(
    index: int,
    latency: float | None = 10.0,
    *,
    data: JSONObject | None = None,
    steps: Sequence[StepRecord] | None = None,
    error: str | None = None,
    message: str | None = None,
    phase: str | None = None,
    offset: float = 0.0,
) -> TaskRecord:
    """Iteration ``index``: started ``index + offset`` seconds after :data:`START`, taking
    ``latency`` ms; ``error``: it failed with that code (and ``message``); ``phase``: tagged
    as the plugin tags a phase's records."""
    started = START + timedelta(seconds=index + offset)
    completed = started + timedelta(milliseconds=latency or 0)
    values: dict[str, Any] = dict(data or {})
    if phase is not None:
        values["phase"] = phase
    if message is not None:
        values["errorMessage"] = message
    if error is not None:
        return TaskRecord(
            task_index=index,
            status="error",
            started_at=iso(started),
            completed_at=iso(completed),
            latency_ms=latency,
            error_code=error,
            steps=steps,
            data=values or None,
        )
    return TaskRecord(
        task_index=index,
        status="success",
        started_at=iso(started),
        completed_at=iso(completed),
        latency_ms=latency,
        steps=steps,
        data=values or None,
    )


def config(**fields: Any) -> BenchmarkConfig:
    """A validated config of benchmark ``demo`` (``participants`` by name, or as given)."""
    fields.setdefault("benchmark_slug", "demo")
    fields.setdefault("benchmark_name", "Demo")
    return define_benchmark_config(**fields)


def _never_run(*args: Any, **kwargs: Any) -> None:
    raise AssertionError("a run built in the test runs no task")


def live_run(
    bench_config: BenchmarkConfig,
    records: Mapping[str, Sequence[TaskRecord]],
    *,
    args: RunArgs | None = None,
    environ: Mapping[str, str] | None = None,
    selected: Mapping[str, set[int]] | None = None,
    thresholds: Mapping[str, list[Threshold]] | None = None,
    whole_plan: bool = True,
    file_key: str = "bench_demo.py",
) -> BenchmarkRun:
    """The controller's run of ``bench_config`` with ``records`` arrived (per participant);
    ``selected``: the iterations selected per participant (default: the whole schedule of
    each participant that is not skipped); ``thresholds`` per participant (default: the
    schedule's, as the session's threshold items select them)."""
    schedule = schedule_benchmark(bench_config, args or RunArgs(), environ or {})
    if selected is None:
        indexes = {slot.index for slot in schedule.slots}
        selected = {name: set(indexes) for name in schedule.participant_names}
    run = BenchmarkRun(
        file_key,
        BenchFile(Path(file_key), bench_config, _never_run),
        schedule,
        {name: set(chosen) for name, chosen in selected.items()},
        whole_plan=whole_plan,
    )
    if thresholds is None:
        thresholds = {name: list(schedule.thresholds) for name in run.participants}
    run.thresholds = {name: list(found) for name, found in thresholds.items()}
    for name, found in records.items():
        for one in found:
            run.add(
                RecordPayload(file_key, name, one.task_index, one, one.to_wire()),
            )
    return run


def finish(
    run: BenchmarkRun,
    *,
    environment: RunEnvironment = ENV,
    resamples: int = 0,
    hygiene: HygieneOptions | None = None,
    comparison: ComparisonOptions | None = None,
    interrupted: bool = False,
    regression: bool = False,
    dry_run: bool = True,
    run_key: str | None = None,
) -> RunSummary:
    """The run's summary, made as the session end makes it: scored (when the config scores),
    analysed once (``resamples`` for the intervals; no run-hygiene checks unless ``hygiene``
    says), its status and its summary. Sets ``run.results``, ``run.analyses``,
    ``run.summary``."""
    run.results = run.score()
    display = run.config.display
    scored = run.results is not None
    run.analyses = analyse(
        run.participant_summaries(),
        samples=run.samples,
        records=run.participant_records() if scored or comparison is not None else (),
        spec=run.scored_spec,
        results=run.results,
        display_metrics=display.metrics if display is not None else None,
        resamples=resamples,
        score_intervals=run.score_intervals,
        hygiene=hygiene,
        thresholds=run.thresholds,
        comparison=comparison,
    )
    run.errors.extend(run.analyses.errors)
    status = run.run_status(interrupted=interrupted, regression=regression)
    run.summary = run.summarise(environment, status, dry_run=dry_run, run_key=run_key)
    return run.summary


def store_run(
    store: ResultStore,
    run: BenchmarkRun,
    *,
    environment: RunEnvironment = ENV,
    dry_run: bool = True,
    run_key: str | None = None,
    keep_summary: bool = True,
    **finish_args: Any,
) -> RunSummary:
    """Keep ``run`` in ``store`` as a session does: begun with its knobs and snapshot, its
    records, scores and analyses, its summary (unless ``keep_summary`` is False: a session
    that was killed before its end) and its status. The summary, with its stored run id."""
    run_id = store.begin_run(
        benchmark_slug=run.config.benchmark_slug,
        benchmark_name=run.config.benchmark_name,
        file=run.file_key,
        knobs={**run.schedule.resolved.to_wire(), **run.extra_knobs},
        participants=run.participants,
        config_snapshot=run.local_config_snapshot(environment),
        environment=environment,
        dry_run=dry_run,
        run_key=run_key,
    )
    run.local_run_id = run_id
    wires = [(pr.participant, r.to_wire()) for pr in run.participant_records() for r in pr.records]
    store.replace_records(run_id, wires, {})
    summary = finish(run, environment=environment, dry_run=dry_run, run_key=run_key, **finish_args)
    if run.results is not None:
        store.save_scores(run_id, run.results)
    if keep_summary:
        save_analyses(store, run_id, run.analyses)
        save_summary(store, run_id, summary)
        store.finish_run(run_id, summary.status.state)
    return summary
