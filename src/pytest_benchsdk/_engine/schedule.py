"""The implementation behind :mod:`pytest_benchsdk.schedule` (its docstring says what it is)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from pytest_benchsdk._base.js import py_value
from pytest_benchsdk._config.models import BenchmarkConfig, Participant
from pytest_benchsdk._config.thresholds import (
    SCORE_KEY,
    Threshold,
    thresholds_per_phase,
    unknown_phase_problem,
)
from pytest_benchsdk._config.validate import (
    ITERATIONS_WHY,
    MAX_CONCURRENCY,
    MAX_ITERATIONS,
    MAX_STAGGER_DELAY_MS,
)
from pytest_benchsdk.records import ParticipantRecords

__all__ = [
    "CPU_TIME_NOT_ATTRIBUTABLE",
    "GROUP_BY_VALUES",
    "SLUG_PATTERN",
    "BenchmarkRunOutcome",
    "BenchmarkSchedule",
    "NoAvailableParticipantsError",
    "PhaseWarmup",
    "ResolvedRunConfig",
    "RunArgs",
    "SkippedParticipant",
    "Slot",
    "UnknownParticipantError",
    "UnknownShapeError",
    "apply_shape",
    "build_schedule",
    "build_warmup",
    "build_warmup_plan",
    "filter_participants_by_env",
    "identity_is_ours",
    "is_cold_phase",
    "is_env_no_ingest",
    "merge_config",
    "run_config_to_json",
    "schedule_benchmark",
    "schedule_order",
    "select_participants",
]

GROUP_BY_VALUES = ("participant", "round")
SLUG_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]*$")
#: Upstream's warning, naming our option (upstream: ``--iterations is ignored ...``).
UNEVEN_PHASES_WARNING = (
    "--bench-iterations is ignored because this benchmark sizes its phases individually."
)
#: Said once per run of an async task whose iterations overlap (``{n}``: the concurrency).
CPU_TIME_NOT_ATTRIBUTABLE = (
    "cpu_ms is not recorded: this async task runs up to {n} iterations at a time on one "
    "event loop, so the process's CPU time cannot be told apart per iteration (with "
    "concurrency 1 each iteration records it; a sync task records its thread's CPU time at "
    "any concurrency)"
)
#: Upstream's error for a worker pool in round mode, with our option names.
WORKER_POOL_ROUND_ERROR = "--bench-worker-pool is only supported with --bench-group-by participant"


@attrs.frozen
class RunArgs:
    """Command-line overrides of one run (upstream ``CliArgs``), already validated."""

    benchmark: str | None = None
    name: str | None = None
    shape: str | None = None
    run_key: str | None = None
    iterations: int | None = None
    concurrency: int | None = None
    stagger_delay_ms: float | None = None
    group_by: str | None = None
    providers: tuple[str, ...] | None = None
    no_ingest: bool = False
    worker_pool: int | None = None
    close_after_ms: float | None = None
    #: ``--bench-threshold``: added to every benchmark's own thresholds.
    thresholds: tuple[Threshold, ...] = ()
    #: ``--bench-warmup``: overrides the config's ``warmup``.
    warmup: int | None = None
    #: ``--bench-phase-iterations``: ``(phase, iterations)`` for the phases it names.
    phase_sizes: tuple[tuple[str, int], ...] = ()


@attrs.frozen
class ResolvedRunConfig:
    """The knobs a run actually uses (upstream ``ResolvedRunConfig``)."""

    iterations: int
    concurrency: int
    stagger_delay_ms: float
    group_by: str
    providers: tuple[str, ...] | None = None
    phase_iterations: int | None = None
    #: The pooled run's close deadline: the option, else the config's (not a knob).
    close_after_ms: float | None = None
    #: Warm-up iterations per participant (per phase), never scored.
    warmup: int = 0
    #: Each phase's iterations when ``--bench-phase-iterations`` sized any (else empty: the
    #: config's sizes, or ``phase_iterations``).
    phase_counts: tuple[tuple[str, int], ...] = ()

    def phase_count(self, name: str, configured: int) -> int:
        """How many iterations the phase ``name`` (``configured`` in the config) runs."""
        for phase, count in self.phase_counts:
            if phase == name:
                return count
        return self.phase_iterations if self.phase_iterations is not None else configured

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "iterations": self.iterations,
            "concurrency": self.concurrency,
            "staggerDelayMs": self.stagger_delay_ms,
            "groupBy": self.group_by,
        }
        if self.phase_iterations is not None:
            wire["phaseIterations"] = self.phase_iterations
        if self.providers is not None:
            wire["providers"] = list(self.providers)
        if self.warmup:
            wire["warmup"] = self.warmup
        return wire


@attrs.frozen
class Slot:
    """One scheduled iteration: its 0-based schedule index (``task_index``) and phase.

    A warm-up slot (``warmup``) runs right before its phase's measured ones (without phases:
    before all of them) and is never scored, compared or reported to the platform; its index
    is negative (``-N … -1`` per participant), so it never collides with a measured iteration,
    and ``warmup_ordinal`` counts it from 0 within its phase (its item name).
    """

    index: int
    phase: str | None = None
    warmup: bool = False
    warmup_ordinal: int | None = None


#: A phase whose name says it is measured cold (``cold``, ``Cold start``, ``cold_start``,
#: ``coldstart``; not ``scold``): it gets no warm-up unless the phase asks for one.
_COLD_NAME = re.compile(r"(?<![a-z])cold", re.IGNORECASE)


def is_cold_phase(name: str) -> bool:
    """Whether a phase's name marks it as measured cold (no warm-up by default)."""
    return _COLD_NAME.search(name) is not None


