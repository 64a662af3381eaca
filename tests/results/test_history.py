"""A benchmark's history (``run_history``, ``complete_runs``, ``history_values``) from runs
written to a real store here: only complete runs with one setup, each statistic's series with
its change points, and what was left out and why."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.runs import config, live_run, record, store_run
from pytest_benchsdk._analysis.baseline import history_key
from pytest_benchsdk._config.models import Phase
from pytest_benchsdk._engine.schedule import RunArgs
from pytest_benchsdk.results import (
    HISTORY_RULE,
    RunSetup,
    complete_runs,
    history_values,
    run_history,
)
from pytest_benchsdk.store import ResultStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ResultStore]:
    with ResultStore(tmp_path / "results.sqlite3") as opened:
        yield opened


def _run(
    store: ResultStore,
    base: float,
    *,
    iterations: int = 6,
    interrupted: bool = False,
    missing: int = 0,
    phases: bool = False,
) -> str:
    """A run of ``p`` whose latencies and ``value_ms`` are about ``base``; its id."""
    fields: dict[str, object] = {"participants": ["p"]}
    if phases:
        fields["phases"] = [Phase("cold", 2), Phase("warm", iterations - 2)]
    else:
        fields["iterations"] = iterations
    spread = [0.0, 0.2, -0.2, 0.1, -0.1, 0.05, -0.05, 0.15][: iterations - missing]
    records = [
        record(
            i,
            base + s,
            data={"value_ms": 2 * base + s},
            phase=("cold" if i < 2 else "warm") if phases else None,
        )
        for i, s in enumerate(spread)
    ]
    run = live_run(config(**fields), {"p": records})
    store_run(store, run, interrupted=interrupted)
    assert run.local_run_id is not None
    return run.local_run_id


def test_a_history_follows_each_statistic_and_finds_where_it_changed(store: ResultStore) -> None:
    ids = [_run(store, 10.0) for _ in range(6)] + [_run(store, 20.0) for _ in range(6)]
    history = run_history(store, "demo")
    assert history is not None
    assert [run.run_id for run in history.runs] == ids  # oldest first
    assert (history.benchmark_name, history.dry_run, history.left_out) == ("Demo", True, 0)
    assert history.left_out_line() is None
    keys = {(s.participant, s.metric, s.statistic) for s in history.series}
    assert keys == {
        (participant, metric, statistic)
        for participant in ["p"]
        for metric in ["latency_ms", "value_ms"]
        for statistic in ["median", "p95"]
    }
    median = next(s for s in history.series if (s.metric, s.statistic) == ("latency_ms", "median"))
    # The median of the spread around each base is base + 0.025.
    assert [p.value for p in median.points] == pytest.approx([10.025] * 6 + [20.025] * 6)
    (change,) = median.change_points
    assert median.starts(change).run_id == ids[6]
    assert median.direction(change) == "regressed"
    assert (median.label, median.unit, median.subject) == ("latency", "ms", "p")
    assert median.key == history_key("p", "latency_ms", "median", None)
    assert median.to_json()["changePoints"][0]["runId"] == ids[6]
    value = next(s for s in history.series if s.metric == "value_ms")
    assert (value.lower_is_better, value.unit) == (None, "ms")
    assert value.direction(value.change_points[0]) == "higher"


def test_only_complete_runs_with_the_same_setup_are_in_it_and_the_rest_is_said(
    store: ResultStore,
) -> None:
    first = _run(store, 10.0)
    _run(store, 10.0, iterations=4)  # another setup
    _run(store, 10.0, interrupted=True)
    _run(store, 10.0, missing=2)  # a subset ran
    last = _run(store, 10.0)
    _run(store, 10.0, interrupted=True)  # newer than the newest complete run
    history = run_history(store, "demo")
    assert history is not None
    assert [run.run_id for run in history.runs] == [first, last]
    assert history.left_out == 4
    assert dict(history.left_out_reasons) == {"another setup": 1, "not complete": 3}
    assert history.left_out_line() == (
        "4 other run(s) left out: 1 with another setup, 3 not complete (partial, interrupted "
        "or unfinished)"
    )
    assert history.to_json()["leftOutReasons"] == {"another setup": 1, "not complete": 3}
    assert "complete" in HISTORY_RULE


def test_a_history_until_an_incomplete_run_ends_before_it_and_says_why(
    store: ResultStore,
) -> None:
    first = _run(store, 10.0)
    partial = _run(store, 10.0, missing=1)
    newer = _run(store, 10.0)
    history = run_history(store, "demo", until=partial)
    assert history is not None
    assert [run.run_id for run in history.runs] == [first]
    assert history.anchor_left_out == "it ran a subset of the benchmark (-k, a node id, --lf)"
    assert dict(history.left_out_reasons) == {"not complete": 1, "newer": 1}
    assert history.left_out_line() is not None
    assert "1 newer than the run it ends with" in str(history.left_out_line())
    assert newer not in [run.run_id for run in history.runs]


def test_the_limit_keeps_the_newest_and_the_filters_keep_what_was_asked(
    store: ResultStore,
) -> None:
    ids = [_run(store, 10.0 + i) for i in range(5)]
    history = run_history(store, "demo", limit=3, metrics=["value_ms"])
    assert history is not None
    assert [run.run_id for run in history.runs] == ids[2:]
    assert dict(history.left_out_reasons) == {"beyond the limit": 2}
    assert {s.metric for s in history.series} == {"value_ms"}
    assert run_history(store, "demo", participants=["nobody"]) is not None
    nobody = run_history(store, "demo", participants=["nobody"])
    assert nobody is not None
    assert nobody.series == ()
    # By label too: the latency's is "latency".
    labelled = run_history(store, "demo", metrics=["latency"])
    assert labelled is not None
    assert {s.metric for s in labelled.series} == {"latency_ms"}


def test_no_history_without_a_complete_run(store: ResultStore) -> None:
    assert run_history(store, "demo") is None
    _run(store, 10.0, interrupted=True)
    assert run_history(store, "demo") is None
    assert run_history(store, "other") is None


def test_with_phases_each_phase_has_its_series(store: ResultStore) -> None:
    for _ in range(3):
        _run(store, 10.0, phases=True)
    history = run_history(store, "demo", metrics=["latency_ms"])
    assert history is not None
    phases = sorted({(s.phase, s.statistic) for s in history.series}, key=str)
    assert phases == sorted(
        {(phase, statistic) for phase in (None, "cold", "warm") for statistic in ("median", "p95")},
        key=str,
    )
    cold = next(s for s in history.series if (s.phase, s.statistic) == ("cold", "median"))
    assert cold.subject == "p · cold"
    assert all(math.isfinite(point.value) for point in cold.points)


def test_the_between_run_noise_reads_the_complete_runs_before_a_run(store: ResultStore) -> None:
    ids = [_run(store, 10.0 + i) for i in range(4)]
    _run(store, 10.0, interrupted=True)
    setup = RunSetup.of(store.get_run(ids[0]))
    runs, values = history_values(store, setup, before=ids[3], limit=2)
    assert runs == 3  # the complete runs before ids[3]
    assert values[history_key("p", "latency_ms", "median", None)] == pytest.approx([11.025, 12.025])
    assert [run.run_id for run, _ in complete_runs(store, setup)] == ids[::-1]
    assert [run.run_id for run, _ in complete_runs(store, setup, limit=1)] == [ids[3]]
    # A run the store does not hold bounds nothing.
    assert len(list(complete_runs(store, setup, before="unknown"))) == 4


def test_a_setup_is_the_benchmark_the_knobs_and_dry_run(store: ResultStore) -> None:
    first = store.get_run(_run(store, 10.0))
    setup = RunSetup.of(first)
    assert setup.matches(first)
    assert not setup.matches(store.get_run(_run(store, 10.0, iterations=4)))
    live = live_run(config(participants=["p"], iterations=6), {})
    assert RunSetup.of_live(live, dry_run=True) == setup
    assert RunSetup.of_live(live, dry_run=False) != setup
    other = live_run(config(participants=["p"], iterations=6), {}, args=RunArgs(concurrency=2))
    assert not RunSetup.of_live(other, dry_run=True).matches(first)
    described = setup.describe(first.environment)
    assert described["benchmark"] == "demo"
    assert described["dry_run"] is True
