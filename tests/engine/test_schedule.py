"""Knob resolution, participant selection and schedules: upstream's mergeConfig and friends."""

from __future__ import annotations

import pytest

from pytest_benchsdk._engine.flag_values import (
    parse_group_by,
    parse_non_negative_number,
    parse_positive_int,
    parse_providers,
    parse_slug,
    parse_text,
)
from pytest_benchsdk._engine.schedule import (
    UNEVEN_PHASES_WARNING,
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
from pytest_benchsdk.config import Participant, Phase, define_benchmark_config

PARTICIPANTS = [{"name": "e2b"}, {"name": "modal"}]


def config(**fields: object):  # type: ignore[no-untyped-def]
    base: dict[str, object] = {
        "benchmark_slug": "sandbox-tti-local",
        "benchmark_name": "Sandbox TTI",
        "participants": PARTICIPANTS,
    }
    base.update(fields)
    return define_benchmark_config(base)


# -- mergeConfig (upstream runner.test.ts) ---------------------------------------------------


def test_merge_defaults_from_config() -> None:
    resolved, warnings = merge_config(config(iterations=100, concurrency=1), RunArgs())
    assert resolved == ResolvedRunConfig(
        iterations=100, concurrency=1, stagger_delay_ms=0, group_by="participant"
    )
    assert resolved.providers is None
    assert resolved.phase_iterations is None
    assert warnings == []


def test_merge_cli_wins() -> None:
    args = RunArgs(
        iterations=5, concurrency=5, stagger_delay_ms=200, group_by="round", providers=("e2b",)
    )
    resolved, _ = merge_config(config(iterations=100, concurrency=1), args)
    assert resolved == ResolvedRunConfig(5, 5, 200, "round", ("e2b",))


def test_merge_bare_config() -> None:
    resolved, _ = merge_config(config(), RunArgs())
    assert (resolved.iterations, resolved.concurrency, resolved.stagger_delay_ms) == (1, 1, 0)
    assert resolved.group_by == "participant"


def test_merge_group_by_and_default_providers() -> None:
    resolved, _ = merge_config(config(group_by="round", default_providers=["e2b"]), RunArgs())
    assert resolved.group_by == "round"
    assert resolved.providers == ("e2b",)
    resolved, _ = merge_config(config(default_providers=["e2b"]), RunArgs(providers=("modal",)))
    assert resolved.providers == ("modal",)


def test_merge_even_phases_scale_with_iterations() -> None:
    phased = config(phases=[{"name": "1MB", "iterations": 2}, {"name": "16MB", "iterations": 2}])
    resolved, _ = merge_config(phased, RunArgs())
    assert (resolved.iterations, resolved.phase_iterations) == (4, None)
    resolved, warnings = merge_config(phased, RunArgs(iterations=10))
    assert (resolved.iterations, resolved.phase_iterations) == (20, 10)
    assert warnings == []
    assert [s.phase for s in build_schedule(phased, resolved)] == ["1MB"] * 10 + ["16MB"] * 10


def test_merge_uneven_phases_ignore_iterations_with_warning() -> None:
    uneven = config(phases=[{"name": "cold", "iterations": 3}, {"name": "warm", "iterations": 2}])
    resolved, warnings = merge_config(uneven, RunArgs(iterations=99))
    assert (resolved.iterations, resolved.phase_iterations) == (5, None)
    assert warnings == [UNEVEN_PHASES_WARNING]
    assert UNEVEN_PHASES_WARNING == (
        "--bench-iterations is ignored because this benchmark sizes its phases individually."
    )


def test_schedule_indices_and_phases() -> None:
    phased = config(phases=[{"name": "cold", "iterations": 2}, {"name": "warm", "iterations": 1}])
    resolved, _ = merge_config(phased, RunArgs())
    assert build_schedule(phased, resolved) == (
        Slot(0, "cold"),
        Slot(1, "cold"),
        Slot(2, "warm"),
    )
    plain = config(iterations=3)
    assert build_schedule(plain, merge_config(plain, RunArgs())[0]) == (Slot(0), Slot(1), Slot(2))


def test_schedule_order_participant_and_round() -> None:
    slots = [Slot(0), Slot(1)]
    assert schedule_order(["e2b", "modal"], slots, "participant") == [
        ("e2b", Slot(0)),
        ("e2b", Slot(1)),
        ("modal", Slot(0)),
        ("modal", Slot(1)),
    ]
    assert schedule_order(["e2b", "modal"], slots, "round") == [
        ("e2b", Slot(0)),
        ("modal", Slot(0)),
        ("e2b", Slot(1)),
        ("modal", Slot(1)),
    ]


# -- option values (upstream parseCliArgs messages) ------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"), [("10", 10), (" 7 ", 7), ("0x10", 16), ("1e2", 100), ("3.0", 3)]
)
def test_positive_int_js_number(value: str, expected: int) -> None:
    assert parse_positive_int("--bench-iterations", value) == expected