@attrs.frozen
class PhaseWarmup:
    """The warm-up iterations each participant runs right before one phase (``phase`` None:
    a benchmark without phases), and where the count comes from: ``"phase"`` (the phase's
    own ``warmup``), ``"default"`` (the config's ``warmup`` or ``--bench-warmup``) or
    ``"cold"`` (a cold-named phase, which gets none unless it asks)."""

    phase: str | None
    count: int
    source: str


@attrs.frozen
class SkippedParticipant:
    """A participant left out because required environment variables are unset or empty."""

    name: str
    missing: tuple[str, ...]

    @property
    def reason(self) -> str:
        return f"{self.name}: missing {', '.join(self.missing)}"

    def to_wire(self) -> dict[str, Any]:
        return {"name": self.name, "missing": list(self.missing)}


@attrs.frozen
class BenchmarkRunOutcome:
    """What ``on_complete`` receives and ``score`` reads (upstream ``BenchmarkRunOutcome``).

    ``run_id`` is upstream's (the platform's run, ``"no-ingest"`` when nothing reached it);
    ``store_run_id`` (keyword only, ours) is the run's id in the local results store, for
    ``ResultStore(...).participant_records(outcome.store_run_id)``; None with
    ``--bench-no-store`` (or when the outcome was not built by the plugin).
    """

    run_id: str
    dashboard_url: str
    participants: tuple[ParticipantRecords, ...]
    config: ResolvedRunConfig
    store_run_id: str | None = attrs.field(default=None, kw_only=True)


class UnknownParticipantError(ValueError):
    """``--bench-provider`` names a participant the benchmark does not declare."""

    def __init__(self, unknown: Sequence[str], available: Sequence[str]) -> None:
        self.unknown = tuple(unknown)
        self.available = tuple(available)
        super().__init__(
            f"Unknown participant(s): {', '.join(unknown)}. Available: {', '.join(available)}"
        )


class UnknownShapeError(ValueError):
    """``--bench-shape`` names a shape the benchmark does not declare."""


class NoAvailableParticipantsError(RuntimeError):
    """No selected participant has its required environment variables set."""

    def __init__(self, skipped: Sequence[SkippedParticipant]) -> None:
        self.skipped = tuple(skipped)
        message = "No participants have their required env vars set \u2014 nothing to run"
        if skipped:
            message += f" (skipped: {', '.join(s.name for s in skipped)})"
        super().__init__(message + ".")


