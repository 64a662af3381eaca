"""``instructions`` (``--bench-instructions``) is a count in every view and export: the unit
``instr``, whole numbers or an SI prefix (``1.23 M instr``), never a time; in the exports
its own series beside the times, never mixed into them.

The model is built by an in-process session whose task measures ``instructions`` itself
(``measure(instructions=N)``: the same metric key the counter records, without valgrind);
``tests/plugin/runtime/test_instructions.py`` and the A/B and xdist tests run real counts.
"""

from __future__ import annotations

import json
import re

import pytest

from helpers.cli import cli
from helpers.sessions import bench, store_path, stored_runs

BENCH = bench(
    'participants=[Participant("small"), Participant("large")], iterations=4,\n'
    'thresholds={"instructions": "p95 < 1.2e6"}',
    """
    @define_task
    def task(participant, task_index, measure):
        base = {"small": 9_731, "large": 1_234_567}[participant.name]
        measure(instructions=base + task_index, cpu_ms=0.5)
    """,
    slug="counts",
    name="Counts",
)

#: A count read as a time: a number followed by a time unit in a row that holds a count.
_TIME = re.compile(r"\d\s*(ns|µs|us|ms|s)\b")


def _session(pytester: pytest.Pytester) -> pytest.RunResult:
    pytester.makepyfile(bench_counts=BENCH)
    return pytester.runpytest_inprocess(
        "--bench",
        "--bench-dry-run",
        "-p",
        "no:cacheprovider",
        "--bench-json",
        "run.json",
        "--bench-markdown",
        "run.md",
        "--bench-export",
        "gab:gab.json",
        "--bench-export",
        "bmf:bmf.json",
        "--bench-columns",
        "min,median,mean",
    )


def _lines_with(text: str, word: str) -> list[str]:
    return [line for line in text.splitlines() if word in line]


def test_every_view_shows_counts_with_their_unit(pytester: pytest.Pytester) -> None:
    result = _session(pytester)
    assert result.ret == 1, result.stdout.str()  # large breached its threshold
    terminal = result.stdout.str()
    # The terminal's metric rows: the small count whole, the large one with its prefix.
    rows = _lines_with(terminal, "instructions")
    assert any("9,732/9,734/9,734 instr" in line for line in rows), rows
    assert any("1.23/1.23/1.23 M instr" in line for line in rows), rows
    assert not any(_TIME.search(line.split("instructions", 1)[1]) for line in rows), rows
    # The threshold line reads the limit in the count's prefix.
    assert "large: instructions p95 = 1.23 M instr, threshold < 1.2 M instr: breached" in (
        terminal
    ), terminal

    markdown = (pytester.path / "run.md").read_text()
    md_rows = _lines_with(markdown, "instructions")
    assert any("9,732/9,734/9,734 instr" in line for line in md_rows), md_rows
    assert any("1.23/1.23/1.23 M instr" in line for line in md_rows), md_rows

    document = json.loads((pytester.path / "run.json").read_text())
    (entry,) = document["benchmarks"]
    for participant in entry["result"]["participants"]:
        (metric,) = [m for m in participant["metrics"] if m["key"] == "instructions"]
        assert metric["unit"] == "instr"
        cpu = next(m for m in participant["metrics"] if m["key"] == "cpu_ms")
        assert cpu["unit"] == "ms"

    # The exports: instructions its own series with its own unit, apart from the times.
    gab = json.loads((pytester.path / "gab.json").read_text())
    counted = [e for e in gab if "/instructions " in e["name"]]
    assert {e["unit"] for e in counted} == {"instr"}
    assert {e["name"] for e in counted} >= {
        "counts/small/instructions median",
        "counts/large/instructions p95",
    }
    assert all(e["unit"] == "ms" for e in gab if "/cpu_ms " in e["name"])
    assert next(e for e in counted if e["name"] == "counts/small/instructions median")[
        "value"
    ] == pytest.approx(9_732.5, abs=1)
    bmf = json.loads((pytester.path / "bmf.json").read_text())
    assert bmf["counts/large"]["instructions median"]["value"] > 1e6
    assert "cpu_ms median" in bmf["counts/large"]

    # show, from the store: the same cells.
    (run,) = stored_runs(store_path(pytester))
    shown = cli("--store", store_path(pytester), "show", run.run_id)
    assert shown.returncode == 0, shown.stderr
    show_rows = _lines_with(shown.stdout, "instructions")
    assert any("1.23/1.23/1.23 M instr" in line for line in show_rows), shown.stdout


def test_the_html_report_shows_counts_with_their_unit(pytester: pytest.Pytester) -> None:
    pytest.importorskip("plotly")
    pytester.makepyfile(bench_counts=BENCH)
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "-p", "no:cacheprovider", "--bench-html", "run.html"
    )
    assert result.ret == 1, result.stdout.str()
    page = (pytester.path / "run.html").read_text()
    text = re.sub(r"<[^>]+>", " ", page)
    assert "1.23/1.23/1.23 M instr" in text
    assert "9,732/9,734/9,734 instr" in text
    # The distribution chart's axis names the unit.
    assert "instructions (instr)" in page


def test_a_comparison_of_counts_reads_as_counts(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_counts=BENCH.replace("p95 < 1.2e6", "p95 < 2e6"))
    args = ("--bench", "--bench-dry-run", "-p", "no:cacheprovider")
    assert pytester.runpytest_inprocess(*args).ret == 0
    pytester.makepyfile(
        bench_counts=BENCH.replace("p95 < 1.2e6", "p95 < 2e6").replace(
            "base + task_index", "round(base * 1.1) + task_index"
        )
    )
    result = pytester.runpytest_inprocess(
        *args, "--bench-compare", "--bench-compare-on=instructions", "--bench-markdown", "run.md"
    )
    assert result.ret == 0, result.stdout.str()
    rows = [
        line for line in result.stdout.str().splitlines() if "instructions" in line and "%" in line
    ]
    assert any("1.23 M instr" in line and "1.36 M instr" in line for line in rows), rows
    assert any("9,732 instr" in line and "10,706 instr" in line for line in rows), rows
    markdown = (pytester.path / "run.md").read_text()
    assert "1.23 M instr" in markdown, markdown
    assert "1.36 M instr" in markdown, markdown
