"""The implementation behind :mod:`pytest_benchsdk.config` (its docstring says what it is)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any, TypeVar, cast

import attrs

from pytest_benchsdk._config import read as _r
from pytest_benchsdk._config import validate as _v
from pytest_benchsdk._config.thresholds import Threshold, parse_thresholds

__all__ = [
    "BenchmarkConfig",
    "BenchmarkConfigError",
    "ConfigIssue",
    "DisplayConfig",
    "DisplayMetric",
    "DisplayOverview",
    "DisplayStep",
    "Participant",
    "Phase",
    "ScoringConfig",
    "ScoringMetric",
    "ScoringSuccess",
    "Shape",
    "Weights",
    "define_benchmark_config",
    "define_on_complete",
    "define_task",
    "validate_benchmark_config",
    "validate_scoring_config",
]

_F = TypeVar("_F")


def _omit_none(pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    return {key: value for key, value in pairs if value is not None}


def _wire(value: Any) -> Any:
    to_wire = getattr(value, "to_wire", None)
    return to_wire() if callable(to_wire) else value


# --- participants ---------------------------------------------------------------------------


class Participant:
    """One thing being benchmarked (upstream ``BaseParticipant``).

    ``Participant("e2b", required_env_vars=["E2B_API_KEY"], sdk=e2b)``: extra keyword values are
    read as attributes (``participant.sdk``) or through :attr:`extra`. Immutable, like the config
    that holds it; equal when name, required env vars and extras are equal.
    """

    name: str
    required_env_vars: tuple[str, ...]

    def __init__(
        self, /, name: str, required_env_vars: Iterable[str] | None = (), **extra: Any
    ) -> None:
        if required_env_vars is None:
            required_env_vars = ()
        elif isinstance(required_env_vars, list):
            required_env_vars = tuple(required_env_vars)
        # Anything else (a str, say) is kept as given so validation can report it.
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "required_env_vars", required_env_vars)
        object.__setattr__(self, "_extra", dict(extra))
        object.__setattr__(self, "_source", None)

    @property
    def extra(self) -> Mapping[str, Any]:
        """The extra (custom) fields, read-only."""
        return MappingProxyType(self.__dict__["_extra"])

    @classmethod
    def coerce(cls, value: object) -> Participant:
        """A Participant from a Participant, a name, a dict, or a plain object with a ``name``.

        A string is a participant of that name without required env vars. Dicts: ``name``,
        ``required_env_vars`` (or ``requiredEnvVars``), other keys become extras. Plain objects
        stay reachable: attribute lookups the Participant cannot answer fall back to the object.
        """
        if isinstance(value, Participant):
            return value
        if isinstance(value, str):
            return cls(value)
        if isinstance(value, Mapping):
            data = {str(k): v for k, v in value.items()}
            name = data.pop("name", None)
            env_vars = data.pop("required_env_vars", None)
            camel = data.pop("requiredEnvVars", None)
            return cls(name, camel if env_vars is None else env_vars, **data)
        if value is None or isinstance(value, (bytes, bool, int, float, list, tuple)):
            raise TypeError(
                f"a participant must be a name or an object with a name (got {value!r})"
            )
        participant = cls(
            _r.get_field(value, "name"), _r.get_field(value, "required_env_vars", "requiredEnvVars")
        )
        object.__setattr__(participant, "_source", value)
        return participant

    def __getattr__(self, item: str) -> Any:
        # Only called when normal lookup fails; dunder probes (pickle, copy) must not recurse.
        if item.startswith("__") and item.endswith("__"):
            raise AttributeError(item)
        state = self.__dict__
        extra = state.get("_extra") or {}
        if item in extra:
            return extra[item]
        source = state.get("_source")
        if source is not None:
            return getattr(source, item)
        raise AttributeError(f"participant {state.get('name')!r} has no attribute {item!r}")

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Participant is immutable (cannot set {name!r})")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Participant is immutable (cannot delete {name!r})")

    def _key(self) -> tuple[Any, ...]:
        return (self.name, self.required_env_vars, self.__dict__["_extra"])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Participant):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash((self.name, self.required_env_vars))

    def __repr__(self) -> str:
        # Extras often hold credentials (token=os.environ[...]) and a repr ends up in
        # tracebacks, junitxml and logs: show the name, the env var *names* and only the names
        # and types of the extras, never their values.
        parts = [repr(self.name)]
        if self.required_env_vars:
            parts.append(f"required_env_vars={self.required_env_vars!r}")
        parts.extend(f"{k}=<{type(v).__name__}>" for k, v in self.__dict__["_extra"].items())
        source = self.__dict__.get("_source")
        if source is not None:
            parts.append(f"source=<{type(source).__name__}>")
        return f"Participant({', '.join(parts)})"


# --- phases and shapes ----------------------------------------------------------------------


@attrs.frozen
class Phase:
    """A named segment of iterations run in order; records are tagged ``data.phase = name``.

    ``warmup`` (beyond upstream): warm-up iterations each participant runs right before this
    phase; ``None`` takes the config's ``warmup`` (``--bench-warmup``), except for a phase
    named cold (``cold``, ``cold-start`` …), which is measured cold unless it says otherwise;
    ``0`` opts out.
    """

    name: str
    iterations: int
    warmup: int | None = None

    def to_wire(self) -> dict[str, Any]:
        """Upstream's ``{name, iterations}`` (the warm-up is ours and never sent)."""
        return {"name": self.name, "iterations": self.iterations}


