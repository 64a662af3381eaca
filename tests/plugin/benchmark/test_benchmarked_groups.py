"""``benchmark.group = "x"`` (and ``benchmark.name``) set inside a benchmarked test, as
pytest-benchmark suites do (issue 35): the test's result belongs to the group it set, as if its
marker had said it, in every view, the store, ``--bench-compare`` and the platform; a group
every test moved out of appears nowhere.

The suites count nothing against the clock; the one comparison makes a test a thousand times
slower, as the fixture's own comparison test does.
"""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from helpers.e2e import bench_args, server_records, use_platform
from helpers.platform_server import LoopbackPlatform
from helpers.sessions import read_json, store_path, stored_records, stored_runs
from pytest_benchsdk.results import stored_status
from pytest_benchsdk.store import ResultStore

PRELUDE = """
import os
import pytest

pytestmark = pytest.mark.benchmark(max_time=0.001, min_rounds=3)
"""

#: A module keeping one test, moving one before its call (under a name of its own) and one
#: after it, and sharing a test name with another module's test in the group "dup".
PARSE = PRELUDE + textwrap.dedent(
    """
    def test_stays(benchmark):
        benchmark(str.upper, "a")


    def test_json(benchmark):
        benchmark.group = "parse"
        benchmark.name = "json"
        benchmark(json_like, int(os.environ.get("WORK_SIZE", "10")))


    def test_after(benchmark):
        benchmark(str.lower, "A")
        benchmark.group = "parse"


    def test_dup(benchmark):
        benchmark.group = "dup"
        benchmark(len, "abc")


    def json_like(n):
        return ",".join(str(i) for i in range(n))
    """
)
#: A module whose every test moves out: it has no run.
YAML = PRELUDE + textwrap.dedent(
    """
    def test_yaml(benchmark):
        benchmark.group = "parse"
        benchmark(str.title, "a b")


    def test_dup(benchmark):
        benchmark.group = "dup"
        benchmark(len, "abcd")
    """
)
#: The marker's group and the same group set inside a test are one group.
MARKED = PRELUDE + textwrap.dedent(
    """
    @pytest.mark.benchmark(group="parse", max_time=0.001, min_rounds=3)
    def test_marked(benchmark):
        benchmark(str.strip, " a ")


    @pytest.mark.benchmark(group="parse", max_time=0.001, min_rounds=3)
    def test_same(benchmark):
        benchmark.group = "parse"
        benchmark(str.split, "a b")
    """
)

PARSE_TESTS = {"json", "test_after", "test_yaml", "test_marked", "test_same"}


def _suite(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_parse=PARSE, test_yaml=YAML, test_marked=MARKED)


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess("-p", "no:cacheprovider", "--bench", *args)


def _benchmarks(pytester: pytest.Pytester) -> dict[str, Any]:
    """``--bench-json=run.json``'s benchmarks by slug."""
    document = read_json(pytester.path / "run.json")
    return {run["benchmarkSlug"]: run for run in document["benchmarks"]}


def test_a_test_reports_to_the_group_it_sets_and_an_emptied_module_has_no_run(
    pytester: pytest.Pytester,
) -> None:
    _suite(pytester)
    result = _run(pytester, "--bench-json=run.json", "--bench-markdown=run.md")
    result.assert_outcomes(passed=8)
    text = result.stdout.str()
    runs = _benchmarks(pytester)
    # test_yaml.py's tests both moved out: no run of it; test_marked.py's are in "parse".
    assert set(runs) == {"parse", "test-parse", "dup"}
    parse = runs["parse"]
    assert {p["participant"] for p in parse["participants"]} == PARSE_TESTS
    for participant in parse["participants"]:
        (record,) = participant["records"]
        assert len(record["data"]["time_ms"]) >= 3, participant["participant"]
    assert {row["provider"] for row in parse["scores"]} == PARSE_TESTS
    assert [p["participant"] for p in runs["test-parse"]["participants"]] == ["test_stays"]
    # Two tests named test_dup: the second to report is named by its node id.
    assert {p["participant"] for p in runs["dup"]["participants"]} == {
        "test_dup",
        "test_yaml.py::test_dup",
    }
    # The store holds the same runs, each declaring the tests that reported to it.
    stored = {run.benchmark_slug: run for run in stored_runs(store_path(pytester))}
    assert set(stored) == {"parse", "test-parse", "dup"}
    assert set(stored["parse"].participants) == PARSE_TESTS
    records = stored_records(store_path(pytester), stored["parse"].run_id)
    assert set(records) == PARSE_TESTS
    assert all(len(r) == 1 for r in records.values())
    assert stored["parse"].config_snapshot["participants"] == list(stored["parse"].participants)
    # Every view: the group's table, no table of the emptied module, no line about moving.
    assert "parse (parse) [group:parse]" in text
    assert "[test_yaml.py]" not in text
    assert "cannot move" not in text
    markdown = (pytester.path / "run.md").read_text()
    assert "test_yaml.py" not in markdown.replace("test_yaml.py::test_dup", "")
    assert "json" in markdown


