"""How a group of benchmarked tests (the ``benchmark`` fixture's run) is shown: its rounds and
iterations are facts, not metrics; its knobs are its rounds' settings; its warnings give the
fixture's advice; the relative lines are capped for many tests (issue 35, tried as a user).

The suites count nothing against the clock: what they check is what every view says.
"""

from __future__ import annotations

import re
import textwrap

import pytest

from helpers.processes import Session, sigint_as_in_a_terminal
from helpers.sessions import read_json, store_path, stored_records, stored_runs
from pytest_benchsdk._plugin.control.interrupts import STOPPING_LINE
from pytest_benchsdk.cli import main

GROUP = textwrap.dedent(
    """
    import pytest

    pytestmark = pytest.mark.benchmark(max_time=0.002, min_rounds=3)


    def test_join(benchmark):
        benchmark(",".join, ["a", "b"])


    def test_pedantic(benchmark):
        benchmark.pedantic(sorted, args=([3, 2, 1],), rounds=7, iterations=4)
    """
)


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess("-p", "no:cacheprovider", "--bench", *args)


@pytest.mark.slow
def test_rounds_and_iterations_are_facts_of_each_test_not_metrics(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makepyfile(test_group=GROUP)
    result = _run(
        pytester,
        "--bench-json=run.json",
        "--bench-markdown=run.md",
        "--bench-html=run.html",
        "--bench-export=bmf:run.bmf.json",
        "--bench-columns=rounds,iterations",
    )
    result.assert_outcomes(passed=2)
    text = result.stdout.str()
    # pytest-benchmark's columns still show them, the test's own counts.
    # (A group lists its tests fastest first: the rows' order is the machine's.)
    result.stdout.re_match_lines([r"    participant +rounds +iterations"])
    assert re.search(r"^    test_join +[\d,]+ +[\d,]+$", text, re.M), text
    assert re.search(r"^    test_pedantic +7 +4$", text, re.M), text
    # No metric row, no warning, no statistics of them anywhere.
    assert not re.search(r"^\s+test_\w+\s+(rounds|iterations)\s", text, re.M), text
    (run,) = read_json(pytester.path / "run.json")["benchmarks"]
    participants = {p["name"]: p for p in run["result"]["participants"]}
    assert participants["test_pedantic"]["rounds"] == {"rounds": 7, "iterations": 4}
    for p in participants.values():
        assert {m["key"] for m in p["metrics"]} == {"time_ms", "cpu_ms"}
    (pedantic,) = {p["participant"]: p for p in run["participants"]}["test_pedantic"]["records"]
    assert pedantic["data"]["rounds"] == {"count": 7, "iterations": 4}
    markdown = (pytester.path / "run.md").read_text()
    assert not re.search(r"\| (rounds|iterations) \|", markdown), markdown
    html = (pytester.path / "run.html").read_text()
    assert not re.search(r"<td>(rounds|iterations)</td>", html)
    assert "<td>7 × 4</td>" in html.replace('<td class="num">', "<td>")
    # A test's latency is its median per call, one value: the rounds are charted as time_ms.
    assert "time_ms (ms): distribution per participant" in html
    assert "latency (ms): distribution per participant" not in html
    bmf = (pytester.path / "run.bmf.json").read_text()
    assert not re.search(r'"(rounds|iterations) ', bmf), bmf
    # Thresholds and comparisons know no such metric: the keys there are are named.
    refused = _run(pytester, "--bench-no-store", "--bench-threshold", "rounds: median > 1")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    assert "no participant measured rounds" in refused.stdout.str() + refused.stderr.str()
    # The store's round trip (show) reads them back as facts too.
    (stored,) = stored_runs(store_path(pytester))
    assert main(["--store", str(store_path(pytester)), "show", stored.run_id]) == 0
    shown = capsys.readouterr().out
    assert not re.search(r"^\s+test_\w+\s+(rounds|iterations)\s", shown, re.M), shown
    records = stored_records(store_path(pytester), stored.run_id)
    assert records["test_pedantic"][0]["data"]["rounds"] == {"count": 7, "iterations": 4}


@pytest.mark.slow
def test_a_group_shows_its_rounds_settings_instead_of_a_bench_file_s_knobs(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makepyfile(
        test_settings=GROUP
        + textwrap.dedent(
            """

            @pytest.mark.benchmark(max_time=0.002, min_rounds=4)
            def test_own_rounds(benchmark):
                benchmark(len, "abc")
            """
        )
    )
    result = _run(
        pytester, "--bench-json=run.json", "--bench-markdown=run.md", "--bench-html=h.html"
    )
    result.assert_outcomes(passed=3)
    text = result.stdout.str()
    line = (
        "Rounds per test (@pytest.mark.benchmark; pedantic() runs its own): min_rounds=per "
        "test, min_time=5.00 µs, max_time=2.00 ms, timer=time.perf_counter, disable_gc=False, "
        "warmup=False"
    )
    # In the summary (a group opens as its tests report: no header of its own); a bench
    # file's knobs nowhere.
    assert text.count(f"  {line}") == 1, text
    assert "Knobs:" not in text
    assert "iterations=1" not in text
    result.stdout.re_match_lines([r"  participant +success +rounds × iterations"])
    assert re.search(r"^  test_join +1/1 +[\d,]+ × [\d,]+$", text, re.M), text
    assert re.search(r"^  test_pedantic +1/1 +7 × 4$", text, re.M), text
    assert line in (pytester.path / "run.md").read_text()
    html = (pytester.path / "h.html").read_text()
    assert "<h4>Rounds</h4>" in html
    assert "<h4>Knobs</h4>" not in html
    (run,) = read_json(pytester.path / "run.json")["benchmarks"]
    rounds = run["result"]["knobs"]["rounds"]
    assert rounds["minRounds"] is None
    assert rounds["maxTime"] == 0.002
    assert rounds["timer"] == "time.perf_counter"
    # The store keeps it with the run: show and history say it from there.
    (stored,) = stored_runs(store_path(pytester))
    assert stored.knobs["rounds"] == rounds
    store = str(store_path(pytester))
    assert main(["--store", store, "show", stored.run_id]) == 0
    assert f"  {line}" in capsys.readouterr().out
    assert main(["--store", store, "history", "test-settings"]) == 0
    assert line in capsys.readouterr().out
    # The same settings are the same setup: the next session compares with this run.
    again = _run(pytester, "--bench-compare", "--bench-json=again.json")
    again.assert_outcomes(passed=3)
    (compared,) = read_json(pytester.path / "again.json")["benchmarks"]
    assert compared["comparison"]["baselineRunId"] == stored.run_id


def test_a_group_s_warnings_name_the_fixture_s_knobs_and_say_rounds(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_hygiene=textwrap.dedent(
            """
            import time

            import pytest

            CALLS = []


            def first_call_slow():
                CALLS.append(1)
                if len(CALLS) == 1:
                    time.sleep(0.05)
                else:
                    sum(range(100))


            def test_cold_first_round(benchmark):
                benchmark.pedantic(first_call_slow, rounds=20)


            # A timer of 1 s steps: every round reads 0 (a round crossing a step, 1 in ~10^5,
            # would read 1 s; 10 ms steps were crossed under load).
            @pytest.mark.benchmark(timer=lambda: float(round(time.perf_counter())))
            def test_coarse_timer(benchmark):
                benchmark.pedantic(len, args=("a",), rounds=10)


            def test_fails(benchmark):
                benchmark.pedantic(len, args=("a",), rounds=5)
                assert False, "after measuring"
            """
        )
    )
    # p99-few-samples only where a p99 is judged: a benchmarked test's score is the plugin's.
    unjudged = _run(pytester, "--bench-no-store", "--bench-json=run.json")
    (run,) = read_json(pytester.path / "run.json")["benchmarks"]
    assert not any(w["code"] == "p99-few-samples" for w in run["warnings"]), run["warnings"]
    assert "p99-few-samples" not in unjudged.stdout.str()
    result = _run(
        pytester,
        "--bench-no-store",
        "--bench-json=run.json",
        "--bench-threshold=time_ms: p99 < 1e9",
    )
    # (test_fails measured nothing: its p99 threshold fails too, one session error.)
    result.assert_outcomes(passed=2, failed=1, errors=1)
    (run,) = read_json(pytester.path / "run.json")["benchmarks"]
    found = {(w["code"], w["participant"]): w["message"] for w in run["warnings"]}
    outlier = found[("first-outlier", "test_cold_first_round")]
    assert "the first round is far above the others" in outlier
    assert "@pytest.mark.benchmark(warmup=True, warmup_iterations=N)" in outlier
    assert "benchmark.pedantic(..., warmup_rounds=N)" in outlier
    few = found[("p99-few-samples", "test_cold_first_round")]
    assert "p99 comes from 20 round(s)" in few
    assert "@pytest.mark.benchmark(min_rounds=100)" in few
    assert "benchmark.pedantic(..., rounds=100)" in few
    floor = found[("timer-floor", "test_coarse_timer")]
    assert "10 of 10 rounds are exactly" in floor
    assert "finer timer" in floor
    # A failed test says so itself: no failure-rate of "1 of 1 iterations".
    codes = {code for code, _ in found}
    assert not codes & {"failure-rate", "unmeasured-metric"}, found
    for message in found.values():
        for bench_file_advice in ("--bench-warmup", "warmup=1", "step(", "measure(", "iterations."):
            assert bench_file_advice not in message, message
    # And the terminal says the same.
    assert "warning [first-outlier] test_cold_first_round (time_ms): the first round" in " ".join(
        result.stdout.str().split()
    )


@pytest.mark.slow
def test_relative_lines_and_warnings_are_capped_and_the_rest_stays_in_json_and_html(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_many=textwrap.dedent(
            """
            import pytest

            pytestmark = pytest.mark.benchmark(max_time=0.001, min_rounds=3)


            @pytest.mark.parametrize("n", range(9))
            def test_sum(benchmark, n):
                # Fewer than 100 rounds each, each its own count: nine p99-few-samples.
                benchmark.pedantic(sum, args=(range(10 * n),), rounds=10 + n, iterations=10)
            """
        )
    )
    result = _run(
        pytester,
        "--bench-no-store",
        "--bench-json=run.json",
        "--bench-markdown=run.md",
        "--bench-html=run.html",
        # A p99 judged, so that each test gets its p99-few-samples.
        "--bench-threshold=time_ms: p99 < 1e9",
    )
    result.assert_outcomes(passed=9)
    text = result.stdout.str()
    after = text.split("  Relative:\n")[1].splitlines()
    relative = after[: next(i for i, line in enumerate(after) if not line.startswith("    "))]
    assert len(relative) == 6, relative
    more = (
        "… and 3 more (further behind): --bench-json and the HTML report (--bench-html) list "
        "every one"
    )
    assert relative[-1] == f"    {more}"
    markdown = (pytester.path / "run.md").read_text()
    assert markdown.count(" faster than ") + markdown.count("no clear difference") == 5
    assert f"- {more}" in markdown
    # The warnings of one code: one line in the terminal, counting them (issue 47, item 6).
    p99 = [line for line in text.splitlines() if "warning [p99-few-samples]" in line]
    assert p99 == [
        "  warning [p99-few-samples] 9 tests (time_ms): p99 comes from 10–18 rounds "
        "(under 100); -v lists them"
    ]
    # The Markdown summary: three, then the others counted.
    # (A group's tests are listed fastest first: which three are named depends on the machine.)
    assert markdown.count("`p99-few-samples`") == 3
    assert "- warning [p99-few-samples] 6 more participants (test_sum[" in markdown
    (run,) = read_json(pytester.path / "run.json")["benchmarks"]
    assert sum(w["code"] == "p99-few-samples" for w in run["warnings"]) == 9
    rows = run["result"]["relative"]["rows"]
    assert len(rows) == 8
    html = (pytester.path / "run.html").read_text()
    assert "3 more (further behind)</summary>" in html
    for row in rows:
        assert f"{row['participant']} on time_ms" in html or f"and {row['participant']}:" in html


FAULTS = textwrap.dedent(
    """
    import pytest

    pytestmark = pytest.mark.benchmark(max_time=0.001, min_rounds=3)


    def boom():
        raise RuntimeError("boom inside fn")


    def test_raises(benchmark):
        benchmark(boom)


    def test_not_callable(benchmark):
        benchmark(42)


    @pytest.mark.benchmark(min_rounds=-1)
    def test_bad_min_rounds(benchmark):
        benchmark(len, "a")


    @pytest.mark.benchmark(max_time="x")
    def test_bad_max_time(benchmark):
        benchmark(len, "a")


    @pytest.mark.benchmark(min_rounds=0)
    def test_bad_marker_alone():
        pass


    def test_after(benchmark):
        benchmark(len, "after")
    """
)


@pytest.mark.slow
def test_a_function_that_raises_fails_its_test_with_its_traceback_and_leaves_an_error_record(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_faults=FAULTS)
    result = _run(pytester, "--bench-json=run.json", "-k", "raises or callable or after")
    result.assert_outcomes(passed=1, failed=2)
    text = result.stdout.str()
    # The function's own traceback: the test's line, then the function's; not the rounds'.
    result.stdout.fnmatch_lines(
        [
            ">       benchmark(boom)",
            "test_faults.py:*: ",
            "*",
            "    def boom():",
            '>       raise RuntimeError("boom inside fn")',
            "E       RuntimeError: boom inside fn",
        ]
    )
    assert "_engine/rounds.py" not in text
    assert (
        "E       TypeError: benchmark(fn, *args, **kwargs): the function to benchmark must be "
        in (text)
    )
    (run,) = read_json(pytester.path / "run.json")["benchmarks"]
    records = {p["participant"]: p["records"] for p in run["participants"]}
    (raised,) = records["test_raises"]
    assert raised["status"] == "error"
    assert raised["errorCode"] == "test_failed"
    assert raised["data"] == {"errorMessage": "RuntimeError: boom inside fn"}
    assert records["test_after"][0]["status"] == "success"
    assert run["result"]["status"]["state"] == "failed"
    # --full-trace keeps every frame.
    full = _run(pytester, "--bench-no-store", "--full-trace", "-k", "raises")
    assert "_engine/rounds.py" in full.stdout.str()


@pytest.mark.slow
@pytest.mark.parametrize("bench", [False, True])
def test_a_bad_marker_value_fails_that_test_saying_what_it_must_be(
    pytester: pytest.Pytester, bench: bool
) -> None:
    pytester.makepyfile(test_faults=FAULTS)
    args = ["-p", "no:cacheprovider", "-k", "bad or after"]
    if bench:
        args += ["--bench", "--bench-no-store"]
    result = pytester.runpytest_inprocess(*args)
    # The fixture's tests fail at setup; the marker alone fails when --bench measures it.
    if bench:
        result.assert_outcomes(passed=1, errors=2, failed=1)
    else:
        result.assert_outcomes(passed=2, errors=2)
    text = " ".join(result.stdout.str().split())
    assert (
        "ValueError: test_faults.py::test_bad_min_rounds: @pytest.mark.benchmark: "
        "min_rounds=-1 (must be an int >= 1)"
    ) in text
    assert "max_time='x' (must be a number of seconds >= 0)" in text
    if bench:
        assert "min_rounds=0 (must be an int >= 1)" in text


HOSTILE_IDS = ["ünï/cödé", "a[b]c", "long-" + "y" * 250, "<b>x</b> | `y`"]


@pytest.mark.slow
def test_hostile_test_names_reach_every_view_intact_or_escaped(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_names=textwrap.dedent(
            f"""
            import pytest

            pytestmark = pytest.mark.benchmark(max_time=0.001, min_rounds=3)


            @pytest.mark.parametrize("name", {HOSTILE_IDS!r}, ids={HOSTILE_IDS!r})
            def test_hostile(benchmark, name):
                benchmark(len, name)
            """
        )
    )
    result = _run(
        pytester, "--bench-json=run.json", "--bench-markdown=run.md", "--bench-html=run.html"
    )
    result.assert_outcomes(passed=4)
    (run,) = read_json(pytester.path / "run.json")["benchmarks"]
    names = [p["participant"] for p in run["participants"]]
    assert len(names) == 4
    assert "test_hostile[long-" + "y" * 250 + "]" in names
    (stored,) = stored_runs(store_path(pytester))
    assert sorted(stored_records(store_path(pytester), stored.run_id)) == sorted(names)
    markdown = (pytester.path / "run.md").read_text()
    assert "&lt;b&gt;x&lt;/b&gt; \\| \\`y\\`" in markdown
    html = (pytester.path / "run.html").read_text()
    assert "<b>x</b>" not in html
    assert "&lt;b&gt;x&lt;/b&gt;" in html


@pytest.mark.slow
def test_ctrl_c_during_a_long_benchmarked_test_stops_with_one_line_and_keeps_what_ran(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_long=textwrap.dedent(
            """
            import pytest


            def test_first(benchmark):
                benchmark.pedantic(sum, args=(range(10),), rounds=3)


            def started():
                print("LONG STARTED", flush=True)


            @pytest.mark.benchmark(max_time=600, min_rounds=10**9)
            def test_long(benchmark):
                started()
                benchmark(sum, range(100))
            """
        )
    )
    with sigint_as_in_a_terminal():
        session = Session(pytester.path, "--bench", "-s", "-v")
        try:
            session.wait_for("LONG STARTED")  # test_first's record is stored by now
            session.interrupt()
            assert session.finish() == pytest.ExitCode.INTERRUPTED, session.output
        finally:
            session.kill()
    output = session.output
    assert output.count(STOPPING_LINE) == 1, output
    assert "Traceback" not in output
    (run,) = stored_runs(store_path(pytester))
    assert run.status == "interrupted"
    records = stored_records(store_path(pytester), run.run_id)
    assert [r["status"] for r in records["test_first"]] == ["success"]
    assert records.get("test_long", []) == []  # stopped under it: no record, no half figures


@pytest.mark.slow
def test_a_group_ranks_its_tests_fastest_first_when_one_slow_test_makes_the_scores_tie(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    # The ceiling is twice the slowest p99 (~2 × 40 ms): both fast tests score 100.00 at
    # upstream's two decimals, and a tie keeps the participants' order, which must be the
    # speed order (the slower fast test is collected first).
    pytester.makepyfile(
        test_tie=textwrap.dedent(
            """
            import time

            import pytest

            pytestmark = pytest.mark.benchmark(max_time=0.05, min_rounds=3)

            ITEMS = [str(i) for i in range(200)]


            def test_slower_first(benchmark):
                benchmark(",".join, ITEMS)


            def test_faster(benchmark):
                benchmark(len, ITEMS)


            def test_sleepy(benchmark):
                benchmark(time.sleep, 0.04)
            """
        )
    )
    result = _run(pytester, "--bench-json=run.json")
    result.assert_outcomes(passed=3)
    (run,) = read_json(pytester.path / "run.json")["benchmarks"]
    ranking = run["result"]["scores"]["ranking"]
    assert [entry["participant"] for entry in ranking] == [
        "test_faster",
        "test_slower_first",
        "test_sleepy",
    ]
    assert [entry["rank"] for entry in ranking] == [1, 2, 3]
    # The stored run ranks them the same.
    (stored,) = stored_runs(store_path(pytester))
    assert main(["--store", str(store_path(pytester)), "show", stored.run_id]) == 0
    shown = capsys.readouterr().out
    assert shown.index("test_faster") < shown.index("test_slower_first"), shown


def test_long_parametrized_names_stay_distinct_in_the_tables(pytester: pytest.Pytester) -> None:
    # Four tests whose names differ only after 40 characters (issue 47, item 6): a cut at the
    # end made them read as one test and the relative lines compared a name with itself.
    pytester.makepyfile(
        test_long=textwrap.dedent(
            """
            import enum
            import pytest

            pytestmark = pytest.mark.benchmark(max_time=0.002, min_rounds=3)

            class UnstructureStrategy(enum.Enum):
                AS_DICT = 1
                AS_TUPLE = 2

            @pytest.mark.parametrize("strategy", list(UnstructureStrategy))
            @pytest.mark.parametrize("detailed", [True, False])
            def test_unstructure_attrs_nested_structures(benchmark, strategy, detailed):
                benchmark(sorted, [3, 2, 1])
            """
        )
    )
    result = _run(pytester)
    result.assert_outcomes(passed=4)
    rows = {
        line.split()[0]
        for line in result.stdout.lines
        if line.strip().startswith("test_unstructure") and "/" in line
    }
    assert len(rows) == 4, result.stdout.str()
    assert all(row.endswith("]") for row in rows), rows


#: Six tests whose rounds alternate between nothing and a millisecond's sleep, each with its
#: own number of rounds: six high-variance findings, each its own message.
SPREAD = textwrap.dedent(
    """
    import itertools
    import time

    import pytest


    @pytest.mark.parametrize("n", range(6))
    def test_spread(benchmark, n):
        calls = itertools.count()

        def uneven():
            if next(calls) % 2:
                time.sleep(0.001)

        benchmark.pedantic(uneven, rounds=20 + n, iterations=1)
    """
)


def test_many_findings_of_one_code_are_one_line_and_v_or_full_lists_them(
    pytester: pytest.Pytester,
) -> None:
    """Issue 47, item 6: a code found for many tests is one line counting them, with what
    the findings say together; ``-v`` and ``--bench-warnings=full`` give the advice once and
    each test's finding; ``--bench-json`` keeps every one."""
    pytester.makepyfile(test_spread=SPREAD)
    result = _run(pytester, "--bench-no-store", "--bench-json=run.json")
    result.assert_outcomes(passed=6)
    lines = result.stdout.str().splitlines()
    spread = [line for line in lines if "warning [high-variance]" in line]
    assert len(spread) == 1, spread
    assert re.fullmatch(
        r"  warning \[high-variance\] 6 tests \(time_ms\): coefficient of variation "
        r"\d+(–\d+)?% \(over 30%\); -v lists them",
        spread[0],
    ), spread
    assert not any("more participants" in line for line in lines)
    (run,) = read_json(pytester.path / "run.json")["benchmarks"]
    found = [w for w in run["warnings"] if w["code"] == "high-variance"]
    assert len(found) == 6
    assert all(w["finding"].startswith("coefficient of variation") for w in found)
    assert all(w["figure"] > 0.3 for w in found)

    for args in (["-v"], ["--bench-warnings=full"]):
        detailed = _run(pytester, "--bench-no-store", *args)
        detailed.assert_outcomes(passed=6)
        text = " ".join(detailed.stdout.str().split())
        assert text.count("warning [high-variance] 6 tests (time_ms)") == 1, args
        # The advice once, each test's finding after it.
        assert text.count("the rounds spread widely") == 1, args
        for n in range(6):
            assert re.search(
                rf"test_spread\[{n}\]: coefficient of variation \d+% \(over 30%\) of the "
                rf"{18 + n} samples the statistics use \(2 trimmed\)",
                text,
            ), (args, n)
        assert "-v lists them" not in text


def test_a_group_of_one_test_reads_as_one_line(pytester: pytest.Pytester) -> None:
    # --benchmark-group-by=fullname (cattrs' addopts) makes a group of each test: each reads
    # as its title, settings, span and one line (no one-row tables, no score of itself);
    # -v has the tables back, and a group of several tests keeps them.
    pytester.makepyfile(test_group=GROUP)
    result = _run(pytester, "--benchmark-group-by=fullname", "--bench-no-store")
    result.assert_outcomes(passed=2)
    text = result.stdout.str()
    result.stdout.re_match_lines(
        [
            r"  test_join: [\d,]+ rounds × [\d,]+ iterations; med/p95/p99 time_ms \S+ \w+, "
            r"cpu_ms \S+ \w+",
            r"  test_pedantic: 7 rounds × 4 iterations; med/p95/p99 time_ms \S+ \w+, cpu_ms ",
        ],
        consecutive=False,
    )
    assert "Scores:" not in text
    assert "rounds × iterations\n" not in text  # the participants table's header
    quiet = _run(pytester, "--benchmark-group-by=fullname", "--bench-no-store", "-q")
    quiet.stdout.re_match_lines([r"  test_pedantic: 7 rounds × 4 iterations; med/p95/p99 "])
    assert "score" not in quiet.stdout.str()
    verbose = _run(pytester, "--benchmark-group-by=fullname", "--bench-no-store", "-v")
    assert verbose.stdout.str().count("Scores:") == 2
    together = _run(pytester, "--bench-no-store")
    assert together.stdout.str().count("Scores:") == 1
    assert ": 7 rounds × 4 iterations" not in together.stdout.str()
