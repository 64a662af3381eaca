"""Comparing a run with a baseline run of the same benchmark (``--bench-compare``,
``pytest-benchsdk compare``): the pure analysis.

This module computes: it reads no store and no file. Which run is the baseline, what a REF
names, which run a baseline name may stand for and the history's values are found by the one
home of baselines, :mod:`pytest_benchsdk.results` (``results/_baselines.py``), which hands a
:class:`Baseline` to :func:`compare_with_baseline` through
:func:`~pytest_benchsdk.results.analyse`.

Per participant present in both runs (per participant × phase, when the run has phases: a
cold-only regression is not diluted by the warm samples) and per compared metric (the scored
metrics; the iteration latency when nothing is scored), the median and the p95 are compared with
:func:`~pytest_benchsdk.compare.compare_samples` (bootstrap interval of the relative change,
Mann–Whitney U, a verdict only when the change is significant and clears the noise threshold).
A metric's samples are what scoring counts (:func:`~pytest_benchsdk.scoring.metric_samples`),
or the passing iterations' ``latencyMs``; its statistics follow the scores' percentile rule
(trimmed by the metric's ``trim``, default 5 %), so they are the numbers the score table
prints. Differences between the two runs that make the comparison less meaningful (knobs,
benchmark identity, platform, machine, CPU count, Python) are listed as warnings.

**What is judged.** ``compare_on`` (``--bench-compare-on``) names the metrics whose verdicts
count (for ``--bench-compare-fail`` and the summary): each named metric is compared (a row also
when it is neither scored nor the latency, e.g. ``cpu_ms``), the default rows are still
compared and shown, and only the named ones are :attr:`MetricComparison.judged`. A key that no
participant of the run measured is :class:`CompareOnError`, naming the keys there are.

**Between-run noise.** A within-run interval sees only the spread of one run's samples, not
how much the statistic moves from one run to the next (machine load, thermal state, a noisy
neighbour), which on CI machines is the larger noise. When at least
:data:`MIN_HISTORY_RUNS` earlier complete runs with the same setup give a row's statistic,
:func:`between_run_noise` estimates that movement from them and the verdict also needs the
change to exceed it (:class:`MetricComparison` says which noise decided).
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, Final

import attrs

from pytest_benchsdk._analysis.compare import (
    Comparison,
    Statistic,
    compare_paired,
    compare_samples,
)
from pytest_benchsdk._analysis.scoring import ScoringSpec, metric_samples
from pytest_benchsdk._analysis.stats import DEFAULT_TRIM, finite_samples
from pytest_benchsdk._base.defaults import DEFAULT_NOISE_THRESHOLD
from pytest_benchsdk._base.numbers import change_of_values, change_text, phase_subject
from pytest_benchsdk._base.percentiles import nearest_rank, statistic_label
from pytest_benchsdk.records import TaskRecord

__all__ = [
    "COMPARED_STATISTICS",
    "HISTORY_RUNS",
    "LATENCY_METRIC",
    "MIN_HISTORY_RUNS",
    "NOISE_HISTORY",
    "NOISE_PAIRED",
    "NOISE_WITHIN_RUN",
    "RULE_STATISTICS",
    "Baseline",
    "BaselineComparison",
    "BetweenRunNoise",
    "CompareOnError",
    "CompareRule",
    "ComparedMetric",
    "HistoryKey",
    "MetricComparison",
    "RuleVerdict",
    "between_run_noise",
    "check_compare_on",
    "compare_runs",
    "compare_with_baseline",
    "compared_metrics",
    "history_key",
    "judge_rules",
    "measured_keys",
    "pooled_participants",
    "record_phase",
    "rule_statistic",
    "setup_differences",
]

#: The statistics each metric is compared on.
COMPARED_STATISTICS: Final[tuple[Statistic, ...]] = ("median", "p95")
#: The CPU time an iteration measured (``cpu_ms``): an A/B comparison shows its rows too.
CPU_METRIC: Final = "cpu_ms"
#: The metric compared when the benchmark scores nothing: the iteration's ``latencyMs``.
LATENCY_METRIC: Final = "latency_ms"
#: Earlier complete runs a row's statistic needs before their spread counts.
MIN_HISTORY_RUNS: Final = 3
#: The between-run noise is estimated from at most this many of the latest earlier runs.
HISTORY_RUNS: Final = 30
#: What a row's verdict rests on: the samples' own spread, or the earlier runs' spread.
NOISE_WITHIN_RUN: Final = "within-run"
NOISE_HISTORY: Final = "history"
#: The noise of an A/B comparison: the spread of the rounds' pairs.
NOISE_PAIRED: Final = "paired"
# The median of |N(0, 1)|: the median absolute value of a normal deviate is 0.6745 σ.
_MEDIAN_ABS_NORMAL: Final = 0.6744897501960817

#: A row of the comparison: ``(participant, metric, statistic)``, and the phase after them for
#: a phase's row (:func:`history_key`).
HistoryKey = tuple[str, ...]


def history_key(
    participant: str, metric: str, statistic: str, phase: str | None = None
) -> HistoryKey:
    """The key of a row's values in a history: a phase's rows have their own."""
    key = (participant, metric, statistic)
    return key if phase is None else (*key, phase)


def record_phase(record: TaskRecord) -> str | None:
    """The record's phase (``data["phase"]``, set by the plugin; None without phases)."""
    data = record.data
    phase = data.get("phase") if isinstance(data, Mapping) else None
    return phase if isinstance(phase, str) else None


