"""The platform package's surface: ``pytest_benchsdk.platform.__all__`` is pinned, its classes and
functions live in ``pytest_benchsdk.platform``, and it depends only on the package's leaf modules.
"""

from __future__ import annotations

import importlib
import inspect

import pytest

import pytest_benchsdk.platform as platform

PLATFORM_API = [
    "METRIC_KEYS",
    "RESUBMIT_COMMAND",
    "AuthError",
    "BenchmarkApiError",
    "BenchmarkClient",
    "BenchmarkReporter",
    "CheckResult",
    "CliAuth",
    "DeliverySummary",
    "OutboxStore",
    "PlatformConnectionError",
    "PlatformUploader",
    "RetryPolicy",
    "RunUpload",
    "SystemMetricsCollector",
    "WorkerClaim",
    "check_connectivity",
    "claim_benchmark_reporter",
    "client_for",
    "create_api_client",
    "encode_segment",
    "get_api_base_url",
    "get_platform_base_url",
    "redact",
    "resolve_auth",
    "resubmit",
    "resubmit_candidates",
]


def test_all_is_pinned() -> None:
    assert list(platform.__all__) == PLATFORM_API


def test_all_is_unique() -> None:
    assert len(set(PLATFORM_API)) == len(PLATFORM_API)


@pytest.mark.parametrize("name", PLATFORM_API)
def test_name_is_importable(name: str) -> None:
    module = importlib.import_module("pytest_benchsdk.platform")
    assert getattr(module, name) is not None
    namespace: dict[str, object] = {}
    exec(f"from pytest_benchsdk.platform import {name}", namespace)
    assert namespace[name] is getattr(module, name)


def test_star_import_matches_all() -> None:
    namespace: dict[str, object] = {}
    exec("from pytest_benchsdk.platform import *", namespace)
    exported = {k for k in namespace if k != "__builtins__"}
    assert exported == set(PLATFORM_API)


@pytest.mark.parametrize("name", [n for n in PLATFORM_API if inspect.isclass(getattr(platform, n))])
def test_class_lives_in_the_package(name: str) -> None:
    assert getattr(platform, name).__module__ == "pytest_benchsdk.platform"


@pytest.mark.parametrize(
    "name", [n for n in PLATFORM_API if inspect.isfunction(getattr(platform, n))]
)
def test_function_lives_in_the_package(name: str) -> None:
    assert getattr(platform, name).__module__ == "pytest_benchsdk.platform"


@pytest.mark.parametrize("name", [n for n in PLATFORM_API if callable(getattr(platform, n))])
def test_name_is_documented(name: str) -> None:
    obj = getattr(platform, name)
    doc = obj.__doc__ if inspect.isclass(obj) else inspect.getdoc(obj)
    assert doc, f"{name} has no docstring"
