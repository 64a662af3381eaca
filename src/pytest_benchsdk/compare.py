"""Trustworthy comparisons: is a change real, how sure is a score, is a run clean?

* :func:`compare_samples` compares two samples of one metric (a baseline and a current run):
  relative change of a statistic, its bootstrap confidence interval, a Mann–Whitney U p-value and
  a verdict (:class:`Comparison`); :func:`compare_paired` does the same for samples paired
  by round (an A/B session's two sides), where the machine's drift cancels;
  :func:`compare_counts` compares two runs' counts (``instructions``) on their own spread.
* :func:`score_uncertainty` bootstraps each participant's records through the unchanged
  :func:`~pytest_benchsdk.scoring.score`: an interval per composite score, how often each
  participant had each rank (:class:`ScoreUncertainty`), and :func:`tied_with_above` for the
  ranking's ties.
* :func:`run_warnings` flags samples that make a statistic untrustworthy (:class:`RunWarning`,
  codes such as :data:`TREND`).
* :func:`change_points` finds where a series of runs shifted (e-divisive means with a
  permutation test, :class:`ChangePoint`), as ``pytest-benchsdk history`` shows.

numpy and scipy do the resampling and the tests; they are imported when a comparison runs, not
when the package is imported (the plugin is loaded by every pytest run, and they take about a
second to import).
"""

from __future__ import annotations

from pytest_benchsdk._analysis.changepoints import DEFAULT_PERMUTATIONS, ChangePoint, change_points
from pytest_benchsdk._analysis.compare import (
    DEFAULT_RESAMPLES,
    STATISTICS,
    VERDICTS,
    Comparison,
    Statistic,
    Verdict,
    compare_counts,
    compare_paired,
    compare_samples,
    detectable_change,
)
from pytest_benchsdk._analysis.hygiene import (
    FAILURE_RATE,
    FIRST_OUTLIER,
    HIGH_VARIANCE,
    P99_FEW_SAMPLES,
    TIMER_FLOOR,
    TREND,
    UNMEASURED_METRIC,
    WARNING_CODES,
    RunWarning,
    run_warnings,
)
from pytest_benchsdk._analysis.uncertainty import (
    DEFAULT_SCORE_RESAMPLES,
    ScoreUncertainty,
    score_uncertainty,
    tied_with_above,
)
from pytest_benchsdk._base.public import publish

__all__ = [
    "DEFAULT_PERMUTATIONS",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SCORE_RESAMPLES",
    "FAILURE_RATE",
    "FIRST_OUTLIER",
    "HIGH_VARIANCE",
    "P99_FEW_SAMPLES",
    "STATISTICS",
    "TIMER_FLOOR",
    "TREND",
    "UNMEASURED_METRIC",
    "VERDICTS",
    "WARNING_CODES",
    "ChangePoint",
    "Comparison",
    "RunWarning",
    "ScoreUncertainty",
    "Statistic",
    "Verdict",
    "change_points",
    "compare_counts",
    "compare_paired",
    "compare_samples",
    "detectable_change",
    "run_warnings",
    "score_uncertainty",
    "tied_with_above",
]

publish(__name__, globals())
