"""codspeed benchmarks: the fixture, and the marker alone (the whole test is measured)."""

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import pytest

if TYPE_CHECKING:
    from pytest_codspeed import BenchmarkFixture

pytestmark = pytest.mark.benchmark(max_time=0.005)

URL = "http://user:password@www.domain.tld:8080/path?query=1&query=2#frag"


def test_url_split(benchmark: "BenchmarkFixture") -> None:
    @benchmark
    def _run() -> None:
        for _ in range(10):
            urlsplit(URL)


def test_url_port(benchmark: "BenchmarkFixture") -> None:
    benchmark(lambda: urlsplit(URL).port)


def test_url_host() -> None:
    assert urlsplit(URL).hostname == "www.domain.tld"
