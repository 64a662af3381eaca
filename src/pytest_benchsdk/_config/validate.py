"""Validation rules of the benchmark config, mirroring upstream's checks and messages.

Upstream's ``validateBenchmarkConfig`` (all issues collected), ``validateBenchmarkDisplayConfig``
and ``validateBenchmarkScoringConfig`` (first failure) in the same order with the same structure,
field paths written snake_case, in Python's words: ``list`` for upstream's "array", ``dict`` for
"object"/"plain object", values as Python shows them (``(got None)``, ``(got 'x')``,
``(got nan)``) and ``is missing (<requirement>)`` for a field that is absent (upstream:
``(got undefined)``). Input is read through ``_config_read`` so a value of any type
becomes an issue, never an exception. ``config.py`` wraps the ``(field, message)`` pairs into
``ConfigIssue`` objects.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from pytest_benchsdk._base.js import is_js_integer, is_nonblank_str, py_fixed
from pytest_benchsdk._base.numbers import is_finite
from pytest_benchsdk._config.read import (
    DISPLAY_KEYS,
    DISPLAY_METRIC_KEYS,
    DISPLAY_OVERVIEW_KEYS,
    DISPLAY_STEP_KEYS,
    MISSING,
    PHASE_KEYS,
    SCORING_KEYS,
    SCORING_METRIC_KEYS,
    SCORING_SUCCESS_KEYS,
    SHAPE_KEYS,
    WEIGHTS_KEYS,
    ConfigFailure,
    as_mapping,
    canonical_fields,
    get_field,
    is_array,
    is_int_at_least,
    is_js_object,
    is_number_at_least_zero,
    show,
)
from pytest_benchsdk._config.thresholds import (
    SCORE_KEY,
    closest_key,
    parse_thresholds,
    unknown_phase_problem,
)

__all__ = [
    "MAX_CONCURRENCY",
    "MAX_ITERATIONS",
    "MAX_STAGGER_DELAY_MS",
    "TOP_LEVEL_FIELDS",
    "config_issues",
    "display_error",
    "scoring_error",
]

#: Iterations per participant (all phases together): each is one pytest item, collected up
#: front, so a schedule larger than this only exhausts memory before anything runs.
MAX_ITERATIONS: Final = 1_000_000
#: Iterations in flight at once (each sync one holds a thread).
MAX_CONCURRENCY: Final = 10_000
#: The stagger between iteration starts (or rounds): one hour.
MAX_STAGGER_DELAY_MS: Final = 3_600_000

#: Why the bounds are what they are (appended to the messages).
ITERATIONS_WHY: Final = (
    "each iteration of a participant is one pytest item, and every item is collected before "
    "the first one runs"
)
CONCURRENCY_WHY: Final = "iterations in flight at once; each sync one holds a thread"

Issue = tuple[str, str]

TOP_LEVEL_FIELDS = (
    "benchmark_slug",
    "benchmark_name",
    "participants",
    "iterations",
    "phases",
    "concurrency",
    "stagger_delay_ms",
    "group_by",
    "shapes",
    "default_providers",
    "dimensions",
    "on_score",
    "on_complete",
    "scoring",
    "custom_cli_flags",
    "display",
    "close_after_ms",
    "thresholds",
    "warmup",
)


_SLUG = re.compile(r"[a-z0-9][a-z0-9-]*")
_LAYOUTS = ("ranking", "cards", "chart", "leaderboard")


def _non_empty_string(value: object, path: str) -> str:
    if not is_nonblank_str(value):
        raise ConfigFailure(f"{path} must be a non-empty string")
    assert isinstance(value, str)
    return value


def invalid(requirement: str, value: object) -> str:
    """``<requirement> (got <value>)``, or ``is missing (<requirement>)`` for an absent field."""
    if value is MISSING:
        return f"is missing ({requirement})"
    return f"{requirement} (got {show(value)})"


def _name(key: object) -> str:
    """A key inside a message: a string as written, anything else as Python shows it."""
    return key if isinstance(key, str) else show(key)


def _did_you_mean(key: object) -> str:
    """``; did you mean `concurrency`?`` for a misspelt field (``concurency``) or upstream's
    camelCase spelling (``benchmarkSlug``); empty when no field is close."""
    if not isinstance(key, str):
        return ""
    snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower()
    closest = closest_key(snake, TOP_LEVEL_FIELDS)
    return f"; did you mean `{closest}`?" if closest is not None else ""


def _finite(value: object, path: str) -> float:
    if not is_finite(value):
        raise ConfigFailure(f"{path} {invalid('must be a finite number', value)}")
    return float(value)  # type: ignore[arg-type]


def _non_negative_int(value: object, path: str) -> None:
    if value is not None and not is_int_at_least(value, 0):
        raise ConfigFailure(f"{path} must be a non-negative integer")


# --- display (upstream validateBenchmarkDisplayConfig) -------------------------------------------


def _check_display(display: object) -> None:
    if as_mapping(display) is None:
        raise ConfigFailure("display must be a dict")
    fields = canonical_fields(display, DISPLAY_KEYS, "display")
    metric_keys: set[str] = set()
    metrics = fields.get("metrics")
    if metrics is not None:
        if not is_array(metrics):
            raise ConfigFailure("display.metrics must be a list")
        for i, metric in enumerate(metrics):
            path = f"display.metrics[{i}]"
            if as_mapping(metric) is None:
                raise ConfigFailure(f"{path} must be a dict")
            m = canonical_fields(metric, DISPLAY_METRIC_KEYS, path)
            key = _non_empty_string(m.get("key"), f"{path}.key")
            if key in metric_keys:
                raise ConfigFailure(f"duplicate display metric key: {key}")
            metric_keys.add(key)
            _non_empty_string(m.get("label"), f"{path}.label")
            if m.get("unit") is not None and not isinstance(m["unit"], str):
                raise ConfigFailure(f"{path}.unit must be a string")
            direction = m.get("direction")
            if direction is not None and direction not in ("higher-better", "lower-better"):
                raise ConfigFailure(f"{path}.direction must be 'higher-better' or 'lower-better'")
            _non_negative_int(m.get("decimals"), f"{path}.decimals")
            _non_negative_int(m.get("order"), f"{path}.order")
    steps = fields.get("steps")
    if steps is not None:
        if not is_array(steps):
            raise ConfigFailure("display.steps must be a list")
        step_keys: set[str] = set()
        for i, step in enumerate(steps):
            path = f"display.steps[{i}]"
            if as_mapping(step) is None:
                raise ConfigFailure(f"{path} must be a dict")
            s = canonical_fields(step, DISPLAY_STEP_KEYS, path)
            key = _non_empty_string(s.get("key"), f"{path}.key")
            if key in step_keys:
                raise ConfigFailure(f"duplicate display step key: {key}")
            step_keys.add(key)
            _non_empty_string(s.get("label"), f"{path}.label")
            _non_negative_int(s.get("order"), f"{path}.order")
    overview = fields.get("overview")
    if overview is not None:
        if as_mapping(overview) is None:
            raise ConfigFailure("display.overview must be a dict")
        o = canonical_fields(overview, DISPLAY_OVERVIEW_KEYS, "display.overview")
        default_metric = o.get("default_metric")
        if default_metric is not None:
            name = _non_empty_string(default_metric, "display.overview.default_metric")
            if metrics is not None and name not in metric_keys | {"compositeScore", "task"}:
                raise ConfigFailure(
                    f"display.overview.default_metric '{name}' is not declared in display.metrics"
                    " and is not a known default (compositeScore, task)"
                )
        layout = o.get("default_layout")
        if layout is not None and not (isinstance(layout, str) and layout in _LAYOUTS):
            raise ConfigFailure(
                "display.overview.default_layout must be 'ranking', 'cards', 'chart', or"
                " 'leaderboard'"
            )


def display_error(display: object) -> str | None:
    """First display failure message, or None when valid."""
    try:
        _check_display(display)
    except ConfigFailure as failure:
        return str(failure)
    return None


# --- scoring (upstream validateBenchmarkScoringConfig) -------------------------------------------


def _display_unit_for(display: object, key: str) -> Any:
    """``display?.metrics?.find(m => m?.key === key)?.unit`` (non-arrays ignored, as upstream)."""
    metrics = canonical_fields(display, DISPLAY_KEYS).get("metrics")
    if not is_array(metrics):
        return None
    for metric in metrics:
        fields = canonical_fields(metric, DISPLAY_METRIC_KEYS)
        if fields.get("key") == key and isinstance(fields.get("key"), str):
            return fields.get("unit")
    return None


def _check_scoring(scoring: object, display: object) -> None:
    fields = canonical_fields(scoring, SCORING_KEYS, "scoring")
    metrics = fields.get("metrics")
    if not is_array(metrics) or len(metrics) == 0:
        raise ConfigFailure("scoring.metrics must be a non-empty list")
    success = fields.get("success")
    if success is not None:
        if as_mapping(success) is not None:
            success_fields = canonical_fields(success, SCORING_SUCCESS_KEYS, "scoring.success")
        else:
            success_fields = {}
        require_data = success_fields.get("require_data")
        if not isinstance(require_data, Mapping):
            raise ConfigFailure("scoring.success.require_data must be a dict")
        if len(require_data) == 0:
            raise ConfigFailure("scoring.success.require_data must declare at least one data field")
        for key, value in require_data.items():
            if not isinstance(value, (str, int, float)):  # bool is an int
                raise ConfigFailure(
                    f"scoring.success.require_data.{_name(key)} must be a str, int, float or"
                    f" bool (got {show(value)})"
                )
    seen: set[str] = set()
    total = 0.0
    for i, metric in enumerate(metrics):
        path = f"scoring.metrics[{i}]"
        if as_mapping(metric) is None:
            raise ConfigFailure(f"{path} must be a dict")
        m = canonical_fields(metric, SCORING_METRIC_KEYS, path)
        key = m.get("key")
        if not is_nonblank_str(key):
            raise ConfigFailure(f"{path}.key must be a non-empty string")
        assert isinstance(key, str)
        if key in seen:
            raise ConfigFailure(f"duplicate scoring metric key: {key}")
        seen.add(key)
        unit = m.get("unit")
        if unit is not None:
            if not isinstance(unit, str):
                raise ConfigFailure(f"{path}.unit must be a string")
            display_unit = _display_unit_for(display, key)
            if display_unit is not None and unit != display_unit:
                # Upstream prints the scoring index for display.metrics too (a known upstream
                # bug, kept for the same messages).
                raise ConfigFailure(
                    f"{path}.unit {show(unit)} conflicts with display.metrics[{i}].unit"
                    f" {show(display_unit)} for key {show(key)}"
                )
        _finite(m.get("ceiling", MISSING), f"{path}.ceiling")
        if m.get("floor") is not None:
            _finite(m["floor"], f"{path}.floor")
        weights = m.get("weights")
        if as_mapping(weights) is None:
            raise ConfigFailure(f"{path}.weights must be a dict")
        w = canonical_fields(weights, WEIGHTS_KEYS, f"{path}.weights")
        median = _finite(w.get("median", MISSING), f"{path}.weights.median")
        p95 = _finite(w.get("p95", MISSING), f"{path}.weights.p95")
        p99 = _finite(w.get("p99", MISSING), f"{path}.weights.p99")
        if median < 0 or p95 < 0 or p99 < 0:
            raise ConfigFailure(f"{path}.weights must be non-negative")
        total += median + p95 + p99
        if m.get("trim") is not None:
            _finite(m["trim"], f"{path}.trim")
    if abs(total - 1) > 0.01:
        raise ConfigFailure(f"scoring metric weights must sum to 1.0 (got {py_fixed(total, 3)})")


def scoring_error(scoring: object, display: object = None) -> str | None:
    """First declarative-scoring failure message, or None when valid."""
    try:
        _check_scoring(scoring, display)
    except ConfigFailure as failure:
        return str(failure)
    return None


# --- the whole config (upstream validateBenchmarkConfig) ----------------------------------------


def _unexpected_keys(value: object, allowed: Mapping[str, str]) -> list[str]:
    if not isinstance(value, Mapping):
        return []
    return [show(k) for k in value if not (isinstance(k, str) and k in allowed)]


def _dot_segment(value: str) -> str:
    """Why a participant name or benchmark slug may not be ``.`` or ``..`` (HTTP clients
    normalise such a path segment away, so the request would reach another endpoint)."""
    return (
        f"must not be '{value}': the name is a path segment of the platform's URLs, "
        f"where '{value}' would address another endpoint"
    )


def _check_participants(participants: object, add: Any) -> None:
    if not is_array(participants) or len(participants) == 0:
        add("participants", "must be a non-empty list")
        return
    seen: set[str] = set()
    for i, participant in enumerate(participants):
        # Beyond upstream: a string is a participant's name (no required env vars).
        named = isinstance(participant, str)
        if not (named or is_js_object(participant)):
            add(
                f"participants[{i}]",
                "must be a Participant, a name (str), a dict or an object with a name",
            )
            continue
        name = participant if named else get_field(participant, "name")
        if not is_nonblank_str(name):
            add(f"participants[{i}].name", "must be a non-empty string")
        elif name in (".", ".."):
            add(f"participants[{i}].name", _dot_segment(name))
        elif name in seen:
            add(f"participants[{i}].name", f"duplicate participant name: {name}")
        else:
            seen.add(name)
        env_vars = None if named else get_field(participant, "required_env_vars", "requiredEnvVars")
        if env_vars is not None and not (
            is_array(env_vars) and all(isinstance(v, str) for v in env_vars)
        ):
            add(f"participants[{i}].required_env_vars", "must be a list of strings")


def _check_phases(phases: object, add: Any) -> None:
    if not is_array(phases) or len(phases) == 0:
        add("phases", "must be a non-empty list")
        return
    seen: set[str] = set()
    total = 0
    for i, phase in enumerate(phases):
        if not is_js_object(phase):
            add(f"phases[{i}]", "must be a Phase or a dict")
            continue
        name = get_field(phase, "name")
        if not is_nonblank_str(name):
            add(f"phases[{i}]", "must have a non-empty string name")
        else:
            if name in seen:
                add(f"phases['{name}']", f"duplicate phase name: {name}")
            seen.add(name)
            iterations = get_field(phase, "iterations", default=MISSING)
            if not is_int_at_least(iterations, 1):
                add(f"phases['{name}'].iterations", invalid("must be an integer >= 1", iterations))
            elif iterations > MAX_ITERATIONS:
                add(
                    f"phases['{name}'].iterations",
                    f"must be at most {MAX_ITERATIONS:,} (got {show(iterations)}): "
                    + ITERATIONS_WHY,
                )
            else:
                total += iterations
            warmup = get_field(phase, "warmup")
            if warmup is not None and not (is_js_integer(warmup) and warmup >= 0):
                add(f"phases['{name}'].warmup", f"must be an integer >= 0 (got {show(warmup)})")
        for key in _unexpected_keys(phase, PHASE_KEYS):
            add(f"phases[{i}]", f"contains unexpected key: {key}")
    if total > MAX_ITERATIONS:
        add(
            "phases",
            f"must have at most {MAX_ITERATIONS:,} iterations in all (got {total:,}): "
            + ITERATIONS_WHY,
        )


def _check_shapes(shapes: object, add: Any) -> None:
    if not isinstance(shapes, Mapping):
        add("shapes", "must be a dict")
        return
    for shape_key, shape in shapes.items():
        path = f"shapes[{show(shape_key)}]"
        if not is_js_object(shape):
            add(path, "must be a Shape or a dict")
            continue
        slug = get_field(shape, "slug", default=MISSING)
        if not (isinstance(slug, str) and _SLUG.fullmatch(slug)):
            add(f"{path}.slug", invalid("needs a lowercase slug", slug))
        name = get_field(shape, "name")
        if name is not None and not is_nonblank_str(name):
            add(f"{path}.name", "must be a non-empty string")
        stagger = get_field(shape, "stagger_delay_ms", "staggerDelayMs")
        if stagger is not None and not is_number_at_least_zero(stagger):
            add(f"{path}.stagger_delay_ms", f"must be a number >= 0 (got {show(stagger)})")
        elif stagger is not None and stagger > MAX_STAGGER_DELAY_MS:
            add(
                f"{path}.stagger_delay_ms",
                f"must be at most {MAX_STAGGER_DELAY_MS:,} (one hour; got {show(stagger)})",
            )
        for key in _unexpected_keys(shape, SHAPE_KEYS):
            add(path, f"contains unexpected key: {key}")


def _default_metric_of(display: object) -> Any:
    overview = canonical_fields(display, DISPLAY_KEYS).get("overview")
    return canonical_fields(overview, DISPLAY_OVERVIEW_KEYS).get("default_metric")


def config_issues(config: object) -> list[Issue]:
    """All issues of a raw config (upstream's order, then the Python-only type checks)."""
    raw = as_mapping(config)
    if raw is None:
        return [("config", "must be a mapping of benchmark config fields or a BenchmarkConfig")]
    issues: list[Issue] = []

    def add(field: str, message: str) -> None:
        issues.append((field, message))

    def given(name: str) -> Any:
        try:
            return raw.get(name)
        except Exception:
            return None

    for name in ("benchmark_slug", "benchmark_name"):
        value = given(name)
        if not isinstance(value, str) or value == "":
            add(name, "is required")
        elif name == "benchmark_slug" and value in (".", ".."):
            add(name, _dot_segment(value))
    _check_participants(given("participants"), add)
    if given("phases") is not None:
        if given("iterations") is not None:
            add("iterations", "phases and iterations are mutually exclusive")
        _check_phases(given("phases"), add)
    for name, maximum, why in (
        ("iterations", MAX_ITERATIONS, ITERATIONS_WHY),
        ("concurrency", MAX_CONCURRENCY, CONCURRENCY_WHY),
    ):
        value = given(name)
        if value is not None and not is_int_at_least(value, 1):
            add(name, f"must be an integer >= 1 (got {show(value)})")
        elif value is not None and value > maximum:
            add(name, f"must be at most {maximum:,} (got {show(value)}): {why}")
    stagger = given("stagger_delay_ms")
    if stagger is not None and not is_number_at_least_zero(stagger):
        add("stagger_delay_ms", f"must be a number >= 0 (got {show(stagger)})")
    elif stagger is not None and stagger > MAX_STAGGER_DELAY_MS:
        add(
            "stagger_delay_ms",
            f"must be at most {MAX_STAGGER_DELAY_MS:,} (one hour; got {show(stagger)})",
        )
    group_by = given("group_by")
    if group_by is not None and not (
        isinstance(group_by, str) and group_by in ("participant", "round")
    ):
        add("group_by", f"must be 'participant' or 'round' (got {show(group_by)})")
    if given("shapes") is not None:
        _check_shapes(given("shapes"), add)
    dimensions = given("dimensions")
    if dimensions is not None and not isinstance(dimensions, Mapping):
        add("dimensions", "must be a dict")
    flags = given("custom_cli_flags")
    if flags is not None and not (
        is_array(flags) and all(isinstance(f, str) and f.startswith("--") for f in flags)
    ):
        add("custom_cli_flags", 'must be a list of strings starting with "--"')
    display = given("display")
    if display is not None:
        message = display_error(display)
        if message is not None:
            add("display", message)
    if (
        _default_metric_of(display) == "compositeScore"
        and given("scoring") is None
        and given("on_score") is None
    ):
        add(
            "display.overview.default_metric",
            "cannot be 'compositeScore' without config.scoring or config.on_score",
        )
    # Python-only: what TypeScript's types would have rejected before the code ran.
    providers = given("default_providers")
    if providers is not None and not (
        is_array(providers) and all(isinstance(p, str) for p in providers)
    ):
        add("default_providers", "must be a list of strings")
    for name in ("on_score", "on_complete"):
        value = given(name)
        if value is not None and not callable(value):
            add(name, "must be a function")
    close_after = given("close_after_ms")
    if close_after is not None and not is_number_at_least_zero(close_after):
        add("close_after_ms", f"must be a number >= 0 (got {show(close_after)})")
    # Beyond upstream: thresholds (every invalid expression listed) and warm-up iterations.
    thresholds = given("thresholds")
    if thresholds is not None:
        parsed, problems = parse_thresholds(thresholds)
        for path, message in problems:
            add(path, message)
        phases = given("phases")
        names = [
            str(get_field(phase, "name"))
            for phase in (phases if is_array(phases) else ())
            if is_js_object(phase) and is_nonblank_str(get_field(phase, "name"))
        ]
        for threshold in parsed:
            problem = unknown_phase_problem(threshold, names)
            if problem is not None:
                add(f"thresholds.{threshold.metric}", f"{threshold.expression!r} {problem}")
        if (
            any(t.metric == SCORE_KEY for t in parsed)
            and given("scoring") is None
            and given("on_score") is None
        ):
            add("thresholds.score", "needs config.scoring or config.on_score (nothing is scored)")
    warmup = given("warmup")
    if warmup is not None and not (is_js_integer(warmup) and warmup >= 0):
        add("warmup", f"must be an integer >= 0 (got {show(warmup)})")
    for key in raw:
        if not (isinstance(key, str) and key in TOP_LEVEL_FIELDS):
            add(_name(key), "is not a known benchmark config field" + _did_you_mean(key))
    return issues
