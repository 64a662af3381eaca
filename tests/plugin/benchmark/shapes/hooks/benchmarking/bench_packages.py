"""Packages compared on one sample, in one group; one test needs a program that is absent."""

import html
import json
import textwrap
from pathlib import Path
from shutil import which

import pytest


@pytest.fixture
def spec_text():
    return Path(__file__).parent.joinpath("samples", "spec.md").read_text()


@pytest.mark.benchmark(group="packages", max_time=0.005)
def test_html(benchmark, spec_text):
    benchmark.extra_info["version"] = "stdlib"
    benchmark(html.escape, spec_text)


@pytest.mark.benchmark(group="packages", max_time=0.005)
def test_json(benchmark, spec_text):
    benchmark.extra_info["version"] = json.__version__
    benchmark(json.dumps, spec_text)


@pytest.mark.benchmark(group="packages", max_time=0.005)
def test_textwrap(benchmark, spec_text):
    benchmark.extra_info["version"] = "stdlib"
    benchmark(textwrap.fill, spec_text, width=40)


@pytest.mark.skipif(which("no-such-converter") is None, reason="converter not found")
@pytest.mark.benchmark(group="packages", max_time=0.005)
def test_converter(benchmark, spec_text):
    benchmark(str.upper, spec_text)