@attrs.frozen
class BetweenRunNoise:
    """How much a statistic moves from one complete run to the next, from ``runs`` earlier
    runs (oldest first): ``typical`` is the median absolute change between consecutive runs
    (as a ratio: ``0.05`` for 5 %), ``band`` the change a new run must exceed to stand out
    from them, either way (``+band`` up, ``÷(1 + band)`` down; see
    :func:`between_run_noise`)."""

    runs: int
    typical: float
    band: float

    def beaten_by(self, change: float) -> bool:
        """``change`` (relative) is outside the band: ``1 + change`` beyond ``1 + band`` or
        below ``1 / (1 + band)``."""
        if change <= -1:
            return True
        return abs(math.log1p(change)) > math.log1p(self.band)

    def to_json(self) -> dict[str, Any]:
        return {"runs": self.runs, "typical": self.typical, "band": self.band}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BetweenRunNoise:
        return cls(int(data["runs"]), float(data["typical"]), float(data["band"]))


def between_run_noise(
    values: Sequence[float], alpha: float = 0.05, rows: int = 1
) -> BetweenRunNoise | None:
    """The between-run noise of a statistic from its values in earlier runs, oldest first
    (None with fewer than :data:`MIN_HISTORY_RUNS` values, or a value that is not > 0).

    The changes between consecutive runs, as log ratios, are what a comparison of the current
    run with its baseline faces. The band is the larger of

    * ``t(1 - alpha/(2 · rows), k) · m / 0.6745`` with ``m`` the **median** of the ``k``
      absolute changes: a standard deviation read off the median (``0.6745 σ`` for normal
      noise), which an outlier run hardly moves. Student's t with ``k`` degrees of freedom
      instead of the normal quantile, because a σ read off a few changes is itself uncertain
      (3 earlier runs give 2 changes): 8.9 σ from 3 runs, 3.0 σ from 11, 2.7 σ from 31 at
      ``rows = 4``; the normal band would fail about one unchanged session in four with a
      short history. A session fails when *any* of its ``rows`` regressed, so the quantile is
      Bonferroni's for the session (``alpha / rows``): an unchanged session, not each row,
      fails at most ``alpha`` of the time under normal noise;
    * the **second-largest** absolute change: machine noise is heavy-tailed and comes in
      bursts (a burst of load lifts one run's p95 tenfold, and the next run falls back: two
      large changes), which a band drawn from the typical change would call regressions; the
      largest change but one covers the bursts seen so far, while a single step (a regression
      since, kept in the history) counts once and does not widen the band, so a regression
      stays one until the baseline moves.
    """
    if len(values) < MIN_HISTORY_RUNS or not all(math.isfinite(v) and v > 0 for v in values):
        return None
    logs = [math.log(v) for v in values]
    changes = sorted(abs(b - a) for a, b in itertools.pairwise(logs))
    typical = statistics.median(changes)
    if rows < 1:
        raise ValueError(f"rows must be at least 1 (got {rows})")
    from scipy import stats  # lazily: scipy is imported only when a comparison runs

    z = float(stats.t.ppf(1 - alpha / (2 * rows), df=len(changes)))
    band = max(z * typical / _MEDIAN_ABS_NORMAL, changes[-2])
    return BetweenRunNoise(len(values), math.expm1(typical), math.expm1(band))


@attrs.frozen
class ComparedMetric:
    """A metric to compare: its key, direction, unit and ``trim`` (the statistics follow the
    scores' percentile rule)."""

    key: str
    lower_is_better: bool = True
    unit: str | None = None
    trim: float = DEFAULT_TRIM


class CompareOnError(ValueError):
    """``--bench-compare-on`` names a key that no participant of the run measured (the
    message names the keys there are)."""


def compared_metrics(
    spec: ScoringSpec | None, compare_on: Sequence[str] = ()
) -> tuple[ComparedMetric, ...]:
    """The scored metrics of ``spec`` (or the latency when nothing is scored), then each key of
    ``compare_on`` that is not among them (lower is better; ``ms`` for a key ending in
    ``_ms``)."""
    if spec is None or not spec.metrics:
        metrics = [ComparedMetric(LATENCY_METRIC, True, "ms")]
    else:
        metrics = [
            ComparedMetric(
                metric.name,
                not metric.higher_is_better,
                metric.unit,
                DEFAULT_TRIM if metric.trim is None else metric.trim,
            )
            for metric in spec.metrics
        ]
    known = {m.key for m in metrics}
    for key in compare_on:
        if key not in known:
            known.add(key)
            unit = "ms" if key == LATENCY_METRIC or key.endswith("_ms") else None
            metrics.append(ComparedMetric(key, True, unit))
    return tuple(metrics)


def measured_keys(records: Mapping[str, Sequence[TaskRecord]]) -> tuple[str, ...]:
    """The metrics the participants' passing records measured: the latency and every data key
    with a sample (sorted after the latency)."""
    keys: set[str] = set()
    for participant_records in records.values():
        for record in participant_records:
            if record.status != "success" or not isinstance(record.data, Mapping):
                continue
            keys.update(
                key
                for key, value in record.data.items()
                if isinstance(key, str) and finite_samples([value])
            )
    keys.discard(LATENCY_METRIC)
    return (LATENCY_METRIC, *sorted(keys))