def is_env_no_ingest(environ: Mapping[str, str]) -> bool:
    """``BENCHSDK_NO_INGEST`` set to ``1`` or ``true`` (any case) means dry run."""
    value = environ.get("BENCHSDK_NO_INGEST", "").strip().lower()
    return value in ("1", "true")


# -- identity and knobs ----------------------------------------------------------------------


def apply_shape(
    config: BenchmarkConfig, args: RunArgs, *, shape_flag: str = "--bench-shape"
) -> BenchmarkConfig:
    """Apply ``--bench-shape`` and then the ``--bench-benchmark`` / ``--bench-name`` overrides."""
    if args.shape is not None:
        shapes = config.shapes or {}
        shape = shapes.get(args.shape)
        if shape is None:
            if shapes:
                raise UnknownShapeError(
                    f'Unknown {shape_flag} "{args.shape}". Known shapes: {", ".join(shapes)}.'
                )
            raise UnknownShapeError(
                f'Unknown {shape_flag} "{args.shape}": this benchmark declares no shapes.'
            )
        changes: dict[str, Any] = {
            "benchmark_slug": shape.slug,
            "benchmark_name": shape.name if shape.name is not None else shape.slug,
        }
        if shape.stagger_delay_ms is not None:
            changes["stagger_delay_ms"] = shape.stagger_delay_ms
        config = attrs.evolve(config, **changes)
    if args.benchmark is not None:
        config = attrs.evolve(config, benchmark_slug=args.benchmark)
    if args.name is not None:
        config = attrs.evolve(config, benchmark_name=args.name)
    return config


def identity_is_ours(file_config: BenchmarkConfig, args: RunArgs) -> bool:
    """Whether this run may (re)name the benchmark on the platform."""
    return (
        args.shape is not None
        or args.name is not None
        or args.benchmark is None
        or args.benchmark == file_config.benchmark_slug
    )


def merge_config(config: BenchmarkConfig, args: RunArgs) -> tuple[ResolvedRunConfig, list[str]]:
    """Resolve the run's knobs (upstream ``mergeConfig``); returns the knobs and warnings."""
    warnings: list[str] = []
    phases = config.phases
    phase_iterations: int | None = None
    phase_counts: tuple[tuple[str, int], ...] = ()
    if phases:
        uneven = any(p.iterations != phases[0].iterations for p in phases)
        if uneven and args.iterations is not None:
            warnings.append(UNEVEN_PHASES_WARNING)
        if not uneven:
            phase_iterations = args.iterations
        if phase_iterations is not None:
            iterations = phase_iterations * len(phases)
        else:
            iterations = sum(p.iterations for p in phases)
        sizes = dict(args.phase_sizes)
        if any(p.name in sizes for p in phases):
            base = [p.iterations if phase_iterations is None else phase_iterations for p in phases]
            phase_counts = tuple(
                (p.name, sizes.get(p.name, size)) for p, size in zip(phases, base, strict=True)
            )
            phase_iterations = None
            iterations = sum(count for _, count in phase_counts)
    else:
        iterations = (
            args.iterations
            if args.iterations is not None
            else (config.iterations if config.iterations is not None else 1)
        )
    concurrency = _first(args.concurrency, config.concurrency, 1)
    stagger = _first(args.stagger_delay_ms, config.stagger_delay_ms, 0)
    group_by = _first(args.group_by, config.group_by, "participant")
    providers = args.providers if args.providers is not None else config.default_providers
    if args.worker_pool is not None and group_by == "round":
        raise ValueError(WORKER_POOL_ROUND_ERROR)
    if not (isinstance(iterations, int) and iterations >= 1):
        raise ValueError(f"iterations must be an integer >= 1 (got {py_value(iterations)})")
    if iterations > MAX_ITERATIONS:
        where = (
            f" ({len(phases)} phases of {phase_iterations:,})"
            if phases and phase_iterations
            else ""
        )
        raise ValueError(
            f"iterations must be at most {MAX_ITERATIONS:,} per participant "
            f"(got {iterations:,}{where}): {ITERATIONS_WHY}"
        )
    if not (isinstance(concurrency, int) and concurrency >= 1):
        raise ValueError(f"concurrency must be an integer >= 1 (got {py_value(concurrency)})")
    if concurrency > MAX_CONCURRENCY:
        raise ValueError(f"concurrency must be at most {MAX_CONCURRENCY:,} (got {concurrency:,})")
    if not (0 <= stagger <= MAX_STAGGER_DELAY_MS):
        raise ValueError(
            f"stagger_delay_ms must be a number from 0 to {MAX_STAGGER_DELAY_MS:,} "
            f"(one hour; got {py_value(stagger)})"
        )
    resolved = ResolvedRunConfig(
        iterations=iterations,
        concurrency=concurrency,
        stagger_delay_ms=stagger,
        group_by=group_by,
        providers=tuple(providers) if providers is not None else None,
        phase_iterations=phase_iterations,
        close_after_ms=(
            args.close_after_ms if args.close_after_ms is not None else config.close_after_ms
        ),
        warmup=_first(args.warmup, config.warmup, 0),
        phase_counts=phase_counts,
    )
    return resolved, warnings


