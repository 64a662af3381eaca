"""Shared test configuration.

Plugin behaviour is tested with ``pytester`` (real pytest runs on real bench files); the
platform against a real HTTP server on loopback (``tests/helpers/platform_server.py``).
"""

from __future__ import annotations

import importlib
import pkgutil

import httpcore  # noqa: F401  (see below)
import numpy  # noqa: F401  (see below)
import pytest
import scipy.stats  # noqa: F401  (see below)
from hypothesis import HealthCheck, settings

# Property tests check what holds, never how fast: on a loaded shared machine, generating
# examples and running them is slow at times, which is no failure of the code under test.
settings.register_profile("benchsdk", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("benchsdk")

# The helpers assert too: rewrite them like test modules (before any test module imports them).
pytest.register_assert_rewrite("helpers")

# The loopback platform's fixtures, for every area that reports to it.
pytest_plugins = ["helpers.platform_fixtures"]

# httpx imports httpcore lazily and maps its exceptions through a table built once per process.
# ``runpytest_inprocess`` removes modules first imported by the inner session, so a later inner
# session would get a new httpcore whose exceptions the old table no longer matches (a dropped
# connection would escape as ``httpcore.RemoteProtocolError``). Importing it here, before any
# inner session, keeps one httpcore for the whole test run. numpy and scipy (score intervals,
# comparisons) likewise: numpy's C extension cannot be loaded twice in one process. And the
# package itself: a plain session loads next to nothing of it (the plugin is lazy), so the
# first inner bench session would import the engine and the next one a second copy, whose
# classes the first's no longer recognise. One real process has one copy of each.
import pytest_benchsdk  # noqa: E402

for _module in pkgutil.walk_packages(pytest_benchsdk.__path__, "pytest_benchsdk."):
    importlib.import_module(_module.name)


@pytest.fixture(autouse=True)
def _isolated_benchsdk_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Keep the developer's own settings and credentials out of every test."""
    for name in (
        "BENCHSDK_NO_INGEST",
        "BENCHMARK_SLUG",
        "BENCHMARK_NAME",
        "BENCHMARKS_PLATFORM_URL",
        "BENCHMARKS_PLATFORM_API_KEY",
        "BENCHMARKS_PLATFORM_TOKEN",
        "BENCHMARK_LOG_LEVEL",
        "BENCH_TRIGGER_SOURCE",
        "BENCH_TRIGGER_REQUESTED_BY",
        "BENCH_TRIGGER_REQUEST_ID",
        "GITHUB_EVENT_NAME",
        "PYTEST_ADDOPTS",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))
    # pytest-benchmark and pytest-codspeed are installed (the test extra): every inner session
    # (pytester's, in-process and subprocess; they see no ini of this project) gets this
    # plugin's benchmark fixture, theirs switched off. A test of the default deletes it.
    monkeypatch.setenv("BENCHSDK_BENCHMARK_FIXTURE", "benchsdk")
