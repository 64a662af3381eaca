"""The ecosystem's ``benchmark`` fixture (issue 35): a suite written for pytest-benchmark runs
unchanged, calling each function once without ``--bench`` and measuring it with ``--bench``,
each group of benchmarked tests a run of the one run model (store, JSON, scores, warnings).

The suites below count their calls instead of timing anything: how long a call takes is the
machine's business (``benchmarks/fixture_vs_pytest_benchmark.py`` measures that).
"""

from __future__ import annotations

import re
import textwrap

import pytest

from helpers.sessions import read_json, store_path, stored_runs

#: A suite written for pytest-benchmark: plain calls, pedantic with setup, groups,
#: extra_info, parametrized tests, assertions on the stats. Short rounds keep it quick.
SUITE = textwrap.dedent(
    """
    import pytest

    pytestmark = pytest.mark.benchmark(max_time=0.005, min_rounds=3)
    CALLS = {"join": 0, "setup": 0, "sorted": 0}


    def join(items):
        CALLS["join"] += 1
        return ",".join(items)


    def test_join(benchmark):
        assert benchmark(join, ["a", "b"]) == "a,b"
        assert benchmark.stats["mean"] > 0
        assert benchmark.stats.stats.min <= benchmark.stats["median"] <= benchmark.stats.stats.max
        print("JOIN CALLS", CALLS["join"], "ROUNDS", benchmark.stats["rounds"])


    @pytest.mark.parametrize("n", [3, 30])
    def test_sort(benchmark, n):
        benchmark.extra_info["n"] = n
        assert benchmark(sorted, range(n, 0, -1))[0] == 1


    def test_pedantic(benchmark):
        def setup():
            CALLS["setup"] += 1
            return ([3, 2, 1],), {}

        def target(items):
            CALLS["sorted"] += 1
            return sorted(items)

        assert benchmark.pedantic(target, setup=setup, rounds=7, warmup_rounds=2) == [1, 2, 3]
        print(
            "PEDANTIC SETUP", CALLS["setup"], "CALLS", CALLS["sorted"],
            "ROUNDS", benchmark.stats["rounds"],
        )


    @pytest.mark.benchmark(group="strings", max_time=0.005, min_rounds=3)
    def test_upper(benchmark):
        assert benchmark.group == "strings"
        assert benchmark("ab".upper) == "AB"
    """
)