@pytest.mark.slow
def test_a_moved_test_is_compared_with_its_saved_run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _suite(pytester)
    _run(pytester, "--bench-save=base").assert_outcomes(passed=8)
    (saved,) = [run for run in stored_runs(store_path(pytester)) if run.benchmark_slug == "parse"]
    # A thousand times more work for the moved test: its median is far beyond 50 % worse.
    monkeypatch.setenv("WORK_SIZE", "10000")
    second = _run(
        pytester, "--bench-compare=base", "--bench-compare-fail=median:50%", "--bench-json=run.json"
    )
    text = second.stdout.str()
    assert "regressed (--bench-compare-fail=median:50%): parse: json" in text, text
    runs = _benchmarks(pytester)
    compared = {row["participant"] for row in runs["parse"]["comparison"]["rows"]}
    assert compared == PARSE_TESTS
    # The group's saved run (where the moved tests joined it) is its baseline.
    assert runs["parse"]["comparison"]["baselineRunId"] == saved.run_id


@pytest.mark.slow
def test_a_killed_session_keeps_what_its_moved_tests_reported(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_killed=PRELUDE
        + textwrap.dedent(
            """
            import signal


            def test_first(benchmark):
                benchmark.group = "kept"
                benchmark(str.upper, "a")


            def test_killed(benchmark):
                benchmark.group = "kept"
                os.kill(os.getpid(), signal.SIGKILL)
            """
        )
    )
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "--bench")
    (run,) = stored_runs(store_path(pytester))
    assert run.benchmark_slug == "kept"
    assert run.participants == ("test_first",)
    (record,) = stored_records(store_path(pytester), run.run_id)["test_first"]
    assert record["status"] == "success"
    assert run.status == "interrupted"
    with ResultStore(store_path(pytester)) as store:
        assert stored_status(store, run).text() == "interrupted (1 of 1 tests ran)"


@pytest.mark.slow
def test_a_platform_run_gets_the_moved_tests_of_its_group(
    pytester: pytest.Pytester,
    loopback_platform: LoopbackPlatform,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    _suite(pytester)
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", *bench_args(server, "--bench-json=run.json")
    )
    result.assert_outcomes(passed=8)
    runs = {run["benchmarkSlug"]: run_id for run_id, run in server.runs.items()}
    # One platform run per group with a test; none of the emptied module.
    assert set(runs) == {"parse", "test-parse", "dup"}
    registered = {name for run_id, name in server.participants if run_id == runs["parse"]}
    assert registered == PARSE_TESTS
    records = server_records(server, runs["parse"])
    assert set(records) == PARSE_TESTS
    assert all(len(r) == 1 and r[0]["status"] == "success" for r in records.values())
    # Its summary scores every test of the group, against the group's settled ceiling (the
    # run begins on the platform at the session end, when the ceiling is known).
    (summary,) = server.summaries[runs["parse"]]
    assert {row["provider"] for row in summary["results"]} == PARSE_TESTS
    local = _benchmarks(pytester)
    assert summary["scoring"] == local["parse"]["summary"]["scoring"]
    benchmark_config = server.benchmarks["parse"]["config"]
    assert benchmark_config["scoring"] == local["parse"]["summary"]["scoring"]
    stored = {run.benchmark_slug: run for run in stored_runs(store_path(pytester))}
    assert stored["parse"].platform_run_id == runs["parse"]
    assert set(stored) == set(runs)


def test_an_interrupted_group_counts_its_tests(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_stopped=PRELUDE
        + textwrap.dedent(
            """
            def test_first(benchmark):
                benchmark(str.upper, "a")


            def test_fails(benchmark):
                benchmark(int, "not a number")


            def test_never(benchmark):
                benchmark(str.lower, "A")
            """
        )
    )
    result = _run(pytester, "-x", "--bench-json=run.json")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*status: interrupted (2 of 3 tests ran)*"])
    (run,) = stored_runs(store_path(pytester))
    with ResultStore(store_path(pytester)) as store:
        assert stored_status(store, run).text() == "interrupted (2 of 3 tests ran)"
