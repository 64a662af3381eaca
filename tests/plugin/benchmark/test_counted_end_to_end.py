"""A real ``--bench-instructions`` session of benchmarked tests, end to end: the counts reach
``benchmark.stats`` (pytest-benchmark's entry, ``as_dict()``) as a series of their own beside
the times, and every output of the session shows them as counts (the terminal, ``--bench-json``,
Markdown, the ``gab`` export), never as milliseconds.

A session under valgrind (the subject: the process replaces itself), tens of seconds.
"""

from __future__ import annotations

import json
import re

import pytest

from helpers.valgrind import need_valgrind

pytestmark = pytest.mark.slow

SUITE = """
import json
from pathlib import Path


def work(n):
    return sum(i * i for i in range(n))


def test_counted(benchmark):
    benchmark(work, 3000)
    Path("stats.json").write_text(json.dumps(benchmark.stats.as_dict()))
"""


def test_counts_travel_through_every_output(pytester: pytest.Pytester) -> None:
    need_valgrind()
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest_subprocess(
        "--bench",
        "--bench-dry-run",
        "--bench-instructions",
        "-p",
        "no:cacheprovider",
        "--bench-json",
        "run.json",
        "--bench-markdown",
        "run.md",
        "--bench-export",
        "gab:gab.json",
    )
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    stats = json.loads((pytester.path / "stats.json").read_text())
    counted = stats["instructions"]
    assert counted["unit"] == "instr"
    assert counted["rounds"] == len(counted["data"]) == 1
    assert counted["min"] == counted["median"] == counted["max"] > 10_000
    assert "instructions" not in stats["stats"]  # the times stay times
    assert stats["stats"]["mean"] > 0
    # The terminal and Markdown: k or M with the unit.
    rows = [line for line in result.stdout.str().splitlines() if "instructions" in line]
    # (A group of one test reads as one line: `test_counted: … instructions 1.46/1.46/1.46 M
    # instr`; a table's row reads `instructions … instr`.)
    assert any(re.search(r"instructions +[\d.]+/[\d.]+/[\d.]+ [kM]? ?instr", r) for r in rows), rows
    markdown = (pytester.path / "run.md").read_text()
    assert any(" instr" in line for line in markdown.splitlines() if "instructions" in line)
    document = json.loads((pytester.path / "run.json").read_text())
    (entry,) = document["benchmarks"]
    (participant,) = entry["result"]["participants"]
    (metric,) = [m for m in participant["metrics"] if m["key"] == "instructions"]
    assert metric["unit"] == "instr"
    assert metric["stats"]["median"] == pytest.approx(counted["median"])
    gab = json.loads((pytester.path / "gab.json").read_text())
    (median,) = [e for e in gab if e["name"].endswith("/test_counted/instructions median")]
    assert median["unit"] == "instr"
    assert median["value"] == pytest.approx(counted["median"])