def check_compare_on(
    compare_on: Sequence[str],
    current: Mapping[str, Sequence[TaskRecord]],
    spec: ScoringSpec | None,
) -> None:
    """:class:`CompareOnError` for a key of ``compare_on`` no participant of ``current``
    measured (a scored metric counts as measured)."""
    if not compare_on:
        return
    there = list(measured_keys(current))
    there += [m.name for m in (spec.metrics if spec is not None else ()) if m.name not in there]
    unknown = [key for key in compare_on if key not in there]
    if unknown:
        raise CompareOnError(
            f"no participant measured {', '.join(unknown)}; the keys there are: {', '.join(there)}"
        )


def _samples(
    records: Sequence[TaskRecord], metrics: Sequence[ComparedMetric], spec: ScoringSpec | None
) -> dict[str, list[float]]:
    samples = {} if spec is None or not spec.metrics else metric_samples(spec, records)
    passing = [r for r in records if r.status == "success"]
    for metric in metrics:
        if metric.key in samples:
            continue
        if metric.key == LATENCY_METRIC:
            samples[LATENCY_METRIC] = [r.latency_ms for r in passing if r.latency_ms is not None]
        else:  # a measured key that is not scored (e.g. cpu_ms): the data's samples
            samples[metric.key] = finite_samples(
                [r.data.get(metric.key) if isinstance(r.data, Mapping) else None for r in passing]
            )
    return samples