@attrs.frozen
class Shape:
    """A named identity variant selected with ``--bench-shape`` (slug, display name, stagger)."""

    slug: str
    name: str | None = None
    stagger_delay_ms: float | None = None

    def to_wire(self) -> dict[str, Any]:
        """Upstream's ``{slug, name?, staggerDelayMs?}``."""
        return _omit_none(
            [("slug", self.slug), ("name", self.name), ("staggerDelayMs", self.stagger_delay_ms)]
        )


# --- declarative scoring --------------------------------------------------------------------


@attrs.frozen
class Weights:
    """Share of the 0-100 composite carried by each statistic (summed over all metrics = 1)."""

    median: float
    p95: float
    p99: float

    @classmethod
    def coerce(cls, value: object) -> Weights:
        """From a Weights or a ``{median, p95, p99}`` mapping."""
        if isinstance(value, Weights):
            return value
        f = _r.canonical_fields(value, _r.WEIGHTS_KEYS)
        return cls(f.get("median"), f.get("p95"), f.get("p99"))  # type: ignore[arg-type]

    def to_wire(self) -> dict[str, Any]:
        """``{median, p95, p99}``."""
        return {"median": self.median, "p95": self.p95, "p99": self.p99}


@attrs.frozen
class ScoringMetric:
    """One scored ``measure()`` key (upstream ``BenchmarkScoringMetric``)."""

    key: str
    ceiling: float
    weights: Weights
    label: str | None = None
    unit: str | None = None
    floor: float | None = None
    higher_is_better: bool | None = None
    trim: float | None = None

    @classmethod
    def coerce(cls, value: object) -> ScoringMetric:
        """From a ScoringMetric or a mapping (snake_case or camelCase keys)."""
        f = _r.canonical_fields(value, _r.SCORING_METRIC_KEYS)
        weights = f.pop("weights", None)
        return cls(weights=Weights.coerce(weights), **f)

    def to_wire(self) -> dict[str, Any]:
        """Upstream camelCase, absent fields omitted."""
        return _omit_none(
            [
                ("key", self.key),
                ("label", self.label),
                ("unit", self.unit),
                ("ceiling", self.ceiling),
                ("floor", self.floor),
                ("higherIsBetter", self.higher_is_better),
                ("weights", _wire(self.weights)),
                ("trim", self.trim),
            ]
        )


@attrs.frozen
class ScoringSuccess:
    """A record passes only if it succeeded and every ``data[key] == value`` listed here."""

    require_data: Mapping[str, str | int | float | bool]

    @classmethod
    def coerce(cls, value: object) -> ScoringSuccess:
        """From a ScoringSuccess or ``{require_data|requireData: {...}}``."""
        f = _r.canonical_fields(value, _r.SCORING_SUCCESS_KEYS)
        return cls(dict(f.get("require_data") or {}))

    def to_wire(self) -> dict[str, Any]:
        """``{requireData: {...}}``."""
        return {"requireData": dict(self.require_data)}


