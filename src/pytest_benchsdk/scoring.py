"""Scoring: turn task records into 0–100 composite scores per participant.

The math is upstream's exactly, float for float:

* samples of a metric come from passing records only (``record.data[value or name]``, or a
  callable ``value(record)``); a list contributes each finite number in it; anything else
  (strings, bools, ``None``, NaN, ±inf, missing keys) is ignored;
* stats trim ``k = floor(n * trim)`` samples from each end (only when ``k > 0`` and something is
  left), then take the median (mean of the two middles for even lengths) and nearest-rank
  p95/p99;
* each stat scores 0–100 against the metric's ceiling (and floor for higher-is-better metrics),
  weighted by the metric's ``weights``; the sum times the success rate, rounded like JavaScript's
  ``Math.round(x * 100) / 100``, is the composite score.

Upstream quirks are kept on purpose (as upstream does; the docs list them under Differences from
upstream): metrics without samples are dropped without renormalising the weights; a lower-is-better
score is not capped at 100 for negative stats; a ceiling of 0 yields ``inf``/``nan`` instead of an
error; ``trim`` outside (0, 0.5) silently means "no trimming"; with ``group_by`` the rows of records
lacking the key carry only the base dimensions, like the aggregate row.

Inputs are duck-typed: the ``*Like`` protocols describe ``config.py``'s attrs models without
importing ``config``, and plain mappings with snake_case or upstream camelCase keys work too
(:func:`read_field` reads either). Sampling and statistics live in
:mod:`pytest_benchsdk._analysis.stats` (shared with the terminal summary), the JavaScript value
semantics in :mod:`pytest_benchsdk._base.js`.
"""

from __future__ import annotations

from pytest_benchsdk._analysis.scoring import (
    DisplayConfigLike,
    DisplayMetricLike,
    MetricResult,
    MetricScoring,
    ScoreResult,
    ScoringConfigLike,
    ScoringMetricLike,
    ScoringOutcome,
    ScoringSpec,
    ScoringSpecError,
    ScoringSuccessLike,
    Stats,
    StatWeights,
    WeightsLike,
    compute_stats,
    higher_is_better,
    lower_is_better,
    metric_samples,
    ranking_key,
    score,
    score_stat,
    scoring_config_to_spec,
    validate_scoring_spec,
)
from pytest_benchsdk._base.public import publish

__all__ = [
    "DisplayConfigLike",
    "DisplayMetricLike",
    "MetricResult",
    "MetricScoring",
    "ScoreResult",
    "ScoringConfigLike",
    "ScoringMetricLike",
    "ScoringOutcome",
    "ScoringSpec",
    "ScoringSpecError",
    "ScoringSuccessLike",
    "StatWeights",
    "Stats",
    "WeightsLike",
    "compute_stats",
    "higher_is_better",
    "lower_is_better",
    "metric_samples",
    "ranking_key",
    "score",
    "score_stat",
    "scoring_config_to_spec",
    "validate_scoring_spec",
]

publish(__name__, globals())