@attrs.frozen
class MetricComparison:
    """One participant × metric × statistic (× ``phase``, with phases): the comparison, or why
    there is none (``note``).

    ``comparison`` is :func:`~pytest_benchsdk.compare.compare_samples`' within-run result;
    ``history`` the between-run noise of the statistic, when enough earlier runs had it. The
    row's :attr:`verdict` needs both: a within-run ``regressed``/``improved`` stands only if
    the change also exceeds the history's ``band``. :attr:`noise` says which of the two asked
    more of the change, :attr:`detectable` the smallest change the row could have confirmed,
    :attr:`reason` why an ``unchanged`` is one when its interval alone would not say so.
    """

    participant: str
    metric: str
    statistic: Statistic
    unit: str | None
    comparison: Comparison | None
    note: str | None = None
    history: BetweenRunNoise | None = None
    #: Whether the row's verdict counts (``--bench-compare-fail``, the summary); a row of a
    #: metric ``--bench-compare-on`` did not name is shown, not judged.
    judged: bool = True
    #: The phase whose samples both sides compare (None: the participant's whole run).
    phase: str | None = None
    #: The sides' samples are paired by round (an A/B session): the interval is the pairs'.
    paired: bool = False

    @property
    def subject(self) -> str:
        """Who the row is about, as the views print it: ``e2b``, or ``e2b · cold``."""
        return phase_subject(self.participant, self.phase)

    @property
    def verdict(self) -> str | None:
        c = self.comparison
        if c is None:
            return None
        beaten = self.history is None or self.history.beaten_by(c.change)
        return c.verdict if beaten else "unchanged"

    @property
    def verdict_label(self) -> str:
        """The verdict as the tables print it: in parentheses when it does not count
        (a metric ``--bench-compare-on`` did not name)."""
        verdict = self.verdict or ""
        return verdict if self.judged or not verdict else f"({verdict})"

    @property
    def noise(self) -> str | None:
        """``within-run`` or ``history``: whose requirement on the change was the larger."""
        if self.comparison is None:
            return None
        if self.history is not None and self.history.band > self.comparison.detectable:
            return NOISE_HISTORY
        return NOISE_PAIRED if self.paired else NOISE_WITHIN_RUN

    @property
    def noise_label(self) -> str:
        """``within-run`` or ``history, 6 runs``."""
        if self.noise == NOISE_HISTORY and self.history is not None:
            return f"history, {self.history.runs} runs"
        if self.noise == NOISE_PAIRED and self.comparison is not None:
            return f"paired, {self.comparison.current_n} rounds"
        return self.noise or ""

    @property
    def detectable(self) -> float | None:
        """The smallest change (relative) this row could have told from noise: the within-run
        one (:attr:`Comparison.detectable`), or the history's band when that is larger."""
        c = self.comparison
        if c is None:
            return None
        if self.history is not None:
            return max(c.detectable, self.history.band)
        return c.detectable

    @property
    def reason(self) -> str | None:
        """Why the row is ``unchanged`` although its interval lies beyond the noise
        threshold: the Mann–Whitney U test did not pass, or the change is within what earlier
        runs show between themselves (None for every other row)."""
        c = self.comparison
        if c is None or self.verdict != "unchanged":
            return None
        if c.verdict != "unchanged" and self.history is not None:
            band = self.history.band
            return (
                f"a change of {change_text(c.change)} is within what the last "
                f"{self.history.runs} complete runs show between themselves (up to "
                f"{change_text(band)} or {change_text(1 / (1 + band) - 1)})"
            )
        if c.beyond_noise and not c.significant:
            return (
                f"the Mann–Whitney U test did not pass (p = {c.p_value:.2g}, needs < "
                f"{c.alpha:g}): the samples overlap too much to call it a change"
            )
        return None

    @property
    def statistic_label(self) -> str:
        """The statistic as the views name it: ``p95 (best 5 %)`` for a higher-is-better
        metric's best tail."""
        lower = None if self.comparison is None else self.comparison.lower_is_better
        return statistic_label(self.statistic, lower)

    def line(self) -> str:
        """One line for people: participant, metric, statistic, baseline → current, change
        and its interval, verdict."""
        head = f"{self.subject} {self.metric} {self.statistic_label}"
        c = self.comparison
        if c is None:
            return f"{head}: {self.note}"
        # Both in the unit that fits the larger, three significant digits (a 152 ns median
        # is not "0").
        values = change_of_values(c.baseline_statistic, c.current_statistic, self.unit or None)
        return (
            f"{head}: {values}, "
            f"{change_text(c.change)} [{change_text(c.ci_low)}, {change_text(c.ci_high)}] "
            f"{self.verdict} ({self.noise_label})"
        )

    def to_json(self) -> dict[str, Any]:
        """The row; ``verdict``, ``noise``, ``detectable`` and ``reason`` are what the
        properties say (written for readers of the JSON, recomputed when read back)."""
        detectable = self.detectable
        return {
            "participant": self.participant,
            "phase": self.phase,
            "metric": self.metric,
            "statistic": self.statistic,
            "unit": self.unit,
            "comparison": None if self.comparison is None else self.comparison.to_json(),
            "note": self.note,
            "history": None if self.history is None else self.history.to_json(),
            "verdict": self.verdict,
            "noise": self.noise,
            "detectable": detectable if detectable is None or math.isfinite(detectable) else None,
            "reason": self.reason,
            "judged": self.judged,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MetricComparison:
        comparison = data.get("comparison")
        history = data.get("history")
        phase = data.get("phase")  # absent in rows stored before phases were compared apart
        return cls(
            str(data["participant"]),
            str(data["metric"]),
            data["statistic"],
            data.get("unit"),
            None if comparison is None else Comparison.from_json(comparison),
            data.get("note"),
            None if history is None else BetweenRunNoise.from_json(history),
            bool(data.get("judged", True)),
            phase=None if phase is None else str(phase),
            paired=data.get("noise") == NOISE_PAIRED,
        )


@attrs.frozen
class BaselineComparison:
    """A run compared with its baseline: what the baseline is, the setup differences, the
    rows (participant × metric × statistic, per phase with phases), and ``history_runs``: how
    many earlier complete runs with the same setup the store held (None: none was looked up,
    e.g. without a store)."""

    baseline: str
    baseline_run_id: str | None
    warnings: tuple[str, ...]
    rows: tuple[MetricComparison, ...]
    history_runs: int | None = None
    #: ``--bench-compare-on``'s keys (empty: the default rows are all judged).
    compare_on: tuple[str, ...] = ()
    #: The rows pair the two sides' rounds (an A/B session, ``--bench-ab``), run by
    #: ``processes`` pairs of processes taking turns.
    paired: bool = False
    processes: int = 1
    #: ``--bench-compare-fail=STAT:LIMIT``'s verdicts.
    rules: tuple[RuleVerdict, ...] = ()
    #: The paired rounds are benchmarked tests', paired turn by turn (each test ran once per
    #: process pair on both sides), not a bench file's iterations.
    turns: bool = False
    #: The two sides of a round ran at the same time (``--bench-ab-mode=duet``), not one
    #: right after the other.
    duet: bool = False

    @property
    def failed_rules(self) -> tuple[RuleVerdict, ...]:
        return tuple(rule for rule in self.rules if rule.failed)

    @property
    def regressions(self) -> tuple[MetricComparison, ...]:
        """The judged rows that regressed (what ``--bench-compare-fail`` fails on)."""
        return tuple(row for row in self.rows if row.judged and row.verdict == "regressed")

    def judged_line(self) -> str | None:
        """Which metrics' verdicts count, when ``--bench-compare-on`` chose them."""
        if not self.compare_on:
            return None
        return (
            f"Judged (--bench-compare-on): {', '.join(self.compare_on)}; the other rows are "
            "shown, their verdicts do not count"
        )

    @property
    def says_noise(self) -> bool:
        """Whether :meth:`noise_line` has something to say (the history was looked up, or the
        rows are paired)."""
        return self.history_runs is not None or self.paired

    def noise_line(self) -> str:
        """Where the verdicts' noise comes from, for the comparison's header."""
        if self.paired:
            turns = (
                f"; {self.processes} process pairs took turns, and their spread is part of "
                "the intervals"
                if self.processes > 1
                else ""
            )
            when = "at the same time" if self.duet else "one right after the other"
            if self.turns:
                return (
                    f"Noise: paired rounds (each test ran on both sides in turns, {when}, "
                    "and a turn's rounds pair in run order): what the machine did during a "
                    f"turn it did to both sides{turns}"
                )
            return (
                f"Noise: paired rounds (each iteration ran on both sides, {when}): what the "
                f"machine did to a round did it to both sides{turns}"
            )
        runs = self.history_runs or 0
        if runs > HISTORY_RUNS:
            return (
                f"Between-run noise: from the latest {HISTORY_RUNS} of {runs} earlier complete "
                "runs with the same setup"
            )
        if runs >= MIN_HISTORY_RUNS:
            return f"Between-run noise: from the {runs} earlier complete runs with the same setup"
        return (
            f"Between-run noise: unknown ({runs} earlier complete run(s) with the same setup, "
            f"{MIN_HISTORY_RUNS} needed): the verdicts rest on the within-run noise alone"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "baselineRunId": self.baseline_run_id,
            "warnings": list(self.warnings),
            "rows": [row.to_json() for row in self.rows],
            "historyRuns": self.history_runs,
            "compareOn": list(self.compare_on),
            "paired": self.paired,
            "processes": self.processes,
            "rules": [rule.to_json() for rule in self.rules],
            "pairedTurns": self.turns,
            "duet": self.duet,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BaselineComparison:
        runs = data.get("historyRuns")
        return cls(
            str(data["baseline"]),
            data.get("baselineRunId"),
            tuple(str(w) for w in data.get("warnings") or ()),
            tuple(MetricComparison.from_json(row) for row in data.get("rows") or ()),
            None if runs is None else int(runs),
            tuple(str(key) for key in data.get("compareOn") or ()),
            paired=bool(data.get("paired", False)),
            processes=int(data.get("processes", 1)),
            rules=tuple(RuleVerdict.from_json(r) for r in data.get("rules") or ()),
            turns=bool(data.get("pairedTurns", False)),
            duet=bool(data.get("duet", False)),
        )


@attrs.frozen
class Baseline:
    """The run a comparison is made against: where it came from (``label``), its records per
    participant and its setup (``{"benchmark", "knobs", "environment"}``, and ``dry_run``
    when known). ``history``: per row (:func:`history_key`) its values in the earlier
    complete runs with the current run's setup, oldest first, of which the store held
    ``history_runs`` (None: not looked up). Found by :mod:`pytest_benchsdk.results`
    (``find_baseline``)."""

    label: str
    run_id: str | None
    records: Mapping[str, Sequence[TaskRecord]]
    setup: Mapping[str, Any]
    history: Mapping[HistoryKey, Sequence[float]] | None = None
    history_runs: int | None = None
    #: The baseline ran the same iterations in the same rounds as the run (an A/B session's
    #: side A): rows pair them (see :func:`compare_runs`), ``processes`` pairs of processes
    #: taking turns.
    paired: bool = False
    processes: int = 1
    #: Its records are benchmarked tests' measured in turns (see :class:`BaselineComparison`).
    turns: bool = False
    #: Both sides of a round ran at the same time (see :class:`BaselineComparison`).
    duet: bool = False


def compare_with_baseline(
    baseline: Baseline,
    current: Mapping[str, Sequence[TaskRecord]],
    spec: ScoringSpec | None,
    setup: Mapping[str, Any],
    noise_threshold: float = DEFAULT_NOISE_THRESHOLD,
    compare_on: Sequence[str] = (),
    rules: Sequence[CompareRule] = (),
) -> BaselineComparison:
    """The run (``current``: its records per participant; ``setup`` as :class:`Baseline`'s)
    compared with ``baseline``: the rows (:func:`compare_runs`, with the baseline's history)
    and the setup differences (:func:`setup_differences`), and a line for each participant
    whose phases the baseline does not split (:func:`pooled_participants`). ``compare_on``: the
    metrics whose verdicts count (:class:`CompareOnError` for one that no participant
    measured)."""
    check_compare_on(compare_on, current, spec)
    measured = measured_keys(current)
    rows = compare_runs(
        baseline.records,
        current,
        spec,
        noise_threshold=noise_threshold,
        history=baseline.history,
        compare_on=compare_on,
        paired=baseline.paired,
        processes=baseline.processes,
        # Both sides ran now, on the same machine: their CPU time is comparable too.
        also=[CPU_METRIC] if baseline.paired and CPU_METRIC in measured else [],
    )
    pooled = pooled_participants(baseline.records, current)
    notes = (
        (
            f"the baseline's records of {', '.join(pooled)} carry no phases (stored before "
            "phases were recorded, or by another tool): compared over all phases together",
        )
        if pooled
        else ()
    )
    return BaselineComparison(
        baseline.label,
        baseline.run_id,
        (*setup_differences(baseline.setup, setup), *notes),
        rows,
        baseline.history_runs,
        tuple(compare_on),
        paired=baseline.paired,
        processes=baseline.processes,
        rules=judge_rules(rules, baseline.records, current, spec) if rules else (),
        turns=baseline.turns,
        duet=baseline.duet,
    )


def _phases(records: Sequence[TaskRecord]) -> list[str]:
    """The records' phases in first-seen order; empty with fewer than two (one phase is the
    whole run)."""
    phases = [p for p in dict.fromkeys(record_phase(r) for r in records) if p is not None]
    return phases if len(phases) > 1 else []


def pooled_participants(
    baseline: Mapping[str, Sequence[TaskRecord]], current: Mapping[str, Sequence[TaskRecord]]
) -> list[str]:
    """The participants whose current records have phases while their baseline records have
    none: :func:`compare_runs` compares them over all phases together."""
    return [
        name
        for name, records in current.items()
        if name in baseline and _phases(records) and not _phases(baseline[name])
    ]


def compare_runs(
    baseline: Mapping[str, Sequence[TaskRecord]],
    current: Mapping[str, Sequence[TaskRecord]],
    spec: ScoringSpec | None,
    *,
    noise_threshold: float = DEFAULT_NOISE_THRESHOLD,
    alpha: float = 0.05,
    seed: int = 0,
    history: Mapping[HistoryKey, Sequence[float]] | None = None,
    compare_on: Sequence[str] = (),
    paired: bool = False,
    also: Sequence[str] = (),
    processes: int = 1,
) -> tuple[MetricComparison, ...]:
    """Rows for every participant of ``current`` (in its order) × compared metric × statistic;
    with phases (two or more in the current records), per participant × phase × metric ×
    statistic, each side's records of that phase (a baseline whose records carry no phases:
    one pooled row per metric × statistic, see :func:`pooled_participants`). A participant
    missing from the baseline, or a side without samples, gets a row with a ``note`` instead
    of a comparison. ``history`` gives per row (:func:`history_key`) the statistic in earlier
    complete runs, oldest first (:func:`between_run_noise` of it goes into the row).
    ``compare_on``: the metrics whose rows are judged (empty: every row); see
    :func:`compared_metrics`. ``paired``: the two sides ran the same iterations in the same
    rounds (an A/B session): each row pairs the rounds (:func:`_paired_samples`: a bench
    file's iterations by task index, a benchmarked test's rounds turn by turn) for
    :func:`~pytest_benchsdk.compare.compare_paired`, keeping the rounds where both sides
    have a sample; ``processes``: how many process pairs took turns (bench-file round ``i``
    ran in pair ``i % processes``, a test's turn ``t`` in pair ``t``; their spread is part
    of the intervals). ``also``: more metrics to show
    rows for (an A/B session's ``cpu_ms``), judged only when ``compare_on`` names them."""
    default = {m.key for m in compared_metrics(spec)}
    metrics = compared_metrics(spec, [*compare_on, *also])
    judged = {
        m.key for m in metrics if m.key in compare_on or (not compare_on and m.key in default)
    }
    # (participant, phase, baseline's records or None, current's records)
    parts: list[tuple[str, str | None, Sequence[TaskRecord] | None, Sequence[TaskRecord]]] = []
    for participant, records in current.items():
        before = baseline.get(participant)
        phases = _phases(records)
        if before is not None and phases and not _phases(before):
            phases = []  # nothing to split the baseline by: pooled against pooled
        if not phases:
            parts.append((participant, None, before, records))
            continue
        for name in phases:
            parts.append(
                (
                    participant,
                    name,
                    None if before is None else [r for r in before if record_phase(r) == name],
                    [r for r in records if record_phase(r) == name],
                )
            )
    rows: list[MetricComparison] = []
    # Every judged row can fail the session: the history's band holds for all of them together.
    compared = sum(part[2] is not None for part in parts)
    compared *= len(judged) * len(COMPARED_STATISTICS)
    for participant, phase, then_records, now_records in parts:
        if then_records is None:
            rows.extend(
                MetricComparison(
                    participant,
                    m.key,
                    s,
                    m.unit,
                    None,
                    "not in the baseline run",
                    judged=m.key in judged,
                    phase=phase,
                )
                for m in metrics
                for s in COMPARED_STATISTICS
            )
            continue
        clusters: dict[str, list[int]] = {}
        if paired:
            now, then, clusters = _paired_samples(
                now_records, then_records, metrics, spec, processes
            )
        else:
            now = _samples(now_records, metrics, spec)
            then = _samples(then_records, metrics, spec)
        for metric in metrics:
            for statistic in COMPARED_STATISTICS:
                row = _compare_one(
                    participant,
                    metric,
                    statistic,
                    then.get(metric.key, []),
                    now.get(metric.key, []),
                    paired=paired,
                    clusters=clusters.get(metric.key) if paired and processes > 1 else None,
                    noise_threshold=noise_threshold,
                    alpha=alpha,
                    seed=seed,
                )
                row = attrs.evolve(row, phase=phase, paired=paired)
                key = history_key(participant, metric.key, statistic, phase)
                past = (history or {}).get(key, ())
                noise = between_run_noise(list(past)[-HISTORY_RUNS:], alpha, max(compared, 1))
                if row.comparison is not None and noise is not None:
                    row = attrs.evolve(row, history=noise)
                if metric.key not in judged:
                    row = attrs.evolve(row, judged=False)
                rows.append(row)
    return tuple(rows)


def _paired_samples(
    now_records: Sequence[TaskRecord],
    then_records: Sequence[TaskRecord],
    metrics: Sequence[ComparedMetric],
    spec: ScoringSpec | None,
    processes: int = 1,
) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, list[int]]]:
    """Each metric's samples of the rounds both sides have one for, in the same order on both
    sides, and each round's cluster: the pair of processes that ran it. A bench file's
    iteration is a round (records paired by task index, round ``i`` in pair
    ``i % processes``); a benchmarked test's record holds its rounds turn by turn
    (:func:`_turns`): in turn ``t`` (pair ``t``) the sides' rounds pair in run order, as many
    as both have."""
    then_by_index = {record.task_index: record for record in then_records}
    now: dict[str, list[float]] = {}
    then: dict[str, list[float]] = {}
    clusters: dict[str, list[int]] = {}
    for record in now_records:
        other = then_by_index.get(record.task_index)
        if other is None:
            continue
        mine = _samples([record], metrics, spec)
        theirs = _samples([other], metrics, spec)
        turns = _turns(other), _turns(record)
        for metric in metrics:
            a, b = theirs.get(metric.key, []), mine.get(metric.key, [])
            if len(a) == 1 and len(b) == 1:
                pairs = [(a[0], b[0], record.task_index % processes)]
            elif turns[0] is not None and turns[1] is not None and len(turns[0]) == len(turns[1]):
                pairs = _turn_pairs(a, b, turns[0], turns[1])
            else:
                continue
            for x, y, cluster in pairs:
                then.setdefault(metric.key, []).append(x)
                now.setdefault(metric.key, []).append(y)
                clusters.setdefault(metric.key, []).append(cluster)
    return now, then, clusters