@attrs.frozen
class ScoringConfig:
    """Serializable scoring (upstream ``BenchmarkScoringConfig``), uploaded with the benchmark."""

    metrics: tuple[ScoringMetric, ...]
    group_by: str | None = None
    success: ScoringSuccess | None = None

    @classmethod
    def coerce(cls, value: object) -> ScoringConfig:
        """From a ScoringConfig or a mapping (snake_case or camelCase keys), parts normalized."""
        f = _r.canonical_fields(value, _r.SCORING_KEYS)
        success = f.get("success")
        return cls(
            metrics=tuple(ScoringMetric.coerce(m) for m in f.get("metrics") or ()),
            group_by=f.get("group_by"),
            success=None if success is None else ScoringSuccess.coerce(success),
        )

    def to_wire(self) -> dict[str, Any]:
        """Upstream camelCase, absent fields omitted."""
        return _omit_none(
            [
                ("groupBy", self.group_by),
                ("success", None if self.success is None else _wire(self.success)),
                ("metrics", [_wire(m) for m in self.metrics]),
            ]
        )


# --- display manifest -----------------------------------------------------------------------


@attrs.frozen
class DisplayMetric:
    """How the platform shows one ``measure()`` key."""

    key: str
    label: str
    unit: str | None = None
    direction: str | None = None
    decimals: int | None = None
    order: int | None = None

    def to_wire(self) -> dict[str, Any]:
        """Upstream camelCase, absent fields omitted."""
        return _omit_none((f.name, getattr(self, f.name)) for f in attrs.fields(DisplayMetric))


@attrs.frozen
class DisplayStep:
    """How the platform shows one ``step()`` name."""

    key: str
    label: str
    order: int | None = None

    def to_wire(self) -> dict[str, Any]:
        """Upstream camelCase, absent fields omitted."""
        return _omit_none([("key", self.key), ("label", self.label), ("order", self.order)])


@attrs.frozen
class DisplayOverview:
    """Overview defaults: metric (a display key, ``compositeScore`` or ``task``) and layout."""

    default_metric: str | None = None
    default_layout: str | None = None

    def to_wire(self) -> dict[str, Any]:
        """Upstream camelCase, absent fields omitted."""
        return _omit_none(
            [("defaultMetric", self.default_metric), ("defaultLayout", self.default_layout)]
        )


@attrs.frozen
class DisplayConfig:
    """Render manifest (upstream ``BenchmarkDisplayConfig``), uploaded with the benchmark."""

    metrics: tuple[DisplayMetric, ...] | None = None
    steps: tuple[DisplayStep, ...] | None = None
    overview: DisplayOverview | None = None

    @classmethod
    def coerce(cls, value: object) -> DisplayConfig:
        """From a DisplayConfig or a mapping (snake_case or camelCase keys), parts normalized."""
        f = _r.canonical_fields(value, _r.DISPLAY_KEYS)
        metrics, steps, overview = f.get("metrics"), f.get("steps"), f.get("overview")
        return cls(
            metrics=None
            if metrics is None
            else tuple(
                DisplayMetric(**_r.canonical_fields(m, _r.DISPLAY_METRIC_KEYS)) for m in metrics
            ),
            steps=None
            if steps is None
            else tuple(DisplayStep(**_r.canonical_fields(s, _r.DISPLAY_STEP_KEYS)) for s in steps),
            overview=None
            if overview is None
            else DisplayOverview(**_r.canonical_fields(overview, _r.DISPLAY_OVERVIEW_KEYS)),
        )

    def to_wire(self) -> dict[str, Any]:
        """Upstream camelCase, absent fields omitted."""
        return _omit_none(
            [
                ("metrics", None if self.metrics is None else [_wire(m) for m in self.metrics]),
                ("steps", None if self.steps is None else [_wire(s) for s in self.steps]),
                ("overview", None if self.overview is None else _wire(self.overview)),
            ]
        )


