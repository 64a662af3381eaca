"""Fixtures for platform tests: a loopback platform, a client for it, a results store.

Register with ``pytest_plugins = ["platform_fixtures"]`` (``tests/`` is on ``sys.path`` under
pytest's default ``prepend`` import mode) or import the fixtures by name.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from platform_server import API_KEY, LoopbackPlatform
from pytest_benchsdk._runenv import RunEnvironment, Trigger
from pytest_benchsdk.platform import BenchmarkClient, RetryPolicy
from pytest_benchsdk.store import ResultStore

__all__ = [
    "FAST_RETRY",
    "loopback_platform",
    "new_local_run",
    "platform_client",
    "result_store",
]

#: Backoff fast enough for tests; still exponential with jitter.
FAST_RETRY = RetryPolicy(base_delay_s=0.01, max_delay_s=0.05, offline_after_s=1.5)

_ENV = RunEnvironment(
    git_sha=None,
    git_ref=None,
    trigger=Trigger(source="manual"),
    python_version="3.10.0",
    implementation="CPython",
    platform="linux",
    arch="x64",
    machine="x86_64",
    hostname="test-host",
)


@pytest.fixture
def loopback_platform() -> Iterator[LoopbackPlatform]:
    """A running loopback platform accepting :data:`API_KEY`."""
    with LoopbackPlatform(tokens=(API_KEY,)) as server:
        yield server


@pytest.fixture
def platform_client(loopback_platform: LoopbackPlatform) -> Iterator[BenchmarkClient]:
    """A client for the loopback platform with short timeouts."""
    with BenchmarkClient(base_url=loopback_platform.api_url, api_key=API_KEY, timeout=5.0) as c:
        yield c


@pytest.fixture
def result_store(tmp_path: Path) -> Iterator[ResultStore]:
    """A fresh results store file."""
    with ResultStore(tmp_path / "results.sqlite") as store:
        yield store


def new_local_run(
    store: ResultStore, slug: str = "sandbox-tti", participants: tuple[str, ...] = ("e2b",)
) -> str:
    """A local run in ``store`` (what the plugin creates per benchmark)."""
    return store.begin_run(
        benchmark_slug=slug,
        benchmark_name=slug,
        file=None,
        knobs={},
        participants=participants,
        config_snapshot={},
        environment=_ENV,
        dry_run=False,
    )
