"""Run hygiene: warnings about a participant's samples that make its statistics untrustworthy.

Public home: :mod:`pytest_benchsdk.compare`. Each warning has a stable code (the constants
below, the one place they are spelled), a message for people (numbers in the metric's unit),
the participant (and phase) and the metrics it is about: metrics whose findings say the same
are one warning. The checks are advisory: the caller decides which codes it shows.

A benchmark with phases is judged per participant × phase: a cold phase that is slower than the
warm one is the point of the phases, never a ``trend`` or ``first-outlier``. The checks of one
series are :data:`SERIES_CHECKS`, so a new one is one entry there.
"""

from __future__ import annotations

import collections
import math
import statistics
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, Final

import attrs

from pytest_benchsdk._analysis.kendall import kendall_trend
from pytest_benchsdk._analysis.stats import DEFAULT_TRIM, finite_samples
from pytest_benchsdk._base.numbers import TIME_UNITS, quantity, significant
from pytest_benchsdk._base.percentiles import trimmed_range

__all__ = [
    "FAILURE_RATE",
    "FIRST_OUTLIER",
    "HIGH_VARIANCE",
    "P99_FEW_SAMPLES",
    "SERIES_CHECKS",
    "TIMER_FLOOR",
    "TREND",
    "WARNING_CODES",
    "Finding",
    "RunWarning",
    "Series",
    "run_warnings",
    "shared_finding",
    "step_floor_warnings",
]

P99_FEW_SAMPLES: Final = "p99-few-samples"
FIRST_OUTLIER: Final = "first-outlier"
HIGH_VARIANCE: Final = "high-variance"
TREND: Final = "trend"
FAILURE_RATE: Final = "failure-rate"
UNMEASURED_METRIC: Final = "unmeasured-metric"
TIMER_FLOOR: Final = "timer-floor"
#: Every code, in the order :func:`run_warnings` reports them.
WARNING_CODES: Final = (
    FAILURE_RATE,
    UNMEASURED_METRIC,
    P99_FEW_SAMPLES,
    FIRST_OUTLIER,
    HIGH_VARIANCE,
    TREND,
    TIMER_FLOOR,
)

# Below 100 samples ceil(0.99 * n) == n: the nearest-rank p99 is the largest sample.
_P99_MIN_SAMPLES: Final = 100
# Iglewicz & Hoaglin call |z| > 3.5 an outlier; 10 flags only a first iteration that is clearly
# of another kind (cold connections, caches, JIT), not an unlucky one.
_FIRST_OUTLIER_Z: Final = 10.0
_FIRST_OUTLIER_MIN_SAMPLES: Final = 5  # the first, and at least four to measure it against
_HIGH_VARIANCE_CV: Final = 0.30
# A spread read off fewer samples than this says nothing (two samples 40 % apart are a
# coefficient of variation of 40 %): as many as a first outlier needs.
_HIGH_VARIANCE_MIN_SAMPLES: Final = 5
# A sample the high-variance message names as an outlier: as far from the median as a first
# outlier must be (modified z-score over 10), at most this many of them named.
_NAMED_OUTLIERS: Final = 3
# A trend needs both: Kendall's tau of (index, value) significant at 1 %, and a drift worth
# acting on (the last third's median 10 % away from the first third's), because with thousands
# of samples a negligible drift is significant too.
_TREND_P_VALUE: Final = 0.01
_TREND_MIN_DRIFT: Final = 0.10
_TREND_MIN_SAMPLES: Final = 10
_FAILURE_RATE_MAX: Final = 0.05
# The latency series' key (results' LATENCY): the runner timed it with one clock pair.
_LATENCY: Final = "latency_ms"
# Under 2 µs a sample timed by one pair of clock readings is mostly the readings, the runner's
# bookkeeping around them and a cold first call (an empty step reads 0.5-1 µs on a loaded
# 2-core machine, a 150 ns join 1.3-1.5 µs); more than half the samples on one value means the
# record's (or the clock's) resolution is coarser than the work's differences.
_FLOOR_S: Final = 2e-6
_FLOOR_MIN_SAMPLES: Final = 5