def _turns(record: TaskRecord) -> list[int] | None:
    """How many of a benchmarked test's per-round figures each of its turns gave (an A/B
    session's record, ``_engine.rounds.repeated_record``: ``rounds`` → ``repetitions``), or
    None for any other record."""
    rounds = (record.data or {}).get("rounds") if record.status == "success" else None
    counts = rounds.get("repetitions") if isinstance(rounds, Mapping) else None
    if not isinstance(counts, list) or not all(
        isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts
    ):
        return None
    return counts


def _turn_pairs(
    a: Sequence[float], b: Sequence[float], turns_a: Sequence[int], turns_b: Sequence[int]
) -> list[tuple[float, float, int]]:
    """The rounds of ``a`` and ``b`` paired turn by turn (``(a's, b's, turn)``); none when
    the values do not add up to their turns (a figure that was not a finite number)."""
    if len(a) != sum(turns_a) or len(b) != sum(turns_b):
        return []
    pairs: list[tuple[float, float, int]] = []
    start_a = start_b = 0
    for turn, (count_a, count_b) in enumerate(zip(turns_a, turns_b, strict=True)):
        pairs += [(a[start_a + j], b[start_b + j], turn) for j in range(min(count_a, count_b))]
        start_a += count_a
        start_b += count_b
    return pairs


