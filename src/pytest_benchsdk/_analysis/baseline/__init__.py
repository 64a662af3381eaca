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

**Modules**, one job each: :mod:`.noise` (the between-run noise), :mod:`.comparison` (the
rows and the whole comparison), :mod:`.pairing` (an A/B session's rounds paired), :mod:`.rules`
(``--bench-compare-fail``'s expressions), and :mod:`.metrics` (what is compared and its
samples), which they share. This package's names are the ones its importers use.
"""

from __future__ import annotations

from pytest_benchsdk._analysis.baseline.comparison import (
    COMPARED_STATISTICS,
    Baseline,
    BaselineComparison,
    MetricComparison,
    compare_runs,
    compare_with_baseline,
    pooled_participants,
    setup_differences,
)
from pytest_benchsdk._analysis.baseline.metrics import (
    LATENCY_METRIC,
    ComparedMetric,
    CompareOnError,
    check_compare_on,
    compared_metrics,
    measured_keys,
    per_call_keys,
    per_call_keys_of,
    record_phase,
)
from pytest_benchsdk._analysis.baseline.noise import (
    HISTORY_RUNS,
    MIN_HISTORY_RUNS,
    NOISE_COUNT,
    NOISE_HISTORY,
    NOISE_PAIRED,
    NOISE_WITHIN_RUN,
    BetweenRunNoise,
    HistoryKey,
    between_run_noise,
    history_key,
)
from pytest_benchsdk._analysis.baseline.rules import (
    RULE_STATISTICS,
    CompareRule,
    RuleVerdict,
    judge_rules,
    rule_statistic,
)

__all__ = [
    "COMPARED_STATISTICS",
    "HISTORY_RUNS",
    "LATENCY_METRIC",
    "MIN_HISTORY_RUNS",
    "NOISE_COUNT",
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
    "per_call_keys",
    "per_call_keys_of",
    "pooled_participants",
    "record_phase",
    "rule_statistic",
    "setup_differences",
]
