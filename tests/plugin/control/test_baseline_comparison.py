"""``--bench-compare`` end to end: real sessions into one store, then compared."""

from __future__ import annotations

import json

import pytest

from helpers.sessions import SCORING, assert_usage_error, bench, store_path, stored_runs
from pytest_benchsdk import ResultStore

#: 40 iterations of a lognormal-ish value (seeded per task index), scaled by $SLOWDOWN.
NOISY = bench(
    f'participants=[Participant("p1"), Participant("p2")], iterations=40,\nscoring={SCORING}',
    """
    import os, random

    @define_task
    def task(participant, task_index, measure):
        rng = random.Random(task_index * 7 + len(participant.name))
        base = {"p1": 20.0, "p2": 40.0}[participant.name]
        factor = float(os.environ.get("SLOWDOWN", "1"))
        measure(value=base * factor * rng.lognormvariate(0, 0.1))
    """,
)


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess("--bench", "--bench-dry-run", *args)


@pytest.mark.slow
def test_first_run_has_no_baseline_and_the_next_one_compares(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=NOISY)
    first = _run(pytester, "--bench-compare")
    assert first.ret == 0, first.stdout.str()
    first.stdout.fnmatch_lines(
        [
            "  Baseline: none (no complete run of demo with the same setup in * yet; this run, "
            "when complete, is the next one's baseline)"
        ]
    )
    second = _run(pytester, "--bench-compare", "--bench-json", "out.json")
    assert second.ret == 0, second.stdout.str()
    baseline_id = stored_runs(store_path(pytester))[0].run_id
    second.stdout.fnmatch_lines(
        [
            f"  Compared with run {baseline_id} (*):",
            "    Between-run noise: unknown (1 earlier complete run(s) with the same setup, 3 "
            "needed): the verdicts rest on the within-run noise alone",
            "    participant  metric  stat    baseline  current  change  interval*verdict    noise"
            "       detects",
            "    p1           value   median  * ms *+0.0%*unchanged  within-run  ≥*%",
            "    p1           value   p95     * ms *unchanged  within-run  ≥*%",
            "    p2           value   median  * ms *unchanged  within-run  ≥*%",
            "    p2           value   p95     * ms *unchanged  within-run  ≥*%",
            "    detects: the smallest change a row can tell from noise (n = 40 per side, *",
        ]
    )
    document = json.loads((pytester.path / "out.json").read_text())
    comparison = document["benchmarks"][0]["comparison"]
    assert comparison["baselineRunId"] == baseline_id
    assert [(r["participant"], r["statistic"]) for r in comparison["rows"]] == [
        ("p1", "median"),
        ("p1", "p95"),
        ("p2", "median"),
        ("p2", "p95"),
    ]
    assert {r["comparison"]["verdict"] for r in comparison["rows"]} == {"unchanged"}
    assert {(r["verdict"], r["noise"]) for r in comparison["rows"]} == {("unchanged", "within-run")}
    assert comparison["historyRuns"] == 1
    current_id = stored_runs(store_path(pytester))[1].run_id
    with ResultStore(store_path(pytester)) as store:
        assert store.analysis(current_id, "comparison") == comparison


@pytest.mark.slow
def test_a_regression_is_flagged_and_fails_the_session_when_asked(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(bench_x=NOISY)
    assert _run(pytester).ret == 0
    monkeypatch.setenv("SLOWDOWN", "1.3")
    result = _run(pytester, "--bench-compare", "--bench-compare-fail")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    assert out.count("regressed") >= 4, out
    result.stdout.fnmatch_lines(
        [
            "ERROR regressed (--bench-compare-fail): demo: p1 value median: * → * ms, "
            "+3*% [[]+*%, +*%] regressed (within-run)",
        ]
    )
    # Without --bench-compare-fail the table says it and the session passes.
    again = _run(pytester, f"--bench-compare={stored_runs(store_path(pytester))[0].run_id}")
    assert again.ret == 0
    again.stdout.fnmatch_lines(
        ["    p1           value   median  * ms *+3*%*regressed  within-run  ≥*"]
    )


@pytest.mark.slow
def test_an_improvement_is_flagged(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(bench_x=NOISY)
    assert _run(pytester).ret == 0
    monkeypatch.setenv("SLOWDOWN", "0.7")
    result = _run(pytester, "--bench-compare", "--bench-compare-fail")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        ["    p1           value   median  * ms *-3*%*improved  within-run  ≥*"]
    )


@pytest.mark.slow
def test_different_knobs_warn_and_a_json_baseline_works(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=NOISY)
    assert _run(pytester, "--bench-json", "base.json").ret == 0
    result = _run(pytester, "--bench-compare=base.json", "--bench-concurrency", "2")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "  Compared with base.json (*):",
            "    warning: knob concurrency differs: 1 → 2",
            "    p1           value   median  *unchanged  within-run  ≥*",
        ]
    )


@pytest.mark.slow
def test_latency_is_compared_when_nothing_is_scored(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench('participants=[Participant("p1")], iterations=5'))
    assert _run(pytester).ret == 0
    result = _run(pytester, "--bench-compare")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["    p1           latency_ms  median  * ?s  *"])


