"""The package's public surface: ``pytest_benchsdk.__all__`` is pinned, importable, documented."""

from __future__ import annotations

import importlib
import inspect

import pytest

import pytest_benchsdk

PUBLIC_API = [
    "BenchmarkConfig",
    "BenchmarkConfigError",
    "BenchmarkRunOutcome",
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
    "define_benchmark_config",
    "define_on_complete",
    "define_task",
    "filter_participants_by_env",
    "higher_is_better",
    "lower_is_better",
    "merge_config",
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