def _metric_names(value: str | Sequence[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(str(name) for name in value)


@attrs.frozen
class Finding:
    """What a check found: its ``message`` for people (the facts, then why they matter and
    what to do), the ``facts`` alone (the start of the message: ``coefficient of variation
    45% (over 30%) of the 40 samples``) and the ``figure`` the facts turn on, where the code
    has one (:func:`shared_finding` says what it is for each code)."""

    message: str
    facts: str
    figure: float | None = None


@attrs.frozen
class RunWarning:
    """One finding of :func:`run_warnings`: a stable ``code`` (e.g. ``'trend'``), a ``message``
    for people, the ``participant`` and the ``metrics`` it is about (empty for
    participant-wide findings; one metric name may be given as a string). ``finding`` is the
    message's facts without the advice, ``figure`` their number (see :class:`Finding`; None
    in warnings stored by earlier versions)."""

    code: str
    message: str
    participant: str
    metrics: tuple[str, ...] = attrs.field(default=(), converter=_metric_names)
    #: The phase whose samples it judged (None: the participant's whole run, no phases).
    phase: str | None = None
    finding: str | None = None
    figure: float | None = None

    @property
    def subject(self) -> str:
        """Who it is about, as the views print it: ``e2b``, or ``e2b · cold`` for a phase."""
        return self.participant if self.phase is None else f"{self.participant} · {self.phase}"

    @property
    def metric(self) -> str | None:
        """The metric's name, the names joined with ``", "`` for several, None for none."""
        return ", ".join(self.metrics) if self.metrics else None

    def to_json(self) -> dict[str, Any]:
        """``{code, message, participant, phase, metric, metrics, finding, figure}``
        (``metric``: :attr:`metric`, as earlier versions wrote it)."""
        return {
            "code": self.code,
            "message": self.message,
            "participant": self.participant,
            "phase": self.phase,
            "metric": self.metric,
            "metrics": list(self.metrics),
            "finding": self.finding,
            "figure": self.figure,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunWarning:
        """Read back :meth:`to_json` (also the forms without ``metrics`` or ``phase``, as
        earlier versions stored them: a warning about the whole run)."""
        metrics = data.get("metrics")
        if metrics is None:
            metric = data.get("metric")
            metrics = () if metric is None else (str(metric),)
        phase = data.get("phase")
        finding = data.get("finding")
        figure = data.get("figure")
        return cls(
            str(data["code"]),
            str(data["message"]),
            str(data["participant"]),
            tuple(str(m) for m in metrics),
            None if phase is None else str(phase),
            None if finding is None else str(finding),
            float(figure) if isinstance(figure, (int, float)) else None,
        )


@attrs.frozen
class Series:
    """One metric's samples of one participant (or phase), in run order, with what the checks
    need to judge them: the ``metric``'s key and ``unit``, the ``warmup`` iterations run before
    them and whether its p99 counts (``p99_counts``)."""

    values: Sequence[float]
    metric: str = ""
    unit: str = ""
    warmup: int = 0
    p99_counts: bool = True
    #: The phase the samples are of (None: the whole run), for advice that names it.
    phase: str | None = None
    #: The samples are a benchmarked test's rounds (the ``benchmark`` fixture's): the advice
    #: names the fixture's knobs, not a bench file's.
    rounds: bool = False
    #: The share the statistics trim from each end (upstream's trim: the metric's, else 5 %):
    #: ``high-variance`` judges the samples the statistics use.
    trim: float = DEFAULT_TRIM


def _p99_check(series: Series) -> Finding | None:
    return _p99_few_samples(series.values, series.p99_counts, rounds=series.rounds)


def _first_outlier_check(series: Series) -> Finding | None:
    if series.rounds:
        return _first_round_outlier(series.values, series.unit)
    return _first_outlier(
        series.values,
        series.unit,
        series.warmup,
        series.phase,
        above_only=series.metric == _LATENCY,
    )


def _high_variance_check(series: Series) -> Finding | None:
    return _high_variance(series.values, series.unit, series.trim, rounds=series.rounds)


def _trend_check(series: Series) -> Finding | None:
    return _trend(series.values, rounds=series.rounds)


def _timer_floor_check(series: Series) -> Finding | None:
    return _timer_floor(
        series.values, series.unit, timed=series.metric == _LATENCY, rounds=series.rounds
    )


#: The checks of one series, ``(code, check)``: a check returns its finding, or None when the
#: series is fine. Each runs on each participant × phase × metric.
SERIES_CHECKS: Final[tuple[tuple[str, Callable[[Series], Finding | None]], ...]] = (
    (P99_FEW_SAMPLES, _p99_check),
    (FIRST_OUTLIER, _first_outlier_check),
    (HIGH_VARIANCE, _high_variance_check),
    (TREND, _trend_check),
    (TIMER_FLOOR, _timer_floor_check),
)


def run_warnings(
    participant: str,
    samples: Mapping[str, Sequence[float]],
    *,
    iterations: int = 0,
    failed: int = 0,
    p99_metrics: Collection[str] | None = None,
    units: Mapping[str, str] | None = None,
    warmup: int = 0,
    scored: Collection[str] = (),
    phase: str | None = None,
    rounds: bool = False,
    trims: Mapping[str, float] | None = None,
) -> list[RunWarning]:
    """Warnings about one participant's run (or one ``phase`` of it: the caller passes that
    phase's samples, iterations and warm-up, and each warning names the phase): ``samples``
    maps each metric to its samples **in run order** (task index); ``iterations`` and
    ``failed`` count the participant's iterations and the failed ones among them;
    ``p99_metrics`` are the metrics whose p99 counts (a scoring weight or a threshold on it;
    None: every metric); ``units`` the metrics' units (numbers in messages are written in
    them); ``warmup`` the warm-up iterations run before the measured ones; ``scored`` the
    metrics the participant's score is made of; ``rounds``: the participant is a benchmarked
    test (the ``benchmark`` fixture's), whose samples are its rounds: the advice names the
    fixture's knobs; ``trims`` the metrics' trims (the statistics', 5 % when not given), and the
    codes about iterations (``failure-rate``: the test failed, and
    says so; ``unmeasured-metric``: its record always has its times) do not apply.

    Codes, in this order (each code's findings in ``samples`` order):

    * ``failure-rate``: more than 5 % of the iterations failed.
    * ``unmeasured-metric``: a ``scored`` metric has no sample although some iteration passed
      (its statistics are empty and it adds nothing to the score).
    * ``p99-few-samples``: a metric of ``p99_metrics`` has fewer than 100 samples, so the
      nearest-rank p99 is the largest one.
    * ``first-outlier``: the first sample's modified z-score (``0.6745 · (x − median) / MAD``
      against the other samples) exceeds 10 in absolute value. Without warm-up the advice is
      to add some; after ``warmup`` iterations it says that they did not reach what the first
      measured iteration pays for. Needs at least 5 samples, and spread among the others (a
      MAD of 0 gives no z-score).
    * ``high-variance``: coefficient of variation (sample standard deviation / mean) above
      30 %, for a positive mean, of the samples the statistics use (trimmed as they trim);
      the message names the samples far from the others among them (modified z-score over
      10), and how much of the spread they make.
    * ``trend``: Kendall's tau of (index, value) with p < 0.01 (scipy's ``kendalltau``,
      computed without scipy by :func:`~pytest_benchsdk._analysis.kendall.kendall_trend`) and the
      last third's median at least 10 % away from the first third's. Needs at least 10 samples.
    * ``timer-floor``: a time metric's samples sit on the clock's or the record's floor: more
      than half of them (at least 5) are one value, or, for the latency the runner timed
      itself, the median is under 2 µs. The message names the calibrated form
      ``step(name, fn, calls="auto")``. (:func:`step_floor_warnings` checks steps alike.)

    Metrics whose findings of one code say the same (the same message) are one warning with
    all of them in ``metrics``. A metric's samples are what scoring counts of it: NaN, ±inf,
    bools and other non-numbers are left out (the same rule as
    :func:`~pytest_benchsdk.scoring.score`).
    """
    for name, count in (("iterations", iterations), ("failed", failed), ("warmup", warmup)):
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(f"{name} must be an int >= 0 (got {count!r})")
    if failed > iterations:
        raise ValueError(f"failed ({failed}) cannot exceed iterations ({iterations})")

    warnings: list[RunWarning] = []
    if iterations and failed / iterations > _FAILURE_RATE_MAX and not rounds:
        facts = (
            f"{failed} of {iterations} iterations failed ({failed / iterations:.0%}, more "
            f"than {_FAILURE_RATE_MAX:.0%})"
        )
        warnings.append(
            RunWarning(
                FAILURE_RATE,
                f"{facts}: the score only sees the ones that passed; look at the failures "
                "before trusting it",
                participant,
                phase=phase,
                finding=facts,
                figure=failed / iterations,
            )
        )
    values_of = {metric: _as_floats(finite_samples(list(raw))) for metric, raw in samples.items()}
    found: dict[tuple[str, str], tuple[Finding, list[str]]] = {}

    def note(code: str, finding: Finding, metric: str) -> None:
        found.setdefault((code, finding.message), (finding, []))[1].append(metric)

    if iterations > failed and not rounds:
        for metric in scored:
            if not values_of.get(metric):
                note(UNMEASURED_METRIC, _UNMEASURED, metric)
    for metric, values in values_of.items():
        series = Series(
            values,
            metric=metric,
            unit=(units or {}).get(metric, ""),
            warmup=warmup,
            p99_counts=p99_metrics is None or metric in p99_metrics,
            phase=phase,
            rounds=rounds,
            trim=(trims or {}).get(metric, DEFAULT_TRIM),
        )
        for code, check in SERIES_CHECKS:
            finding = check(series)
            if finding is not None:
                note(code, finding, metric)
    # In the codes' order, then the metrics' (a dict keeps the order findings were made in).
    for code in WARNING_CODES:
        warnings.extend(
            RunWarning(
                code,
                finding.message,
                participant,
                tuple(metrics),
                phase,
                finding=finding.facts,
                figure=finding.figure,
            )
            for (kind, _), (finding, metrics) in found.items()
            if kind == code
        )
    return warnings


# The checks run after every bench session: medians and spreads come from the standard
# library's ``statistics`` and the trend test from ``_kendall`` (importing numpy would add ~15
# MiB and ~0.1 s to each session, scipy ~75 MiB and ~0.5 s).


_UNMEASURED: Final = Finding(
    "scored, but no passing iteration measured it, so its statistics are empty and it adds "
    "nothing to the score: record it with measure(<key>=value) in the task (inside a `with "
    "step(...)` block measure() writes to that step's data, which scoring does not read)",
    "scored, but no passing iteration measured it",
)


def _p99_few_samples(
    values: Sequence[float], counts: bool, *, rounds: bool = False
) -> Finding | None:
    n = len(values)
    if not counts or n == 0 or n >= _P99_MIN_SAMPLES:
        return None
    if rounds:
        facts = f"p99 comes from {n} round(s)"
        return _finding(
            facts,
            f"{facts}; below {_P99_MIN_SAMPLES} the nearest-rank p99 is the "
            "slowest round, so one round decides it: run at least "
            f"{_P99_MIN_SAMPLES} rounds (@pytest.mark.benchmark(min_rounds={_P99_MIN_SAMPLES}), "
            f"or benchmark.pedantic(..., rounds={_P99_MIN_SAMPLES})), or judge p95 "
            "(--bench-threshold)",
            n,
        )
    facts = f"p99 comes from {n} sample(s)"
    return _finding(
        facts,
        f"{facts}; below {_P99_MIN_SAMPLES} the nearest-rank p99 is the "
        "largest sample, so one iteration decides it (the slowest; of a higher-is-better metric, "
        f"the best): run at least {_P99_MIN_SAMPLES} iterations, or give p99 no weight "
        "(scoring) and judge p95 (thresholds)",
        n,
    )


def _finding(facts: str, message: str, figure: float | None = None) -> Finding:
    """A :class:`Finding` whose ``message`` begins with its ``facts``."""
    return Finding(message, facts, figure)


def _span(low: float, high: float, text: Callable[[float], str]) -> str:
    """``33–278%`` (one figure when both ends read the same)."""
    first, last = text(low), text(high)
    return first if first == last else f"{first}–{last}"


def _percent(value: float) -> str:
    return f"{value * 100:.0f}"


def shared_finding(code: str, figures: Sequence[float], *, rounds: bool = False) -> str | None:
    """What several findings of one ``code`` say together, from their figures (each
    :attr:`Finding.figure`): ``coefficient of variation 33–278% (over 30%)``; None for a
    code without a figure (``timer-floor``, ``unmeasured-metric``) or without figures.
    ``rounds``: the findings are benchmarked tests' (their samples are rounds)."""
    if not figures:
        return None
    low, high = min(figures), max(figures)
    samples = "rounds" if rounds else "samples"
    if code == HIGH_VARIANCE:
        return (
            f"coefficient of variation {_span(low, high, _percent)}% (over {_HIGH_VARIANCE_CV:.0%})"
        )
    if code == TREND:
        later = "later rounds" if rounds else "later iterations"
        direction = "higher" if low > 0 else "lower" if high < 0 else "higher or lower"
        drift = _span(low, high, lambda v: f"{v * 100:+.0f}")
        return (
            f"{later} are {direction} than earlier ones (last third's median {drift}% against "
            "the first third's)"
        )
    if code == FIRST_OUTLIER:
        first = "the first round" if rounds else "the first iteration"
        side = "above" if low > 0 else "below" if high < 0 else "away from"
        z = _span(low, high, lambda v: f"{v:.0f}")
        return f"{first} is far {side} the others (modified z-score {z})"
    if code == P99_FEW_SAMPLES:
        n = _span(low, high, lambda v: f"{v:.0f}")
        return f"p99 comes from {n} {samples} (under {_P99_MIN_SAMPLES})"
    if code == FAILURE_RATE:
        return (
            f"{_span(low, high, _percent)}% of the iterations failed "
            f"(more than {_FAILURE_RATE_MAX:.0%})"
        )
    return None


def _first_outlier_facts(
    values: Sequence[float], unit: str, *, above_only: bool = False
) -> tuple[str, float] | None:
    """How far the first sample is from the others (``far above the others (…)``), when it
    is an outlier; else None. ``above_only``: a time, where only a first sample far *above*
    the others pays for warming up (one far below is no cold start)."""
    if len(values) < _FIRST_OUTLIER_MIN_SAMPLES:
        return None
    first, rest = values[0], values[1:]
    median = statistics.median(rest)
    mad = statistics.median([abs(value - median) for value in rest])
    if mad == 0:
        return None
    z = 0.6745 * (first - median) / mad
    if abs(z) <= _FIRST_OUTLIER_Z or (above_only and z < 0):
        return None
    side = "above" if z > 0 else "below"
    return (
        f"far {side} the others ({quantity(first, unit)} against a median of "
        f"{quantity(median, unit)}, modified z-score {z:.0f})",
        z,
    )


def _first_outlier(
    values: Sequence[float],
    unit: str,
    warmup: int,
    phase: str | None = None,
    *,
    above_only: bool = False,
) -> Finding | None:
    found = _first_outlier_facts(values, unit, above_only=above_only)
    if found is None:
        return None
    facts, z = found
    if warmup:
        head = f"the first measured iteration is still {facts} after {warmup} warm-up iteration(s)"
        return _finding(
            head,
            f"{head}: what it pays for is not warmed up by them (a cost per phase or per "
            "participant, a cache the warm-up task does not touch) or they are too few; raise "
            "warmup, or make the warm-up iterations do what the first measured one does",
            z,
        )
    if phase is not None:
        # warmup= and --bench-warmup reach every phase but one named cold: name the phase's own.
        head = f"the first iteration of phase {phase} is {facts}"
        return _finding(
            head,
            f"{head}: it likely pays for warming up "
            f"(connections, caches, JIT); add warm-up iterations before it "
            f'(Phase("{phase}", ..., warmup=1), or warmup=1 / --bench-warmup 1 for a phase not '
            "named cold), which run first and are never scored",
            z,
        )
    head = f"the first iteration is {facts}"
    return _finding(
        head,
        f"{head}: it likely pays for warming up (connections, caches, "
        "JIT); add warm-up iterations (warmup=1 in the config, or --bench-warmup 1), which run "
        "first and are never scored",
        z,
    )


def _first_round_outlier(values: Sequence[float], unit: str) -> Finding | None:
    """``first-outlier`` of a benchmarked test's rounds: the advice is the fixture's warm-up."""
    found = _first_outlier_facts(values, unit, above_only=True)
    if found is None:
        return None
    facts, z = found
    head = f"the first round is {facts}"
    return _finding(
        head,
        f"{head}: it likely pays for warming up (caches, the "
        "interpreter's specialising, lazy imports); warm up before the rounds: "
        "@pytest.mark.benchmark(warmup=True, warmup_iterations=N), or "
        "benchmark.pedantic(..., warmup_rounds=N) (more of them if it warms up already)",
        z,
    )


def _coefficient_of_variation(values: Sequence[float]) -> float | None:
    """Sample standard deviation over mean; None without two values or a positive mean."""
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    if mean <= 0:
        return None
    return statistics.stdev(values, xbar=mean) / mean


def _far_samples(values: Sequence[float]) -> list[float]:
    """The samples far from the others (modified z-score over :data:`_FIRST_OUTLIER_Z`), the
    farthest first; none when the spread around the median (MAD) is 0."""
    median = statistics.median(values)
    mad = statistics.median([abs(value - median) for value in values])
    if mad == 0:
        return []
    far = [v for v in values if abs(0.6745 * (v - median) / mad) > _FIRST_OUTLIER_Z]
    return sorted(far, key=lambda v: -abs(v - median))


def _outlier_text(far: Sequence[float], median: float, unit: str) -> str:
    """``one sample of 1.10 s, 15× the median (73.6 ms)`` / ``3 samples far from the median
    (73.6 ms): 1.10 s (15×), …``."""

    def times(value: float) -> str:
        return f"{significant(value / median)}×" if median > 0 else ""

    if len(far) == 1:
        ratio = f", {times(far[0])} the median" if median > 0 else " against a median"
        return f"one sample of {quantity(far[0], unit)}{ratio} ({quantity(median, unit)})"
    named = ", ".join(
        f"{quantity(v, unit)}" + (f" ({times(v)})" if median > 0 else "")
        for v in far[:_NAMED_OUTLIERS]
    )
    more = f" and {len(far) - _NAMED_OUTLIERS} more" if len(far) > _NAMED_OUTLIERS else ""
    return f"{len(far)} samples far from the median ({quantity(median, unit)}): {named}{more}"


def _high_variance(
    values: Sequence[float], unit: str = "", trim: float = DEFAULT_TRIM, *, rounds: bool = False
) -> Finding | None:
    ordered = sorted(values)
    first, kept = trimmed_range(len(ordered), trim)
    used = ordered[first : first + kept]
    if len(used) < _HIGH_VARIANCE_MIN_SAMPLES:
        return None
    cv = _coefficient_of_variation(used)
    if cv is None or cv <= _HIGH_VARIANCE_CV:
        return None
    dropped = len(ordered) - len(used)
    of = (
        f"of the {len(used)} samples the statistics use ({dropped} trimmed)"
        if dropped
        else (f"of the {len(used)} samples")
    )
    spread = f"coefficient of variation {cv:.0%} (over {_HIGH_VARIANCE_CV:.0%}) {of}"
    far = _far_samples(used)
    if far:
        median = statistics.median(used)
        rest = list(used)
        for value in far:
            rest.remove(value)
        without = _coefficient_of_variation(rest)
        spread += f"; {_outlier_text(far, median, unit)}"
        if without is not None:
            spread += f" (without {'it' if len(far) == 1 else 'them'}: {without:.0%})"
    if rounds:
        return _finding(
            spread,
            f"{spread}: the rounds "
            "spread widely, so small differences between tests are noise; make each round "
            "longer (@pytest.mark.benchmark(min_time=...), benchmark.pedantic(..., "
            "iterations=...)), keep the GC out (disable_gc=True) or look for an unstable "
            "environment",
            cv,
        )
    return _finding(
        spread,
        f"{spread}: the samples "
        "spread widely, so small differences between participants are noise; run more "
        "iterations or look for an unstable environment",
        cv,
    )


def _trend(values: Sequence[float], *, rounds: bool = False) -> Finding | None:
    n = len(values)
    if n < _TREND_MIN_SAMPLES:
        return None
    third = n // 3
    first_median = statistics.median(values[:third])
    last_median = statistics.median(values[-third:])
    if first_median == 0:
        return None  # no relative drift to speak of
    drift = (last_median - first_median) / abs(first_median)
    if abs(drift) < _TREND_MIN_DRIFT:
        return None
    # The drift test first: most runs have none, and Kendall's tau is O(n log n) in Python.
    tau, p_value = kendall_trend(values)
    if math.isnan(p_value) or p_value >= _TREND_P_VALUE:
        return None
    direction = "higher" if drift > 0 else "lower"
    facts = (
        f"(last third's median {drift:+.0%} against the first third's, Kendall tau {tau:.2f}, "
        f"p={p_value:.1e})"
    )
    if rounds:
        head = f"later rounds are {direction} than earlier ones {facts}"
        return _finding(
            head,
            f"{head}: the rounds are not "
            "alike, so statistics over them mix two regimes; look for throttling, or state "
            "the function grows from call to call (benchmark.pedantic(..., setup=...) gives "
            "each round a fresh one)",
            drift,
        )
    head = f"later iterations are {direction} than earlier ones {facts}"
    return _finding(
        head,
        f"{head}: the samples are not "
        "alike, so statistics over the run mix two regimes; look for throttling, growing "
        "caches or leaking resources",
        drift,
    )


def _as_floats(samples: Sequence[float]) -> list[float]:
    """The samples a float can hold (a Python int beyond ~1e308 cannot: left out, as it
    would be by any statistic computed in floats)."""
    out: list[float] = []
    for value in samples:
        try:
            out.append(float(value))
        except OverflowError:
            continue
    return out


_CALIBRATED_FORM: Final = (
    'time it in a calibrated loop instead: step(name, fn, calls="auto") calls fn in loops of '
    "at least 1 ms and records the time per call at nanosecond resolution"
)


#: ``timer-floor``'s way out for a benchmarked test (its rounds are the fixture's).
_ROUNDS_FLOOR_ADVICE: Final = (
    "let the fixture calibrate the calls per round (benchmark(fn) rather than "
    "benchmark.pedantic(..., iterations=1)), give pedantic more iterations, or use a finer "
    "timer (@pytest.mark.benchmark(timer=time.perf_counter))"
)


def _timer_floor(
    values: Sequence[float], unit: str, *, timed: bool, rounds: bool = False
) -> Finding | None:
    """``timer-floor``: most samples on one value, or (``timed``: one clock pair per sample)
    a median under a microsecond; None for other units or fine samples."""
    size = TIME_UNITS.get(unit)
    if size is None or not values:
        return None
    median = statistics.median(values)
    if timed and median * size < _FLOOR_S:
        head = f"the median is {quantity(median, unit)}, under {quantity(_FLOOR_S / size, unit)}"
        return _finding(
            head,
            f"{head}: a sample this short is mostly the two clock readings around it and the "
            f"runner's own work between them, not the work being timed; {_CALIBRATED_FORM}",
        )
    if len(values) < _FLOOR_MIN_SAMPLES:
        return None
    value, count = collections.Counter(values).most_common(1)[0]
    if 2 * count <= len(values):
        return None
    if rounds:
        head = f"{count} of {len(values)} rounds are exactly {quantity(value, unit)}"
        return _finding(
            head,
            f"{head}: they sit on "
            "the timer's resolution, so their spread and percentiles are that resolution's, "
            f"not the work's; {_ROUNDS_FLOOR_ADVICE}",
        )
    head = f"{count} of {len(values)} samples are exactly {quantity(value, unit)}"
    return _finding(
        head,
        f"{head}: they sit on the "
        "resolution of the clock or of the record, so their spread and percentiles are that "
        f"resolution's, not the work's; {_CALIBRATED_FORM} (or record the value at a finer "
        "resolution)",
    )


def step_floor_warnings(participant: str, steps: Mapping[str, Sequence[float]]) -> list[RunWarning]:
    """``timer-floor`` of steps the runner timed with one clock pair per invocation:
    ``steps`` maps a step's name to its latencies in milliseconds (a calibrated step's
    per-call figures do not belong here: they are timed over a whole loop). Steps whose
    findings say the same are one warning; each is named ``step <name>``."""
    found: dict[str, tuple[Finding, list[str]]] = {}
    for name, latencies in steps.items():
        finding = _timer_floor(_as_floats(finite_samples(list(latencies))), "ms", timed=True)
        if finding is not None:
            found.setdefault(finding.message, (finding, []))[1].append(f"step {name}")
    return [
        RunWarning(
            TIMER_FLOOR,
            finding.message,
            participant,
            tuple(names),
            finding=finding.facts,
            figure=finding.figure,
        )
        for finding, names in found.values()
    ]