def _first(*values: Any) -> Any:
    return next(v for v in values if v is not None)


# -- participants ----------------------------------------------------------------------------


def select_participants(
    participants: Sequence[Participant], names: Sequence[str] | None
) -> list[Participant]:
    """The participants named (all when ``names`` is None), in declared order."""
    if names is None:
        return list(participants)
    declared = [p.name for p in participants]
    unknown = [n for n in dict.fromkeys(names) if n not in declared]
    if unknown:
        raise UnknownParticipantError(unknown, declared)
    wanted = set(names)
    return [p for p in participants if p.name in wanted]


def filter_participants_by_env(
    participants: Sequence[Participant], environ: Mapping[str, str]
) -> tuple[list[Participant], list[SkippedParticipant]]:
    """Split participants into those whose required env vars are set (non-empty) and the rest."""
    available: list[Participant] = []
    skipped: list[SkippedParticipant] = []
    for participant in participants:
        missing = tuple(v for v in participant.required_env_vars if not environ.get(v))
        if missing:
            skipped.append(SkippedParticipant(participant.name, missing))
        else:
            available.append(participant)
    return available, skipped


# -- schedule --------------------------------------------------------------------------------


def build_warmup_plan(
    config: BenchmarkConfig, resolved: ResolvedRunConfig
) -> tuple[PhaseWarmup, ...]:
    """How many warm-up iterations run before each phase (one entry without phases).

    A phase's own ``warmup`` wins; otherwise the default (``warmup`` / ``--bench-warmup``)
    applies, except to a cold-named phase (:func:`is_cold_phase`), which is measured cold.
    """
    default = resolved.warmup
    if not config.phases:
        return (PhaseWarmup(None, default, "default"),)
    plan: list[PhaseWarmup] = []
    for phase in config.phases:
        if phase.warmup is not None:
            plan.append(PhaseWarmup(phase.name, phase.warmup, "phase"))
        elif is_cold_phase(phase.name):
            plan.append(PhaseWarmup(phase.name, 0, "cold"))
        else:
            plan.append(PhaseWarmup(phase.name, default, "default"))
    return tuple(plan)


def build_warmup(config: BenchmarkConfig, resolved: ResolvedRunConfig) -> tuple[Slot, ...]:
    """Each participant's warm-up slots, in phase order, indices ``-N … -1`` (N: all phases'
    warm-up together); :meth:`BenchmarkSchedule.items` runs each phase's right before it."""
    plan = build_warmup_plan(config, resolved)
    index = -sum(entry.count for entry in plan)
    slots: list[Slot] = []
    for entry in plan:
        for ordinal in range(entry.count):
            slots.append(Slot(index, entry.phase, warmup=True, warmup_ordinal=ordinal))
            index += 1
    return tuple(slots)


