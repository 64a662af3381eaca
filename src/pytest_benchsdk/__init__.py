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

import importlib
from typing import TYPE_CHECKING, Any

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
    from pytest_benchsdk.compare import (
        Comparison,
        compare_samples,
    )
    from pytest_benchsdk.config import (
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
    from pytest_benchsdk.context import (
        TaskContext,
        TaskError,
        TaskResult,
    )
    from pytest_benchsdk.records import (
        LogLine,
        ParticipantRecords,
        StepRecord,
        TaskRecord,
    )
    from pytest_benchsdk.runner import (
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
    from pytest_benchsdk.schedule import (
        BenchmarkRunOutcome,
        NoAvailableParticipantsError,
        ResolvedRunConfig,
        filter_participants_by_env,
        merge_config,
        select_participants,
    )
    from pytest_benchsdk.scoring import (
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
    from pytest_benchsdk.store import (
        ResultStore,
    )

    __version__: str

#: The public submodule that is the home of each name of ``__all__``. Nothing is imported until
#: a name is asked for (PEP 562): pytest imports this package in every session of a project
#: that has the plugin installed, benchmarks or not, and the engine, the store and the runner
#: (httpx, the session, the results) are not needed there. Each facade names itself the home
#: of what it exports when it is imported (``_base.public.publish``).
_HOMES: dict[str, str] = {
    **dict.fromkeys(
        ("Comparison", "compare_samples"),
        "compare",
    ),
    **dict.fromkeys(
        (
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
        ),
        "config",
    ),
    **dict.fromkeys(
        ("TaskContext", "TaskError", "TaskResult"),
        "context",
    ),
    **dict.fromkeys(
        ("LogLine", "ParticipantRecords", "StepRecord", "TaskRecord"),
        "records",
    ),
    **dict.fromkeys(
        (
            "BENCHSDK_RUNNER_VERSION",
            "BenchmarkReporter",
            "BenchmarkRunResult",
            "claim_benchmark_reporter",
            "create_api_client",
            "parse_cli_args",
            "run_benchmark",
            "run_benchmark_worker",
            "run_worker",
        ),
        "runner",
    ),
    **dict.fromkeys(
        (
            "BenchmarkRunOutcome",
            "NoAvailableParticipantsError",
            "ResolvedRunConfig",
            "filter_participants_by_env",
            "merge_config",
            "select_participants",
        ),
        "schedule",
    ),
    **dict.fromkeys(
        (
            "MetricResult",
            "MetricScoring",
            "ScoreResult",
            "ScoringSpec",
            "ScoringSpecError",
            "higher_is_better",
            "lower_is_better",
            "score",
            "scoring_config_to_spec",
            "validate_scoring_spec",
        ),
        "scoring",
    ),
    **dict.fromkeys(
        ("ResultStore",),
        "store",
    ),
}
#: The public submodules, reachable as attributes as an eager import made them.
_SUBMODULES = frozenset(
    {
        "compare",
        "config",
        "context",
        "executor",
        "records",
        "results",
        "runner",
        "schedule",
        "scoring",
        "store",
    }
)


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            value: Any = version("pytest-benchsdk")
        except PackageNotFoundError:  # pragma: no cover - running from a source tree
            value = "0+unknown"
    elif name in _SUBMODULES:
        value = importlib.import_module(f"{__name__}.{name}")
    elif name in _HOMES:
        value = getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *_SUBMODULES})
