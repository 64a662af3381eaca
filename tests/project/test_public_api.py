"""The package's public surface: ``pytest_benchsdk.__all__`` is pinned, importable, documented."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import pytest

import pytest_benchsdk

PUBLIC_API = [
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


def test_all_is_pinned() -> None:
    assert list(pytest_benchsdk.__all__) == PUBLIC_API


def test_all_is_sorted_and_unique() -> None:
    assert len(set(PUBLIC_API)) == len(PUBLIC_API)
    assert sorted(PUBLIC_API) == PUBLIC_API


@pytest.mark.parametrize("name", PUBLIC_API)
def test_name_is_importable(name: str) -> None:
    module = importlib.import_module("pytest_benchsdk")
    assert getattr(module, name) is not None
    namespace: dict[str, object] = {}
    exec(f"from pytest_benchsdk import {name}", namespace)
    assert namespace[name] is getattr(module, name)


@pytest.mark.parametrize("name", [n for n in PUBLIC_API if n != "__version__"])
def test_name_is_documented(name: str) -> None:
    obj = getattr(pytest_benchsdk, name)
    # the object's own docstring (not one inherited from a base class)
    doc = obj.__doc__ if inspect.isclass(obj) else inspect.getdoc(obj)
    assert doc, f"{name} has no docstring"
    assert len(doc.strip()) >= 20, f"{name}'s docstring is too short to document it"


def test_version_is_a_string() -> None:
    assert isinstance(pytest_benchsdk.__version__, str)
    assert pytest_benchsdk.__version__


def test_package_and_plugin_modules_are_documented() -> None:
    from pytest_benchsdk import hookspecs, plugin

    for module in (pytest_benchsdk, plugin, hookspecs):
        assert (module.__doc__ or "").strip(), module.__name__


def test_plugin_is_registered_as_pytest11_entry_point() -> None:
    from importlib.metadata import entry_points

    eps = [ep for ep in entry_points(group="pytest11") if ep.name == "benchsdk"]
    assert [ep.value for ep in eps] == ["pytest_benchsdk.plugin"]


def test_star_import_matches_all() -> None:
    namespace: dict[str, object] = {}
    exec("from pytest_benchsdk import *", namespace)
    exported = {k for k in namespace if k != "__builtins__"}
    assert exported == set(PUBLIC_API)


# The public modules (and the facade's one ``__module__`` loop) export classes and functions from.
_PUBLIC_MODULES = (
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
)


def _public_classes_and_functions() -> list[tuple[str, object]]:
    modules = ["pytest_benchsdk", *(f"pytest_benchsdk.{m}" for m in _PUBLIC_MODULES)]
    found: list[tuple[str, object]] = []
    for module_name in modules:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                found.append((f"{module_name}.{name}", obj))
    return found


@pytest.mark.parametrize(
    "name", [n for n in PUBLIC_API if inspect.isclass(getattr(pytest_benchsdk, n))]
)
def test_public_class_names_an_importable_public_module(name: str) -> None:
    cls = getattr(pytest_benchsdk, name)
    assert not cls.__module__.startswith("pytest_benchsdk._"), (name, cls.__module__)
    assert getattr(importlib.import_module(cls.__module__), cls.__qualname__) is cls


@pytest.mark.parametrize(("where", "obj"), _public_classes_and_functions())
def test_public_modules_name_an_importable_public_home(where: str, obj: Any) -> None:
    module_name = obj.__module__
    assert module_name.startswith("pytest_benchsdk"), where
    assert not module_name.startswith("pytest_benchsdk._"), (where, module_name)
    home = importlib.import_module(module_name)
    assert getattr(home, obj.__qualname__) is obj, where


def test_task_error_and_config_error_pickle_by_their_public_path() -> None:
    import pickle

    from pytest_benchsdk.context import TaskError
    from pytest_benchsdk.executor import GroupPlan, IterationSpec

    assert TaskError.__module__ == "pytest_benchsdk.context"
    assert (IterationSpec.__module__, GroupPlan.__module__) == ("pytest_benchsdk.executor",) * 2
    err = TaskError("boom", code="quota", data={"n": 1})
    assert b"pytest_benchsdk._" not in pickle.dumps(type(err))
    assert repr(pickle.loads(pickle.dumps(err))) == repr(err)
    config_error = pytest_benchsdk.BenchmarkConfigError
    assert pickle.loads(pickle.dumps(config_error)) is config_error


#: The ``__all__`` of the public modules, pinned like the package's: a name added or removed is a
#: decision, made here.
MODULE_APIS: dict[str, list[str]] = {
    "runner": [
        "BENCHSDK_RUNNER_VERSION",
        "BenchmarkReporter",
        "BenchmarkRunResult",
        "CliArgs",
        "SessionOptions",
        "WorkerResult",
        "claim_benchmark_reporter",
        "create_api_client",
        "main",
        "parse_cli_args",
        "run_benchmark",
        "run_benchmark_worker",
        "run_worker",
    ],
    "schedule": [
        "GROUP_BY_VALUES",
        "SLUG_PATTERN",
        "BenchmarkRunOutcome",
        "BenchmarkSchedule",
        "NoAvailableParticipantsError",
        "PhaseWarmup",
        "ResolvedRunConfig",
        "RunArgs",
        "SkippedParticipant",
        "Slot",
        "UnknownParticipantError",
        "UnknownShapeError",
        "apply_shape",
        "build_schedule",
        "build_warmup",
        "build_warmup_plan",
        "filter_participants_by_env",
        "identity_is_ours",
        "is_cold_phase",
        "is_env_no_ingest",
        "merge_config",
        "run_config_to_json",
        "schedule_benchmark",
        "schedule_order",
        "select_participants",
    ],
    "scoring": [
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
    ],
    "compare": [
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
    ],
    "config": [
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
        "validate_scoring_config",
    ],
    "results": [
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
    ],
}


@pytest.mark.parametrize("module", sorted(MODULE_APIS))
def test_public_module_all_is_pinned(module: str) -> None:
    names = importlib.import_module(f"pytest_benchsdk.{module}").__all__
    assert list(names) == MODULE_APIS[module]
    for name in names:
        assert getattr(importlib.import_module(f"pytest_benchsdk.{module}"), name) is not None