# --- the config -----------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class BenchmarkConfig:
    """A validated, normalized benchmark config (upstream ``BenchmarkConfig``, snake_case).

    Build it with :func:`define_benchmark_config`; constructing it directly skips validation
    and normalization. ``None`` means "not given" (upstream's ``undefined``).
    """

    benchmark_slug: str
    benchmark_name: str
    participants: tuple[Participant, ...]
    iterations: int | None = None
    phases: tuple[Phase, ...] | None = None
    concurrency: int | None = None
    stagger_delay_ms: float | None = None
    group_by: str | None = None
    shapes: Mapping[str, Shape] | None = None
    default_providers: tuple[str, ...] | None = None
    dimensions: Mapping[str, Any] | None = None
    on_score: Callable[..., Any] | None = None
    on_complete: Callable[..., Any] | None = None
    scoring: ScoringConfig | None = None
    custom_cli_flags: tuple[str, ...] | None = None
    display: DisplayConfig | None = None
    close_after_ms: float | None = None
    #: Pass/fail limits per participant (``{"tti_ms": ["p95 < 3000"]}``), parsed.
    thresholds: tuple[Threshold, ...] | None = None
    #: Iterations per participant (per phase) run before the measured ones, never scored.
    warmup: int | None = None

    def evolve(self, **changes: Any) -> BenchmarkConfig:
        """A copy with ``changes`` applied (``attrs.evolve``; not re-validated)."""
        return attrs.evolve(self, **changes)


@attrs.frozen
class ConfigIssue:
    """One validation problem: ``field`` (snake_case path) and upstream's ``message``."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


class BenchmarkConfigError(ValueError):
    """Raised by :func:`define_benchmark_config` with every issue found (``.issues``)."""

    issues: tuple[ConfigIssue, ...]

    def __init__(self, issues: Iterable[ConfigIssue]) -> None:
        self.issues = tuple(issues)
        super().__init__(self.format_issues(self.issues))

    @staticmethod
    def format_issues(issues: Iterable[ConfigIssue]) -> str:
        """Upstream's text: a header, ``  - field: message`` lines, and the closing hint."""
        lines = "\n".join(f"  - {issue}" for issue in issues)
        return f"Invalid benchmark config:\n{lines}\n\nFix the fields above and try again."

    def __reduce__(self) -> tuple[Any, ...]:
        # Exceptions pickle by args; ours is rebuilt from the issues (xdist, multiprocessing).
        return (type(self), (self.issues,))


# --- validation and the define_* helpers ----------------------------------------------------


def _raw_fields(config: object, fields: Mapping[str, Any]) -> object:
    """The raw field mapping of ``config`` (a mapping or a model) updated with ``fields``."""
    if config is None:
        return dict(fields)
    raw = _r.as_mapping(config)
    if raw is None:
        return config  # not an object: validation reports it
    merged = dict(raw)
    merged.update(fields)
    return merged


def validate_benchmark_config(config: object = None, /, **fields: Any) -> list[ConfigIssue]:
    """Every issue of a config (a mapping, a BenchmarkConfig, or keyword fields); never raises.

    Like upstream's ``validateBenchmarkConfig`` this does not run the declarative scoring check
    (see :func:`validate_scoring_config`; :func:`define_benchmark_config` runs both).
    """
    try:
        pairs = _v.config_issues(_raw_fields(config, fields))
    except Exception as exc:  # pragma: no cover - a hostile mapping; never let validation raise
        pairs = [("config", f"could not be read ({type(exc).__name__}: {exc})")]
    return [ConfigIssue(field, message) for field, message in pairs]


def validate_scoring_config(scoring: object, display: object = None) -> str | None:
    """The first failure of a declarative scoring config (upstream's message), or None.

    ``display`` supplies units: a scoring unit conflicting with a display unit is a failure.
    """
    try:
        return _v.scoring_error(scoring, display)
    except Exception as exc:  # pragma: no cover - a hostile mapping; never let validation raise
        return f"scoring could not be read ({type(exc).__name__}: {exc})"


def _int(value: Any) -> Any:
    # 3.0 is a valid integer (Number.isInteger); hand downstream a real int.
    return int(value) if isinstance(value, float) else value


def _tuple_or_none(value: Any) -> tuple[Any, ...] | None:
    return None if value is None else tuple(value)


