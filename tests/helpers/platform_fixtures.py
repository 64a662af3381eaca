"""Fixtures for the platform tests: a loopback platform, a client for it, a results store.

Registered by the root ``conftest.py``; helpers without fixtures live in ``helpers.platform`` and
``helpers.e2e``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.platform_server import API_KEY, LoopbackPlatform
from pytest_benchsdk.platform import BenchmarkClient
from pytest_benchsdk.store import ResultStore

__all__ = ["loopback_platform", "platform_client", "result_store"]


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
