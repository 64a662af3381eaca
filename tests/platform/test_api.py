"""The platform package's surface: ``pytest_benchsdk.platform.__all__`` is pinned, its classes and
functions live in ``pytest_benchsdk.platform``, and it depends only on the package's leaf modules.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

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

#: The only modules of the rest of the package that platform/ may import (leaves).
LEAF_MODULES = {"_clock", "_coordination", "_js", "_modes", "_public", "_redact", "records"}

PLATFORM_DIR = Path(platform.__file__).parent


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


def _imports(path: Path) -> list[tuple[int, str]]:
    """``(level, module)`` of every import in ``path`` (level 0: absolute)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.extend((0, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.append((node.level, node.module or ""))
    return found


@pytest.mark.parametrize("path", sorted(PLATFORM_DIR.glob("*.py")), ids=lambda p: p.name)
def test_platform_imports_only_leaf_modules_and_never_pytest(path: Path) -> None:
    for level, module in _imports(path):
        top = module.split(".")[0]
        if level == 0:
            assert top not in ("pytest", "_pytest", "pytest_benchsdk"), (path.name, module)
        elif level == 2:
            assert top in LEAF_MODULES, (path.name, module)
        else:
            assert level == 1, (path.name, level, module)