def test_a_pytest_benchmark_suite_runs_once_per_function_without_bench(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest_inprocess("-s", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=5)
    # One call each; benchmark.stats is there (one round) for what the suite asserts.
    result.stdout.fnmatch_lines(["*JOIN CALLS 1 ROUNDS 1", "*PEDANTIC SETUP 1 CALLS 1 ROUNDS 1"])
    assert "benchmarks" not in result.stdout.str()
    assert not store_path(pytester).exists()


def test_with_bench_each_group_is_a_run_of_its_tests(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE)
    out = pytester.path / "run.json"
    result = pytester.runpytest_inprocess(
        "-s", "-p", "no:cacheprovider", "--bench", "--bench-json", str(out)
    )
    result.assert_outcomes(passed=5)
    text = result.stdout.str()
    # Calibrated rounds: many calls (then one more for the value), every round counted.
    join_calls = int(text.split("JOIN CALLS ")[1].split()[0])
    join_rounds = int(text.split(" ROUNDS ")[1].split()[0])
    assert join_rounds >= 3
    assert join_calls > join_rounds
    # pedantic: 2 warm-up rounds and 7 rounds, one setup each; with one iteration the last
    # round's call gives the value.
    result.stdout.fnmatch_lines(["*PEDANTIC SETUP 9 CALLS 9 ROUNDS 7"])
    runs = {run["benchmarkSlug"]: run for run in read_json(out)["benchmarks"]}
    assert set(runs) == {"test-suite", "strings"}
    module = runs["test-suite"]
    names = [p["participant"] for p in module["participants"]]
    # (A group lists its tests by speed, fastest first.)
    assert sorted(names) == ["test_join", "test_pedantic", "test_sort[30]", "test_sort[3]"]
    records = {p["participant"]: p["records"] for p in module["participants"]}
    (pedantic,) = records["test_pedantic"]
    assert pedantic["data"]["rounds"] == {"count": 7, "iterations": 1}
    assert len(pedantic["data"]["time_ms"]) == 7
    assert len(pedantic["data"]["cpu_ms"]) == 7
    assert all(v > 0 for v in pedantic["data"]["time_ms"])
    assert records["test_sort[30]"][0]["data"]["extra_info"] == {"n": 30}
    # Scored within the group on the per-call time, against twice its slowest p99.
    scores = {row["provider"]: row for row in module["scores"]}
    assert set(scores) == set(names)
    assert all(0 < row["compositeScore"] < 100 for row in scores.values())
    slowest = max(row["metrics"][0]["p99"] for row in scores.values())
    (metric,) = module["summary"]["scoring"]["metrics"]
    assert slowest * 2 <= metric["ceiling"] <= slowest * 5
    assert [p["participant"] for p in runs["strings"]["participants"]] == ["test_upper"]
    text = result.stdout.str()
    assert "test-suite" in text or "test_suite.py" in text
    # The store holds both runs.
    assert {run.benchmark_slug for run in stored_runs(store_path(pytester))} == {
        "test-suite",
        "strings",
    }


def test_the_marker_alone_measures_the_whole_body(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_codspeed=textwrap.dedent(
            """
            import pytest

            pytestmark = pytest.mark.benchmark(max_time=0.002, min_rounds=4)
            RUNS = []


            def test_body():
                RUNS.append(1)
                assert sum(range(100)) == 4950


            def test_count():
                print("BODY RAN", len(RUNS))
            """
        )
    )
    plain = pytester.runpytest_inprocess("-s", "-p", "no:cacheprovider")
    plain.assert_outcomes(passed=2)
    plain.stdout.fnmatch_lines(["*BODY RAN 1"])
    out = pytester.path / "run.json"
    measured = pytester.runpytest_inprocess(
        "-s", "-p", "no:cacheprovider", "--bench", "--bench-json", str(out)
    )
    measured.assert_outcomes(passed=2)
    ran = int(measured.stdout.str().split("BODY RAN ")[1].split()[0])
    assert ran >= 4
    (run,) = read_json(out)["benchmarks"]
    assert sorted(p["participant"] for p in run["participants"]) == ["test_body", "test_count"]


def test_minus_m_benchmark_selects_the_benchmarked_tests(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_mixed=textwrap.dedent(
            """
            def test_fast(benchmark):
                benchmark(len, "abc")


            def test_plain():
                pass
            """
        )
    )
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-m", "benchmark", "-v")
    result.assert_outcomes(passed=1, deselected=1)
    result.stdout.fnmatch_lines(["*test_fast PASSED*"])
    skipped = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-m", "not benchmark")
    skipped.assert_outcomes(passed=1, deselected=1)


@pytest.mark.slow
@pytest.mark.parametrize("bench", [False, True])
def test_misuse_is_an_error_that_says_what_to_do(pytester: pytest.Pytester, bench: bool) -> None:
    pytester.makepyfile(
        test_misuse=textwrap.dedent(
            """
            import pytest


            def test_twice(benchmark):
                benchmark(len, "a")
                benchmark(len, "b")


            def test_weave(benchmark):
                benchmark.weave("json.dumps")


            def test_pedantic_setup_with_iterations(benchmark):
                benchmark.pedantic(len, setup=lambda: (("a",), {}), iterations=3)


            @pytest.mark.benchmark(rounds=5)
            def test_unknown_key(benchmark):
                benchmark(len, "a")
            """
        )
    )
    args = ["-p", "no:cacheprovider", "--bench-no-store"] if bench else ["-p", "no:cacheprovider"]
    result = pytester.runpytest_inprocess(*args, *(["--bench"] if bench else []))
    result.assert_outcomes(failed=3, errors=1)
    text = " ".join(result.stdout.str().split())
    assert "FixtureAlreadyUsed: the benchmark fixture can be used once per test" in text
    assert "benchmark.weave (pytest-benchmark's aspect weaving) is not supported" in text
    assert "iterations must be 1 with setup (got 3)" in text
    assert "@pytest.mark.benchmark does not take rounds (it takes keyword arguments: group," in (
        text
    )


@pytest.mark.slow
def test_under_xdist_the_workers_measure_and_the_controller_keeps_each_group(
    pytester: pytest.Pytester,
) -> None:
    """Under ``-n 2`` (a codspeed suite's addopts) the workers measure, as pytest-codspeed's
    do: the controller opens each group from the reports, keeps every record, lists a test
    skipped in its setup, tells alike names apart, and each group says it was measured side
    by side (issue 47)."""
    pytester.makepyfile(
        test_par=textwrap.dedent(
            """
            import pytest

            pytestmark = pytest.mark.benchmark(max_time=0.002, min_rounds=3)


            def test_a(benchmark):
                benchmark(len, "a")


            def test_b(benchmark):
                benchmark.name = "same"
                benchmark(len, "b")


            def test_c(benchmark):
                benchmark.name = "same"
                benchmark(len, "c")


            @pytest.mark.benchmark(group="other", max_time=0.002)
            def test_body():
                sum(range(10))


            @pytest.mark.skipif(True, reason="not on this machine")
            def test_skipped(benchmark):
                benchmark(len, "x")
            """
        )
    )
    result = pytester.runpytest_inprocess(
        "-p",
        "no:cacheprovider",
        "--bench",
        "-n",
        "2",
        "--bench-json=out.json",
        "--bench-markdown=out.md",
        "--bench-html=out.html",
    )
    result.assert_outcomes(passed=4, skipped=1)
    text = result.stdout.str()
    assert "not measured" not in text
    assert text.count("Measured in 2 pytest-xdist workers side by side") == 2, text
    runs = {run.benchmark_slug: run for run in stored_runs(store_path(pytester))}
    assert sorted(runs) == ["other", "test-par"], runs
    document = read_json(pytester.path / "out.json")
    by_slug = {b["benchmarkSlug"]: b["result"] for b in document["benchmarks"]}
    par = by_slug["test-par"]
    participants = {p["name"]: p for p in par["participants"]}
    # Two tests named alike: one keeps the name, the other its node id (which one depends
    # on which worker reported first).
    assert {"same", "test_a", "test_skipped"} < set(participants), sorted(participants)
    (other_name,) = set(participants) - {"same", "test_a", "test_skipped"}
    assert other_name in ("test_par.py::test_b", "test_par.py::test_c")
    assert participants["test_skipped"]["skipped"] == "not on this machine"
    assert all(p["ran"] == 1 for n, p in participants.items() if n != "test_skipped")
    assert any("side by side" in note for note in par["notes"]), par["notes"]
    assert [p["name"] for p in by_slug["other"]["participants"]] == ["test_body"]
    # Every view says it (the terminal above; Markdown and the HTML report too).
    for view in ("out.md", "out.html"):
        text = (pytester.path / view).read_text()
        assert text.count("Measured in 2 pytest-xdist workers side by side") == 2, view


WORK = textwrap.dedent(
    """
    import os

    import pytest

    pytestmark = pytest.mark.benchmark(max_time=0.005, min_rounds=5)
    SIZE = int(os.environ.get("WORK_SIZE", "10"))


    def test_work(benchmark):
        benchmark(sum, range(SIZE))
    """
)


@pytest.mark.slow
def test_columns_and_pytest_benchmark_compare_fail_expressions(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_work=WORK)
    first = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "--bench", "--bench-columns", "min,median,ops,rounds,iterations"
    )
    first.assert_outcomes(passed=1)
    first.stdout.re_match_lines(
        [
            r"  Columns \(time_ms per participant\):",
            r"    participant +min +median +ops \(/s\) +rounds +iterations",
            r"    test_work +\S+ \S+ +\S+ \S+ +[\d,]+ +[\d,]+ +\d+",
        ]
    )
    # A thousand times more work: the median is far beyond 50 % worse, the mean not 10^6 %.
    monkeypatch.setenv("WORK_SIZE", "10000")
    second = pytester.runpytest_inprocess(
        "-p",
        "no:cacheprovider",
        "--bench",
        "--bench-compare",
        "--bench-compare-fail=median:50%",
        "--bench-compare-fail=mean:1000000%",
    )
    second.assert_outcomes(passed=1, errors=1)
    text = second.stdout.str()
    assert "--bench-compare-fail: 1 of 2 expression verdict(s) failed" in text
    assert "test_work (time_ms) median:50%:" in text
    assert "regressed (--bench-compare-fail=median:50%): test-work: test_work" in text
    # Only the failed verdicts are listed when one failed.
    assert "(time_ms) mean:" not in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--bench-columns", "min,p42"],
            "--bench-columns: unknown column(s) p42 (the columns: min",
        ),
        (["--bench-compare-fail=p42:5%"], "--bench-compare-fail=p42:5%: 'p42:5%' is not STAT:N%"),
        (["--bench-compare-fail=min:-5%"], "the limit must be a number >= 0 (got '-5%')"),
    ],
)
def test_bad_columns_and_expressions_are_usage_errors(
    pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    pytester.makepyfile(test_work=WORK)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--bench", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


@pytest.mark.slow
def test_every_view_and_the_thresholds_cover_a_group(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_views=textwrap.dedent(
            """
            import pytest

            pytestmark = pytest.mark.benchmark(max_time=0.002, min_rounds=3)


            def test_fast(benchmark):
                benchmark(len, "ab")


            def test_upper(benchmark):
                benchmark("ab".upper)
            """
        )
    )
    result = pytester.runpytest_inprocess(
        "-p",
        "no:cacheprovider",
        "--bench",
        "--bench-markdown",
        "run.md",
        "--bench-html",
        "run.html",
        "--bench-export",
        "bmf:run.bmf.json",
        # A limit every test meets, and one none does: judged per test, on its rounds.
        "--bench-threshold",
        "time_ms: median < 1000",
        "--bench-threshold",
        "time_ms: p95 < 0.0000001",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    text = result.stdout.str()
    assert "Thresholds: 2 passed, 2 failed" in text
    markdown = (pytester.path / "run.md").read_text()
    html = (pytester.path / "run.html").read_text()
    for name in ("test_fast", "test_upper"):
        assert name in markdown
        assert name in html
        assert any(name in key for key in read_json(pytester.path / "run.bmf.json"))
        assert re.search(rf"FAILED .*{re.escape(name)}.*p95", text), text