def build_schedule(config: BenchmarkConfig, resolved: ResolvedRunConfig) -> tuple[Slot, ...]:
    """Each participant's slots: phases in order (each sized by ``phase_iterations`` when set)."""
    if config.phases:
        slots: list[Slot] = []
        for phase in config.phases:
            count = resolved.phase_count(phase.name, phase.iterations)
            start = len(slots)
            slots.extend(Slot(start + i, phase.name) for i in range(count))
        return tuple(slots)
    return tuple(Slot(i) for i in range(resolved.iterations))


def schedule_order(
    participants: Sequence[str], slots: Sequence[Slot], group_by: str
) -> list[tuple[str, Slot]]:
    """Item order: participant-major by default, round-major with ``group_by="round"``."""
    if group_by == "round":
        return [(p, slot) for slot in slots for p in participants]
    return [(p, slot) for p in participants for slot in slots]


def run_config_to_json(
    config: BenchmarkConfig,
    resolved: ResolvedRunConfig,
    participants: Sequence[str],
    trigger: Mapping[str, Any],
) -> dict[str, Any]:
    """The run-config snapshot sent at run creation (upstream ``runConfigToJson``)."""
    snapshot: dict[str, Any] = {
        "benchmarkSlug": config.benchmark_slug,
        "benchmarkName": config.benchmark_name,
    }
    if resolved.phase_iterations is not None:
        snapshot["phaseIterations"] = resolved.phase_iterations
    if config.phases:
        snapshot["phases"] = [
            {
                "name": p.name,
                "iterations": resolved.phase_count(p.name, p.iterations),
            }
            for p in config.phases
        ]
    else:
        snapshot["iterations"] = resolved.iterations
    snapshot["concurrency"] = resolved.concurrency
    snapshot["staggerDelayMs"] = resolved.stagger_delay_ms
    snapshot["groupBy"] = resolved.group_by
    if config.dimensions is not None:
        snapshot["dimensions"] = dict(config.dimensions)
    if config.scoring is not None:
        snapshot["scoring"] = config.scoring.to_wire()
    # Upstream sends the file's value only, so --close-after-ms alone never reaches the run
    # config; the resolved value is the one the run closes with.
    if resolved.close_after_ms is not None:
        snapshot["closeAfterMs"] = resolved.close_after_ms
    snapshot["participants"] = list(participants)
    snapshot["trigger"] = dict(trigger)
    return snapshot


