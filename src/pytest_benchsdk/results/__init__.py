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
goes on, :mod:`._stored` reads a run back from the store, :mod:`._history` is a benchmark's
complete runs with one setup (the series of each statistic and their change points),
:mod:`._baselines` is the one home of baselines: what a REF names (``latest``, a name, a run
id, a file), the run a comparison is made against, and the one rule for what a baseline name
may stand for (:func:`save_baseline`); the comparison's math is
:mod:`pytest_benchsdk._analysis.baseline`; :mod:`._merge` merges the stores of CI shards
(``pytest-benchsdk merge``).
"""

from pytest_benchsdk._analysis.baseline import Baseline
from pytest_benchsdk._base.public import publish
from pytest_benchsdk.results._analyse import (
    Analyses,
    ComparisonOptions,
    HygieneOptions,
    analyse,
    judge_thresholds,
    participant_verdicts,
)
from pytest_benchsdk.results._baselines import (
    LATEST,
    BaselineRefused,
    CompareRef,
    RunRefError,
    check_baseline_name,
    find_baseline,
    find_run,
    named_baselines,
    ran_text,
    resolve_ref,
    run_span,
    save_baseline,
    short_run_id,
    utc_text,
)
from pytest_benchsdk.results._build import (
    MetricCatalog,
    MetricInfo,
    config_catalog,
    participant_summary,
    score_table,
)
from pytest_benchsdk.results._history import (
    DEFAULT_HISTORY_LIMIT,
    HISTORY_RULE,
    HistorySeries,
    RunHistory,
    RunSetup,
    SeriesPoint,
    complete_runs,
    history_values,
    noise_history,
    run_history,
    start_history,
)
from pytest_benchsdk.results._live import BenchmarkRun, knobs_of
from pytest_benchsdk.results._merge import MergedRun, MergeResult, merge_stores, merged_run_id
from pytest_benchsdk.results._model import (
    LATENCY,
    STATUS_REASONS,
    ABSide,
    FailureGroup,
    FixtureStats,
    Knobs,
    MetricSummary,
    ParticipantSummary,
    PhaseSummary,
    RankedParticipant,
    RelativeRow,
    RelativeSummary,
    RoundCount,
    RoundsKnobs,
    RunStatus,
    RunSummary,
    SampleStats,
    ScoreTable,
    StatisticInterval,
    StepSummary,
    metric_unit,
)
from pytest_benchsdk.results._samples import ParticipantSamples, record_phase, sample_sets, timeline
from pytest_benchsdk.results._stored import (
    rebuild_summary,
    save_analyses,
    save_summary,
    stored_analyses,
    stored_spec,
    stored_status,
    stored_summary,
)

__all__ = [
    "DEFAULT_HISTORY_LIMIT",
    "HISTORY_RULE",
    "LATENCY",
    "LATEST",
    "STATUS_REASONS",
    "ABSide",
    "Analyses",
    "Baseline",
    "BaselineRefused",
    "BenchmarkRun",
    "CompareRef",
    "ComparisonOptions",
    "FailureGroup",
    "FixtureStats",
    "HistorySeries",
    "HygieneOptions",
    "Knobs",
    "MergeResult",
    "MergedRun",
    "MetricCatalog",
    "MetricInfo",
    "MetricSummary",
    "ParticipantSamples",
    "ParticipantSummary",
    "PhaseSummary",
    "RankedParticipant",
    "RelativeRow",
    "RelativeSummary",
    "RoundCount",
    "RoundsKnobs",
    "RunHistory",
    "RunRefError",
    "RunSetup",
    "RunStatus",
    "RunSummary",
    "SampleStats",
    "ScoreTable",
    "SeriesPoint",
    "StatisticInterval",
    "StepSummary",
    "analyse",
    "check_baseline_name",
    "complete_runs",
    "config_catalog",
    "find_baseline",
    "find_run",
    "history_values",
    "judge_thresholds",
    "knobs_of",
    "merge_stores",
    "merged_run_id",
    "metric_unit",
    "named_baselines",
    "noise_history",
    "participant_summary",
    "participant_verdicts",
    "ran_text",
    "rebuild_summary",
    "record_phase",
    "resolve_ref",
    "run_history",
    "run_span",
    "sample_sets",
    "save_analyses",
    "save_baseline",
    "save_summary",
    "score_table",
    "short_run_id",
    "start_history",
    "stored_analyses",
    "stored_spec",
    "stored_status",
    "stored_summary",
    "timeline",
    "utc_text",
]

# Name this package as the home of what it re-exports (reprs, tracebacks, pickles, docs).
publish(__name__, globals())
