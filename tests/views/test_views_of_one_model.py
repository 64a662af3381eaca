"""Every view renders a model built in the test: the terminal section, ``pytest-benchsdk show``,
Markdown, the JSON result, the exports and the HTML report. Each reads the model's numbers as
they are and computes nothing of its own: a number changed in the model (and only there) is
the number every view prints. ``test_every_view_says_the_same.py`` checks the same from one
real session's outputs."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from helpers.cli import cli
from helpers.runs import config, live_run, record, store_run
from pytest_benchsdk._config.models import Participant, Phase
from pytest_benchsdk._views.exports import bmf_document, export_entries, export_text, gab_entries
from pytest_benchsdk._views.markdown import markdown_summary
from pytest_benchsdk._views.text import summary_lines, title_line
from pytest_benchsdk.records import StepRecord, TaskRecord
from pytest_benchsdk.results import HygieneOptions, RunSummary, SampleStats, save_summary
from pytest_benchsdk.store import ResultStore

pytest.importorskip("plotly")


def _phase(index: int) -> str:
    return "cold" if index < 3 else "warm"


def _records(cost: float) -> list[TaskRecord]:
    return [
        record(
            i,
            1 + i,
            data={"dumps_ms": cost * (1 + i % 3 / 10), "bytes": 120 + i},
            phase=_phase(i),
            steps=[StepRecord("encode", "success", latency_ms=0.001 * (i + 1))],
        )
        for i in range(12)
    ]


@pytest.fixture
def stored(tmp_path: Path) -> Iterator[tuple[ResultStore, RunSummary]]:
    """The shape ``test_every_view_says_the_same`` runs: ranks to order (and a participant
    whose every iteration fails), dimensions, a breached threshold on a time metric, an
    unscored metric, phases, a labelled step, times in microseconds; kept in a store."""
    bench = config(
        participants=[
            Participant("marshal"),
            Participant("json"),
            Participant("broken"),
            Participant("gated", required_env_vars=["BSDK_GATE"]),
        ],
        phases=[Phase("cold", 3), Phase("warm", 9)],
        dimensions={"orders": 2000},
        scoring={
            "metrics": [
                {
                    "key": "dumps_ms",
                    "ceiling": 10,
                    "weights": {"median": 0.6, "p95": 0.25, "p99": 0.15},
                }
            ]
        },
        thresholds={"dumps_ms": "p95 < 0.5", "success_rate": ">= 0.5"},
        display={"steps": [{"key": "encode", "label": "Encode"}]},
    )
    records = {
        "marshal": _records(0.02),
        "json": _records(0.9),
        "broken": [
            record(i, error="codec", message="no codec", phase=_phase(i)) for i in range(12)
        ],
    }
    with ResultStore(tmp_path / "results.sqlite3") as store:
        summary = store_run(
            store, live_run(bench, records), resamples=200, hygiene=HygieneOptions()
        )
        yield store, summary


def _views(store: ResultStore, summary: RunSummary) -> dict[str, Any]:
    """What each view makes of ``summary`` (kept in ``store`` as its run's summary)."""
    from pytest_benchsdk.report import render_report

    run_id = summary.local_run_id
    assert run_id is not None
    save_summary(store, run_id, summary)
    shown = cli("--store", store.path, "show", "-v", run_id[:8])
    assert shown.returncode == 0, shown.stderr
    page = render_report(store, [run_id])
    return {
        "terminal": summary_lines(summary, verbose=1),
        "show": shown.stdout.splitlines(),
        "markdown": markdown_summary([summary]),
        "json": json.loads(json.dumps(summary.to_json())),
        "html": page,
        "html text": html.unescape(re.sub(r"<[^>]+>", " ", page)),
    }


def _rank_rows(lines: list[str]) -> list[tuple[str, str]]:
    at = next(i for i, line in enumerate(lines) if re.match(r"    # +participant", line))
    rows = []
    for line in lines[at + 1 :]:
        cells = re.split(r"\s{2,}", line.strip())
        if not line.startswith("    ") or line.startswith("    (") or len(cells) < 3:
            break
        if " · " not in cells[0]:
            rows.append((cells[0], cells[1]))
    return rows


def test_the_ranking_is_one_order_in_every_view(stored: tuple[ResultStore, RunSummary]) -> None:
    views = _views(*stored)
    expected = [("1", "marshal"), ("2", "json"), ("-", "broken")]
    assert _rank_rows(views["terminal"]) == expected
    assert _rank_rows(views["show"]) == expected
    assert re.findall(r"^\| (\d+=?|-) \| (\w+) \|", views["markdown"], flags=re.M) == expected
    ranking = views["json"]["scores"]["ranking"]
    assert [(e["rank"], e["participant"]) for e in ranking] == [
        (1, "marshal"),
        (2, "json"),
        (None, "broken"),
    ]
    page = views["html"]
    scores = page[page.index("Ranked scores") : page.index("Thresholds</h3>")]
    assert re.findall(r'<tr><td class="num">(\d+=?|-)</td><td>(\w+)</td>', scores) == expected


def test_a_ranking_changed_in_the_model_is_the_ranking_every_view_shows(
    stored: tuple[ResultStore, RunSummary],
) -> None:
    store, summary = stored
    assert summary.scores is not None
    marshal, json_, broken = summary.scores.ranking
    # json first, tied with nobody; marshal second and tied with it: no view re-ranks.
    swapped = attrs.evolve(
        summary.scores,
        ranking=(
            attrs.evolve(json_, rank=1),
            attrs.evolve(marshal, rank=2, tied_with_above=True),
            broken,
        ),
    )
    views = _views(store, attrs.evolve(summary, scores=swapped))
    expected = [("1", "json"), ("2=", "marshal"), ("-", "broken")]
    assert _rank_rows(views["terminal"]) == expected
    assert _rank_rows(views["show"]) == expected
    assert re.findall(r"^\| (\d+=?|-) \| (\w+) \|", views["markdown"], flags=re.M) == expected
    page = views["html"]
    scores = page[page.index("Ranked scores") : page.index("Thresholds</h3>")]
    assert re.findall(r'<tr><td class="num">(\d+=?|-)</td><td>(\w+)</td>', scores) == expected


def test_a_latency_changed_in_the_model_is_the_latency_every_view_prints(
    stored: tuple[ResultStore, RunSummary],
) -> None:
    store, summary = stored
    marshal = summary.participant("marshal")
    assert marshal is not None
    odd = SampleStats(count=12, median=777.0, p95=888.0, p99=999.0, mean=1, min=1, max=999)
    doctored = attrs.evolve(
        summary,
        participants=tuple(
            attrs.evolve(p, latency=odd) if p.name == "marshal" else p for p in summary.participants
        ),
    )
    views = _views(store, doctored)
    assert any(re.match(r"  marshal +12/12 +777/888/999 ms$", line) for line in views["terminal"])
    assert any(re.match(r"  marshal +12/12 +777/888/999 ms$", line) for line in views["show"])
    assert "| marshal | 12/12 | 777/888/999 ms |" in views["markdown"]
    assert "777/888/999 ms" in views["html text"]
    assert views["json"]["participants"][0]["latency"]["median"] == 777.0
    entries = {
        (e.subject, e.metric, e.statistic): e.value
        for e in export_entries([doctored])
        if e.subject == "marshal"
    }
    assert entries[("marshal", "latency_ms", "median")] == 777.0


def test_threshold_verdicts_and_the_status_read_the_same_everywhere(
    stored: tuple[ResultStore, RunSummary],
) -> None:
    store, summary = stored
    views = _views(store, summary)
    breach = next(
        v for v in summary.thresholds if (v.participant, v.threshold.phase) == ("json", "cold")
    )
    assert breach.outcome == "failed"
    assert breach.message() == ("json · cold: dumps_ms p95 = 1.08 ms, threshold < 0.5 ms: breached")
    for lines in (views["terminal"], views["show"]):
        assert "  Thresholds: 6 passed, 6 failed" in lines
        assert f"    FAILED {breach.message()}" in lines
        assert any(line.endswith("status: failed (iterations, threshold)") for line in lines)
    assert html.escape(breach.message(), quote=False) in views["markdown"]
    assert "status **failed (iterations, threshold)**" in views["markdown"]
    assert breach.message() in views["html text"]
    assert "failed (iterations, threshold)" in views["html text"]
    assert views["json"]["thresholds"][0]["label"] == "cold-dumps_ms-p95<0.5"


def test_dimensions_unscored_metrics_steps_and_skips_are_shown(
    stored: tuple[ResultStore, RunSummary],
) -> None:
    store, summary = stored
    views = _views(store, summary)
    for lines in (views["terminal"], views["show"]):
        assert "    Dimensions: orders=2000" in lines
        assert any(re.match(r"    json +bytes +126/131/131 +12$", line) for line in lines)
        assert any(
            re.match(r"    json +Encode +6\.50/12\.0/12\.0 µs +12 +0$", line) for line in lines
        )
        assert "  Skipped gated: missing BSDK_GATE" in lines
    assert "Dimensions: orders=2000" in views["markdown"]
    assert "| json | bytes | 126/131/131 | 12 |" in views["markdown"]
    assert "_Skipped gated: missing BSDK_GATE_" in views["markdown"]
    assert "Dimensions: orders=2000" in views["html text"]
    assert re.search(r"<td>json</td><td>bytes</td>", views["html"])


def test_times_are_the_benchmarks_own_and_scaled_for_people(
    stored: tuple[ResultStore, RunSummary],
) -> None:
    _, summary = stored
    lines = summary_lines(summary)
    assert (
        "  Ran 2026-12-01 08:00:00–08:00:11 UTC (11.0 s); status: failed (iterations, threshold)"
        in lines
    )
    marshal = next(line for line in lines if line.startswith("    1  marshal"))
    assert "22.0/24.0/24.0 µs" in marshal
    assert title_line(summary, summary.file) == "Demo (demo) [bench_demo.py]"


def test_the_exports_carry_the_models_statistics_and_intervals(
    stored: tuple[ResultStore, RunSummary],
) -> None:
    _, summary = stored
    bmf = bmf_document([summary])
    marshal = bmf["demo/marshal"]
    interval = summary.interval("marshal", "dumps_ms", "median")
    assert interval is not None
    stats = summary.participant("marshal").metric("dumps_ms").stats  # type: ignore[union-attr]
    assert stats is not None
    assert marshal["dumps_ms median"] == {
        "value": stats.median,
        "lower_value": interval.low,
        "upper_value": interval.high,
    }
    assert "demo/broken" not in bmf  # nothing measured, nothing exported
    gab = {entry["name"]: entry for entry in gab_entries([summary])}
    median = gab["demo/marshal/dumps_ms median"]
    assert (median["value"], median["unit"]) == (stats.median, "ms")
    assert median["extra"] == f"n = 12\nrun {summary.local_run_id}"
    # The score is bigger-is-better: in the other document.
    assert "demo/marshal/score" not in gab
    assert any(e["name"] == "demo/marshal/score" for e in gab_entries([summary], bigger=True))
    assert json.loads(export_text("bmf", [summary])) == json.loads(json.dumps(bmf))
    with pytest.raises(ValueError, match="unknown export format 'csv'"):
        export_text("csv", [summary])
