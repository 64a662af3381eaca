"""Baselines that mean something, end to end: real sessions into one store.

``latest`` is the newest complete run with the same setup (never a node-id or ``-k`` subset, an
interrupted run, a run of other knobs or a reporting run for a dry run, nor a run that failed
``--bench-compare-fail``); named baselines (``--bench-save``); a REF that names nothing is a
usage error before anything runs; the verdict needs the change to beat the noise earlier runs
show between themselves; the warnings people keep enabled."""

from __future__ import annotations

import json

import attrs
import pytest

from helpers.sessions import bench, store_path, stored_runs
from pytest_benchsdk import ResultStore
from pytest_benchsdk.cli import main as cli_main

SCORED = (
    '{"metrics": [{"key": "value", "unit": "ms", "ceiling": 100, '
    '"weights": {"median": 0.6, "p95": 0.4, "p99": 0}}]}'
)

#: 20 iterations per participant of a lognormal value seeded by task index and $RUN_SEED (each
#: session a little different, as real runs are); $SLOW_P1 scales p1 only; $FAIL_AT makes that
#: task index of p2 fail.
NOISY = bench(
    f'participants=[Participant("p1"), Participant("p2")], iterations=20,\nscoring={SCORED}',
    """
    import os, random

    @define_task
    def task(participant, task_index, measure):
        seed = int(os.environ.get("RUN_SEED", "0"))
        rng = random.Random(task_index * 7 + len(participant.name) + seed * 1000)
        if participant.name == "p2" and str(task_index) == os.environ.get("FAIL_AT"):
            raise RuntimeError("boom")
        base = {"p1": 20.0, "p2": 40.0}[participant.name]
        factor = float(os.environ.get("SLOW_P1", "1")) if participant.name == "p1" else 1.0
        measure(value=base * factor * rng.lognormvariate(0, 0.05))
    """,
)


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess("--bench", "--bench-dry-run", *args)


def _runs(pytester: pytest.Pytester) -> list[str]:
    return [run.run_id for run in stored_runs(store_path(pytester))]


def _comparison(pytester: pytest.Pytester, run_id: str) -> dict[str, object]:
    with ResultStore(store_path(pytester)) as store:
        body = store.analysis(run_id, "comparison")
    assert isinstance(body, dict)
    return body


# -- REF parsing and resolution ----------------------------------------------------------------


def test_bench_compare_alone_never_takes_the_next_path(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_a=NOISY, bench_b=NOISY.replace("'demo'", "'other'"))
    result = _run(pytester, "--bench-compare", "bench_a.py")
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=40)  # bench_a only: the path was not taken as the REF
    result.stdout.fnmatch_lines(["  Baseline: none (no complete run of demo with the same *"])
    assert "Other" not in result.stdout.str()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--bench-compare=lastest"],
            "--bench-compare=lastest: no run id, baseline name or file lastest in *; "
            "closest: latest*",
        ),
        (["--bench-compare=missing.json"], "--bench-compare=missing.json: cannot read *"),
        (["--bench-compare=bad.json"], "--bench-compare=bad.json: bad.json is not JSON (*"),
        (
            ["--bench-compare=list.json"],
            "--bench-compare=list.json: list.json is not a --bench-json file *",
        ),
        (
            ["--bench-compare=abc"],
            "--bench-compare=abc: run id abc is ambiguous in *: abc2*, abc1*",
        ),
        (
            ["--bench-save", "latest"],
            "--bench-save: 'latest' cannot be a baseline name: as a REF it means the newest *",
        ),
        (["--bench-save", "has space"], "--bench-save: a baseline name is letters, digits *"),
        (
            ["--bench-save", "main", "--bench-no-store"],
            "--bench-save main keeps the run's name in the results store: it cannot be used "
            "with --bench-no-store",
        ),
        (
            ["--bench-compare-noise", "lots"],
            "--bench-compare-noise expects a percentage >= 0 and < 100, e.g. 2 or 2.5% (got "
            '"lots")',
        ),
        (
            ["--bench-warnings-ignore", "p99"],
            '--bench-warnings-ignore: unknown warning code "p99" (codes: *); did you mean '
            "p99-few-samples?",
        ),
    ],
)
def test_a_ref_or_option_that_names_nothing_is_a_usage_error_before_anything_runs(
    pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    pytester.makepyfile(bench_x=NOISY)
    assert _run(pytester).ret == 0
    # Two runs whose ids share a prefix.
    with ResultStore(store_path(pytester)) as store:
        (only,) = store.list_runs()
        for run_id in ("abc1" + "0" * 28, "abc2" + "0" * 28):
            store.put_run(attrs.evolve(only, run_id=run_id))
    (pytester.path / "bad.json").write_text("{not json")
    (pytester.path / "list.json").write_text("[]")
    result = _run(pytester, "--bench-compare-fail", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines([f"ERROR: {message}"])
    assert len(stored_runs(store_path(pytester))) == 3  # nothing ran


def test_a_name_or_id_without_a_store_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=NOISY)
    result = _run(pytester, "--bench-compare=main")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: --bench-compare=main: no results store at * to find baseline main in *"]
    )


