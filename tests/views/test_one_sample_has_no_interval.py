"""A run with one sample per participant (an IDE running one iteration) shows no 95 %
interval: not ``54.21  54.2–54.2  100%`` (issue 46, part 4)."""

from __future__ import annotations

from helpers.runs import config, finish, live_run, record
from pytest_benchsdk._views.markdown import markdown_summary
from pytest_benchsdk._views.text import summary_lines
from pytest_benchsdk.results import RunSummary

SCORING = {
    "metrics": [
        {
            "key": "work_ms",
            "unit": "ms",
            "ceiling": 100,
            "weights": {"median": 0.6, "p95": 0.25, "p99": 0.15},
        }
    ]
}


def _run(per_participant: int) -> RunSummary:
    records = {
        name: [record(i, base + i, data={"work_ms": base + i}) for i in range(per_participant)]
        for name, base in (("a", 30.0), ("b", 50.0))
    }
    bench = config(participants=list(records), iterations=per_participant, scoring=SCORING)
    return finish(live_run(bench, records), resamples=300)


def test_one_sample_gives_no_score_interval_and_no_relative_ratio() -> None:
    summary = _run(1)
    lines = summary_lines(summary)
    text = "\n".join(lines)
    assert "n/a (1 sample)" in text, text
    score_rows = text.split("Scores:")[1].splitlines()[2:4]
    # No degenerate interval, no "keeps rank 100%" from one record.
    assert all(row.rstrip().endswith("n/a (1 sample)") for row in score_rows), score_rows
    # No ratio "95 % CI 1.66–1.66×", no statistic interval of one value.
    assert summary.relative is None
    assert summary.intervals == ()
    assert "n/a (1 sample)" in markdown_summary([summary])
    # The model says where the number came from, both ways.
    assert summary.scores is not None
    entry = summary.scores.ranking[0]
    assert entry.uncertainty is not None
    assert entry.uncertainty.samples == 1
    assert RunSummary.from_json(summary.to_json()) == summary


def test_two_samples_keep_their_interval() -> None:
    text = "\n".join(summary_lines(_run(3)))
    assert "n/a (1 sample)" not in text
    assert "Relative:" in text
