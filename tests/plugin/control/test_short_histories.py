"""A history too short or too wide to judge says so instead of a figure (issue 47, item 6).

Three earlier runs give two changes between them, and Student's t quantile at the session's
Bonferroni level from two changes is huge: a history whose runs moved by a few percent had a
band of ``+154%`` (and 180–440 ns runs one of ``6372×``), "too noisy", every row not judged.
Such a history, whose runs moved by less than the run itself can tell, is **too short**: the
row is judged within the run and says so. A history whose runs did move by more is **too
noisy** (issue 46: not judged), and its line says how far they moved, never the band's
``6372× or -100.0%``.

The values are drawn from seeded generators: no clock is asserted against.
"""

from __future__ import annotations

import re

import pytest

from helpers.sessions import bench

#: Four participants, 40 iterations whose values spread ±30 % (lognormal), each session's level
#: set by ``RUN_FACTOR``: eight rows, so the band's quantile is Bonferroni's for eight.
SPREAD = bench(
    'participants=[Participant(f"p{i}") for i in range(1, 5)], iterations=40,\n'
    'scoring={"metrics": [{"key": "value", "unit": "ms", "ceiling": 1000, '
    '"weights": {"median": 0.6, "p95": 0.25, "p99": 0.15}}]}',
    """
    import os, random

    @define_task
    def task(participant, task_index, measure):
        seed = int(os.environ.get("RUN_SEED", "0"))
        rng = random.Random(task_index * 7 + int(participant.name[1:]) * 100003 + seed * 1000)
        factor = float(os.environ.get("RUN_FACTOR", "1"))
        measure(value=100.0 * factor * rng.lognormvariate(0, 0.3))
    """,
    slug="short",
)


def _history(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, factors: tuple[str, ...]
) -> pytest.RunResult:
    """Sessions at ``factors`` (the history), then one at 1 compared with them."""
    pytester.makepyfile(bench_short=SPREAD)
    for seed, factor in enumerate(factors):
        monkeypatch.setenv("RUN_SEED", str(seed))
        monkeypatch.setenv("RUN_FACTOR", factor)
        assert pytester.runpytest_inprocess("--bench", "--bench-dry-run", "-q").ret == 0
    monkeypatch.setenv("RUN_SEED", "9")
    monkeypatch.setenv("RUN_FACTOR", "1")
    return pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "--bench-compare", "--bench-compare-fail"
    )


def _rows(result: pytest.RunResult) -> list[str]:
    return [
        line
        for line in result.stdout.str().splitlines()
        if re.match(r"    p\d  +value  +(median|p95) ", line)
    ]


@pytest.mark.slow
def test_a_short_history_whose_runs_moved_little_is_judged_within_the_run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Three runs a few percent apart: the band from their two changes is wider than ×2.
    result = _history(pytester, monkeypatch, ("1.0", "1.05", "0.99"))
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    rows = _rows(result)
    assert len(rows) == 8, rows
    short = [row for row in rows if "within-run, history too short" in row]
    assert len(short) >= 4, rows
    for row in short:
        assert "not judged" not in row
        assert re.search(r"within-run, history too short  +≥\d+(\.\d)?%$", row), row
    text = " ".join(result.stdout.str().split())
    assert (
        "history too short: judged within the run (the last 3 complete runs moved from one to "
        "the next by less than the run itself can tell, but a band from 2 changes is wider "
        "than ×2)"
    ) in text
    # No band's figure past ×2 anywhere.
    assert not re.search(r"\d{3,}×|-100\.0%|\+\d{3,}%", text), text


@pytest.mark.slow
def test_a_history_that_moved_by_more_says_how_far_not_the_band(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Three runs three times apart: too noisy (issue 46), not judged, and its line says so
    # without the band's "up to 6372× or -100.0%" (the runs' largest move is in the JSON).
    result = _history(pytester, monkeypatch, ("1", "3", "1"))
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    rows = _rows(result)
    assert len(rows) == 8, rows
    assert all("not judged: history too noisy" in row for row in rows), rows
    text = " ".join(result.stdout.str().split())
    assert (
        "history too noisy: not judged (the last 3 complete runs moved from one to the next by "
        "more than the run itself can tell; a band from them is wider than ×2"
    ) in text
    # One line per statistic for the rows that say the same.
    reasons = [line for line in result.stdout.lines if line.startswith("    * ")]
    assert len(reasons) == 2, reasons
    assert reasons[0].startswith("    * p1, p2, p3, p4 value median: history too noisy")
    assert not re.search(r"\d{3,}×|-100\.0%|\+\d{3,}%", text), text