@pytest.mark.slow
def test_a_unique_prefix_names_its_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=NOISY)
    assert _run(pytester).ret == 0
    (first,) = _runs(pytester)
    result = _run(pytester, f"--bench-compare={first[:8]}", "--bench-compare-fail")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines([f"  Compared with run {first} (*):"])


# -- latest ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_latest_is_the_newest_complete_run_with_the_same_setup(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(bench_x=NOISY)
    assert _run(pytester).ret == 0
    (complete,) = _runs(pytester)
    # None of these is a baseline: one item (an IDE run), a -k subset, other knobs, a run
    # stopped by -x (interrupted), and a reporting run (no --bench-dry-run, no credentials).
    assert _run(pytester, "bench_x.py::task[p1-0]").ret == 0
    assert _run(pytester, "-k", "p2").ret == 0
    assert _run(pytester, "--bench-iterations", "10").ret == 0
    monkeypatch.setenv("FAIL_AT", "3")
    assert _run(pytester, "-x").ret == pytest.ExitCode.TESTS_FAILED
    monkeypatch.delenv("FAIL_AT")
    assert pytester.runpytest_inprocess("--bench").ret == 0
    with ResultStore(store_path(pytester)) as store:
        statuses = [r.status for r in reversed(store.list_runs())]
    assert statuses == ["passed", "passed", "passed", "passed", "interrupted", "passed"]
    result = _run(pytester, "--bench-compare")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            f"  Compared with run {complete} (*):",
            "    Between-run noise: unknown (1 earlier complete run(s) with the same setup, *",
        ]
    )
    compared = _runs(pytester)[-1]
    # A partial run says so, and is compared with the newest complete run.
    partial = _run(pytester, "bench_x.py::task[p1-0]", "--bench-compare")
    partial.stdout.fnmatch_lines(
        ["  *status: passed, partial", f"  Compared with run {compared} *"]
    )


