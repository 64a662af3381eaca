from pathlib import Path

import pytest


@pytest.fixture
def spec_text():
    return Path(__file__).parent.joinpath("samples", "spec.md").read_text()


@pytest.mark.benchmark(group="core", max_time=0.005)
def test_spec(benchmark, spec_text):
    benchmark(str.splitlines, spec_text)
