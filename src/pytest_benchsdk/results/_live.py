"""A benchmark's run while its session goes on, and its summary once it is over.

Private to :mod:`pytest_benchsdk.results`. A :class:`BenchmarkRun` is what the controller (the
one process that owns the runs) keeps of one bench file: what was selected, the samples of the
records as they arrive (the records themselves go to the store), the platform's ids, the
scores and analyses at the end, and the :class:`~pytest_benchsdk.results.RunSummary` every view
renders. No pytest here: the glue drives it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, Final

import attrs

from pytest_benchsdk._analysis.scoring import ScoreResult, ScoringSpec, metric_samples, score
from pytest_benchsdk._analysis.scoring_spec import scoring_spec_of
from pytest_benchsdk._base.runenv import RunEnvironment
from pytest_benchsdk._config.models import BenchmarkConfig, Participant
from pytest_benchsdk._config.thresholds import Threshold
from pytest_benchsdk._engine.benchfile import BenchFile
from pytest_benchsdk._engine.payload import NO_INGEST_RUN_ID, RecordPayload
from pytest_benchsdk._engine.schedule import (
    BenchmarkRunOutcome,
    BenchmarkSchedule,
    run_config_to_json,
)
from pytest_benchsdk.records import ParticipantRecords, TaskRecord
from pytest_benchsdk.results._analyse import Analyses
from pytest_benchsdk.results._build import (
    MetricCatalog,
    config_catalog,
    participant_summary,
    score_table,
)
from pytest_benchsdk.results._model import (
    ABSide,
    Knobs,
    ParticipantSummary,
    RoundsKnobs,
    RunStatus,
    RunSummary,
)
from pytest_benchsdk.results._samples import (
    ParticipantSamples,
    iso_time,
    record_phase,
    shared_per_call_keys,
)

__all__ = ["BenchmarkRun", "knobs_of"]


#: Value types JSON holds exactly (a float only when finite: checked apart).
_PLAIN_VALUES: Final = frozenset({str, int, bool, type(None)})


def _plain_flat(data: object) -> bool:
    """``data`` is a dict of string keys to strings, ints, bools, None or finite floats: what
    nearly every record holds (``cpu_ms``, ``measure(x=…)``), told without encoding it (the
    encoder took a tenth of the controller's time per record). Anything else: False, and
    the encoder decides."""
    if type(data) is not dict:
        return False
    for key, value in data.items():
        if type(key) is not str:
            return False
        kind = type(value)
        if kind is float:
            if value - value != 0.0:  # NaN or infinite
                return False
        elif kind not in _PLAIN_VALUES:
            return False
    return True


def _reads_back_unchanged(record: TaskRecord) -> bool:
    """Whether the store gives the record back as it is. JSON has no NaN or Infinity (the
    store writes null, as JSON.stringify): a record measuring one is also kept in memory, so
    ``on_complete`` and scoring see the value the task measured."""
    datas = [step.data for step in record.steps or () if step.data is not None]
    if record.data is not None:
        datas.append(record.data)
    if not datas:
        return True
    if all(_plain_flat(data) for data in datas):
        return True
    try:
        json.dumps(datas, allow_nan=False)
    except (ValueError, TypeError):
        return False
    return True


def knobs_of(schedule: BenchmarkSchedule, stored: Mapping[str, Any] | None = None) -> Knobs:
    """The knobs a schedule runs with; ``stored``: the knobs stored with its run beside them
    (a group of benchmarked tests' rounds)."""
    resolved, config = schedule.resolved, schedule.config
    phases = tuple(
        (p.name, resolved.phase_count(p.name, p.iterations)) for p in config.phases or ()
    )
    return Knobs(
        iterations=len(schedule.slots),
        concurrency=resolved.concurrency,
        stagger_delay_ms=resolved.stagger_delay_ms,
        group_by=resolved.group_by,
        warmup=resolved.warmup,
        phases=phases,
        providers=resolved.providers,
        phases_sized=bool(resolved.phase_counts),
        phase_warmup=tuple(
            (str(entry.phase), entry.count, entry.source)
            for entry in schedule.warmup_plan
            if entry.phase is not None
        ),
        rounds=RoundsKnobs.of_knobs(stored or {}),
    )


def _compact(indexes: Iterable[int]) -> Collection[int]:
    """Task indexes as a ``range`` when they are contiguous (a whole plan, one phase), else a
    set: the run keeps them until the session ends (a set of 20,000 ints is ~2 MB)."""
    chosen = set(indexes)
    if chosen and max(chosen) - min(chosen) + 1 == len(chosen):
        return range(min(chosen), max(chosen) + 1)
    return chosen


def _compact_selection(selected: Mapping[str, Iterable[int]]) -> dict[str, Collection[int]]:
    return {name: _compact(indexes) for name, indexes in selected.items()}


@attrs.define
class BenchmarkRun:
    """One bench file's run on the controller.

    Records go to the store as they arrive; the run keeps their samples per participant
    (:class:`~pytest_benchsdk.results._samples.ParticipantSamples`) and, in ``records``, only
    records the store does not hold (no store, or it failed, or a value JSON cannot hold).
    Scoring and ``on_complete`` read every record back through ``stored_records`` plus
    ``records``.
    """

    file_key: str
    bench_file: BenchFile
    schedule: BenchmarkSchedule
    #: Selected iterations per participant (task indexes), after deselection: a ``range``
    #: where they are contiguous (the usual case).
    selected: dict[str, Collection[int]] = attrs.field(converter=_compact_selection)
    #: The selection is the benchmark's whole plan (no ``-k``/node-id subset).
    whole_plan: bool = True
    local_run_id: str | None = None
    #: False when ``local_run_id`` names a run in a temporary outbox (``--bench-no-store``):
    #: ``on_complete`` then gets no ``store_run_id``.
    local_run_kept: bool = True
    platform_run_id: str | None = None
    dashboard_url: str = ""
    #: Records the store does not hold, per participant and task index.
    records: dict[str, dict[int, TaskRecord]] = attrs.Factory(dict)
    samples: dict[str, ParticipantSamples] = attrs.Factory(dict)
    #: Reads this run's stored records (set by the controller when the run is in a store).
    stored_records: Callable[[], Sequence[ParticipantRecords]] | None = None
    _read_back: tuple[ParticipantRecords, ...] | None = attrs.field(default=None, init=False)
    #: Selected threshold items: per participant the thresholds to judge.
    thresholds: dict[str, list[Threshold]] = attrs.Factory(dict)
    results: list[ScoreResult] | None = None
    #: With phases, each phase's rows scored like :attr:`results` on that phase's records
    #: alone (aggregate rows only). Empty without phases or scoring.
    phase_results: dict[str, list[ScoreResult]] = attrs.Factory(dict)
    #: The run summary for the platform, once scored.
    platform_summary: dict[str, Any] | None = None
    errors: list[str] = attrs.Factory(list)
    #: Items of this run that failed without a failed record (setup or teardown errors, a
    #: crashed xdist worker, an item stopped by a BaseException).
    failed_items: int = 0
    #: Warm-up records per participant (negative task indices; never scored or reported).
    warmup_records: dict[str, list[TaskRecord]] = attrs.Factory(dict)
    #: The scoring spec the run was scored with (``on_score`` is called once per run).
    spec: ScoringSpec | None = None
    analyses: Analyses = attrs.Factory(Analyses)
    #: The finished run, once the session end made it.
    summary: RunSummary | None = None
    #: Knobs stored with the run beside the resolved ones (an A/B session's side; a group
    #: of benchmarked tests' rounds).
    extra_knobs: dict[str, Any] = attrs.Factory(dict)
    #: Participants skipped by the session, not for their environment variables (a
    #: benchmarked test's ``skipif``, ``pytest.skip``): why, by name. Like the schedule's
    #: env-skipped ones they have no iteration: listed as skipped, not planned.
    skipped_participants: dict[str, str] = attrs.Factory(dict)

    @property
    def config(self) -> BenchmarkConfig:
        return self.schedule.config

    @property
    def knobs(self) -> Knobs:
        return knobs_of(self.schedule, self.extra_knobs)

    @property
    def benchmarked_tests(self) -> bool:
        """Whether the run is a group of benchmarked tests (the ``benchmark`` fixture's): its
        participants are tests, each with one record holding its rounds."""
        return self.knobs.rounds is not None

    @property
    def score_intervals(self) -> bool:
        """Whether the scores get bootstrap intervals: not for a group of benchmarked tests
        (resampling one record per participant says nothing)."""
        return not self.benchmarked_tests

    @property
    def participants(self) -> list[str]:
        """Participants with selected items, in declared order."""
        return [name for name in self.schedule.participant_names if self.selected.get(name)]

    def order_participants(self, key: Callable[[str], float]) -> None:
        """Declare the participants in the order of ``key`` (by name, ascending; equal keys
        keep their order): the order a tie in the ranking keeps and every table follows. A
        group of benchmarked tests is ordered by speed when its figures are known."""
        schedule = self.schedule

        def ordered(participants: tuple[Participant, ...]) -> tuple[Participant, ...]:
            return tuple(sorted(participants, key=lambda p: key(p.name)))

        self.schedule = attrs.evolve(
            schedule,
            file_config=attrs.evolve(
                schedule.file_config, participants=ordered(schedule.file_config.participants)
            ),
            config=attrs.evolve(
                schedule.config, participants=ordered(schedule.config.participants)
            ),
            participants=ordered(schedule.participants),
        )
        self._read_back = None

    def declare(
        self,
        participant: str,
        indexes: set[int],
        *,
        thresholds: list[Threshold],
        knobs: Mapping[str, Any],
        skipped: str | None = None,
    ) -> None:
        """One more participant (declared last), with its selected iterations, its thresholds
        and the run's knobs with it: a group of benchmarked tests learns its tests as they
        report. ``skipped``: why it was skipped (a ``skipif`` test: no iteration, listed as
        skipped)."""
        added = (Participant(participant),)
        schedule = self.schedule
        self.schedule = attrs.evolve(
            schedule,
            file_config=attrs.evolve(
                schedule.file_config, participants=schedule.file_config.participants + added
            ),
            config=attrs.evolve(schedule.config, participants=schedule.config.participants + added),
            participants=schedule.participants + added,
        )
        self.selected[participant] = _compact(indexes)
        self.thresholds[participant] = thresholds
        if skipped is not None:
            self.skipped_participants[participant] = skipped
        self.extra_knobs.update(knobs)
        self._read_back = None

    @property
    def total_tasks(self) -> int:
        return max((len(v) for v in self.selected.values()), default=0)

    # -- records ------------------------------------------------------------------------------

    def add(self, payload: RecordPayload, *, stored: bool = False) -> None:
        """Take one record's samples; keep the record itself only when the store does not hold
        it as it is."""
        samples = self.samples.get(payload.participant)
        if samples is None:
            samples = self.samples[payload.participant] = ParticipantSamples()
        samples.add(payload.record)
        if not stored or not _reads_back_unchanged(payload.record):
            self.records.setdefault(payload.participant, {})[payload.task_index] = payload.record
        self._read_back = None

    def has_record(self, participant: str, task_index: int) -> bool:
        """Whether the participant's iteration ``task_index`` has its record already."""
        samples = self.samples.get(participant)
        return samples is not None and samples.has(task_index)

    def received(self, participant: str) -> int:
        """Records of the participant so far (distinct task indexes)."""
        samples = self.samples.get(participant)
        return 0 if samples is None else samples.count

    def participant_finished(self, participant: str) -> bool:
        """Every selected iteration of the participant has its record."""
        return self.received(participant) >= len(self.selected.get(participant, ()))

    @property
    def planned_tasks(self) -> int:
        """Iterations selected for this session, all participants together."""
        return sum(len(self.selected.get(name, ())) for name in self.participants)

    @property
    def done_tasks(self) -> int:
        """Iterations whose record arrived, all participants together."""
        return sum(self.received(name) for name in self.participants)

    @property
    def failed_tasks(self) -> int:
        return sum(s.count - s.passed for s in self.samples.values())

    def participant_records(self) -> tuple[ParticipantRecords, ...]:
        """Every record so far, per selected participant by task index: read back from the
        store (once per batch of arrivals), with the records it does not hold."""
        if self._read_back is not None:
            return self._read_back
        by_name: dict[str, dict[int, TaskRecord]] = {name: {} for name in self.participants}
        if self.stored_records is not None:
            for stored in self.stored_records():
                kept = by_name.get(stored.participant)
                if kept is not None:
                    kept.update((r.task_index, r) for r in stored.records)
        for name, records in self.records.items():
            kept = by_name.get(name)
            if kept is not None:
                kept.update(records)
        self._read_back = tuple(
            ParticipantRecords(participant=name, records=tuple(r for _, r in sorted(kept.items())))
            for name, kept in by_name.items()
        )
        return self._read_back

    @property
    def phases(self) -> list[str]:
        """The schedule's phase names in order; empty for a benchmark with fewer than two
        (one phase is the whole run)."""
        names = list(dict.fromkeys(s.phase for s in self.schedule.slots if s.phase is not None))
        return names if len(names) > 1 else []

    def phase_records(self, phase: str) -> tuple[ParticipantRecords, ...]:
        """:meth:`participant_records` restricted to one phase (``record.data["phase"]``)."""
        return tuple(
            ParticipantRecords(
                participant=pr.participant,
                records=tuple(r for r in pr.records if record_phase(r) == phase),
            )
            for pr in self.participant_records()
        )

    def outcome(self, run_id: str | None = None) -> BenchmarkRunOutcome:
        return BenchmarkRunOutcome(
            run_id=run_id or self.platform_run_id or NO_INGEST_RUN_ID,
            dashboard_url=self.dashboard_url,
            participants=self.participant_records(),
            config=self.schedule.resolved,
            store_run_id=self.local_run_id if self.local_run_kept else None,
        )

    # -- configuration ------------------------------------------------------------------------

    def config_snapshot(self, environment: RunEnvironment) -> dict[str, Any]:
        """The run-config snapshot the platform gets (upstream's ``runConfigToJson``)."""
        return run_config_to_json(
            self.config, self.schedule.resolved, self.participants, environment.trigger_to_wire()
        )

    def local_config_snapshot(self, environment: RunEnvironment) -> dict[str, Any]:
        """The snapshot kept in the store and ``--bench-json``: upstream's, plus what only
        this plugin has (the thresholds judged, warm-up, ``display``), so the store alone can
        re-judge and re-render the run."""
        snapshot = self.config_snapshot(environment)
        thresholds = self.schedule.thresholds
        if thresholds:
            snapshot["thresholds"] = [
                {"metric": t.metric, "expression": t.expression} for t in thresholds
            ]
        if self.schedule.resolved.warmup:
            snapshot["warmup"] = self.schedule.resolved.warmup
        if self.config.display is not None:
            snapshot["display"] = self.config.display.to_wire()
        return snapshot

    def catalog(self) -> MetricCatalog:
        """What the config says of the metrics and steps."""
        return config_catalog(self.config, self.spec, self.results)

    # -- the end ------------------------------------------------------------------------------

    def score(self) -> list[ScoreResult] | None:
        """Score rows of the records so far (None when the config declares no scoring).
        Raises :class:`~pytest_benchsdk.scoring.ScoringSpecError` for a bad scoring spec.

        With phases, also fills :attr:`phase_results` with the same spec (``on_score`` is
        called once); a failure there only leaves them empty, never the scores."""
        spec = self.spec = scoring_spec_of(self.config)
        if spec is None:
            return None
        display = self.config.display
        display_metrics = display.metrics if display is not None else None
        results = score(self.outcome(), spec, display_metrics)
        self.phase_results = {}
        if self.phases:
            per_phase = attrs.evolve(spec, group_by=None)
            try:
                self.phase_results = {
                    phase: score(
                        attrs.evolve(self.outcome(), participants=self.phase_records(phase)),
                        per_phase,
                        display_metrics,
                    )
                    for phase in self.phases
                }
            except Exception:  # the user's success/value callables: upstream's rows still stand
                self.phase_results = {}
        return results

    @property
    def scored_spec(self) -> ScoringSpec | None:
        """The spec the run was scored with, if scoring worked and scores any metric."""
        spec = self.spec
        return spec if self.results is not None and spec is not None and spec.metrics else None

    def summary_payload(self, environment: RunEnvironment) -> dict[str, Any] | None:
        """The run summary for the platform, once the run is scored."""
        if self.results is None:
            return None
        payload: dict[str, Any] = {
            "run": environment.to_wire(),
            "results": [r.to_wire() for r in self.results],
        }
        if self.config.scoring is not None:
            payload["scoring"] = self.config.scoring.to_wire()
        return payload

    def participant_summaries(self) -> list[ParticipantSummary]:
        """Every participant's facts (declared order; env-skipped ones included)."""
        catalog = self.catalog()
        # Scored metrics are sampled as scoring takes them, once scoring worked (a user's
        # ``value`` function that raised would raise again: then they read their data keys).
        spec = self.scored_spec
        records = {pr.participant: pr.records for pr in self.participant_records()} if spec else {}
        phase_of_slot = {slot.index: slot.phase for slot in self.schedule.slots}
        phases = self.phases
        skipped = {s.name: f"missing {', '.join(s.missing)}" for s in self.schedule.skipped}
        skipped.update(self.skipped_participants)
        out = []
        for name in self.schedule.requested:
            selected = self.selected.get(name, ())
            if name not in skipped and not selected:
                continue  # deselected (-k): not part of this run
            samples = self.samples.get(name) or ParticipantSamples()
            scored = phase_scored = None
            if spec is not None and name in records:
                scored = metric_samples(spec, records[name])
                if phases:
                    phase_scored = {
                        phase: metric_samples(
                            spec, [r for r in records[name] if record_phase(r) == phase]
                        )
                        for phase in phases
                    }
            out.append(
                participant_summary(
                    name,
                    samples,
                    catalog,
                    planned=len(selected),
                    planned_phases={
                        phase: sum(1 for i in selected if phase_of_slot.get(i) == phase)
                        for phase in phases
                    },
                    scored_samples=scored,
                    phase_scored_samples=phase_scored,
                    skipped=skipped.get(name),
                )
            )
        return out

    def run_status(
        self,
        *,
        interrupted: bool,
        regression: bool = False,
        warnings_failed: bool = False,
        iterations_fail: bool = True,
    ) -> RunStatus:
        """How the run ended, with every reason it did not pass. ``interrupted``: the session
        stopped before every selected item of this run finished; ``iterations_fail`` False:
        failed iterations are data (``--bench-failed-iterations=record``), not a reason."""
        planned, ran = self.planned_tasks, self.done_tasks
        unit = self.knobs.unit
        if interrupted:
            return RunStatus("interrupted", (), planned, ran, False, unit)
        complete = self.whole_plan and ran >= planned
        reasons = []
        if self.failed_tasks and iterations_fail:
            reasons.append("iterations")
        if self.failed_items:
            reasons.append("items")
        if self.errors:
            reasons.append("errors")
        if any(v.outcome == "failed" for v in self.analyses.thresholds):
            reasons.append("threshold")
        if regression:
            reasons.append("regression")
        if warnings_failed:
            reasons.append("warnings")
        state = "failed" if reasons else "passed"
        return RunStatus(state, tuple(reasons), planned, ran, complete, unit)

    def summarise(
        self,
        environment: RunEnvironment,
        status: RunStatus,
        participants: Sequence[ParticipantSummary] | None = None,
        *,
        dry_run: bool = False,
        run_key: str | None = None,
    ) -> RunSummary:
        """The finished run as every view shows it."""
        if participants is None:
            participants = self.participant_summaries()
        spans = [s.span() for s in self.samples.values()]
        known = [span for span in spans if span is not None]
        scores = None
        if self.results is not None:
            scoring = self.config.scoring
            scores = score_table(
                self.results,
                self.catalog(),
                uncertainty=self.analyses.uncertainty,
                phase_results=self.phase_results,
                group_by=scoring.group_by
                if scoring is not None and self.config.on_score is None
                else None,
                dimensions=self.config.dimensions,
            )
        return RunSummary(
            benchmark_slug=self.config.benchmark_slug,
            benchmark_name=self.config.benchmark_name,
            file=self.file_key,
            knobs=self.knobs,
            environment=environment,
            status=status,
            participants=tuple(participants),
            local_run_id=self.local_run_id if self.local_run_kept else None,
            platform_run_id=self.platform_run_id,
            dashboard_url=self.dashboard_url or None,
            dry_run=dry_run,
            run_key=run_key,
            started_at=iso_time(min(s for s, _ in known)) if known else None,
            finished_at=iso_time(max(e for _, e in known)) if known else None,
            scores=scores,
            thresholds=self.analyses.thresholds,
            comparison=self.analyses.comparison,
            comparison_note=self.analyses.comparison_note,
            warnings=self.analyses.warnings,
            errors=tuple(self.errors),
            notes=tuple(self.schedule.warnings),
            intervals=self.analyses.intervals,
            relative=self.analyses.relative,
            ab=ABSide.of_knobs(self.extra_knobs, self.analyses.comparison),
            per_call=()
            if self.spec is not None and self.spec.metrics
            else shared_per_call_keys(self.samples.values()),
        )

    def records_json(self) -> list[dict[str, Any]]:
        """Every record in wire form, per participant (``--bench-json``)."""
        return [
            {"participant": pr.participant, "records": [r.to_wire() for r in pr.records]}
            for pr in self.participant_records()
        ]

    def warmup_json(self) -> list[dict[str, Any]]:
        return [
            {
                "participant": name,
                "records": [
                    {**r.to_wire(), "warmup": True}
                    for r in sorted(records, key=lambda r: r.task_index)
                ],
            }
            for name, records in self.warmup_records.items()
        ]