@pytest.mark.parametrize("value", ["abc", "-3", "1.5", "0", "Infinity", "-0x10"])
def test_positive_int_rejects(value: str) -> None:
    with pytest.raises(ValueError, match="--bench-iterations") as info:
        parse_positive_int("--bench-iterations", value)
    assert str(info.value) == f'--bench-iterations expects an integer >= 1 (got "{value}")'


def test_blank_values() -> None:
    for parse in (parse_positive_int, parse_non_negative_number, parse_text):
        with pytest.raises(ValueError, match=r"^--flag expects a value$"):
            parse("--flag", " ")


def test_non_negative_number() -> None:
    assert parse_non_negative_number("--bench-stagger-delay-ms", "250") == 250
    assert parse_non_negative_number("--bench-stagger-delay-ms", "0.5") == 0.5
    with pytest.raises(ValueError) as info:
        parse_non_negative_number("--bench-stagger-delay-ms", "-1")
    assert str(info.value) == '--bench-stagger-delay-ms expects a number >= 0 (got "-1")'


def test_slug_and_group_by() -> None:
    assert parse_slug("--bench-benchmark", "sandbox-burst-local") == "sandbox-burst-local"
    with pytest.raises(ValueError) as info:
        parse_slug("--bench-benchmark", "Sandbox TTI")
    assert str(info.value) == (
        '--bench-benchmark expects a lowercase benchmark slug (got "Sandbox TTI")'
    )
    assert parse_group_by("--bench-group-by", "round") == "round"
    with pytest.raises(ValueError) as info:
        parse_group_by("--bench-group-by", "nope")
    assert str(info.value) == "--bench-group-by expects 'participant' or 'round' (got \"nope\")"


def test_providers_accumulate() -> None:
    assert parse_providers(["e2b, modal", "daytona", " ,"]) == ("e2b", "modal", "daytona")


@pytest.mark.parametrize(
    ("value", "expected"),
    [("1", True), ("true", True), ("TRUE", True), ("0", False), ("yes", False), ("", False)],
)
def test_env_no_ingest(value: str, expected: bool) -> None:
    assert is_env_no_ingest({"BENCHSDK_NO_INGEST": value}) is expected


# -- participants ----------------------------------------------------------------------------


def test_select_participants_in_declared_order() -> None:
    ps = [Participant("a"), Participant("b"), Participant("c")]
    assert select_participants(ps, None) == ps
    assert [p.name for p in select_participants(ps, ["c", "a"])] == ["a", "c"]
    with pytest.raises(UnknownParticipantError) as info:
        select_participants(ps[:2], ["c"])
    assert str(info.value) == "Unknown participant(s): c. Available: a, b"
    assert select_participants(ps, []) == []


def test_filter_by_env_treats_empty_as_missing() -> None:
    ps = [
        Participant("local"),
        Participant("ready", required_env_vars=["SET_VAR"]),
        Participant("missing", required_env_vars=["SET_VAR", "EMPTY_VAR", "UNSET_VAR"]),
    ]
    available, skipped = filter_participants_by_env(ps, {"SET_VAR": "x", "EMPTY_VAR": ""})
    assert [p.name for p in available] == ["local", "ready"]
    assert skipped == [SkippedParticipant("missing", ("EMPTY_VAR", "UNSET_VAR"))]
    assert skipped[0].reason == "missing: missing EMPTY_VAR, UNSET_VAR"


def test_no_available_participants_message() -> None:
    error = NoAvailableParticipantsError(
        [SkippedParticipant("e2b", ("E2B_API_KEY",)), SkippedParticipant("modal", ("X",))]
    )
    assert str(error) == (
        "No participants have their required env vars set \u2014 nothing to run "
        "(skipped: e2b, modal)."
    )
    assert str(NoAvailableParticipantsError([])).endswith("nothing to run.")


# -- shapes and identity ---------------------------------------------------------------------

SHAPES = {
    "burst": {"slug": "sandbox-burst-local", "name": "Burst"},
    "staggered": {"slug": "sandbox-staggered-local", "stagger_delay_ms": 200},
}


def test_shape_applies_identity_and_stagger() -> None:
    shaped = apply_shape(config(shapes=SHAPES), RunArgs(shape="staggered"))
    assert shaped.benchmark_slug == "sandbox-staggered-local"
    assert shaped.benchmark_name == "sandbox-staggered-local"
    assert merge_config(shaped, RunArgs())[0].stagger_delay_ms == 200
    # The command line still wins over the shape's stagger.
    args = RunArgs(shape="staggered", stagger_delay_ms=5)
    assert merge_config(apply_shape(config(shapes=SHAPES), args), args)[0].stagger_delay_ms == 5


def test_benchmark_and_name_override_after_shape() -> None:
    args = RunArgs(shape="burst", benchmark="other-slug", name="Other")
    shaped = apply_shape(config(shapes=SHAPES), args)
    assert (shaped.benchmark_slug, shaped.benchmark_name) == ("other-slug", "Other")


