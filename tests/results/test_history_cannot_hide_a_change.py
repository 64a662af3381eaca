"""A history that cannot hide a change (issue 46, part 2), from runs written to a real store
here: the between-run noise of a comparison row leaves out the runs judged changed for that row
and the runs before the row's last change point, and says so; a history started afresh leaves
out every earlier run; a band too wide to judge anything says so and the row is not judged; a
level the history flips back to is noise, not a change point; a tail verdict needs enough
samples behind it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from helpers.runs import config, live_run, record, store_run
from pytest_benchsdk._analysis.baseline import (
    BetweenRunNoise,
    MetricComparison,
    compare_runs,
    compare_with_baseline,
    history_key,
)
from pytest_benchsdk._views.text import detectable_cell
from pytest_benchsdk.records import TaskRecord
from pytest_benchsdk.results import (
    CompareRef,
    RunSetup,
    find_baseline,
    run_history,
)
from pytest_benchsdk.store import ResultStore

LATEST = CompareRef("latest", "latest")
MEDIAN = history_key("p", "latency_ms", "median")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ResultStore]:
    with ResultStore(tmp_path / "results.sqlite3") as opened:
        yield opened


def _run(store: ResultStore, base: float, verdict: str | None = None) -> str:
    """A complete run of ``p`` with latencies about ``base``; with ``verdict``, its own
    comparison judged its latency median so (as a session stores it)."""
    spread = [0.0, 0.2, -0.2, 0.1, -0.1, 0.05]
    run = live_run(config(participants=["p"], iterations=6), {"p": [
        record(i, base * (1 + s / 10)) for i, s in enumerate(spread)
    ]})  # fmt: skip
    store_run(store, run)
    assert run.local_run_id is not None
    if verdict is not None:
        row = {"participant": "p", "phase": None, "metric": "latency_ms", "statistic": "median"}
        body = {"baseline": "run x", "rows": [{**row, "verdict": verdict}]}
        store.save_analysis(run.local_run_id, "comparison", body)
    return run.local_run_id


def _setup(store: ResultStore, run_id: str) -> RunSetup:
    return RunSetup.of(store.get_run(run_id))


def _records(values: list[float]) -> list[TaskRecord]:
    return [TaskRecord(task_index=i, status="success", latency_ms=v) for i, v in enumerate(values)]


def test_a_run_judged_changed_leaves_the_noise_of_its_row(store: ResultStore) -> None:
    ids = [_run(store, b) for b in (10.0, 10.2, 9.9, 10.1)]
    ids.append(_run(store, 14.0, verdict="regressed"))
    # The next run is compared with the last quiet one (the regressed run failed the gate).
    ref = CompareRef("run", ids[3], run_id=ids[3])
    baseline = find_baseline(ref, store, _setup(store, ids[0]), None)
    assert not isinstance(baseline, str)
    assert baseline.history_runs == 5
    assert baseline.history is not None
    # The regressed run's median is not noise; its p95 was not judged changed: it stays.
    assert len(baseline.history[MEDIAN]) == 4
    assert max(baseline.history[MEDIAN]) < 11
    assert len(baseline.history[history_key("p", "latency_ms", "p95")]) == 5
    assert baseline.history_left_out is not None
    assert baseline.history_left_out[MEDIAN] == {"changed": 1}
    # The row says how many runs its noise left out, and why.
    current = {"p": _records([14.0, 14.1, 13.9, 14.2, 13.8, 14.05])}
    comparison = compare_with_baseline(baseline, current, None, {})
    row = next(r for r in comparison.rows if r.statistic == "median")
    assert row.history is not None
    assert (row.history.runs, row.history.changed) == (4, 1)
    assert row.history.left_out_text() == "1 judged changed left out"
    assert row.to_json()["history"]["leftOutChanged"] == 1
    assert MetricComparison.from_json(row.to_json()).history == row.history
    # A baseline that moved past the run (a later run passed): it is history like any other.
    moved = find_baseline(LATEST, store, _setup(store, ids[0]), None)
    assert not isinstance(moved, str)
    assert moved.history is not None
    assert moved.run_id == ids[4]
    assert len(moved.history[MEDIAN]) == 5


def test_a_regression_stays_one_while_it_lasts(store: ResultStore) -> None:
    # Four quiet runs, then a regression judged so twice (the slow runs noisy among
    # themselves: +39 %, then +88 %): the third slow session (+34 %) is compared with the last
    # quiet run, and the slow runs cannot widen the band that judges it (they did: ≥36 %).
    for base in (10.0, 10.3, 9.8, 10.1):
        quiet = _run(store, base)
    for base in (14.0, 19.0):
        _run(store, base, verdict="regressed")
    baseline = find_baseline(CompareRef("run", quiet, run_id=quiet), store,
                             _setup(store, quiet), None)  # fmt: skip
    assert not isinstance(baseline, str)
    assert baseline.history is not None
    assert len(baseline.history[MEDIAN]) == 4
    current = {"p": _records([13.5, 13.6, 13.4, 13.7, 13.3, 13.55])}
    row = next(r for r in compare_with_baseline(baseline, current, None, {}).rows
               if r.statistic == "median")  # fmt: skip
    assert row.verdict == "regressed", row.line()
    assert row.history is not None
    assert row.history.changed == 2


def test_runs_before_the_rows_last_change_point_leave_its_noise(store: ResultStore) -> None:
    # The user's own harness was 3x slower in the first six runs: another level, not noise.
    ids = [_run(store, 30.0 + i % 2) for i in range(6)]
    ids += [_run(store, 10.0 + (i % 3) / 10) for i in range(6)]
    baseline = find_baseline(LATEST, store, _setup(store, ids[0]), None)
    assert not isinstance(baseline, str)
    assert baseline.history is not None
    assert len(baseline.history[MEDIAN]) == 6
    assert max(baseline.history[MEDIAN]) < 11
    assert baseline.history_left_out is not None
    assert baseline.history_left_out[MEDIAN] == {"before_change": 6}
    current = {"p": _records([10.0, 10.1, 9.9, 10.2, 9.8, 10.05])}
    row = next(r for r in compare_with_baseline(baseline, current, None, {}).rows
               if r.statistic == "median")  # fmt: skip
    assert row.history is not None
    assert row.history.band < 1  # not ≥ thousands of per cent
    assert row.history.left_out_text() == "6 before a change point left out"


def test_a_history_started_afresh_leaves_every_earlier_run_out(store: ResultStore) -> None:
    from pytest_benchsdk.results import start_history

    old = [_run(store, 30.0) for _ in range(4)]
    line = start_history(store, "demo")
    assert line.startswith("History of demo: starts afresh with its next run")
    new = [_run(store, 10.0) for _ in range(3)]
    baseline = find_baseline(LATEST, store, _setup(store, old[0]), None)
    assert not isinstance(baseline, str)
    assert baseline.history is not None
    assert baseline.history_runs == 3
    assert len(baseline.history[MEDIAN]) == 3
    history = run_history(store, "demo")
    assert history is not None
    assert [r.run_id for r in history.runs] == new
    assert dict(history.left_out_reasons) == {"before a fresh start": 4}
    assert "before the history started afresh" in (history.left_out_line() or "")
    # ... or with a given run (of this benchmark only).
    start_history(store, "demo", new[1])
    history = run_history(store, "demo")
    assert history is not None
    assert [r.run_id for r in history.runs] == new[1:]
    with pytest.raises(ValueError, match="no runs of benchmark other"):
        start_history(store, "other")


def _compare(history: list[float], n: int = 40, slow: float = 1.0) -> list[MetricComparison]:
    base = [10.0 * (1 + ((i * 7) % 11 - 5) / 100) for i in range(n)]
    return list(
        compare_runs(
            {"p": _records(base)},
            {"p": _records([v * slow for v in base])},
            None,
            history={MEDIAN: history},
        )
    )


def test_a_band_too_wide_to_judge_says_so_and_the_row_is_not_judged() -> None:
    # Earlier runs 3x apart (a harness changed, over and over): their band would hide any
    # change ("detects ≥2392×"), and the run's own interval does not see that drift, so a
    # verdict from it is how unchanged code fails on a noisy machine: shown, not judged.
    (median, _) = _compare([10.0, 30.0, 10.0, 30.0, 10.0, 30.0], slow=1.3)
    assert median.history is not None
    assert median.history.band > 100
    assert median.history_too_noisy
    assert median.comparison is not None
    assert median.comparison.verdict == "regressed"
    assert median.verdict == "not judged"
    assert median.verdict_label == "not judged: history too noisy"
    assert median.noise_label == "history too noisy"
    assert median.detectable is None
    assert median.reason is not None
    assert median.reason.startswith("history too noisy: not judged")
    assert "--bench-ab" in median.reason
    assert "≥" not in median.line()
    # A history as wide as the run itself allows still judges.
    (calm, _) = _compare([10.0, 10.3, 9.9, 10.2, 10.0, 10.1], slow=1.3)
    assert not calm.history_too_noisy
    assert (calm.verdict, calm.noise_label) == ("regressed", "history, 6 runs")


def test_a_level_the_history_flips_back_to_is_noise_not_a_change_point(
    store: ResultStore,
) -> None:
    # A loaded machine: sessions land fast or 2x slow and back again. The last level has been
    # seen before, so the flips are the row's noise (the band sees them), not a change to cut
    # at: cut there, the band would come from the last few runs and fail the next flip.
    levels = [10.0] * 8 + [20.0] * 8 + [10.0] * 3
    ids = [_run(store, level) for level in levels]
    baseline = find_baseline(LATEST, store, _setup(store, ids[0]), None)
    assert not isinstance(baseline, str)
    assert baseline.history is not None
    assert len(baseline.history[MEDIAN]) == len(levels)
    assert not (baseline.history_left_out or {}).get(MEDIAN)
    current = {"p": _records([20.0, 20.2, 19.8, 20.4, 19.6, 20.1])}
    row = next(r for r in compare_with_baseline(baseline, current, None, {}).rows
               if r.statistic == "median")  # fmt: skip
    assert row.verdict != "regressed"


def test_a_p95_needs_twenty_samples_on_each_side_or_is_not_judged() -> None:
    few = {r.statistic: r for r in _compare([], n=16, slow=1.5)}
    assert few["median"].verdict == "regressed"
    p95 = few["p95"]
    assert p95.comparison is not None
    assert p95.comparison.verdict == "regressed"
    assert p95.verdict == "not judged"
    assert p95.verdict_label == "not judged: 16 samples"
    assert p95.detectable is None
    assert p95.reason is not None
    assert "at least 20 on each side" in p95.reason
    assert "p95" in p95.line()
    assert "not judged" in p95.line()
    enough = {r.statistic: r for r in _compare([], n=20, slow=1.5)}
    assert enough["p95"].verdict == "regressed"


def test_a_short_history_that_moved_less_than_the_run_can_tell_is_judged_within_the_run() -> None:
    """Issue 47, item 6: three earlier runs a few percent apart (two changes: Student's t
    with two degrees of freedom) have a band wider than ×2, though they moved by less than
    the run itself can tell: too short, not too noisy; the row is judged within the run."""
    (within, _) = _compare([], slow=1.3)  # no history: the run's own comparison
    c = within.comparison
    assert c is not None
    # A band of ×6 from 3 runs whose largest move is half what the run itself can tell.
    moved = BetweenRunNoise(3, c.detectable / 4, 5.0, largest=c.detectable / 2)
    median = attrs.evolve(within, history=moved)
    assert median.history is not None
    assert median.history_too_short
    assert not median.history_too_noisy
    assert median.verdict == median.comparison.verdict == "regressed"
    assert median.verdict_label == "regressed"
    assert median.noise_label == "within-run, history too short"
    assert median.detectable == median.comparison.detectable
    assert median.reason is not None
    assert median.reason.startswith("history too short: judged within the run (the last 3")
    # Moved by more than the run can tell: too noisy (issue 46), not judged.
    noisy = attrs.evolve(within, history=attrs.evolve(moved, largest=c.detectable * 2))
    assert noisy.history_too_noisy
    assert not noisy.history_too_short
    assert noisy.verdict_label == "not judged: history too noisy"
    # Read back from a row stored before the runs' largest move was kept: too noisy, as then.
    data = median.to_json()
    del data["history"]["largest"]
    old = MetricComparison.from_json(data)
    assert old.history_too_noisy
    assert old.reason is not None
    assert "move too much between themselves" in old.reason


def test_no_band_past_a_doubling_is_printed_as_a_figure() -> None:
    # Runs three times apart: too noisy; its line says how far they moved.
    (median, _) = _compare([10.0, 30.0, 10.0], slow=1.3)
    assert median.history_too_noisy
    assert median.reason is not None
    assert "moved from one to the next by more than the run itself can tell" in median.reason
    assert median.history is not None
    assert median.history.moved_text() == "×3.00"
    assert "×2" in median.reason
    assert "-100.0%" not in median.reason
    # A row that cannot tell a tenfold change from noise: "beyond ×10", not "≥15414×".
    wide = [1.0 if i % 2 else 1000.0 for i in range(10)]
    row = next(
        r
        for r in compare_runs({"p": _records(wide)}, {"p": _records(wide[::-1])}, None)
        if r.statistic == "median"
    )
    assert row.detectable is not None
    assert row.detectable > 9
    assert detectable_cell(row) == "beyond ×10"
