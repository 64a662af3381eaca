"""How long the views are (issue 46, the messages): ``-q`` gives the scores and verdicts only
(``-qq`` less still), the default prints each run warning's finding in one line (``-v`` the
reason and advice), and the Markdown summary fits a CI job summary (a short top per
benchmark, the detail folded in ``<details>`` blocks)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from helpers.runs import config, live_run, record, store_run
from pytest_benchsdk._config.models import Participant, Phase
from pytest_benchsdk._views.text import summary_lines
from pytest_benchsdk.records import TaskRecord
from pytest_benchsdk.results import HygieneOptions, RunSummary
from pytest_benchsdk.store import ResultStore


def _phase(index: int) -> str:
    return "cold" if index < 3 else "warm"


def _records(cost: float) -> list[TaskRecord]:
    return [
        record(
            i, 1 + i, data={"dumps_ms": cost * (1 + i % 3 / 10), "bytes": 120 + i}, phase=_phase(i)
        )
        for i in range(12)
    ]


@pytest.fixture
def summary(tmp_path: Path) -> Iterator[RunSummary]:
    """Three participants that ran (one whose iterations all fail), one skipped, phases, a
    breached threshold, an unscored metric and run warnings."""
    bench = config(
        participants=[
            Participant("marshal"),
            Participant("json"),
            Participant("a-participant-with-a-rather-long-name"),
            Participant("broken"),
            Participant("gated", required_env_vars=["BSDK_GATE"]),
        ],
        phases=[Phase("cold", 3), Phase("warm", 9)],
        scoring={
            "metrics": [
                {
                    "key": "dumps_ms",
                    "ceiling": 10,
                    "weights": {"median": 0.6, "p95": 0.25, "p99": 0.15},
                }
            ]
        },
        thresholds={"dumps_ms": "p95 < 0.5"},
    )
    records = {
        "marshal": _records(0.02),
        "json": _records(0.9),
        "a-participant-with-a-rather-long-name": _records(0.5),
        "broken": [
            record(i, error="codec", message="no codec", phase=_phase(i)) for i in range(12)
        ],
    }
    with ResultStore(tmp_path / "results.sqlite3") as store:
        yield store_run(store, live_run(bench, records), resamples=200, hygiene=HygieneOptions())


def test_quiet_gives_the_scores_and_verdicts_only(summary: RunSummary) -> None:
    default, quiet = summary_lines(summary), summary_lines(summary, verbose=-1)
    assert len(quiet) * 2 < len(default)
    text = "\n".join(quiet)
    # The status, the ranking (no phase rows) and the verdicts.
    assert quiet[0].startswith("  Ran 2026-12-01 08:00:00–08:00:11 UTC")
    assert any(line.startswith("  1  marshal") for line in quiet)
    assert " · cold" not in text.split("Thresholds")[0]
    assert any(line.startswith("  Thresholds: ") and "failed" in line for line in quiet)
    assert any(line.startswith("    FAILED json · cold: dumps_ms p95") for line in quiet)
    # The rest is counted, or left to the default output.
    assert "Knobs:" not in text
    assert "Metrics" not in text
    assert "warning [" not in text
    assert any(
        line.startswith("  ")
        and "warning(s) (" in line
        and "without -q a line per code, with -v each one" in line
        for line in quiet
    )
    assert "  Skipped gated (without -q: why)" in quiet


def test_very_quiet_leaves_out_the_counts_and_the_relative_summary(summary: RunSummary) -> None:
    quiet, very = summary_lines(summary, verbose=-1), summary_lines(summary, verbose=-2)
    assert len(very) < len(quiet)
    text = "\n".join(very)
    assert "warning(s)" not in text
    assert "Skipped" not in text
    assert "Relative" not in text
    assert any(line.startswith("  1  marshal") for line in very)
    assert any(line.startswith("    FAILED json · cold") for line in very)


def test_each_warning_code_is_one_line_by_default(summary: RunSummary) -> None:
    lines = summary_lines(summary)
    warnings = [line for line in lines if line.startswith("  warning [")]
    # One line per code: six p99 findings (3 and 9 samples) counted, two failure rates named.
    assert warnings == [
        "  warning [p99-few-samples] 6 phases of 3 participants (dumps_ms): p99 comes from "
        "3–9 samples (under 100); -v lists them",
        "  warning [failure-rate] broken · cold +1 more: 100% of the iterations failed (more "
        "than 5%); -v lists them",
    ]
    # The names are cut to fit (down to the first one and how many more).
    for line in warnings:
        who = line.split("] ", 1)[1].split(" (", 1)[0].split(": ", 1)[0]
        assert len(line) <= 79 or ", " not in who, line
    # A finding, not its explanation: the rest comes with -v.
    findings = [line.split(": ", 1)[1].removesuffix("; -v lists them") for line in warnings]
    assert all(": " not in f and "; " not in f for f in findings), findings
    note = (
        "  (why each warning matters and what to do: -v or --bench-warnings=full, or "
        "pytest-benchsdk show -v)"
    )
    assert lines[lines.index(warnings[-1]) + 1] == note
    verbose = summary_lines(summary, verbose=1)
    assert note not in verbose
    text = " ".join(" ".join(verbose).split())
    # The advice once, then each finding with who it is about.
    assert text.count("below 100 the nearest-rank p99 is the largest sample") == 1
    assert (
        "marshal · warm, json · warm, a-participant-w…-rather-long-name · warm: p99 comes "
        "from 9 sample(s)" in text
    )
    assert "broken · cold: 3 of 3 iterations failed (100%, more than 5%)" in text
    full = summary_lines(summary, warnings_full=True)
    assert [line for line in full if "warning [" in line] == [
        line for line in verbose if "warning [" in line
    ]
    assert note not in full


LONG_NAME = "Sandbox time-to-interactive (simulated, three providers)"


def test_the_markdown_summary_has_a_short_top_and_folds_the_detail(
    summary: RunSummary,
) -> None:
    from pytest_benchsdk._views.markdown import markdown_summary

    text = markdown_summary([attrs.evolve(summary, benchmark_name=LONG_NAME)])
    # The heading keeps the whole name (it was cut at 40 characters, mid-name).
    assert f"## {LONG_NAME} (`demo`)\n" in text
    top, _, rest = text.partition("\n<details>\n")
    assert rest.startswith("<summary>Details (")
    assert rest.rstrip().endswith("</details>")
    # The top: status, the ranking without phase rows, the threshold verdicts.
    assert "status **failed (iterations, threshold)**" in top
    assert "| 1 | marshal | 100% |" in top
    assert " · cold" not in top.split("**Thresholds**")[0]
    assert "**Thresholds**: ✅" in top
    assert "iterations=12" not in top
    assert "**Warnings**" not in top
    # The detail: the knobs, the scores per phase, the latency, the warnings, the skipped.
    assert "iterations=12" in rest
    assert "**Scores per phase**" in rest
    assert "| marshal · cold | 100% |" in rest
    assert "| participant | success | latency med / p95 / p99 |" in rest
    assert "**Warnings**" in rest
    assert "_Skipped gated: missing BSDK_GATE_" in rest
    assert len(top.splitlines()) * 2 < len(text.splitlines())