def test_unknown_shape_messages() -> None:
    with pytest.raises(UnknownShapeError) as info:
        apply_shape(config(shapes={"burst": SHAPES["burst"]}), RunArgs(shape="nope"))
    assert str(info.value) == 'Unknown --bench-shape "nope". Known shapes: burst.'
    with pytest.raises(UnknownShapeError) as info:
        apply_shape(config(), RunArgs(shape="nope"))
    assert str(info.value) == 'Unknown --bench-shape "nope": this benchmark declares no shapes.'


def test_identity_is_ours() -> None:
    file_config = config()
    assert identity_is_ours(file_config, RunArgs())
    assert identity_is_ours(file_config, RunArgs(benchmark="sandbox-tti-local"))
    assert not identity_is_ours(file_config, RunArgs(benchmark="sandbox-burst-local"))
    assert identity_is_ours(file_config, RunArgs(benchmark="x", name="X"))


# -- run config snapshot and plans -----------------------------------------------------------


def test_run_config_snapshot_with_phases() -> None:
    phased = config(
        phases=[{"name": "1MB", "iterations": 2}, {"name": "16MB", "iterations": 2}],
        dimensions={"region": "eu"},
    )
    resolved, _ = merge_config(phased, RunArgs(iterations=3))
    snapshot = run_config_to_json(phased, resolved, ["e2b"], {"source": "manual"})
    assert snapshot == {
        "benchmarkSlug": "sandbox-tti-local",
        "benchmarkName": "Sandbox TTI",
        "phaseIterations": 3,
        "phases": [{"name": "1MB", "iterations": 3}, {"name": "16MB", "iterations": 3}],
        "concurrency": 1,
        "staggerDelayMs": 0,
        "groupBy": "participant",
        "dimensions": {"region": "eu"},
        "participants": ["e2b"],
        "trigger": {"source": "manual"},
    }


def test_run_config_snapshot_without_phases() -> None:
    plain = config(iterations=2)
    resolved, _ = merge_config(plain, RunArgs())
    snapshot = run_config_to_json(plain, resolved, ["e2b", "modal"], {"source": "schedule"})
    assert snapshot["iterations"] == 2
    assert "phases" not in snapshot
    assert "phaseIterations" not in snapshot


def test_plan_keeps_skipped_participants_in_item_order() -> None:
    file_config = config(
        participants=[{"name": "a", "required_env_vars": ["NEEDED"]}, {"name": "b"}],
        iterations=2,
        group_by="round",
    )
    plan = schedule_benchmark(file_config, RunArgs(), {})
    assert plan.participant_names == ("b",)
    assert plan.requested == ("a", "b")
    assert [(name, slot.index, skip is not None) for name, slot, skip in plan.items()] == [
        ("a", 0, True),
        ("b", 0, False),
        ("a", 1, True),
        ("b", 1, False),
    ]


# -- warm-up (beyond upstream) ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "cold"),
    [
        ("cold", True),
        ("Cold start", True),
        ("cold_start", True),
        ("coldstart", True),
        ("first-cold", True),
        ("scold", False),
        ("warm", False),
        ("steady", False),
    ],
)
def test_cold_named_phases(name: str, cold: bool) -> None:
    assert is_cold_phase(name) is cold


def test_warmup_plan_per_phase_and_the_sequence() -> None:
    file_config = config(
        phases=[
            Phase("cold", 2),
            Phase("steady", 1, warmup=0),
            Phase("warm", 2),
            Phase("x", 1, warmup=1),
        ],
        warmup=2,
    )
    plan = schedule_benchmark(file_config, RunArgs(), {})
    assert plan.warmup_plan == (
        PhaseWarmup("cold", 0, "cold"),
        PhaseWarmup("steady", 0, "phase"),
        PhaseWarmup("warm", 2, "default"),
        PhaseWarmup("x", 1, "phase"),
    )
    # Each phase's warm-up right before it; indices -3 … -1 in phase order.
    assert [(s.index, s.phase, s.warmup) for s in plan.sequence] == [
        (0, "cold", False),
        (1, "cold", False),
        (2, "steady", False),
        (-3, "warm", True),
        (-2, "warm", True),
        (3, "warm", False),
        (4, "warm", False),
        (-1, "x", True),
        (5, "x", False),
    ]
    # --bench-warmup changes the default, never a phase's own count.
    overridden = schedule_benchmark(file_config, RunArgs(warmup=1), {})
    assert [entry.count for entry in overridden.warmup_plan] == [0, 0, 1, 1]


def test_warmup_without_phases_and_what_needs_one_process() -> None:
    plain = schedule_benchmark(config(iterations=2, warmup=1), RunArgs(), {})
    assert plain.warmup_plan == (PhaseWarmup(None, 1, "default"),)
    assert [(s.index, s.warmup) for s in plain.sequence] == [(-1, True), (0, False), (1, False)]
    assert plain.grouping_reasons == ("warm-up",)
    busy = schedule_benchmark(
        config(iterations=2, concurrency=3, thresholds={"latency_ms": "p95 < 9"}),
        RunArgs(),
        {},
    )
    assert busy.grouping_reasons == ("concurrency 3", "thresholds")
    assert schedule_benchmark(config(iterations=2), RunArgs(), {}).grouping_reasons == ()
