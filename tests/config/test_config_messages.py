"""Every validation message (reference §2.9-2.11), exact field and exact text, one case each.

Upstream's structure and field names (snake_case) in Python's words: ``list`` for "array",
``dict`` for "object", values as Python shows them (``None``, ``True``, ``'x'``, ``nan``, ``inf``)
and ``is missing (...)`` for an absent field (upstream: ``(got undefined)``).
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from pytest_benchsdk.config import (
    BenchmarkConfigError,
    ConfigIssue,
    Participant,
    define_benchmark_config,
    validate_benchmark_config,
    validate_scoring_config,
)

BASE: dict[str, Any] = {
    "benchmark_slug": "s",
    "benchmark_name": "n",
    "participants": [Participant("a")],
}


PARTICIPANT_KIND = "must be a Participant, a name (str), a dict or an object with a name"


def issues(**overrides: Any) -> list[tuple[str, str]]:
    return [(i.field, i.message) for i in validate_benchmark_config({**BASE, **overrides})]


def case(overrides: dict[str, Any], *expected: tuple[str, str], id: str) -> Any:
    return pytest.param(overrides, list(expected), id=id)


CONFIG_CASES = [
    case({"benchmark_slug": ""}, ("benchmark_slug", "is required"), id="slug-empty"),
    case({"benchmark_slug": None}, ("benchmark_slug", "is required"), id="slug-missing"),
    case({"benchmark_slug": 5}, ("benchmark_slug", "is required"), id="slug-number"),
    case({"benchmark_name": ""}, ("benchmark_name", "is required"), id="name-empty"),
    case({"benchmark_name": ["n"]}, ("benchmark_name", "is required"), id="name-list"),
    case(
        {"participants": []}, ("participants", "must be a non-empty list"), id="participants-empty"
    ),
    case(
        {"participants": None},
        ("participants", "must be a non-empty list"),
        id="participants-none",
    ),
    case(
        {"participants": "a"}, ("participants", "must be a non-empty list"), id="participants-str"
    ),
    case(
        {"participants": [None, b"a", 1, ["a"]]},
        ("participants[0]", PARTICIPANT_KIND),
        ("participants[1]", PARTICIPANT_KIND),
        ("participants[2]", PARTICIPANT_KIND),
        ("participants[3]", PARTICIPANT_KIND),
        id="participant-not-object",
    ),
    case(
        {"participants": ["json", "", " ", "json", ".."]},
        ("participants[1].name", "must be a non-empty string"),
        ("participants[2].name", "must be a non-empty string"),
        ("participants[3].name", "duplicate participant name: json"),
        (
            "participants[4].name",
            "must not be '..': the name is a path segment of the platform's URLs, where '..' "
            "would address another endpoint",
        ),
        id="participant-strings",
    ),
    case(
        {"participants": ["json", {"name": "json"}]},
        ("participants[1].name", "duplicate participant name: json"),
        id="participant-string-and-dict-share-names",
    ),
    case(
        {"participants": [{"name": " \t"}]},
        ("participants[0].name", "must be a non-empty string"),
        id="participant-blank-name",
    ),
    case(
        {"participants": [{"sdk": 1}]},
        ("participants[0].name", "must be a non-empty string"),
        id="participant-no-name",
    ),
    case(
        {"participants": [{"name": "a"}, Participant("a")]},
        ("participants[1].name", "duplicate participant name: a"),
        id="participant-duplicate",
    ),
    case(
        {"participants": [{"name": "a"}, {"name": "b", "required_env_vars": "KEY"}]},
        ("participants[1].required_env_vars", "must be a list of strings"),
        id="participant-env-str",
    ),
    case(
        {"participants": [{"name": "a", "requiredEnvVars": ["A", 1]}]},
        ("participants[0].required_env_vars", "must be a list of strings"),
        id="participant-env-camel",
    ),
    case(
        {"iterations": 2, "phases": [{"name": "cold", "iterations": 1}]},
        ("iterations", "phases and iterations are mutually exclusive"),
        id="phases-and-iterations",
    ),
    case({"phases": []}, ("phases", "must be a non-empty list"), id="phases-empty"),
    case({"phases": "cold"}, ("phases", "must be a non-empty list"), id="phases-str"),
    case({"phases": [None]}, ("phases[0]", "must be a Phase or a dict"), id="phase-none"),
    case({"phases": [("cold", 3)]}, ("phases[0]", "must be a Phase or a dict"), id="phase-tuple"),
    case(
        {"phases": [{"iterations": 3}]},
        ("phases[0]", "must have a non-empty string name"),
        id="phase-no-name",
    ),
    case(
        {"phases": [{"name": "cold", "iterations": 1}, {"name": "cold", "iterations": 1}]},
        ("phases['cold']", "duplicate phase name: cold"),
        id="phase-duplicate",
    ),
    case(
        {"phases": [{"name": "cold", "iterations": 0}]},
        ("phases['cold'].iterations", "must be an integer >= 1 (got 0)"),
        id="phase-iter-0",
    ),
    case(
        {"phases": [{"name": "cold", "iterations": 1.5}]},
        ("phases['cold'].iterations", "must be an integer >= 1 (got 1.5)"),
        id="phase-iter-1.5",
    ),
    case(
        {"phases": [{"name": "x"}]},
        ("phases['x'].iterations", "is missing (must be an integer >= 1)"),
        id="phase-iter-missing",
    ),
    case(
        {"phases": [{"name": "x", "iterations": True}]},
        ("phases['x'].iterations", "must be an integer >= 1 (got True)"),
        id="phase-iter-bool",
    ),
    case(
        {"phases": [{"name": "x", "iterations": "3"}]},
        ("phases['x'].iterations", "must be an integer >= 1 (got '3')"),
        id="phase-iter-str",
    ),
    case({"iterations": 0}, ("iterations", "must be an integer >= 1 (got 0)"), id="iterations-0"),
    case(
        {"iterations": 1.5},
        ("iterations", "must be an integer >= 1 (got 1.5)"),
        id="iterations-1.5",
    ),
    case(
        {"iterations": math.nan},
        ("iterations", "must be an integer >= 1 (got nan)"),
        id="iterations-nan",
    ),
    case(
        {"iterations": True},
        ("iterations", "must be an integer >= 1 (got True)"),
        id="iterations-bool",
    ),
    case(
        {"concurrency": 0}, ("concurrency", "must be an integer >= 1 (got 0)"), id="concurrency-0"
    ),
    case(
        {"concurrency": math.inf},
        ("concurrency", "must be an integer >= 1 (got inf)"),
        id="concurrency-inf",
    ),
    case(
        {"stagger_delay_ms": -1},
        ("stagger_delay_ms", "must be a number >= 0 (got -1)"),
        id="stagger-negative",
    ),
    case(
        {"stagger_delay_ms": math.inf},
        ("stagger_delay_ms", "must be a number >= 0 (got inf)"),
        id="stagger-inf",
    ),
    case(
        {"stagger_delay_ms": "5"},
        ("stagger_delay_ms", "must be a number >= 0 (got '5')"),
        id="stagger-str",
    ),
    case(
        {"group_by": "phase"},
        ("group_by", "must be 'participant' or 'round' (got 'phase')"),
        id="group-by",
    ),
    case(
        {"group_by": 1},
        ("group_by", "must be 'participant' or 'round' (got 1)"),
        id="group-by-number",
    ),
    case({"shapes": ["burst"]}, ("shapes", "must be a dict"), id="shapes-list"),
    case(
        {"shapes": {"burst": 1}},
        ("shapes['burst']", "must be a Shape or a dict"),
        id="shape-not-object",
    ),
    case(
        {"shapes": {"burst": {"slug": "Burst"}}},
        ("shapes['burst'].slug", "needs a lowercase slug (got 'Burst')"),
        id="shape-slug-upper",
    ),
    case(
        {"shapes": {"burst": {}}},
        ("shapes['burst'].slug", "is missing (needs a lowercase slug)"),
        id="shape-slug-missing",
    ),
    case(
        {"shapes": {"burst": {"slug": ""}}},
        ("shapes['burst'].slug", "needs a lowercase slug (got '')"),
        id="shape-slug-empty",
    ),
    case(
        {"shapes": {"burst": {"slug": "-x"}}},
        ("shapes['burst'].slug", "needs a lowercase slug (got '-x')"),
        id="shape-slug-dash",
    ),
    case(
        {"shapes": {"b": {"slug": "b\n"}}},
        ("shapes['b'].slug", "needs a lowercase slug (got 'b\\n')"),
        id="shape-slug-newline",
    ),
    case(
        {"shapes": {"b": {"slug": "b", "name": " "}}},
        ("shapes['b'].name", "must be a non-empty string"),
        id="shape-name",
    ),
    case(
        {"shapes": {"b": {"slug": "b", "stagger_delay_ms": -1}}},
        ("shapes['b'].stagger_delay_ms", "must be a number >= 0 (got -1)"),
        id="shape-stagger",
    ),
    case(
        {"shapes": {"b": {"slug": "b", "stagger_delay_ms": 3_600_001}}},
        ("shapes['b'].stagger_delay_ms", "must be at most 3,600,000 (one hour; got 3600001)"),
        id="shape-stagger-over-an-hour",
    ),
    case(
        {"shapes": {"b": {"slug": "b", "staggerDelayMs": math.nan}}},
        ("shapes['b'].stagger_delay_ms", "must be a number >= 0 (got nan)"),
        id="shape-stagger-camel",
    ),
    case({"dimensions": ["a"]}, ("dimensions", "must be a dict"), id="dimensions-list"),
    case({"dimensions": "a"}, ("dimensions", "must be a dict"), id="dimensions-str"),
    case(
        {"custom_cli_flags": ["-x"]},
        ("custom_cli_flags", 'must be a list of strings starting with "--"'),
        id="flags-dash",
    ),
    case(
        {"custom_cli_flags": "--x"},
        ("custom_cli_flags", 'must be a list of strings starting with "--"'),
        id="flags-str",
    ),
    case(
        {"display": {"description": "x"}},
        ("display", "display contains unexpected key: 'description'"),
        id="display",
    ),
    case(
        {"display": {"overview": {"defaultMetric": "compositeScore"}}},
        (
            "display.overview.default_metric",
            "cannot be 'compositeScore' without config.scoring or config.on_score",
        ),
        id="composite-without-scoring",
    ),
    case(
        {"display": "x", "iterations": 0},
        ("iterations", "must be an integer >= 1 (got 0)"),
        ("display", "display must be a dict"),
        id="order-kept",
    ),
    # Python-only checks (TypeScript's types reject these upstream).
    case(
        {"benchmarkSlug": "s"},
        (
            "benchmarkSlug",
            "is not a known benchmark config field; did you mean `benchmark_slug`?",
        ),
        id="unknown-camel",
    ),
    case(
        {"iteration": 3},
        ("iteration", "is not a known benchmark config field; did you mean `iterations`?"),
        id="unknown-typo",
    ),
    case(
        {"concurency": 2},
        ("concurency", "is not a known benchmark config field; did you mean `concurrency`?"),
        id="unknown-typo-concurrency",
    ),
    case({"zzz": 2}, ("zzz", "is not a known benchmark config field"), id="unknown-nothing-close"),
    case(
        {"default_providers": "a"},
        ("default_providers", "must be a list of strings"),
        id="providers-str",
    ),
    case({"on_score": 1}, ("on_score", "must be a function"), id="on-score"),
    case({"on_complete": "x"}, ("on_complete", "must be a function"), id="on-complete"),
    case(
        {"close_after_ms": -5},
        ("close_after_ms", "must be a number >= 0 (got -5)"),
        id="close-after",
    ),
    case(
        {"phases": [{"name": "cold", "iterations": 1, "kind": "x"}]},
        ("phases[0]", "contains unexpected key: 'kind'"),
        id="phase-unknown-key",
    ),
    case(
        {"shapes": {"b": {"slug": "b", "kind": "burst"}}},
        ("shapes['b']", "contains unexpected key: 'kind'"),
        id="shape-unknown-key",
    ),
]


@pytest.mark.parametrize(("overrides", "expected"), CONFIG_CASES)
def test_config_messages(overrides: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert issues(**overrides) == expected


def test_empty_config_reports_the_required_fields() -> None:
    assert [(i.field, i.message) for i in validate_benchmark_config({})] == [
        ("benchmark_slug", "is required"),
        ("benchmark_name", "is required"),
        ("participants", "must be a non-empty list"),
    ]


def test_blank_slug_is_accepted_like_upstream() -> None:
    # Upstream only rejects falsy slugs/names; a blank string passes.
    assert issues(benchmark_slug=" ") == []


def test_none_means_not_given() -> None:
    assert issues(iterations=None, concurrency=None, phases=None, shapes=None, display=None) == []


def test_integer_valued_floats_are_integers() -> None:
    assert issues(iterations=3.0, concurrency=2.0) == []


# --- display (reference §2.11); reported as field "display" ---------------------------------

M = {"key": "x", "label": "X"}

DISPLAY_CASES = [
    ("x", "display must be a dict"),
    (["metrics"], "display must be a dict"),
    ({"metrics": [], "theme": "dark"}, "display contains unexpected key: 'theme'"),
    ({"metrics": "not-an-array"}, "display.metrics must be a list"),
    ({"metrics": [M, None]}, "display.metrics[1] must be a dict"),
    ({"metrics": [{**M, "color": "red"}]}, "display.metrics[0] contains unexpected key: 'color'"),
    ({"metrics": [{"label": "X"}]}, "display.metrics[0].key must be a non-empty string"),
    ({"metrics": [M, {**M, "label": "Y"}]}, "duplicate display metric key: x"),
    (
        {"metrics": [{"key": "x", "label": ""}]},
        "display.metrics[0].label must be a non-empty string",
    ),
    ({"metrics": [{**M, "unit": 123}]}, "display.metrics[0].unit must be a string"),
    (
        {"metrics": [{**M, "direction": "up"}]},
        "display.metrics[0].direction must be 'higher-better' or 'lower-better'",
    ),
    (
        {"metrics": [{**M, "decimals": -1}]},
        "display.metrics[0].decimals must be a non-negative integer",
    ),
    (
        {"metrics": [{**M, "decimals": 1.5}]},
        "display.metrics[0].decimals must be a non-negative integer",
    ),
    (
        {"metrics": [{**M, "order": True}]},
        "display.metrics[0].order must be a non-negative integer",
    ),
    ({"steps": {"create": "Create"}}, "display.steps must be a list"),
    ({"steps": [1]}, "display.steps[0] must be a dict"),
    ({"steps": [{**M, "unit": "ms"}]}, "display.steps[0] contains unexpected key: 'unit'"),
    ({"steps": [{"key": "", "label": "X"}]}, "display.steps[0].key must be a non-empty string"),
    ({"steps": [M, M]}, "duplicate display step key: x"),
    ({"steps": [{"key": "x"}]}, "display.steps[0].label must be a non-empty string"),
    ({"steps": [{**M, "order": -2}]}, "display.steps[0].order must be a non-negative integer"),
    ({"overview": "ranking"}, "display.overview must be a dict"),
    ({"overview": {"theme": "dark"}}, "display.overview contains unexpected key: 'theme'"),
    (
        {"overview": {"defaultMetric": ""}},
        "display.overview.default_metric must be a non-empty string",
    ),
    (
        {"overview": {"default_metric": 123}},
        "display.overview.default_metric must be a non-empty string",
    ),
    (
        {"metrics": [M], "overview": {"defaultMetric": "y"}},
        "display.overview.default_metric 'y' is not declared in display.metrics and is not a"
        " known default (compositeScore, task)",
    ),
    (
        {"overview": {"defaultLayout": "grid"}},
        "display.overview.default_layout must be 'ranking', 'cards', 'chart', or 'leaderboard'",
    ),
    (
        {"overview": {"default_layout": "cards", "defaultLayout": "chart"}},
        "display.overview contains both 'default_layout' and 'defaultLayout'",
    ),
]


@pytest.mark.parametrize(("display", "message"), DISPLAY_CASES)
def test_display_messages(display: Any, message: str) -> None:
    assert issues(display=display) == [("display", message)]


def test_display_reports_first_failure_only() -> None:
    display = {"metrics": [{"key": "", "label": ""}], "overview": {"defaultLayout": "grid"}}
    assert issues(display=display) == [
        ("display", "display.metrics[0].key must be a non-empty string")
    ]


# --- declarative scoring (reference §2.10); define_benchmark_config reports field "scoring" ----

W = {"median": 0.5, "p95": 0.3, "p99": 0.2}
SM = {"key": "x", "ceiling": 100, "weights": W}

SCORING_CASES = [
    ({}, "scoring.metrics must be a non-empty list"),
    ("fast", "scoring.metrics must be a non-empty list"),
    ({"metrics": []}, "scoring.metrics must be a non-empty list"),
    ({"metrics": SM}, "scoring.metrics must be a non-empty list"),
    (
        {"metrics": [SM], "success": {"require_data": ["ok"]}},
        "scoring.success.require_data must be a dict",
    ),
    ({"metrics": [SM], "success": "ok"}, "scoring.success.require_data must be a dict"),
    (
        {"metrics": [SM], "success": {"requireData": {}}},
        "scoring.success.require_data must declare at least one data field",
    ),
    (
        {"metrics": [SM], "success": {"requireData": {"ok": None}}},
        "scoring.success.require_data.ok must be a str, int, float or bool (got None)",
    ),
    (
        {"metrics": [SM], "success": {"requireData": {"ok": [True]}}},
        "scoring.success.require_data.ok must be a str, int, float or bool (got [True])",
    ),
    ({"metrics": [SM, None]}, "scoring.metrics[1] must be a dict"),
    ({"metrics": [SM, 3]}, "scoring.metrics[1] must be a dict"),
    ({"metrics": [{**SM, "key": " "}]}, "scoring.metrics[0].key must be a non-empty string"),
    ({"metrics": [SM, SM]}, "duplicate scoring metric key: x"),
    ({"metrics": [{**SM, "unit": 1}]}, "scoring.metrics[0].unit must be a string"),
    (
        {"metrics": [{**SM, "ceiling": math.nan}]},
        "scoring.metrics[0].ceiling must be a finite number (got nan)",
    ),
    (
        {"metrics": [{**SM, "ceiling": None}]},
        "scoring.metrics[0].ceiling must be a finite number (got None)",
    ),
    (
        {"metrics": [{**SM, "ceiling": "1"}]},
        "scoring.metrics[0].ceiling must be a finite number (got '1')",
    ),
    (
        {"metrics": [{**SM, "ceiling": True}]},
        "scoring.metrics[0].ceiling must be a finite number (got True)",
    ),
    (
        {"metrics": [{**SM, "floor": -math.inf}]},
        "scoring.metrics[0].floor must be a finite number (got -inf)",
    ),
    ({"metrics": [{**SM, "weights": None}]}, "scoring.metrics[0].weights must be a dict"),
    (
        {"metrics": [{**SM, "weights": [0.5, 0.3, 0.2]}]},
        "scoring.metrics[0].weights must be a dict",
    ),
    (
        {"metrics": [{**SM, "weights": {**W, "median": math.nan}}]},
        "scoring.metrics[0].weights.median must be a finite number (got nan)",
    ),
    (
        {"metrics": [{**SM, "weights": {**W, "p95": "0.3"}}]},
        "scoring.metrics[0].weights.p95 must be a finite number (got '0.3')",
    ),
    (
        {"metrics": [{**SM, "weights": {"median": 0.5, "p95": 0.5}}]},
        "scoring.metrics[0].weights.p99 is missing (must be a finite number)",
    ),
    (
        {"metrics": [{**SM, "weights": {"median": 1.5, "p95": -0.5, "p99": 0}}]},
        "scoring.metrics[0].weights must be non-negative",
    ),
    (
        {"metrics": [{**SM, "trim": "x"}]},
        "scoring.metrics[0].trim must be a finite number (got 'x')",
    ),
    (
        {"metrics": [{**SM, "weights": {"median": 0.5, "p95": 0.3, "p99": 0.1}}]},
        "scoring metric weights must sum to 1.0 (got 0.900)",
    ),
    (
        {"metrics": [SM, {**SM, "key": "y"}]},
        "scoring metric weights must sum to 1.0 (got 2.000)",
    ),
    # Python-only: keys the TypeScript type would reject.
    ({"metrics": [SM], "group": "x"}, "scoring contains unexpected key: 'group'"),
    ({"metrics": [{**SM, "higher": True}]}, "scoring.metrics[0] contains unexpected key: 'higher'"),
    (
        {"metrics": [{**SM, "weights": {**W, "p50": 0}}]},
        "scoring.metrics[0].weights contains unexpected key: 'p50'",
    ),
    ({"metrics": [SM], "success": {"data": {}}}, "scoring.success contains unexpected key: 'data'"),
]


@pytest.mark.parametrize(("scoring", "message"), SCORING_CASES)
def test_scoring_messages(scoring: Any, message: str) -> None:
    assert validate_scoring_config(scoring) == message
    with pytest.raises(BenchmarkConfigError) as info:
        define_benchmark_config({**BASE, "scoring": scoring})
    assert info.value.issues == (ConfigIssue("scoring", message),)


def test_unit_conflict_uses_the_scoring_index_for_display_too() -> None:
    scoring = {
        "metrics": [
            {**SM, "key": "a", "weights": {"median": 0, "p95": 0, "p99": 0}},
            {**SM, "unit": "s"},
        ]
    }
    display = {"metrics": [{"key": "x", "label": "X", "unit": "ms"}]}
    assert validate_scoring_config(scoring, display) == (
        "scoring.metrics[1].unit 's' conflicts with display.metrics[1].unit 'ms' for key 'x'"
    )


def test_unit_conflict_ignores_non_array_display_metrics() -> None:
    assert validate_scoring_config({"metrics": [{**SM, "unit": "s"}]}, {"metrics": "x"}) is None


def test_valid_scoring_passes() -> None:
    assert (
        validate_scoring_config({"metrics": [{**SM, "unit": "ms", "floor": 0, "trim": 0.1}]})
        is None
    )
    # |total - 1| <= 0.01 is accepted.
    assert validate_scoring_config({"metrics": [{**SM, "weights": {**W, "p99": 0.195}}]}) is None
