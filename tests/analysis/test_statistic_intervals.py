"""The model's intervals of each statistic (``RunSummary.intervals``) and its relative summary
(``RunSummary.relative``): the numbers, and that every view shows the same ones."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.sessions import SCORING, bench, read_json, store_path, stored_runs
from pytest_benchsdk._analysis.resampling import statistic_intervals
from pytest_benchsdk.cli import main
from pytest_benchsdk.scoring import compute_stats


def _resampled(
    values: list[float], trim: float, resamples: int, seed: int
) -> dict[str, tuple[float, float]]:
    """The plain percentile bootstrap: resample, take each resample's statistics with the
    scores' own rule (``compute_stats``), the 2.5 % and 97.5 % order statistics."""
    rng = random.Random(seed)
    drawn: dict[str, list[float]] = {"median": [], "p95": [], "p99": []}
    for _ in range(resamples):
        stats = compute_stats(rng.choices(values, k=len(values)), trim)
        drawn["median"].append(stats.median)
        drawn["p95"].append(stats.p95)
        drawn["p99"].append(stats.p99)
    out = {}
    for statistic, found in drawn.items():
        found.sort()
        out[statistic] = (found[int(0.025 * resamples)], found[int(0.975 * resamples) - 1])
    return out


@pytest.mark.slow
@pytest.mark.parametrize(("n", "trim"), [(7, 0.05), (30, 0.05), (31, 0.0), (400, 0.05), (401, 0.1)])
def test_the_intervals_are_the_percentile_bootstrap_of_the_scores_statistics(
    n: int, trim: float
) -> None:
    rng = random.Random(n)
    values = [rng.lognormvariate(0, 0.5) for _ in range(n)]
    exact = statistic_intervals(values, trim)
    resampled = _resampled(values, trim, 4000, seed=n)
    ordered = sorted(values)
    for statistic in ("median", "p95", "p99"):
        for got, want in zip(exact[statistic], resampled[statistic], strict=True):
            # Both are order statistics of the sample (or means of two neighbours); Monte Carlo
            # error of 4,000 resamples moves a bound by a rank or two at most.
            rank = min(range(n), key=lambda i: abs(ordered[i] - want))
            low, high = ordered[max(0, rank - 2)], ordered[min(n - 1, rank + 2)]
            assert low - 1e-12 <= got <= high + 1e-12, (statistic, got, want)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), min_size=1, max_size=300),
    st.sampled_from([0.0, 0.05, 0.2]),
)
def test_each_interval_holds_its_statistic_and_is_reproducible(
    values: list[float], trim: float
) -> None:
    found = statistic_intervals(values, trim)
    stats = compute_stats(values, trim)
    for statistic in ("median", "p95", "p99"):
        low, high = found[statistic]
        point = getattr(stats, statistic)
        assert low <= point <= high
        assert min(values) <= low
        assert high <= max(values)
    assert statistic_intervals(values, trim) == found


def test_no_samples_no_intervals_and_one_sample_a_point() -> None:
    assert statistic_intervals([], 0.05) == {}
    assert statistic_intervals([3.5], 0.05) == dict.fromkeys(("median", "p95", "p99"), (3.5, 3.5))


def test_a_large_sample_costs_no_resampling() -> None:
    values = np.random.default_rng(1).lognormal(size=200_000).tolist()
    found = statistic_intervals(values, 0.05)
    low, high = found["median"]
    # The median of 200,000 lognormal samples is known to about 1 %.
    assert high - low < 0.02
    assert low < float(np.median(values)) < high


#: Two participants 10 times apart.
BENCH = bench(
    'participants=[Participant("keepalive"), Participant("new-client")], iterations=40,\n'
    f"scoring={SCORING}",
    """
    import random

    @define_task
    def task(participant, task_index, measure):
        rng = random.Random(task_index * 13 + len(participant.name))
        base = {"keepalive": 5.0, "new-client": 50.0}[participant.name]
        measure(value=base * rng.lognormvariate(0, 0.1))
    """,
)


@pytest.mark.slow
def test_the_relative_summary_is_in_the_model_and_every_view(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makepyfile(bench_x=BENCH)
    result = pytester.runpytest_inprocess(
        "--bench",
        "--bench-dry-run",
        "-p",
        "no:cacheprovider",
        "--bench-json",
        "run.json",
        "--bench-markdown",
        "run.md",
    )
    summary = read_json(pytester.path / "run.json")["benchmarks"][0]["result"]
    relative = summary["relative"]
    assert relative["reference"] == "keepalive"
    assert relative["metric"] == "value"
    (row,) = relative["rows"]
    assert row["participant"] == "new-client"
    # The medians' ratio, with its bootstrap interval around it.
    medians = {p["name"]: p["metrics"][0]["stats"]["median"] for p in summary["participants"]}
    assert math.isclose(row["factor"], medians["new-client"] / medians["keepalive"], rel_tol=1e-9)
    assert row["low"] < row["factor"] < row["high"]
    assert row["low"] > 8
    assert row["high"] < 12.5
    assert row["verdict"] == "regressed"  # new-client is clearly slower
    # Per participant and metric (and the latency), the intervals of median, p95 and p99.
    keys = {(i["participant"], i["metric"], i["statistic"]) for i in summary["intervals"]}
    assert keys == {
        (p, m, s)
        for p in ("keepalive", "new-client")
        for m in ("latency_ms", "value", "cpu_ms")
        for s in ("median", "p95", "p99")
    }
    for interval in summary["intervals"]:
        participant = next(
            p for p in summary["participants"] if p["name"] == interval["participant"]
        )
        stats = (
            participant["latency"]
            if interval["metric"] == "latency_ms"
            else next(m for m in participant["metrics"] if m["key"] == interval["metric"])["stats"]
        )
        assert interval["low"] <= stats[interval["statistic"]] <= interval["high"]

    sentence = (
        f"keepalive: {_three(row['factor'])}× faster than new-client on value median, "
        f"95 % CI {_three(row['low'])}–{_three(row['high'])}×"
    )
    result.stdout.fnmatch_lines(["  Relative:", f"    {sentence}"])
    assert f"- {sentence}" in (pytester.path / "run.md").read_text()
    path = store_path(pytester)
    capsys.readouterr()
    assert main(["--store", str(path), "show", stored_runs(path)[-1].run_id]) == 0
    assert f"    {sentence}" in capsys.readouterr().out.splitlines()


def _three(value: float) -> str:
    from pytest_benchsdk._base.numbers import significant

    return significant(value)