def _compare_one(
    participant: str,
    metric: ComparedMetric,
    statistic: Statistic,
    then: Sequence[float],
    now: Sequence[float],
    *,
    paired: bool = False,
    clusters: Sequence[int] | None = None,
    **options: Any,
) -> MetricComparison:
    def row(comparison: Comparison | None, note: str | None = None) -> MetricComparison:
        return MetricComparison(participant, metric.key, statistic, metric.unit, comparison, note)

    if not then or not now:
        if paired:
            return row(None, "no round with a sample on both sides")
        side = "baseline" if not then else "current run"
        return row(None, f"no samples in the {side}")
    compare = partial(compare_paired, clusters=clusters) if paired else compare_samples
    try:
        return row(
            compare(
                then,
                now,
                statistic=statistic,
                lower_is_better=metric.lower_is_better,
                trim=metric.trim,
                **options,
            )
        )
    except ValueError as exc:  # e.g. a baseline statistic of 0
        return row(None, str(exc))


def setup_differences(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> tuple[str, ...]:
    """What differs between two runs' setups, one line each. Each side is
    ``{"benchmark", "knobs", "environment"}`` (``environment``: the store's
    ``RunEnvironment.to_dict()`` form), and ``dry_run`` when known. Only the knobs both sides
    have are compared (a ``--bench-json`` baseline carries only some)."""
    lines: list[str] = []
    if baseline.get("benchmark") != current.get("benchmark"):
        lines.append(f"benchmark differs: {baseline.get('benchmark')} → {current.get('benchmark')}")
    old_dry, new_dry = baseline.get("dry_run"), current.get("dry_run")
    if old_dry is not None and new_dry is not None and old_dry != new_dry:
        kinds = {True: "dry run", False: "reporting run"}
        lines.append(f"dry run differs: {kinds[bool(old_dry)]} → {kinds[bool(new_dry)]}")
    old_knobs, new_knobs = baseline.get("knobs") or {}, current.get("knobs") or {}
    for key in [k for k in new_knobs if k in old_knobs]:
        if old_knobs[key] != new_knobs[key]:
            lines.append(f"knob {key} differs: {old_knobs.get(key)} → {new_knobs.get(key)}")
    old_env, new_env = baseline.get("environment") or {}, current.get("environment") or {}
    for key, label in (
        ("platform", "platform"),
        ("arch", "architecture"),
        ("machine", "machine"),
        ("cpu_count", "CPU count"),
        ("hostname", "host"),
        ("python_version", "Python"),
    ):
        old, new = old_env.get(key), new_env.get(key)
        if old is not None and new is not None and old != new:
            lines.append(f"{label} differs: {old} → {new}")
    return tuple(lines)


# --- --bench-compare-fail=STAT:LIMIT: pytest-benchmark's expressions ---------------------------

#: The statistics an expression may name (pytest-benchmark's), each of the metric's samples;
#: ``ops`` (calls per second, ``1 / mean``) is the one where higher is better.
RULE_STATISTICS: Final = ("min", "max", "mean", "stddev", "median", "iqr", "ops")
#: Seconds in one of a metric's time units (an absolute limit is in seconds, as
#: pytest-benchmark's).
_SECONDS: Final = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}


