"""define_benchmark_config: upstream bench-config.test.ts cases (reference §9.1), normalization."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from pytest_benchsdk.config import (
    BenchmarkConfig,
    BenchmarkConfigError,
    ConfigIssue,
    DisplayConfig,
    DisplayMetric,
    DisplayOverview,
    Participant,
    Phase,
    ScoringConfig,
    ScoringMetric,
    ScoringSuccess,
    Shape,
    Weights,
    define_benchmark_config,
    validate_benchmark_config,
)

PARTICIPANTS = [Participant("local"), Participant("e2b", required_env_vars=["E2B_API_KEY"])]
SCORING = {
    "metrics": [
        {"key": "x", "ceiling": 100, "weights": {"median": 0.5, "p95": 0.3, "p99": 0.2}},
    ]
}


def config(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "benchmark_slug": "sandbox-tti-local",
        "benchmark_name": "Sandbox TTI (local)",
        "participants": PARTICIPANTS,
    }
    base.update(overrides)
    return base


def error_of(**overrides: Any) -> BenchmarkConfigError:
    with pytest.raises(BenchmarkConfigError) as info:
        define_benchmark_config(config(**overrides))
    return info.value


# --- reference §9.1 -------------------------------------------------------------------------


def test_valid_config_is_accepted() -> None:
    result = define_benchmark_config(config(iterations=5))
    assert isinstance(result, BenchmarkConfig)
    assert result.benchmark_slug == "sandbox-tti-local"
    assert result.iterations == 5


def test_minimal_config_leaves_iterations_unset() -> None:
    result = define_benchmark_config(
        benchmark_slug="s", benchmark_name="n", participants=PARTICIPANTS
    )
    assert result.iterations is None
    assert result.phases is None


def test_on_complete_is_carried_by_identity() -> None:
    def on_complete(outcome: object) -> None:
        pass

    assert define_benchmark_config(config(on_complete=on_complete)).on_complete is on_complete


@pytest.mark.parametrize(
    ("field", "pattern"),
    [
        ("benchmark_slug", "benchmark_slug.*is required"),
        ("benchmark_name", "benchmark_name.*is required"),
    ],
)
def test_empty_slug_or_name_is_required(field: str, pattern: str) -> None:
    with pytest.raises(BenchmarkConfigError, match=pattern):
        define_benchmark_config(config(**{field: ""}))


@pytest.mark.parametrize("value", [0, 1.5])
def test_bad_iterations(value: float) -> None:
    assert "iterations" in str(error_of(iterations=value))


def test_concurrency_zero() -> None:
    assert "concurrency" in str(error_of(concurrency=0))


def test_stagger_negative_rejected_zero_accepted() -> None:
    assert "stagger_delay_ms" in str(error_of(stagger_delay_ms=-1))
    assert define_benchmark_config(config(stagger_delay_ms=0)).stagger_delay_ms == 0


def test_phases_accepted() -> None:
    result = define_benchmark_config(
        config(phases=[{"name": "cold", "iterations": 3}, {"name": "warm", "iterations": 3}])
    )
    assert result.phases is not None
    assert len(result.phases) == 2


def test_phases_and_iterations_are_mutually_exclusive() -> None:
    assert "mutually exclusive" in str(error_of(iterations=2, phases=[Phase("cold", 3)]))


def test_empty_phases() -> None:
    assert "non-empty" in str(error_of(phases=[]))


@pytest.mark.parametrize("iterations", [0, 1.5])
def test_bad_phase_iterations_name_the_phase(iterations: float) -> None:
    assert "cold" in str(error_of(phases=[{"name": "cold", "iterations": iterations}]))


def test_duplicate_phase_name() -> None:
    assert "duplicate phase name" in str(error_of(phases=[Phase("cold", 1), Phase("cold", 1)]))


def test_shapes_accepted() -> None:
    result = define_benchmark_config(
        config(
            shapes={
                "burst": {"slug": "sandbox-burst-local", "name": "Burst"},
                "staggered": {"slug": "sandbox-staggered-local", "stagger_delay_ms": 200},
            }
        )
    )
    assert result.shapes == {
        "burst": Shape("sandbox-burst-local", "Burst"),
        "staggered": Shape("sandbox-staggered-local", stagger_delay_ms=200),
    }


def test_shape_bad_slug_and_stagger() -> None:
    assert "burst" in str(error_of(shapes={"burst": {"slug": "Burst"}}))
    assert "stagger_delay_ms" in str(
        error_of(shapes={"burst": {"slug": "burst", "stagger_delay_ms": -1}})
    )


VALID_DISPLAY = {
    "metrics": [
        {
            "key": "throughputMbps",
            "label": "Throughput",
            "unit": "Mbps",
            "direction": "higher-better",
        }
    ],
    "steps": [{"key": "create", "label": "Create sandbox"}],
    "overview": {"defaultMetric": "throughputMbps", "defaultLayout": "ranking"},
}


def test_valid_display_manifest_accepted() -> None:
    result = define_benchmark_config(config(display=VALID_DISPLAY))
    assert result.display is not None
    assert result.display.to_wire() == VALID_DISPLAY


@pytest.mark.parametrize(
    ("display", "expected"),
    [
        (
            {"metrics": [{"key": "x", "label": "X", "unit": 123}]},
            "display.metrics[0].unit must be a string",
        ),
        ({"metrics": [{"key": "x", "label": "X", "direction": "up"}]}, "direction"),
        ({"metrics": [{"key": "x", "label": "X"}, {"key": "x", "label": "Y"}]}, "duplicate"),
        ({"overview": {"defaultMetric": ""}}, "display.overview.default_metric"),
        ({"overview": {"defaultMetric": 123}}, "display.overview.default_metric"),
        (
            {"metrics": [{"key": "x", "label": "X"}], "overview": {"defaultMetric": "y"}},
            "'y' is not declared in display.metrics",
        ),
    ],
)
def test_display_rejections(display: dict[str, Any], expected: str) -> None:
    assert expected in str(error_of(display=display))


@pytest.mark.parametrize(
    ("default_metric", "extra"),
    [("x", {}), ("compositeScore", {"scoring": SCORING}), ("task", {})],
)
def test_default_metric_accepted(default_metric: str, extra: dict[str, Any]) -> None:
    display = {
        "metrics": [{"key": "x", "label": "X"}],
        "overview": {"defaultMetric": default_metric},
    }
    define_benchmark_config(config(display=display, **extra))


def test_composite_score_needs_scoring_or_on_score() -> None:
    display = {"overview": {"defaultMetric": "compositeScore"}}
    assert "compositeScore" in str(error_of(display=display))
    define_benchmark_config(config(display=display, on_score=lambda lower, higher: None))


def test_any_default_metric_when_metrics_omitted() -> None:
    define_benchmark_config(config(display={"overview": {"defaultMetric": "anything"}}))


def test_scoring_without_unit_takes_no_unit_from_display() -> None:
    result = define_benchmark_config(
        config(scoring=SCORING, display={"metrics": [{"key": "x", "label": "X", "unit": "ms"}]})
    )
    assert result.scoring is not None
    assert result.scoring.metrics[0].unit is None


def test_scoring_unit_conflicting_with_display_unit() -> None:
    scoring = {"metrics": [dict(SCORING["metrics"][0], unit="s")]}
    err = error_of(scoring=scoring, display={"metrics": [{"key": "x", "label": "X", "unit": "ms"}]})
    assert err.issues == (
        ConfigIssue(
            "scoring",
            "scoring.metrics[0].unit 's' conflicts with display.metrics[0].unit 'ms' for key 'x'",
        ),
    )


def test_display_metrics_not_an_array_with_scoring() -> None:
    err = error_of(scoring=SCORING, display={"metrics": "not-an-array"})
    assert err.issues == (ConfigIssue("display", "display.metrics must be a list"),)


# --- error format, collection order ---------------------------------------------------------


def test_error_message_format() -> None:
    err = error_of(benchmark_slug="", iterations=0)
    assert isinstance(err, ValueError)
    assert str(err) == (
        "Invalid benchmark config:\n"
        "  - benchmark_slug: is required\n"
        "  - iterations: must be an integer >= 1 (got 0)\n"
        "\n"
        "Fix the fields above and try again."
    )
    assert str(err.issues[0]) == "benchmark_slug: is required"


def test_all_issues_collected_then_scoring_last() -> None:
    err = error_of(
        benchmark_name=None,
        concurrency=0,
        scoring={"metrics": []},
        display={"overview": {"defaultLayout": "grid"}},
        unknown_field=1,
    )
    assert [i.field for i in err.issues] == [
        "benchmark_name",
        "concurrency",
        "display",
        "unknown_field",
        "scoring",
    ]


def test_error_pickles_with_issues() -> None:
    err = error_of(benchmark_slug="")
    clone = pickle.loads(pickle.dumps(err))
    assert clone.issues == err.issues
    assert str(clone) == str(err)


def test_validate_does_not_run_the_scoring_check() -> None:
    assert validate_benchmark_config(config(scoring={"metrics": []})) == []


# --- inputs: mapping, kwargs, model ---------------------------------------------------------


def test_mapping_plus_keyword_overrides() -> None:
    result = define_benchmark_config(config(iterations=1), iterations=3)
    assert result.iterations == 3


def test_model_input_is_revalidated_and_returned_equal() -> None:
    first = define_benchmark_config(config(iterations=2, display=VALID_DISPLAY, scoring=SCORING))
    assert define_benchmark_config(first) == first
    assert validate_benchmark_config(first) == []
    assert validate_benchmark_config(first.evolve(iterations=0)) == [
        ConfigIssue("iterations", "must be an integer >= 1 (got 0)")
    ]


def test_not_a_mapping() -> None:
    assert validate_benchmark_config(42) == [
        ConfigIssue("config", "must be a mapping of benchmark config fields or a BenchmarkConfig")
    ]
    with pytest.raises(BenchmarkConfigError):
        define_benchmark_config(["benchmark_slug"])


def test_validate_accepts_keywords() -> None:
    assert (
        validate_benchmark_config(
            benchmark_slug="s", benchmark_name="n", participants=[{"name": "a"}]
        )
        == []
    )


def test_normalization() -> None:
    def on_score(lower: object, higher: object) -> None:
        pass

    result = define_benchmark_config(
        benchmark_slug="s",
        benchmark_name="n",
        participants=[{"name": "a", "requiredEnvVars": ["A"], "sdk": "x"}, Participant("b")],
        phases=[{"name": "cold", "iterations": 3.0}, Phase("warm", 2)],
        concurrency=2.0,
        stagger_delay_ms=1.5,
        group_by="round",
        default_providers=["a"],
        dimensions={"region": "eu"},
        custom_cli_flags=["--size"],
        on_score=on_score,
        close_after_ms=1000,
        scoring={
            "groupBy": "size",
            "success": {"requireData": {"ok": True}},
            "metrics": [
                {
                    "key": "x",
                    "unit": "ms",
                    "ceiling": 10,
                    "higherIsBetter": False,
                    "weights": Weights(0.6, 0.25, 0.15),
                }
            ],
        },
        display=DisplayConfig(overview=DisplayOverview(default_metric="compositeScore")),
    )
    assert result.participants == (
        Participant("a", required_env_vars=("A",), sdk="x"),
        Participant("b"),
    )
    assert result.phases == (Phase("cold", 3), Phase("warm", 2))
    assert result.phases is not None
    assert type(result.phases[0].iterations) is int
    assert result.concurrency == 2
    assert type(result.concurrency) is int
    assert result.stagger_delay_ms == 1.5
    assert result.default_providers == ("a",)
    assert result.custom_cli_flags == ("--size",)
    assert result.dimensions == {"region": "eu"}
    assert result.on_score is on_score
    assert result.close_after_ms == 1000
    assert result.scoring == ScoringConfig(
        metrics=(
            ScoringMetric("x", 10, Weights(0.6, 0.25, 0.15), unit="ms", higher_is_better=False),
        ),
        group_by="size",
        success=ScoringSuccess({"ok": True}),
    )
    assert result.display == DisplayConfig(overview=DisplayOverview("compositeScore"))
    with pytest.raises(AttributeError):
        result.iterations = 3  # type: ignore[misc]


def test_snake_and_camel_case_dicts_give_the_same_models() -> None:
    camel = {
        "groupBy": "g",
        "success": {"requireData": {"ok": 1}},
        "metrics": [
            {
                "key": "x",
                "ceiling": 1,
                "higherIsBetter": True,
                "weights": {"median": 1, "p95": 0, "p99": 0},
            }
        ],
    }
    snake = {
        "group_by": "g",
        "success": {"require_data": {"ok": 1}},
        "metrics": [
            {
                "key": "x",
                "ceiling": 1,
                "higher_is_better": True,
                "weights": {"median": 1, "p95": 0, "p99": 0},
            }
        ],
    }
    display_camel = {"overview": {"defaultMetric": "x", "defaultLayout": "cards"}}
    display_snake = {"overview": {"default_metric": "x", "default_layout": "cards"}}
    a = define_benchmark_config(config(scoring=camel, display=display_camel))
    b = define_benchmark_config(config(scoring=snake, display=display_snake))
    assert a.scoring == b.scoring
    assert a.display == b.display
    assert a.scoring is not None
    assert a.scoring.to_wire() == camel
    assert b.display is not None
    assert b.display.to_wire() == display_camel


def test_models_and_dicts_mix() -> None:
    display = DisplayConfig(metrics=(DisplayMetric("x", "X", unit="ms"),))
    scoring = ScoringConfig(metrics=(ScoringMetric("x", 5, Weights(1, 0, 0), unit="s"),))
    err = error_of(scoring=scoring, display=display)
    assert err.issues == (
        ConfigIssue(
            "scoring",
            "scoring.metrics[0].unit 's' conflicts with display.metrics[0].unit 'ms' for key 'x'",
        ),
    )
    bad_display = DisplayConfig(metrics=(DisplayMetric("x", ""),))
    assert error_of(display=bad_display).issues == (
        ConfigIssue("display", "display.metrics[0].label must be a non-empty string"),
    )