def _normalize(raw: Mapping[str, Any]) -> BenchmarkConfig:
    def get(name: str) -> Any:
        return raw.get(name)

    phases = get("phases")
    shapes = get("shapes")
    scoring = get("scoring")
    display = get("display")
    thresholds = get("thresholds")
    dimensions = get("dimensions")
    return BenchmarkConfig(
        benchmark_slug=get("benchmark_slug"),
        benchmark_name=get("benchmark_name"),
        participants=tuple(Participant.coerce(p) for p in get("participants")),
        iterations=_int(get("iterations")),
        phases=None
        if phases is None
        else tuple(
            Phase(
                _r.get_field(p, "name"),
                _int(_r.get_field(p, "iterations")),
                _int(_r.get_field(p, "warmup")),
            )
            for p in phases
        ),
        concurrency=_int(get("concurrency")),
        stagger_delay_ms=get("stagger_delay_ms"),
        group_by=get("group_by"),
        shapes=None
        if shapes is None
        else {
            str(key): Shape(
                _r.get_field(shape, "slug"),
                _r.get_field(shape, "name"),
                _r.get_field(shape, "stagger_delay_ms", "staggerDelayMs"),
            )
            for key, shape in shapes.items()
        },
        default_providers=_tuple_or_none(get("default_providers")),
        dimensions=None if dimensions is None else dict(dimensions),
        on_score=get("on_score"),
        on_complete=get("on_complete"),
        scoring=None if scoring is None else ScoringConfig.coerce(scoring),
        custom_cli_flags=_tuple_or_none(get("custom_cli_flags")),
        display=None if display is None else DisplayConfig.coerce(display),
        close_after_ms=get("close_after_ms"),
        thresholds=None if thresholds is None else parse_thresholds(thresholds)[0],
        warmup=_int(get("warmup")),
    )


def define_benchmark_config(config: object = None, /, **fields: Any) -> BenchmarkConfig:
    """Validate a config and return it as a frozen, normalized :class:`BenchmarkConfig`.

    Accepts a mapping of snake_case fields, a BenchmarkConfig, keyword fields, or a mapping plus
    keyword overrides. Runs :func:`validate_benchmark_config` and, when ``scoring`` is given,
    :func:`validate_scoring_config` (its first failure reported as field ``scoring``); raises
    :class:`BenchmarkConfigError` listing every issue. Participants become
    :class:`Participant`, phases :class:`Phase`, shapes :class:`Shape`, ``scoring``/``display``
    dicts their models, lists tuples.
    """
    raw = _raw_fields(config, fields)
    issues = validate_benchmark_config(raw)
    if isinstance(raw, Mapping) and raw.get("scoring") is not None:
        message = validate_scoring_config(raw["scoring"], raw.get("display"))
        if message is not None:
            issues.append(ConfigIssue("scoring", message))
    if issues:
        raise BenchmarkConfigError(issues)
    return _normalize(cast("Mapping[str, Any]", raw))


def _is_task_function(fn: object) -> bool:
    # Sync and async functions, callable objects and functools.partial are all callable.
    return callable(fn)


def generator_task_problem(fn: object) -> str | None:
    """Why ``fn`` cannot be a task because calling it runs none of its body (a generator
    function, sync or async: the call only creates a generator), else ``None``."""
    target: Any = fn
    if not callable(target):
        return None
    candidates = [target, inspect.unwrap(target)]
    if not (inspect.isfunction(target) or inspect.ismethod(target)):
        candidates.append(type(target).__call__)  # a callable object: its __call__ method
    for candidate in candidates:
        if inspect.isasyncgenfunction(candidate):
            kind = "an async generator function (`async def` with `yield`)"
        elif inspect.isgeneratorfunction(candidate):
            kind = "a generator function (it contains `yield`)"
        else:
            continue
        name = getattr(fn, "__qualname__", None) or getattr(candidate, "__qualname__", "task")
        return (
            f"the task {name}() is {kind}: calling it only creates a generator and runs none "
            "of its body, so every iteration would pass without measuring anything. A task "
            "runs and returns: replace `yield` with `return` (or collect the values in a list)"
        )
    return None


def define_task(fn: _F) -> _F:
    """Mark ``fn`` as the benchmark task; returns it unchanged (sync or async callables).

    Raises ``TypeError('define_task requires a task function.')`` for anything not callable,
    and a ``TypeError`` naming the task for a generator function (sync or async), whose call
    would run nothing.
    """
    __tracebackhide__ = True  # pytest shows the bench file's decorator line, not this one
    if not _is_task_function(fn):
        raise TypeError("define_task requires a task function.")
    problem = generator_task_problem(fn)
    if problem is not None:
        raise TypeError(f"define_task: {problem}")
    return fn


def define_on_complete(fn: _F) -> _F:
    """Typing helper for the ``on_complete(outcome)`` hook; returns it unchanged."""
    if not _is_task_function(fn):
        raise TypeError("define_on_complete requires an on_complete function.")
    return fn
