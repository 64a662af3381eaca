"""Thresholds: declarative pass/fail limits per participant, k6-style.

A config's ``thresholds`` maps a metric key to expressions (one string or a list)::

    thresholds={"tti_ms": ["p95 < 3000", "median <= 800"], "success_rate": [">= 0.99"],
                "score": [">= 70"]}

A data key takes ``<stat> <op> <number>`` (stat: median, p95, p99, mean, min, max; op: ``<``,
``<=``, ``>``, ``>=``); ``success_rate`` and ``score`` take ``<op> <number>``. On the command
line, ``--bench-threshold "tti_ms: p95 < 3000"`` adds one (``KEY: EXPR``).

In a benchmark with phases an expression may name its phase, ``"warm: p95 < 40"`` (on the
command line ``"request_ms: warm: p95 < 40"``), and is judged on that phase's iterations alone;
one that names none is judged for each phase separately (:func:`thresholds_per_phase`), so a
breach in cold never fails warm. ``score`` is the participant's (upstream's score pools the
phases) and names no phase.

A threshold reads the participant's summary (:mod:`pytest_benchsdk.results`), so its numbers
are the ones the summary tables print: a data key's median/p95/p99 follow the one percentile
rule (a scored metric's samples and ``trim`` as scoring takes them, any other key's passing
records' ``data[key]`` trimmed 5 %), ``mean``, ``min`` and ``max`` are of every sample;
``latency_ms`` is the passing iterations' latency unless the data has such a key.
``success_rate`` is passing records / records (0–1); ``score`` is the participant's composite
score (needs ``scoring`` or ``on_score``).
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Protocol

import attrs

from pytest_benchsdk._base.js import py_number
from pytest_benchsdk._base.numbers import (
    in_unit,
    is_count_unit,
    is_time_unit,
    limit_in_unit,
    significant,
)
from pytest_benchsdk._base.percentiles import statistic_label
from pytest_benchsdk._base.spelling import closest_within

__all__ = [
    "LATENCY_KEY",
    "SCORE_KEY",
    "STATISTICS",
    "SUCCESS_RATE_KEY",
    "StatsLike",
    "Threshold",
    "ThresholdVerdict",
    "closest_key",
    "evaluate_threshold",
    "parse_cli_threshold",
    "parse_cli_thresholds",
    "parse_threshold",
    "parse_thresholds",
    "thresholds_per_phase",
    "unknown_phase_problem",
    "unmeasured_hint",
]

SUCCESS_RATE_KEY: Final = "success_rate"
SCORE_KEY: Final = "score"
#: The iteration's latency, unless the records' data has a ``latency_ms`` of its own.
LATENCY_KEY: Final = "latency_ms"
#: Keys whose expressions have no statistic: the value is one number per participant.
_SCALAR_KEYS: Final = (SUCCESS_RATE_KEY, SCORE_KEY)

STATISTICS: Final = ("median", "p95", "p99", "mean", "min", "max")
_OPERATORS: Final[Mapping[str, Callable[[float, float], bool]]] = {
    "<=": operator.le,
    ">=": operator.ge,
    "<": operator.lt,
    ">": operator.gt,
}
_EXPRESSION: Final = re.compile(
    r"^\s*(?:(?P<stat>[a-z0-9]+)\s*)?(?P<op><=|>=|<|>)\s*(?P<limit>[^\s<>=].*?)\s*$"
)


@attrs.frozen
class Threshold:
    """One limit: ``metric`` (a data key, ``success_rate`` or ``score``), ``statistic``
    (``None`` for the scalar keys), ``op`` and ``limit``; ``phase`` the phase whose iterations
    it judges (None: all of the participant's)."""

    metric: str
    statistic: str | None
    op: str
    limit: float
    phase: str | None = None

    @property
    def expression(self) -> str:
        """Canonical text without spaces: ``p95<3000``, ``>=0.99``, ``warm:p95<40`` (what
        :func:`parse_threshold` reads back)."""
        text = f"{self.statistic or ''}{self.op}{py_number(self.limit)}"
        return text if self.phase is None else f"{self.phase}:{text}"

    @property
    def label(self) -> str:
        """``tti_ms-p95<3000``, ``warm-tti_ms-p95<40``: the threshold's part of its item id."""
        text = f"{self.metric}-{self.statistic or ''}{self.op}{py_number(self.limit)}"
        return text if self.phase is None else f"{self.phase}-{text}"

    def holds(self, observed: float) -> bool:
        return _OPERATORS[self.op](observed, self.limit)


class StatsLike(Protocol):
    """What a threshold reads of a metric's statistics
    (:class:`~pytest_benchsdk.results.SampleStats`)."""

    def get(self, statistic: str) -> float: ...


@attrs.frozen
class ThresholdVerdict:
    """A threshold judged for one participant. ``observed`` is ``None`` when there was
    nothing to measure (no sample: the threshold fails); ``skipped`` says why it was not
    judged at all (the participant did not run). ``unit`` is the metric's."""

    threshold: Threshold
    participant: str
    observed: float | None
    passed: bool
    unit: str = ""
    skipped: str | None = None
    #: The value whose prefix a count's message uses: the row's scale (``_numbers.row_scale``
    #: of med/p95/p99), as the tables scale a participant's row (None: observed). A time is
    #: written in the metric's own unit, the one the limit was written in.
    scale: float | None = None
    #: For a metric the participant never measured: what it did measure, and the closest
    #: key (a misspelt key reads as a typo, not as a participant that measured nothing).
    hint: str | None = None
    #: The metric's direction (None: unknown): a higher-is-better metric's p95/p99 are its
    #: best tail, and the message says so.
    lower_is_better: bool | None = None

    @property
    def outcome(self) -> str:
        """``passed``, ``failed`` or ``skipped``."""
        if self.skipped is not None:
            return "skipped"
        return "passed" if self.passed else "failed"

    def message(self) -> str:
        """One line: participant, metric, statistic, the observed value (three significant
        digits) and the limit as written, both in the unit the user wrote the limit in, the
        metric's (``json: dumps_ms p95 = 93.5 ms, threshold < 30 ms: breached``; ``api:
        request_ms p95 = 1235 ms, threshold < 600 ms: breached``, never ``< 0.6 s``); a
        count with the prefix the tables use (``1.23 M instr, threshold < 1.2 M instr``)."""
        t = self.threshold
        who = self.participant if t.phase is None else f"{self.participant} · {t.phase}"
        statistic = statistic_label(t.statistic, self.lower_is_better) if t.statistic else ""
        head = f"{who}: {t.metric}" + (f" {statistic}" if statistic else "")
        reference = self.observed if self.scale is None else self.scale
        limit = f"{t.op} {_limit_text(t.limit, self.unit, reference)}"
        if self.skipped is not None:
            return f"{head} not judged (threshold {limit}): {self.skipped}"
        if self.observed is None:
            return f"{head} has no samples (threshold {limit})" + (
                f": {self.hint}" if self.hint else ""
            )
        verdict = "ok" if self.passed else "breached"
        value = _observed_text(self.observed, self.unit, reference)
        return f"{head} = {value}, threshold {limit}: {verdict}"

    def to_json(self) -> dict[str, Any]:
        t = self.threshold
        return {
            "participant": self.participant,
            "phase": t.phase,
            "metric": t.metric,
            "statistic": t.statistic,
            "op": t.op,
            "limit": t.limit,
            "label": t.label,
            "observed": self.observed
            if self.observed is None or math.isfinite(self.observed)
            else None,
            "unit": self.unit,
            "scale": self.scale,
            "outcome": self.outcome,
            "skipped": self.skipped,
            "hint": self.hint,
            "lowerIsBetter": self.lower_is_better,
            "message": self.message(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ThresholdVerdict:
        phase = data.get("phase")  # absent in verdicts stored before phases were judged apart
        threshold = Threshold(
            str(data["metric"]),
            data.get("statistic"),
            str(data["op"]),
            float(data["limit"]),
            None if phase is None else str(phase),
        )
        observed = data.get("observed")
        return cls(
            threshold=threshold,
            participant=str(data["participant"]),
            observed=None if observed is None else float(observed),
            passed=data.get("outcome") == "passed",
            unit=str(data.get("unit") or ""),
            skipped=data.get("skipped"),
            scale=data.get("scale"),
            hint=data.get("hint"),
            lower_is_better=data.get("lowerIsBetter"),
        )


def closest_key(key: str, keys: Sequence[str]) -> str | None:
    """The key of ``keys`` that ``key`` most likely misspells (None: none is close): the
    fewest edits away when one is at most two edits away (``througput_rps`` →
    ``throughput_rps``), else the closest by difflib's ratio."""
    import difflib

    near = closest_within(key, keys)
    if near is not None:
        return near
    found = difflib.get_close_matches(key, list(keys), n=1, cutoff=0.6)
    return found[0] if found else None


def unmeasured_hint(key: str, measured: Sequence[str]) -> str:
    """What a threshold on ``key`` says when nothing measured it: the keys there are, and the
    closest (``measured latency_ms, cpu_ms, value; did you mean latency_ms?``)."""
    closest = closest_key(key, measured)
    return f"measured {', '.join(measured)}" + (
        f"; did you mean {closest}?" if closest is not None else ""
    )


def _limit_text(limit: float, unit: str, reference: float | None = None) -> str:
    """The limit as the user wrote it, in the metric's unit (``600 ms``, never ``0.6 s``); a
    count limit with the prefix of ``reference`` (the observed count's), when there is one
    (``2 M instr``)."""
    if reference is not None and is_count_unit(unit):
        return limit_in_unit(limit, unit, reference)
    return f"{py_number(limit)} {unit}" if unit else py_number(limit)


def _observed_text(observed: float, unit: str, reference: float | None) -> str:
    """The observed value beside the limit: a time in the metric's own unit, the unit the
    limit was written in (``p95 = 1235 ms, threshold < 600 ms``: one unit on the line, the
    user's); anything else as the tables write it (a count with the prefix of ``reference``)."""
    if is_time_unit(unit):
        return f"{significant(observed)} {unit}"
    return in_unit([observed], unit, reference)


def parse_threshold(metric: str, expression: object) -> Threshold:
    """One expression of ``metric`` (``"p95 < 3000"``, or ``"warm: p95 < 40"`` for one
    phase); ``ValueError`` with what is wrong."""
    if not isinstance(expression, str):
        raise ValueError(f"must be a string like 'p95 < 3000' (got {expression!r})")
    expression = expression.strip()
    phase: str | None = None
    if ":" in expression:
        named, _, rest = expression.partition(":")
        phase = named.strip()
        if not phase:
            raise ValueError(
                f"{expression!r}: the phase before ':' is empty (write 'warm: p95 < 40')"
            )
        if metric == SCORE_KEY:
            raise ValueError(
                f"{expression!r}: score is the participant's composite score, which pools its "
                "phases (as upstream's does): it takes no phase"
            )
        expression = rest.strip()
    found = _EXPRESSION.match(expression)
    if found is None:
        raise ValueError(
            f"cannot read {expression!r}: expected '<stat> <op> <number>' (stat: "
            f"{', '.join(STATISTICS)}; op: <, <=, >, >=)"
        )
    stat, op, raw = found.group("stat"), found.group("op"), found.group("limit")
    if metric in _SCALAR_KEYS:
        if stat is not None:
            raise ValueError(f"{expression!r}: {metric} takes '<op> <number>', without a statistic")
    elif stat is None:
        raise ValueError(f"{expression!r}: missing the statistic ({', '.join(STATISTICS)})")
    elif stat not in STATISTICS:
        raise ValueError(
            f"{expression!r}: unknown statistic {stat!r} (known: {', '.join(STATISTICS)})"
        )
    try:
        limit = float(raw)
    except ValueError:
        raise ValueError(f"{expression!r}: the limit {raw!r} is not a number") from None
    if not math.isfinite(limit):
        raise ValueError(f"{expression!r}: the limit must be a finite number")
    return Threshold(metric, stat, op, limit, phase)


def parse_thresholds(raw: object) -> tuple[tuple[Threshold, ...], list[tuple[str, str]]]:
    """A config's ``thresholds``: the parsed thresholds and every problem as
    ``(field path, message)`` (all of them, not the first)."""
    if isinstance(raw, (tuple, list)) and all(isinstance(t, Threshold) for t in raw):
        return tuple(raw), []  # already parsed (a BenchmarkConfig validated again)
    if not isinstance(raw, Mapping):
        return (), [("thresholds", "must be a dict of metric key -> expression(s)")]
    parsed: list[Threshold] = []
    problems: list[tuple[str, str]] = []
    for key, value in raw.items():
        if not (isinstance(key, str) and key.strip()):
            problems.append(("thresholds", f"metric keys must be non-empty strings (got {key!r})"))
            continue
        expressions: Sequence[object] = [value] if isinstance(value, str) else value
        if not isinstance(expressions, (list, tuple)) or not expressions:
            problems.append(
                (f"thresholds.{key}", "must be an expression or a non-empty list of them")
            )
            continue
        for index, expression in enumerate(expressions):
            try:
                parsed.append(parse_threshold(key, expression))
            except ValueError as exc:
                problems.append((f"thresholds.{key}[{index}]", str(exc)))
    return tuple(parsed), problems


def parse_cli_threshold(text: str) -> Threshold:
    """``--bench-threshold "tti_ms: p95 < 3000"`` (``KEY: EXPR``; ``KEY: PHASE: EXPR`` for
    one phase)."""
    key, sep, expression = text.partition(":")
    if not sep or not key.strip():
        raise ValueError(
            f'--bench-threshold expects "KEY: EXPR", e.g. "tti_ms: p95 < 3000" (got "{text}")'
        )
    try:
        return parse_threshold(key.strip(), expression)
    except ValueError as exc:
        raise ValueError(f"--bench-threshold {key.strip()}: {exc}") from None


def parse_cli_thresholds(texts: Sequence[str]) -> tuple[Threshold, ...]:
    """Every ``--bench-threshold``, parsed; a ``ValueError`` names every bad one (one line
    each), not only the first."""
    parsed: list[Threshold] = []
    problems: list[str] = []
    for text in texts:
        try:
            parsed.append(parse_cli_threshold(text))
        except ValueError as exc:
            problems.append(str(exc))
    if problems:
        raise ValueError("\n".join(problems))
    return tuple(parsed)


def unknown_phase_problem(threshold: Threshold, phases: Sequence[str]) -> str | None:
    """Why ``threshold`` cannot be judged in a benchmark with ``phases`` (its phase is not one
    of them), or None."""
    if threshold.phase is None or threshold.phase in phases:
        return None
    if not phases:
        return f"names the phase {threshold.phase!r}, but the benchmark has no phases"
    return (
        f"names the phase {threshold.phase!r}, which the benchmark does not have "
        f"(its phases: {', '.join(phases)})"
    )


def thresholds_per_phase(
    thresholds: Sequence[Threshold], phases: Sequence[str]
) -> tuple[Threshold, ...]:
    """The thresholds a benchmark with ``phases`` judges: one that names no phase becomes one
    per phase (with two or more phases; ``score`` stays the participant's), so a breach in one
    phase never fails another. Names are checked by :func:`unknown_phase_problem`."""
    out: list[Threshold] = []
    for threshold in thresholds:
        if threshold.phase is None and len(phases) > 1 and threshold.metric != SCORE_KEY:
            out.extend(attrs.evolve(threshold, phase=phase) for phase in phases)
        else:
            out.append(threshold)
    return tuple(dict.fromkeys(out))


def evaluate_threshold(
    threshold: Threshold,
    participant: str,
    *,
    stats: StatsLike | None = None,
    success_rate: float | None = None,
    score: float | None = None,
    unit: str = "",
    scale: float | None = None,
) -> ThresholdVerdict:
    """Judge ``threshold`` for one participant from what its summary says: ``stats`` of the
    threshold's metric (its median/p95/p99 by the summary tables' percentile rule, mean, min
    and max of every sample; None: no samples), its ``success_rate`` (0–1) and composite
    ``score``. ``unit`` is the metric's and ``scale`` its median, for the message."""
    observed: float | None
    if threshold.metric == SUCCESS_RATE_KEY:
        observed = success_rate
    elif threshold.metric == SCORE_KEY:
        observed = score if score is not None and math.isfinite(score) else None
    else:
        assert threshold.statistic is not None
        observed = stats.get(threshold.statistic) if stats is not None else None
    passed = observed is not None and threshold.holds(observed)
    if threshold.metric in _SCALAR_KEYS:
        unit, scale = "", None
    return ThresholdVerdict(threshold, participant, observed, passed, unit, scale=scale)
