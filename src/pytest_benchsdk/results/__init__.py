"""The model of a finished run: one :class:`RunSummary` per benchmark run, rendered by every view.

A summary holds every fact a reader needs: the knobs and environment, per participant (and
phase) the latency and every measured metric, scored or not, with its median/p95/p99 and unit,
the steps and the failures; the scores with their intervals, ranks and ties; the threshold
verdicts; the baseline comparison; the run warnings; the benchmark's own start and finish; and
the run's status with its reasons. It is made once — at the session end from the live run, or
by ``pytest-benchsdk merge`` — through :func:`analyse` and the builders here, kept in the
results store, and read back with :func:`stored_summary`. The terminal summary,
``--bench-json``, ``--bench-markdown``, ``pytest-benchsdk show`` and the HTML report render it
and compute nothing of their own, so they cannot disagree.

Every median, p95 and p99 follows one rule, upstream's ``computeStats`` (see
:class:`SampleStats`): sort, drop ``floor(n × trim)`` samples from each end (the metric's
``trim``, default 5 %), take the nearest rank. A threshold's ``p95`` is the number the tables
print.

Code: :mod:`._samples` keeps records as samples, :mod:`._model` is the model, :mod:`._build`
builds its parts, :mod:`._analyse` makes the analyses, :mod:`._live` is a run while its session
goes on, :mod:`._stored` reads a run back from the store.
"""

from .._public import publish
from ._analyse import Analyses, Baseline, analyse, judge_thresholds, participant_verdicts
from ._build import (
    MetricCatalog,
    MetricInfo,
    config_catalog,
    participant_summary,
    score_table,
)
from ._live import BenchmarkRun, knobs_of
from ._model import (
    LATENCY,
    STATUS_REASONS,
    FailureGroup,
    Knobs,
    MetricSummary,
    ParticipantSummary,
    PhaseSummary,
    RankedParticipant,
    RelativeRow,
    RelativeSummary,
    RunStatus,
    RunSummary,
    SampleStats,
    ScoreTable,
    StatisticInterval,
    StepSummary,
    metric_unit,
)
from ._samples import ParticipantSamples, record_phase, sample_sets, timeline
from ._stored import (
    rebuild_summary,
    save_summary,
    stored_analyses,
    stored_spec,
    stored_status,
    stored_summary,
)

__all__ = [
    "LATENCY",
    "STATUS_REASONS",
    "Analyses",
    "Baseline",
    "BenchmarkRun",
    "FailureGroup",
    "Knobs",
    "MetricCatalog",
    "MetricInfo",
    "MetricSummary",
    "ParticipantSamples",
    "ParticipantSummary",
    "PhaseSummary",
    "RankedParticipant",
    "RelativeRow",
    "RelativeSummary",
    "RunStatus",
    "RunSummary",
    "SampleStats",
    "ScoreTable",
    "StatisticInterval",
    "StepSummary",
    "analyse",
    "config_catalog",
    "judge_thresholds",
    "knobs_of",
    "metric_unit",
    "participant_summary",
    "participant_verdicts",
    "rebuild_summary",
    "record_phase",
    "sample_sets",
    "save_summary",
    "score_table",
    "stored_analyses",
    "stored_spec",
    "stored_status",
    "stored_summary",
    "timeline",
]

# Name this package as the home of what it re-exports (reprs, tracebacks, pickles, docs).
publish(__name__, globals())