@pytest.mark.slow
def test_a_regression_that_failed_the_gate_is_not_the_next_baseline(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(bench_x=NOISY)
    assert _run(pytester).ret == 0
    (base,) = _runs(pytester)
    monkeypatch.setenv("SLOW_P1", "1.3")
    for _ in range(2):  # the second slowed run is compared with the base run again
        slowed = _run(pytester, "--bench-compare", "--bench-compare-fail")
        assert slowed.ret == pytest.ExitCode.TESTS_FAILED, slowed.stdout.str()
        slowed.stdout.fnmatch_lines(
            [
                f"  Compared with run {base} (*):",
                "ERROR regressed (--bench-compare-fail): demo: p1 value median: *",
            ]
        )
    # Without the gate a slowed run is a baseline like any other.
    assert _run(pytester, "--bench-compare").ret == 0
    third = _runs(pytester)[-1]
    monkeypatch.delenv("SLOW_P1")
    again = _run(pytester, "--bench-compare")
    again.stdout.fnmatch_lines([f"  Compared with run {third} (*):"])


# -- named baselines ---------------------------------------------------------------------------


@pytest.mark.slow
def test_named_baselines_are_saved_compared_with_and_moved(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytester.makepyfile(bench_x=NOISY)
    saved = _run(pytester, "--bench-save", "main")
    assert saved.ret == 0
    (main,) = _runs(pytester)
    saved.stdout.fnmatch_lines(
        [f"Baseline main of demo: run {main[:12]}… (ran * UTC, passed), saved * UTC"]
    )
    monkeypatch.setenv("SLOW_P1", "1.3")
    assert _run(pytester).ret == 0  # a slower run, now the latest
    slower = _runs(pytester)[-1]
    monkeypatch.delenv("SLOW_P1")
    pinned = _run(pytester, "--bench-compare=main", "--bench-compare-fail")
    assert pinned.ret == 0, pinned.stdout.str()
    pinned.stdout.fnmatch_lines(
        [f"  Compared with baseline main: run {main} (*):", "    p1 *value*median*unchanged*"]
    )
    # CI moves the name to another run.
    assert (
        cli_main(["--store", str(store_path(pytester)), "baseline", "set", "main", slower[:10]])
        == 0
    )
    assert f"Baseline main of demo: run {slower[:12]}… (" in capsys.readouterr().out
    moved = _run(pytester, "--bench-compare=main")
    moved.stdout.fnmatch_lines(
        [f"  Compared with baseline main: run {slower} (*):", "    p1 *value*median*-2*%*"]
    )
    # A name given on a partial run is not moved to it.
    partial = _run(pytester, "-k", "p1", "--bench-save", "main")
    partial.stdout.fnmatch_lines(
        ["Baseline main of demo: not saved, the run is not complete: it ran a subset *"]
    )
    with ResultStore(store_path(pytester)) as store:
        assert [b.run_id for b in store.baselines("main")] == [slower]


@pytest.mark.slow
def test_a_name_of_another_benchmark_says_so(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=NOISY)
    assert _run(pytester, "--bench-save", "main").ret == 0
    pytester.makepyfile(bench_y=NOISY.replace("'demo'", "'other'"))
    result = _run(pytester, "bench_y.py", "--bench-compare=main")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        ["  Baseline: none (baseline main names no run of other (it names runs of demo; *"]
    )


# -- between-run noise -------------------------------------------------------------------------


@pytest.mark.slow
def test_a_slowed_participant_is_flagged_against_the_history_the_others_are_not(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(bench_x=NOISY)
    for seed in range(4):
        monkeypatch.setenv("RUN_SEED", str(seed))
        assert _run(pytester, "--bench-compare", "--bench-compare-fail").ret == 0
    monkeypatch.setenv("RUN_SEED", "9")
    monkeypatch.setenv("SLOW_P1", "1.3")
    result = _run(pytester, "--bench-compare", "--bench-compare-fail", "--bench-json", "out.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "    Between-run noise: from the 4 earlier complete runs with the same setup",
            "    participant  metric  stat    baseline  current  change  interval*verdict*noise*"
            "detects",
            "    p1           value   median  * ms *+*%*regressed  *",
        ]
    )
    document = json.loads((pytester.path / "out.json").read_text())
    comparison = document["benchmarks"][0]["comparison"]
    rows = {(r["participant"], r["statistic"]): r for r in comparison["rows"]}
    assert rows[("p1", "median")]["verdict"] == "regressed"
    assert rows[("p1", "median")]["history"]["runs"] == 4
    assert rows[("p2", "median")]["verdict"] == "unchanged"
    assert {r["noise"] for r in rows.values()} <= {"within-run", "history"}
    # (a p95 of fewer than 20 samples is shown, not judged: it detects nothing)
    assert all(r["detectable"] > 0 for r in rows.values() if r["verdict"] != "not judged")
    assert comparison["historyRuns"] == 4
    # A noise threshold of 50 %: +30 % is no change, and the table says how much would be.
    wide = _run(pytester, "--bench-compare", "--bench-compare-fail", "--bench-compare-noise", "50")
    assert wide.ret == 0, wide.stdout.str()
    wide.stdout.fnmatch_lines(
        ["    p1           value   median  * ms *+*%*unchanged  within-run  ≥5*%"]
    )


@pytest.mark.slow
def test_the_history_noise_can_overrule_the_within_run_verdict(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Earlier runs of p1 swing by ±10 % from one run to the next (a noisy machine): a +12 %
    # run is significant within itself, but no more than what those runs show.
    pytester.makepyfile(bench_x=NOISY)
    for seed, slow in enumerate(("1", "1.1", "1", "1.1", "1")):
        monkeypatch.setenv("RUN_SEED", str(seed))
        monkeypatch.setenv("SLOW_P1", slow)
        assert _run(pytester).ret == 0
    monkeypatch.setenv("RUN_SEED", "9")
    monkeypatch.setenv("SLOW_P1", "1.12")
    result = _run(pytester, "--bench-compare", "--bench-compare-fail")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "    p1           value   median  * ms *+*%*unchanged[*]  history, 5 runs  ≥*%",
            "    [*] p1 value median is unchanged: a change of +*% is within what the last 5 "
            "complete runs",
        ]
    )