@attrs.frozen
class CompareRule:
    """``STAT:N%`` (worse by more than N % of the baseline's) or ``STAT:N`` (worse by more
    than N seconds; N operations per second for ``ops``): pytest-benchmark's
    ``--benchmark-compare-fail`` expression."""

    statistic: str
    limit: float
    relative: bool

    @property
    def text(self) -> str:
        return f"{self.statistic}:{self.limit:g}{'%' if self.relative else ''}"

    @classmethod
    def parse(cls, text: str) -> CompareRule:
        """Read one expression; a ``ValueError`` saying what is wrong and what is expected."""
        statistic, sep, limit = text.strip().partition(":")
        statistic = statistic.strip().lower()
        if not sep or statistic not in RULE_STATISTICS:
            raise ValueError(
                f"{text!r} is not STAT:N% or STAT:N (STAT one of {', '.join(RULE_STATISTICS)}; "
                "e.g. min:5% or mean:0.001 for a thousandth of a second)"
            )
        limit = limit.strip()
        relative = limit.endswith("%")
        try:
            value = float(limit.removesuffix("%"))
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"{text!r}: the limit must be a number >= 0 (got {limit!r})")
        return cls(statistic, value, relative)


def rule_statistic(values: Sequence[float], statistic: str) -> float:
    """One of :data:`RULE_STATISTICS` of ``values`` (not empty)."""
    ordered = sorted(values)
    n = len(ordered)
    mean = math.fsum(ordered) / n
    if statistic == "min":
        return ordered[0]
    if statistic == "max":
        return ordered[-1]
    if statistic == "mean":
        return mean
    if statistic == "stddev":
        return statistics.stdev(ordered) if n > 1 else 0.0
    if statistic == "median":
        return statistics.median(ordered)
    if statistic == "iqr":
        return nearest_rank(ordered, 75) - nearest_rank(ordered, 25)
    return 1.0 / mean if mean > 0 else math.nan  # ops: per the metric's own unit


