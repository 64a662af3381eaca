"""The controller's runs, without pytest: a bench file's run, the records that reach it, its
scores and its JSON form.

A :class:`RecordPayload` is one iteration's record in transit from the process that ran it to
the controller (plain JSON, so it crosses xdist); a :class:`BenchmarkRun` is what the controller
keeps for one bench file. :func:`scoring_spec_of` is the one place that turns a config's
``on_score`` or declarative ``scoring`` into a :class:`~pytest_benchsdk.scoring.ScoringSpec`:
scoring a run and ``--bench-check`` both use it.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import math
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import attrs

from ._baseline import BaselineComparison
from ._benchfile import BenchFile
from ._hygiene import RunWarning, run_warnings
from ._runenv import RunEnvironment
from ._uncertainty import ScoreUncertainty, score_uncertainty
from .config import BenchmarkConfig
from .context import IterationOutcome
from .records import ParticipantRecords, TaskRecord
from .schedule import BenchmarkRunOutcome, BenchmarkSchedule, run_config_to_json
from .scoring import (
    ScoreResult,
    ScoringSpec,
    ScoringSpecError,
    higher_is_better,
    lower_is_better,
    metric_samples,
    score,
    scoring_config_to_spec,
    validate_scoring_spec,
)

__all__ = [
    "MIN_SECRET_LENGTH",
    "NO_INGEST_RUN_ID",
    "REDACTED",
    "BenchmarkRun",
    "RecordPayload",
    "RecordSample",
    "RecordTally",
    "participant_secrets",
    "record_phase",
    "redact_text",
    "redact_value",
    "resolve_awaitable",
    "scoring_problem",
    "scoring_spec_of",
]

#: What a secret's value is replaced with wherever the plugin writes text.
REDACTED = "***"
#: Values shorter than this are not redacted: replacing "1" or "true" everywhere would
#: garble every record and say nothing about the secret anyway.
MIN_SECRET_LENGTH = 6


def participant_secrets(config: BenchmarkConfig, *environs: Mapping[str, str]) -> tuple[str, ...]:
    """The values of every env var a participant of *config* requires (from the first
    environment that sets it, and every other one too), at least :data:`MIN_SECRET_LENGTH`
    characters long, longest first (so a secret containing another is replaced whole)."""
    names: list[str] = []
    for participant in config.participants:
        required: object = participant.required_env_vars
        if isinstance(required, str):  # kept as given when validation reports it
            names.append(required)
        elif isinstance(required, (tuple, list)):
            names.extend(str(name) for name in required)
    values = {
        environ[name]
        for name in names
        for environ in environs
        if isinstance(environ.get(name), str) and len(environ[name]) >= MIN_SECRET_LENGTH
    }
    return tuple(sorted(values, key=lambda v: (-len(v), v)))


def redact_text(text: str, secrets: Sequence[str]) -> str:
    """*text* with every secret replaced by :data:`REDACTED`."""
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def redact_value(value: Any, secrets: Sequence[str]) -> Any:
    """A JSON value with every secret in its strings (keys included) redacted."""
    if not secrets:
        return value
    if isinstance(value, str):
        return redact_text(value, secrets)
    if isinstance(value, Mapping):
        return {redact_text(str(k), secrets): redact_value(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value(v, secrets) for v in value]
    return value


def _contains_secret(texts: Iterable[str], secrets: Sequence[str]) -> bool:
    return any(secret in text for text in texts for secret in secrets)


#: The run id ``on_complete`` sees when nothing reached the platform (upstream's value).
NO_INGEST_RUN_ID = "no-ingest"


def resolve_awaitable(value: Any) -> Any:
    """Await a coroutine returned by a user hook (``on_score``/``on_complete`` may be async)."""
    if inspect.isawaitable(value):

        async def wait() -> Any:
            return await value

        return asyncio.run(wait())
    return value


def scoring_spec_of(config: BenchmarkConfig) -> ScoringSpec | None:
    """The config's scoring spec: ``on_score``'s, else the declarative ``scoring`` (with the
    display units), else None. Raises :class:`ScoringSpecError` for a bad ``on_score``."""
    if config.on_score is not None:
        _check_on_score_signature(config.on_score)
        spec = resolve_awaitable(config.on_score(lower_is_better, higher_is_better))
        if not isinstance(spec, ScoringSpec):
            raise ScoringSpecError(
                f"on_score must return a ScoringSpec (got {type(spec).__name__})"
            )
        return spec
    if config.scoring is not None:
        return scoring_config_to_spec(config.scoring, config.dimensions, config.display)
    return None


def _check_on_score_signature(on_score: Any) -> None:
    """``on_score`` is called as ``on_score(lower_is_better, higher_is_better)``: say so
    instead of a bare ``TypeError`` when it cannot take those two arguments."""
    try:
        signature = inspect.signature(on_score)
    except (TypeError, ValueError):
        return  # a builtin or C callable: let the call itself tell
    try:
        signature.bind(lower_is_better, higher_is_better)
    except TypeError as exc:
        raise ScoringSpecError(
            f"on_score is called as on_score(lower_is_better, higher_is_better) and must "
            f"return a ScoringSpec; {getattr(on_score, '__name__', 'it')}{signature} "
            f"cannot take those two arguments ({exc})"
        ) from None


def scoring_problem(config: BenchmarkConfig) -> str | None:
    """What is wrong with the config's scoring, if anything (upstream's check validates
    ``on_score``'s spec too)."""
    try:
        spec = scoring_spec_of(config)
        if spec is not None:
            validate_scoring_spec(spec)
    except Exception as exc:
        return str(exc)
    return None