@pytest.mark.slow
def test_a_history_too_noisy_to_judge_says_so_and_the_row_is_not_judged(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Earlier runs of p1 swing by ±30 %: from 5 runs the band is wider than ×5, which would
    # hide any change; the row says so and is not judged (issue 46): the gate does not fail.
    pytester.makepyfile(bench_x=NOISY)
    for seed, slow in enumerate(("1", "1.3", "1", "1.3", "1")):
        monkeypatch.setenv("RUN_SEED", str(seed))
        monkeypatch.setenv("SLOW_P1", slow)
        assert _run(pytester).ret == 0
    monkeypatch.setenv("RUN_SEED", "9")
    monkeypatch.setenv("SLOW_P1", "1.2")
    result = _run(pytester, "--bench-compare", "--bench-compare-fail")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "    p1  * median  * ms *+*%*not judged: history too noisy[*]  history too noisy",
            "    p2  * median  * unchanged  * history, 5 runs  *",
            "    [*] p1 value median: history too noisy: not judged (the last 5 complete*",
        ]
    )
    assert "≥474" not in result.stdout.str()


# -- warnings ----------------------------------------------------------------------------------

#: A cold first measured iteration (500 ms, then 10–12 ms), scored without p99 weight.
COLD_FIRST = bench(
    f'participants=[Participant("p1")], iterations=30,\nscoring={SCORED}',
    """
    @define_task
    def task(task_index, measure):
        measure(value=500.0 if task_index == 0 else 10.0 + task_index % 3)
    """,
)


@pytest.mark.slow
def test_warnings_can_be_silenced_by_code_also_under_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=COLD_FIRST)
    failing = _run(pytester, "--bench-warnings=error")
    assert failing.ret == pytest.ExitCode.TESTS_FAILED
    ignored = _run(
        pytester,
        "--bench-warnings=error",
        "--bench-warnings-ignore",
        "first-outlier,high-variance",
        "--bench-json",
        "out.json",
    )
    assert ignored.ret == 0, ignored.stdout.str()
    assert "warning [" not in ignored.stdout.str()
    assert json.loads((pytester.path / "out.json").read_text())["benchmarks"][0]["warnings"] == []
    pytester.makeini("[pytest]\nbench_warnings_ignore = high-variance\n")
    from_ini = _run(pytester, "--bench-warnings=error", "--bench-warnings-ignore=first-outlier")
    assert from_ini.ret == 0, from_ini.stdout.str()


def test_first_outlier_after_warm_up_and_p99_where_a_threshold_judges_it(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(bench_x=COLD_FIRST)
    result = _run(
        pytester,
        "--bench-warmup",
        "2",
        "--bench-threshold",
        "value: p99 < 1000",
        "-p",
        "no:randomly",
        "-v",
    )
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "  warning [[]p99-few-samples] p1 (value): p99 comes from 30 sample(s); *",
            "  warning [[]first-outlier] p1 (value): the first measured iteration is still far "
            "above the others*",
        ]
    )
    assert "after 2 warm-up iteration(s)" in " ".join(out.split())
    assert "add warm-up iterations" not in out