@pytest.mark.slow
def test_compare_without_a_store_needs_a_file(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=NOISY)
    result = _run(pytester, "--bench-no-store", "--bench-compare")
    result.stdout.fnmatch_lines(
        ["  Baseline: none (no results store to find a baseline in (--bench-no-store))"]
    )


#: Two participants whose values overlap (a tie), one clearly ahead.
CLOSE_RACE = bench(
    'participants=[Participant("a"), Participant("b"), Participant("c")], iterations=30,\n'
    f"scoring={SCORING}",
    """
    import random

    @define_task
    def task(participant, task_index, measure):
        rng = random.Random(task_index * 3 + ord(participant.name))
        base = {"a": 30.0, "b": 30.5, "c": 60.0}[participant.name]
        measure(value=base * rng.lognormvariate(0, 0.2))
    """,
)


@pytest.mark.slow
def test_scores_get_intervals_rank_stability_and_ties(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=CLOSE_RACE)
    result = _run(pytester, "--bench-json", "out.json")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "    #   participant  success  value med/p95/p99  score  95% interval  keeps rank",
            "    1   * 100%  *  *.*–*.*  *%",
            "    2=  * 100%  *  *.*–*.*  *%",
            "    3   c  * 100%  *  *.*–*.*  *%",
            "    (n= : tied with the participant above: their intervals overlap)",
        ]
    )
    run = json.loads((pytester.path / "out.json").read_text())["benchmarks"][0]
    estimates = {u["participant"]: u for u in run["uncertainty"]}
    assert sorted(estimates) == ["a", "b", "c"]
    for estimate in estimates.values():
        assert estimate["low"] <= estimate["score"] <= estimate["high"]
        assert sum(estimate["rankProbabilities"]) == pytest.approx(1)
        assert estimate["resamples"] == 200
    assert estimates["c"]["rank"] == 3
    with ResultStore(store_path(pytester)) as store:
        assert store.analysis(run["localRunId"], "uncertainty") == run["uncertainty"]


@pytest.mark.slow
def test_score_resamples_zero_turns_the_intervals_off(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=CLOSE_RACE)
    result = _run(pytester, "--bench-score-resamples", "0", "--bench-json", "out.json")
    assert result.ret == 0
    assert "95% interval" not in result.stdout.str()
    run = json.loads((pytester.path / "out.json").read_text())["benchmarks"][0]
    assert run["uncertainty"] is None


@pytest.mark.slow
def test_run_warnings_are_shown_kept_and_can_fail_the_session(pytester: pytest.Pytester) -> None:
    # A cold first iteration in a scored metric (not a sleep: timings on a loaded machine are
    # not the test's subject, the warning is).
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1")], iterations=30,\n'
            'scoring={"metrics": [{"key": "value", "unit": "ms", "ceiling": 1000, '
            '"weights": {"median": 0.6, "p95": 0.4, "p99": 0}}]}',
            """
            @define_task
            def task(task_index, measure):
                # A cold first iteration, then 10-12 ms.
                measure(value=500.0 if task_index == 0 else 10.0 + task_index % 3)
            """,
        )
    )
    # -v: each warning in full (by default its finding in one line).
    shown = _run(pytester, "--bench-json", "out.json", "-v")
    assert shown.ret == 0
    shown.stdout.fnmatch_lines(
        [
            "  warning [[]first-outlier] p1 (value): the first iteration is far above the "
            "others (500 ms",
            "      against a median of 11.0 ms, modified z-score *",
        ]
    )
    run = json.loads((pytester.path / "out.json").read_text())["benchmarks"][0]
    # p99 has no weight: 30 samples are no reason to warn about it. The statistics trim the
    # 500 ms sample away, so the samples they use do not spread: no high-variance (issue 46).
    assert {w["code"] for w in run["warnings"]} == {"first-outlier"}
    with ResultStore(store_path(pytester)) as store:
        assert store.analysis(run["localRunId"], "warnings") == run["warnings"]
    failing = _run(pytester, "--bench-warnings=error")
    assert failing.ret == pytest.ExitCode.TESTS_FAILED
    failing.stdout.fnmatch_lines(
        ["ERROR run warning (--bench-warnings=error): demo: [[]first-outlier] p1 (value): *"]
    )
    quiet = _run(pytester, "--bench-warnings", "off", "--bench-json", "off.json")
    assert quiet.ret == 0
    assert "warning [" not in quiet.stdout.str()
    assert json.loads((pytester.path / "off.json").read_text())["benchmarks"][0]["warnings"] == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--bench-score-resamples", "many"],
            '--bench-score-resamples expects an integer >= 0 (got "many")',
        ),
        (
            ["--bench-warnings", "loud"],
            '--bench-warnings expects warn, full, error or off (got "loud")',
        ),
        (
            ["--bench-compare="],
            "--bench-compare= expects a REF: 'latest', a baseline name, a stored run id or a "
            "--bench-json file (got ''); --bench-compare alone means latest",
        ),
    ],
)
def test_analysis_options_are_validated(
    pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    assert_usage_error(pytester, args, message)