@attrs.frozen
class BenchmarkSchedule:
    """Everything one bench file will run, resolved from its config, the options and the env.

    The collecting process and the controller (also under xdist) derive the same schedule from the
    same inputs, so item ids, groups and totals agree everywhere.
    """

    file_config: BenchmarkConfig
    config: BenchmarkConfig
    args: RunArgs
    resolved: ResolvedRunConfig
    warnings: tuple[str, ...]
    participants: tuple[Participant, ...]
    skipped: tuple[SkippedParticipant, ...]
    slots: tuple[Slot, ...]
    #: Warm-up slots (never scored), in phase order; empty without warm-up.
    warmup: tuple[Slot, ...] = ()
    #: The benchmark's thresholds, then ``--bench-threshold``'s; with phases, one that names
    #: none is one per phase.
    thresholds: tuple[Threshold, ...] = ()
    #: Per phase (one entry without phases): how many warm-up iterations run before it.
    warmup_plan: tuple[PhaseWarmup, ...] = ()

    @property
    def participant_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.participants)

    @property
    def requested(self) -> tuple[str, ...]:
        """Selected participants before the env filter, in declared order."""
        # One set of both: membership in the names tuple would cost participants^2.
        kept = {s.name for s in self.skipped}.union(self.participant_names)
        return tuple(p.name for p in self.file_config.participants if p.name in kept)

    @property
    def identity_is_ours(self) -> bool:
        return identity_is_ours(self.file_config, self.args)

    def items(self) -> list[tuple[str, Slot, SkippedParticipant | None]]:
        """Every (participant, slot) in run order, with the skip reason of skipped participants.

        Participant-major by default, round-major with ``group_by="round"``.
        """
        skipped = {s.name: s for s in self.skipped}
        order = schedule_order(self.requested, self.sequence, self.resolved.group_by)
        return [(name, slot, skipped.get(name)) for name, slot in order]

    @property
    def sequence(self) -> tuple[Slot, ...]:
        """One participant's slots in run order: each phase's warm-up right before that
        phase's measured iterations (without phases: the warm-up, then the iterations)."""
        if not self.warmup:
            return self.slots
        ordered: list[Slot] = []
        phases = [p.name for p in self.config.phases] if self.config.phases else [None]
        for phase in phases:
            ordered.extend(slot for slot in self.warmup if slot.phase == phase)
            ordered.extend(slot for slot in self.slots if slot.phase == phase)
        return tuple(ordered)

    @property
    def grouping_reasons(self) -> tuple[str, ...]:
        """Why this benchmark needs each participant's items (each round, in round mode) in
        one process, as a reader would say it; empty when items may run anywhere."""
        reasons: list[str] = []
        if self.resolved.concurrency > 1:
            reasons.append(f"concurrency {self.resolved.concurrency}")
        if self.thresholds:
            reasons.append("thresholds")
        if self.warmup:
            reasons.append("warm-up")
        return tuple(reasons)


def schedule_benchmark(
    file_config: BenchmarkConfig,
    args: RunArgs,
    environ: Mapping[str, str],
    *,
    providers: Sequence[str] | None = None,
    flags: str = "--bench-",
    is_async: bool = False,
) -> BenchmarkSchedule:
    """Resolve shape, knobs, participants (``providers`` overrides ``args.providers``).
    ``flags``: how the messages name the run flags (``--bench-iterations`` under pytest,
    upstream's ``--iterations`` with ``flags="--"`` for the programmatic runs). ``is_async``:
    the task is a coroutine function (its CPU time is not attributable with concurrency > 1,
    which the schedule's warnings say once)."""

    def named(text: str) -> str:
        return text if flags == "--bench-" else text.replace("--bench-", flags)

    config = apply_shape(file_config, args, shape_flag=f"{flags}shape")
    try:
        resolved, warnings = merge_config(config, args)
    except ValueError as exc:
        if flags == "--bench-":
            raise
        raise ValueError(named(str(exc))) from None
    warnings = [named(warning) for warning in warnings]
    if is_async and resolved.concurrency > 1:
        warnings.append(CPU_TIME_NOT_ATTRIBUTABLE.format(n=resolved.concurrency))
    names = providers if providers is not None else resolved.providers
    selected = select_participants(config.participants, names)
    available, skipped = filter_participants_by_env(selected, environ)
    phases = [p.name for p in config.phases or ()]
    # A --bench-threshold that names a phase this benchmark lacks is meant for another
    # collected benchmark (the session says when no benchmark has it).
    cli = [t for t in args.thresholds if unknown_phase_problem(t, phases) is None]
    thresholds = thresholds_per_phase((*(config.thresholds or ()), *cli), phases)
    if (
        any(t.metric == SCORE_KEY for t in thresholds)
        and config.scoring is None
        and (config.on_score is None)
    ):
        raise ValueError(
            "--bench-threshold score: needs config.scoring or config.on_score (nothing is scored)"
        )
    return BenchmarkSchedule(
        file_config=file_config,
        config=config,
        args=args,
        resolved=resolved,
        warnings=tuple(warnings),
        participants=tuple(available),
        skipped=tuple(skipped),
        slots=build_schedule(config, resolved),
        warmup=build_warmup(config, resolved),
        thresholds=thresholds,
        warmup_plan=build_warmup_plan(config, resolved),
    )
