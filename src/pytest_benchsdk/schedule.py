"""Run knobs, participant selection and the iteration schedule (upstream ``mergeConfig``).

Everything here is pure: the plugin feeds in the file's config, the command-line overrides and
the environment, and gets back what to run, in which order, with upstream's rules and messages.
"""

from __future__ import annotations

from pytest_benchsdk._base.public import publish
from pytest_benchsdk._engine.schedule import (
    GROUP_BY_VALUES,
    SLUG_PATTERN,
    BenchmarkRunOutcome,
    BenchmarkSchedule,
    NoAvailableParticipantsError,
    PhaseWarmup,
    ResolvedRunConfig,
    RunArgs,
    SkippedParticipant,
    Slot,
    UnknownParticipantError,
    UnknownShapeError,
    apply_shape,
    build_schedule,
    build_warmup,
    build_warmup_plan,
    filter_participants_by_env,
    identity_is_ours,
    is_cold_phase,
    is_env_no_ingest,
    merge_config,
    run_config_to_json,
    schedule_benchmark,
    schedule_order,
    select_participants,
)

__all__ = [
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

publish(__name__, globals())
