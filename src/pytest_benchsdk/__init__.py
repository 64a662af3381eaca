"""pytest-benchsdk: run benchmarks as pytest items, with upstream @benchsdk/runner semantics.

The authoring surface of a bench file::

    from pytest_benchsdk import Participant, Phase, define_benchmark_config, define_task

The rest of the public API serves scoring saved results, comparing samples of two runs
(:func:`compare_samples`; score intervals and run warnings live in :mod:`pytest_benchsdk.compare`),
reading the local store and writing ``conftest.py`` hooks (see :mod:`pytest_benchsdk.hookspecs`),
and running benchmarks without pytest (:func:`run_benchmark` and the rest of
:mod:`pytest_benchsdk.runner`, loaded on first use so that importing the package stays cheap).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from . import compare, config, context, records, schedule, scoring, store
from ._public import publish
from .compare import Comparison, compare_samples
from .config import (
    BenchmarkConfig,
    BenchmarkConfigError,
    ConfigIssue,
    DisplayConfig,
    DisplayMetric,
    DisplayOverview,
    DisplayStep,
    Participant,
    Phase,
    ScoringConfig,
    ScoringMetric,
    ScoringSuccess,
    Shape,
    Weights,
    define_benchmark_config,
    define_on_complete,
    define_task,
    validate_benchmark_config,
)
from .context import TaskContext, TaskError, TaskResult
from .records import LogLine, ParticipantRecords, StepRecord, TaskRecord
from .schedule import (
    BenchmarkRunOutcome,
    NoAvailableParticipantsError,
    ResolvedRunConfig,
    filter_participants_by_env,
    merge_config,
    select_participants,
)
from .scoring import (
    MetricResult,
    MetricScoring,
    ScoreResult,
    ScoringSpec,
    ScoringSpecError,
    higher_is_better,
    lower_is_better,
    score,
    scoring_config_to_spec,
    validate_scoring_spec,
)
from .store import ResultStore

# A class or function defined in a private module (``pytest_benchsdk._x``) is named after the
# public module that re-exports it: the first module below whose ``__all__`` lists it
# (``pytest_benchsdk.context.TaskError``, not ``pytest_benchsdk._taskerror.TaskError``); every
# facade publishes its own names with the same helper (``_public.publish``), so there is one rule
# in one place. Every name of this package's ``__all__`` comes from one of these modules.
for _module in (compare, config, context, records, schedule, scoring, store):
    publish(_module.__name__, vars(_module))
del _module

try:
    __version__ = version("pytest-benchsdk")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0+unknown"

__all__ = [
    "BENCHSDK_RUNNER_VERSION",
    "BenchmarkConfig",
    "BenchmarkConfigError",
    "BenchmarkReporter",
    "BenchmarkRunOutcome",
    "BenchmarkRunResult",
    "Comparison",
    "ConfigIssue",
    "DisplayConfig",
    "DisplayMetric",
    "DisplayOverview",
    "DisplayStep",
    "LogLine",
    "MetricResult",
    "MetricScoring",
    "NoAvailableParticipantsError",
    "Participant",
    "ParticipantRecords",
    "Phase",
    "ResolvedRunConfig",
    "ResultStore",
    "ScoreResult",
    "ScoringConfig",
    "ScoringMetric",
    "ScoringSpec",
    "ScoringSpecError",
    "ScoringSuccess",
    "Shape",
    "StepRecord",
    "TaskContext",
    "TaskError",
    "TaskRecord",
    "TaskResult",
    "Weights",
    "__version__",
    "claim_benchmark_reporter",
    "compare_samples",
    "create_api_client",
    "define_benchmark_config",
    "define_on_complete",
    "define_task",
    "filter_participants_by_env",
    "higher_is_better",
    "lower_is_better",
    "merge_config",
    "parse_cli_args",
    "run_benchmark",
    "run_benchmark_worker",
    "run_worker",
    "score",
    "scoring_config_to_spec",
    "select_participants",
    "validate_benchmark_config",
    "validate_scoring_spec",
]

if TYPE_CHECKING:
    from .runner import (
        BENCHSDK_RUNNER_VERSION,
        BenchmarkReporter,
        BenchmarkRunResult,
        claim_benchmark_reporter,
        create_api_client,
        parse_cli_args,
        run_benchmark,
        run_benchmark_worker,
        run_worker,
    )

#: Names of :mod:`pytest_benchsdk.runner`, imported on first use: every bench file imports this
#: package in every pytest process, and the runner brings the session, the results and the
#: platform client (httpx) with it.
_RUNNER_NAMES = frozenset(
    {
        "BENCHSDK_RUNNER_VERSION",
        "BenchmarkReporter",
        "BenchmarkRunResult",
        "claim_benchmark_reporter",
        "create_api_client",
        "parse_cli_args",
        "run_benchmark",
        "run_benchmark_worker",
        "run_worker",
    }
)


def __getattr__(name: str) -> Any:
    if name in _RUNNER_NAMES:
        from . import runner

        value = getattr(runner, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