def _strings(value: Any) -> Iterable[str]:
    """Every string in a JSON value, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


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

    def redacted(self, secrets: Sequence[str]) -> RecordPayload:
        """This payload with every secret in its record and log lines replaced by
        :data:`REDACTED` (itself when none occurs)."""
        if not secrets:
            return self
        wire = self.record.to_wire()
        record = self.record
        if _contains_secret(_strings(wire), secrets):
            record = TaskRecord.from_wire(redact_value(wire, secrets), warmup=self.task_index < 0)
        log = self.log
        if _contains_secret((text for _, text in log), secrets):
            log = tuple((level, redact_text(text, secrets)) for level, text in log)
        if record is self.record and log is self.log:
            return self
        return attrs.evolve(self, record=record, log=log)

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
            record=TaskRecord.from_wire(data["record"], warmup=int(data["task_index"]) < 0),
            log=tuple((str(level), str(text)) for level, text in data.get("log", ())),
        )


def record_phase(record: TaskRecord) -> object:
    """The record's phase (``data["phase"]``, set by the plugin; None without phases)."""
    data = record.data
    return data.get("phase") if isinstance(data, Mapping) else None


#: ``(succeeded, latency_ms or None, phase)`` of one record: what the summary table reads.
RecordSample = tuple[bool, float | None, object]


def _reads_back_unchanged(record: TaskRecord) -> bool:
    """Whether the store gives the record back as it is. JSON has no NaN or Infinity (the
    store writes null, as JSON.stringify): a record measuring one is also kept in memory, so
    ``on_complete`` and scoring see the value the task measured."""
    datas = [step.data for step in record.steps or () if step.data is not None]
    if record.data is not None:
        datas.append(record.data)
    if not datas:
        return True
    try:
        json.dumps(datas, allow_nan=False)
    except (ValueError, TypeError):
        return False
    return True


class RecordTally:
    """What the controller keeps of one participant's records while its run goes on, instead
    of the records themselves (those are in the store): per task index whether a record came,
    whether its status was ``success``, its latency and its phase. About 20 bytes a record and
    no object per record (a record object with its step and timestamps is ~0.5 KiB, and every
    one of them is more work for each full garbage collection). A re-delivered record replaces
    the earlier one, as in the store."""

    __slots__ = ("_has_latency", "_latency", "_ok", "_phase", "_present", "count", "failed")

    def __init__(self) -> None:
        self._present = bytearray()
        self._ok = bytearray()
        self._has_latency = bytearray()
        self._latency = array("d")
        self._phase: list[object] = []
        #: Records received (distinct task indexes), and how many of them did not succeed.
        self.count = 0
        self.failed = 0

    def add(self, record: TaskRecord) -> None:
        index = record.task_index
        missing = index + 1 - len(self._present)
        if missing > 0:
            self._present.extend(bytes(missing))
            self._ok.extend(bytes(missing))
            self._has_latency.extend(bytes(missing))
            self._latency.extend([math.nan] * missing)
            self._phase.extend([None] * missing)
        if self._present[index]:
            self.failed -= not self._ok[index]
        else:
            self._present[index] = 1
            self.count += 1
        ok = record.status == "success"
        self._ok[index] = ok
        self.failed += not ok
        latency = record.latency_ms
        # What the summary table reads as a latency: a number (bool is no number here).
        has_latency = isinstance(latency, (int, float)) and not isinstance(latency, bool)
        self._has_latency[index] = has_latency
        self._latency[index] = float(latency) if has_latency else math.nan  # type: ignore[arg-type]
        self._phase[index] = record_phase(record)

    def samples(self) -> Iterator[RecordSample]:
        """``(succeeded, latency_ms or None, phase)`` of each record, by task index."""
        for index, present in enumerate(self._present):
            if present:
                yield (
                    bool(self._ok[index]),
                    self._latency[index] if self._has_latency[index] else None,
                    self._phase[index],
                )


