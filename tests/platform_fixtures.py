"""Fixtures for platform tests: a loopback platform, a client for it, a results store.

Register with ``pytest_plugins = ["platform_fixtures"]`` (``tests/`` is on ``sys.path`` under
pytest's default ``prepend`` import mode). Helpers live in ``platform_helpers`` so that test
modules never import this plugin module themselves (that would defeat assertion rewriting).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from platform_server import API_KEY, LoopbackPlatform
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