@attrs.frozen
class RuleVerdict:
    """One expression judged for one participant × metric: the statistic on both sides
    (``ops`` per second when the metric is a time) and whether it is worse beyond the limit."""

    participant: str
    metric: str
    rule: str
    unit: str | None
    baseline: float
    current: float
    failed: bool

    def line(self) -> str:
        change = change_text(self.current / self.baseline - 1) if self.baseline else "new"
        unit = None if self.rule.startswith("ops") else self.unit
        values = change_of_values(self.baseline, self.current, unit)
        if self.rule.startswith("ops"):
            values += " /s"
        verdict = "FAILED" if self.failed else "ok"
        return f"{self.participant} ({self.metric}) {self.rule}: {values} ({change}): {verdict}"

    def to_json(self) -> dict[str, Any]:
        return {
            "participant": self.participant,
            "metric": self.metric,
            "rule": self.rule,
            "unit": self.unit,
            "baseline": self.baseline,
            "current": self.current,
            "failed": self.failed,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RuleVerdict:
        return cls(
            str(data["participant"]),
            str(data["metric"]),
            str(data["rule"]),
            data.get("unit"),
            float(data["baseline"]),
            float(data["current"]),
            bool(data["failed"]),
        )


def judge_rules(
    rules: Sequence[CompareRule],
    baseline: Mapping[str, Sequence[TaskRecord]],
    current: Mapping[str, Sequence[TaskRecord]],
    spec: ScoringSpec | None,
) -> tuple[RuleVerdict, ...]:
    """Each rule for each participant on both sides, on each scored metric (else the
    latency): failed when the statistic is worse than the baseline's by more than the limit."""
    verdicts: list[RuleVerdict] = []
    for participant, records in current.items():
        before = baseline.get(participant)
        if not before:
            continue
        for metric, unit, now, then in _rule_samples(spec, before, records):
            if not now or not then:
                continue
            for rule in rules:
                b = rule_statistic(then, rule.statistic)
                c = rule_statistic(now, rule.statistic)
                seconds = _SECONDS.get(unit or "")
                if rule.statistic == "ops" and seconds is not None:
                    b, c = b / seconds, c / seconds
                worse = b - c if rule.statistic == "ops" else c - b
                if rule.relative:
                    limit = abs(b) * rule.limit / 100
                elif rule.statistic != "ops" and seconds is not None:
                    limit = rule.limit / seconds  # seconds, in the metric's unit
                else:
                    limit = rule.limit
                verdicts.append(
                    RuleVerdict(participant, metric, rule.text, unit, b, c, worse > limit)
                )
    return tuple(verdicts)


def _rule_samples(
    spec: ScoringSpec | None, before: Sequence[TaskRecord], now: Sequence[TaskRecord]
) -> list[tuple[str, str | None, list[float], list[float]]]:
    if spec is not None and spec.metrics:
        current, base = metric_samples(spec, now), metric_samples(spec, before)
        return [
            (m.name, m.unit or None, current.get(m.name, []), base.get(m.name, []))
            for m in spec.metrics
        ]

    def latency(records: Sequence[TaskRecord]) -> list[float]:
        return finite_samples([r.latency_ms for r in records if r.status == "success"])

    return [("latency_ms", "ms", latency(now), latency(before))]