@attrs.define
class BenchmarkRun:
    """One bench file's run on the controller: what was selected, what came back, the scores.

    Records go to the store as they arrive; the run keeps a :class:`RecordTally` per
    participant (counts, statuses, latencies, phases: what the terminal's table and the run's
    status need) and, in ``records``, only records the store does not hold (no store, or it
    failed). Scoring, ``on_complete`` and ``--bench-json`` read every record back through
    ``stored_records`` (the store's records of this run) plus ``records``.
    """

    file_key: str
    bench_file: BenchFile
    schedule: BenchmarkSchedule
    selected: dict[str, set[int]]
    local_run_id: str | None = None
    #: False when ``local_run_id`` names a run in a temporary outbox (``--bench-no-store``):
    #: ``on_complete`` then gets no ``store_run_id``.
    local_run_kept: bool = True
    platform_run_id: str | None = None
    dashboard_url: str = ""
    #: Records the store does not hold, per participant and task index.
    records: dict[str, dict[int, TaskRecord]] = attrs.Factory(dict)
    tallies: dict[str, RecordTally] = attrs.Factory(dict)
    #: Reads this run's stored records (set by the controller when the run is in a store).
    stored_records: Callable[[], Sequence[ParticipantRecords]] | None = None
    _read_back: tuple[ParticipantRecords, ...] | None = attrs.field(default=None, init=False)
    results: list[ScoreResult] | None = None
    #: With phases, each phase's rows scored like :attr:`results` on that phase's records
    #: alone (aggregate rows only; their composites are not shown): for the terminal's
    #: per-phase rows. Empty without phases or scoring.
    phase_results: dict[str, list[ScoreResult]] = attrs.Factory(dict)
    summary: dict[str, Any] | None = None
    errors: list[str] = attrs.Factory(list)
    #: Items of this run that failed without a failed record (setup or teardown errors, a
    #: crashed xdist worker, an item stopped by a BaseException).
    failed_items: int = 0
    #: ``--bench-compare``: the comparison with the baseline, or why there is none.
    comparison: BaselineComparison | None = None
    comparison_note: str | None = None
    #: Warm-up records per participant (negative task indices; never scored or reported).
    warmup_records: dict[str, list[TaskRecord]] = attrs.Factory(dict)
    #: The scoring spec the run was scored with (``on_score`` is called once per run).
    spec: ScoringSpec | None = None
    #: Each participant's score interval and rank stability (scored runs).
    uncertainty: list[ScoreUncertainty] | None = None
    #: Run-hygiene findings (:func:`~pytest_benchsdk.compare.run_warnings`).
    warnings: list[RunWarning] = attrs.Factory(list)

    @property
    def config(self) -> BenchmarkConfig:
        return self.schedule.config

    def status(self, interrupted: bool) -> str:
        """The store's run status: interrupted, failed (any failed record or item, or an
        error), passed."""
        if interrupted:
            return "interrupted"
        failed = any(tally.failed for tally in self.tallies.values())
        return "failed" if failed or self.errors or self.failed_items else "passed"

    @property
    def participants(self) -> list[str]:
        """Participants with selected items, in declared order."""
        return [name for name in self.schedule.participant_names if self.selected.get(name)]

    @property
    def total_tasks(self) -> int:
        return max((len(v) for v in self.selected.values()), default=0)

    def add(self, payload: RecordPayload, *, stored: bool = False) -> None:
        """Count one record; keep the record itself only when the store does not hold it as
        it is."""
        tally = self.tallies.get(payload.participant)
        if tally is None:
            tally = self.tallies[payload.participant] = RecordTally()
        tally.add(payload.record)
        if not stored or not _reads_back_unchanged(payload.record):
            self.records.setdefault(payload.participant, {})[payload.task_index] = payload.record
        self._read_back = None

    def received(self, participant: str) -> int:
        """Records of the participant so far (distinct task indexes)."""
        tally = self.tallies.get(participant)
        return 0 if tally is None else tally.count

    def participant_finished(self, participant: str) -> bool:
        """Every selected iteration of the participant has its record."""
        return self.received(participant) >= len(self.selected.get(participant, ()))

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
    def planned_tasks(self) -> int:
        """Iterations selected for this session, all participants together."""
        return sum(len(self.selected.get(name, ())) for name in self.participants)

    @property
    def done_tasks(self) -> int:
        """Iterations whose record arrived, all participants together."""
        return sum(self.received(name) for name in self.participants)

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

    def outcome(self) -> BenchmarkRunOutcome:
        return BenchmarkRunOutcome(
            run_id=self.platform_run_id or NO_INGEST_RUN_ID,
            dashboard_url=self.dashboard_url,
            participants=self.participant_records(),
            config=self.schedule.resolved,
            store_run_id=self.local_run_id if self.local_run_kept else None,
        )

    def config_snapshot(self, environment: RunEnvironment) -> dict[str, Any]:
        return run_config_to_json(
            self.config, self.schedule.resolved, self.participants, environment.trigger_to_wire()
        )

    def score(self) -> list[ScoreResult] | None:
        """Score rows of the records so far (None when the config declares no scoring).
        Raises :class:`ScoringSpecError` for a bad scoring spec.

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

    def estimate_uncertainty(self, resamples: int) -> None:
        """Bootstrap the scores (after :meth:`score`): :attr:`uncertainty`."""
        if self.results is None or self.spec is None or resamples <= 0:
            return
        display = self.config.display
        estimates = score_uncertainty(
            self.outcome(),
            self.spec,
            display_metrics=display.metrics if display is not None else None,
            resamples=resamples,
        )
        # The intervals are of upstream's scores: a pytest_benchsdk_scores hook that changed
        # them leaves intervals that would not contain what is shown, so there are none then.
        shown: dict[str, float] = {}
        for row in self.results:
            shown.setdefault(row.provider, row.composite_score)
        if all(u.skipped or shown.get(u.participant) == u.score for u in estimates):
            self.uncertainty = estimates

    def check_hygiene(self) -> None:
        """Run-hygiene warnings per participant on the compared metrics' samples in run
        order (the scored metrics, else the latency): :attr:`warnings`. The latency comes from
        the tallies; scored metrics need the records (read back from the store)."""
        findings: list[RunWarning] = []
        scored = self.spec is not None and bool(self.spec.metrics)
        for participant in self.participant_records() if scored else ():
            records = participant.records
            if records:
                assert self.spec is not None
                failed = sum(1 for r in records if r.status != "success")
                findings.extend(
                    run_warnings(
                        participant.participant,
                        metric_samples(self.spec, records),
                        iterations=len(records),
                        failed=failed,
                    )
                )
        for name in self.participants if not scored else ():
            tally = self.tallies.get(name)
            if tally is None or not tally.count:
                continue
            latencies = [lat for ok, lat, _ in tally.samples() if ok and lat is not None]
            findings.extend(
                run_warnings(
                    name,
                    {"latency_ms": latencies},
                    iterations=tally.count,
                    failed=tally.failed,
                )
            )
        self.warnings = findings

    def summary_payload(self, environment: RunEnvironment) -> dict[str, Any] | None:
        """The run summary for the platform (upstream §6.6), once the run is scored."""
        if self.results is None:
            return None
        payload: dict[str, Any] = {
            "run": environment.to_wire(),
            "results": [r.to_wire() for r in self.results],
        }
        if self.config.scoring is not None:
            payload["scoring"] = self.config.scoring.to_wire()
        return payload

    def to_json(self, environment: RunEnvironment) -> dict[str, Any]:
        """The run in ``--bench-json``."""
        return {
            "file": self.file_key,
            "benchmarkSlug": self.config.benchmark_slug,
            "benchmarkName": self.config.benchmark_name,
            "localRunId": self.local_run_id,
            "runId": self.platform_run_id,
            "dashboardUrl": self.dashboard_url or None,
            "config": self.config_snapshot(environment),
            "skipped": [s.to_wire() for s in self.schedule.skipped],
            "participants": [
                {"participant": pr.participant, "records": [r.to_wire() for r in pr.records]}
                for pr in self.participant_records()
            ],
            "scores": None if self.results is None else [r.to_wire() for r in self.results],
            "summary": self.summary,
            "warmup": [
                {
                    "participant": name,
                    "records": [
                        {**r.to_wire(), "warmup": True}
                        for r in sorted(records, key=lambda r: r.task_index)
                    ],
                }
                for name, records in self.warmup_records.items()
            ],
            "comparison": self._comparison_json(),
            "uncertainty": None
            if self.uncertainty is None
            else [u.to_json() for u in self.uncertainty],
            "warnings": [w.to_json() for w in self.warnings],
            "errors": list(self.errors),
        }

    def _comparison_json(self) -> dict[str, Any] | None:
        if self.comparison is not None:
            return self.comparison.to_json()
        return {"note": self.comparison_note} if self.comparison_note else None
