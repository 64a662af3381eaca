"""``--bench-ab=REV`` with benchmarked tests (the ``benchmark`` fixture, or the marker alone):
real sessions in a real git repository, each test run in both sides' pytest processes.

The project is a small package (``src/crunch``) whose ``work()`` sleeps ``DELAY_S`` (a sleep
keeps its time under any load beside it); its tests are benchmarked with small ``max_time``.
A commit holds the revision (side A); each test edits the working tree (side B).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from helpers.gitrepo import ab_worktrees, git
from helpers.processes import Session
from helpers.sessions import bench_cli, store_path, stored_records, stored_runs

PACKAGE = """
import time

DELAY_S = {delay}


def work(times: int = 1) -> None:
    for _ in range(times):
        time.sleep(DELAY_S)
"""

TESTS = """
import pytest

from crunch import work

# Eight rounds at least: with five pairs the signed-rank test cannot reach p < 0.05 (its
# smallest p is 2/2**5), so a loaded machine that fits no more than min_rounds judged nothing.
pytestmark = pytest.mark.benchmark(max_time=0.2, min_rounds=8)


def test_work(benchmark):
    benchmark(work)


@pytest.mark.parametrize("times", [1, 2])
def test_times(benchmark, times):
    benchmark.extra_info["times"] = times
    benchmark(work, times)


@pytest.mark.benchmark(max_time=0.2, min_rounds=5)
def test_body():
    work()
"""


def project(pytester: pytest.Pytester, delay: float = 0.001) -> Path:
    """The package and its benchmarked tests, committed; returns the repository's root."""
    root = pytester.path
    (root / "src" / "crunch").mkdir(parents=True)
    set_delay(root, delay)
    (root / "test_crunch.py").write_text(TESTS)
    (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["src"]\n')
    (root / ".gitignore").write_text(".benchmarks/\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "the revision")
    return root


def set_delay(root: Path, delay: float) -> None:
    (root / "src" / "crunch" / "__init__.py").write_text(PACKAGE.format(delay=delay))


def commit_test(root: Path, name: str, args: str, body: list[str], message: str) -> None:
    """Commit ``name.py`` holding one benchmarked test ``name(args)`` whose body is ``body``."""
    (root / f"{name}.py").write_text(
        "import pytest\n\nfrom crunch import work\n\n\n"
        "@pytest.mark.benchmark(max_time=0.2, min_rounds=5)\n"
        f"def {name}({args}):\n" + "".join(f"    {line}\n" for line in body)
    )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


def run_ab(pytester: pytest.Pytester, *args: str, processes: int = 1) -> pytest.RunResult:
    """An A/B session against HEAD, run in this process (its sides are the processes it
    starts): one process a side unless the number of processes (turns) is the subject."""
    return pytester.runpytest_inprocess(
        "--bench", "-p", "no:cacheprovider", "--bench-ab=HEAD",
        f"--bench-ab-processes={processes}", *args,
    )  # fmt: skip


def group_of(root: Path) -> dict[str, Any]:
    (group,) = json.loads((root / "out.json").read_text())["benchmarks"]
    assert group["benchmarkSlug"] == "test-crunch"
    return group


def rows_of(group: dict[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {
        (row["participant"], row["metric"], row["statistic"]): row
        for row in group["comparison"]["rows"]
    }


def sides_of(pytester: pytest.Pytester) -> dict[str, Any]:
    return {run.knobs["abSide"]: run for run in stored_runs(store_path(pytester))}


TESTS_RUN = ["test_work", "test_times[1]", "test_times[2]", "test_body"]


@pytest.mark.slow
def test_an_unchanged_tree_compares_every_test_pairwise_turn_by_turn(
    pytester: pytest.Pytester,
) -> None:
    root = project(pytester)
    result = run_ab(pytester, "--bench-json=out.json", "--bench-markdown=out.md", processes=2)
    result.assert_outcomes(passed=4)
    sha = git(root, "rev-parse", "HEAD").strip()
    result.stdout.fnmatch_lines(
        [
            f"benchsdk: A/B against HEAD ({sha[:7]}): side A runs that revision (worktree *"
            "each in 2 processes taking turns; every benchmarked test, once per process pair "
            "(each turn with its share of max_time), runs on both, one after the other in a "
            "random order each time. *",
            f"  Compared with A: HEAD ({sha[:7]}):",
            "    Noise: paired rounds (each test ran on both sides in turns, *",
        ]
    )
    assert "not compared" not in result.stdout.str()
    group = group_of(root)
    comparison = group["comparison"]
    assert comparison["paired"] is True
    assert comparison["pairedTurns"] is True
    assert comparison["duet"] is False
    assert comparison["processes"] == 2
    rows = rows_of(group)
    for test in TESTS_RUN:
        for metric in ("time_ms", "cpu_ms"):
            row = rows[(test, metric, "median")]
            assert row["noise"] == "paired", row
            assert row["comparison"]["baselineN"] >= 10  # two turns of >= 5 rounds
        # The sleep takes the same time on both sides: no verdict of a change.
        assert rows[(test, "time_ms", "median")]["verdict"] == "unchanged", rows
    # Both sides stored, linked; each side's record holds its two turns.
    runs = sides_of(pytester)
    assert set(runs) == {"A", "B"}
    assert runs["A"].knobs["abRun"] == runs["B"].run_id
    assert runs["A"].knobs["abRevision"] == runs["B"].knobs["abRevision"] == sha
    assert comparison["baselineRunId"] == runs["A"].run_id
    for run in runs.values():
        records = stored_records(store_path(pytester), run.run_id)
        assert sorted(records) == sorted(TESTS_RUN)
        for (record,) in records.values():
            assert record["status"] == "success"
            turns = record["data"]["rounds"]["repetitions"]
            assert len(turns) == 2
            assert min(turns) >= 5
            assert len(record["data"]["time_ms"]) == sum(turns)
        # extra_info comes from the side that ran the test.
        assert records["test_times[2]"][0]["data"]["extra_info"] == {"times": 2}
    # Every view renders the comparison: Markdown, and show (from the store).
    noise = "Noise: paired rounds (each test ran on both sides in turns"
    assert noise in (root / "out.md").read_text()
    assert "| test_times[2] | time_ms | median |" in (root / "out.md").read_text()
    shown = bench_cli(root, "show", runs["B"].run_id[:12])
    assert noise in shown
    assert f"A/B: side B (the working tree) against revision {sha[:7]}" in shown
    assert ab_worktrees(root) == []


@pytest.mark.slow
def test_a_slower_working_tree_fails_the_session_naming_the_test(
    pytester: pytest.Pytester,
) -> None:
    root = project(pytester, delay=0.001)
    set_delay(root, 0.03)  # thirty times: clear under any load (three was not, at load 12)
    result = run_ab(pytester, "--bench-compare-fail", "--bench-json=out.json", "-k", "work")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    result.stdout.fnmatch_lines(
        ["*regressed (--bench-compare-fail): test-crunch: test_work time_ms median: *regressed*"]
    )
    rows = rows_of(group_of(root))
    assert rows[("test_work", "time_ms", "median")]["verdict"] == "regressed"
    assert rows[("test_work", "time_ms", "median")]["comparison"]["change"] > 1.0
    runs = sides_of(pytester)
    assert runs["B"].status == "failed"  # the regression
    assert runs["A"].status == "passed"


@pytest.mark.slow
def test_compare_on_chooses_the_metric_whose_verdicts_count(pytester: pytest.Pytester) -> None:
    root = project(pytester, delay=0.001)
    set_delay(root, 0.03)  # thirty times: clear under any load (three was not, at load 12)
    result = run_ab(
        pytester, "--bench-compare-fail", "--bench-compare-on=cpu_ms", "--bench-json=out.json",
        "-k", "test_work",
    )  # fmt: skip
    # The wall time tripled, and its rows are shown, but only the CPU time's count.
    assert "regressed (--bench-compare-fail): test-crunch: test_work time_ms" not in (
        result.stdout.str()
    )
    rows = rows_of(group_of(root))
    assert rows[("test_work", "time_ms", "median")]["verdict"] == "regressed"
    assert rows[("test_work", "time_ms", "median")]["judged"] is False
    assert rows[("test_work", "cpu_ms", "median")]["judged"] is True


@pytest.mark.slow
def test_a_test_the_revision_lacks_is_measured_in_the_working_tree_only(
    pytester: pytest.Pytester,
) -> None:
    root = project(pytester)
    with (root / "test_crunch.py").open("a") as tests:
        tests.write("\n\ndef test_new(benchmark):\n    benchmark(work, 2)\n")
    (root / "test_other.py").write_text(TESTS.replace("def test_", "def test_other_"))
    result = run_ab(pytester, "--bench-json=out.json", "-k", "new or work")
    result.assert_outcomes(passed=3)
    text = result.stdout.str()
    line = (
        "benchsdk: A/B: test_crunch.py has no test test_new at the revision: measured in the "
        "working tree only"
    )
    assert text.count(line) == 1, text
    assert text.count("benchsdk: A/B: test_other.py does not exist at HEAD") == 1, text
    groups = {
        g["benchmarkSlug"]: g for g in json.loads((root / "out.json").read_text())["benchmarks"]
    }
    row = rows_of(groups["test-crunch"])[("test_new", "time_ms", "median")]
    assert row["comparison"] is None
    assert row["note"] == "not in the baseline run"
    # A group side A has none of: no run of it on side A.
    assert groups["test-other"]["comparison"]["note"].startswith(
        "nothing compared: side A measured none of its tests"
    )
    assert rows_of(groups["test-crunch"])[("test_work", "time_ms", "median")]["comparison"]
    for group in groups.values():
        for participant in group["participants"]:
            assert participant["records"][0]["status"] == "success"


@pytest.mark.slow
def test_a_test_failing_in_the_working_tree_fails_with_its_own_error(
    pytester: pytest.Pytester,
) -> None:
    root = project(pytester)
    (root / "src" / "crunch" / "__init__.py").write_text(
        "def work(times=1):\n    raise RuntimeError('the new code is broken')\n"
    )
    result = run_ab(pytester, "-k", "test_work or test_body")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*def work(times=1):",
            "*RuntimeError: the new code is broken",
            "FAILED test_crunch.py::test_work*",
        ]
    )
    runs = sides_of(pytester)
    a = stored_records(store_path(pytester), runs["A"].run_id)
    b = stored_records(store_path(pytester), runs["B"].run_id)
    assert {name: r[0]["status"] for name, r in a.items()} == {
        "test_work": "success",
        "test_body": "success",
    }
    for name in ("test_work", "test_body"):
        (record,) = b[name]
        assert record["status"] == "error"
        assert record["data"]["errorMessage"] == "RuntimeError: the new code is broken"


@pytest.mark.slow
def test_a_test_failing_at_the_revision_is_said_once_and_not_compared(
    pytester: pytest.Pytester,
) -> None:
    root = project(pytester)
    (root / "src" / "crunch" / "__init__.py").write_text(
        "def work(times=1):\n    raise RuntimeError('the old code was broken')\n"
    )
    git(root, "commit", "-q", "-am", "broken")
    set_delay(root, 0.001)
    result = run_ab(pytester, "--bench-json=out.json", "-k", "test_work")
    result.assert_outcomes(passed=1)
    text = result.stdout.str()
    line = (
        "benchsdk: A/B: side A: test_crunch.py::test_work failed: RuntimeError: the old code was "
        "broken: not compared"
    )
    assert text.count(line) == 1, text
    row = rows_of(group_of(root))[("test_work", "time_ms", "median")]
    assert row["comparison"] is None
    assert row["note"] == "no round with a sample on both sides"


@pytest.mark.slow
def test_a_group_set_inside_a_test_is_side_b_s_and_compared(pytester: pytest.Pytester) -> None:
    root = project(pytester)
    body = ['benchmark.group = "moved"', "benchmark(work)"]
    commit_test(root, "test_moved", "benchmark", body, "a test that sets its group")
    result = run_ab(pytester, "--bench-json=out.json", "test_moved.py")
    result.assert_outcomes(passed=1)
    (group,) = json.loads((root / "out.json").read_text())["benchmarks"]
    assert group["benchmarkSlug"] == "moved"
    row = rows_of(group)[("test_moved", "time_ms", "median")]
    assert row["noise"] == "paired"
    runs = sides_of(pytester)
    assert {run.benchmark_slug for run in runs.values()} == {"moved"}
    assert runs["A"].knobs["abRun"] == runs["B"].run_id


@pytest.mark.slow
def test_the_command_line_s_plugins_reach_both_sides_each_its_own(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(pytester)
    # A plugin only the command line names (no conftest, no ini), in a folder of the
    # repository on PYTHONPATH: its fixture is in no side session unless the side takes the
    # command line's -p too, and each side must import its own tree's copy.
    (root / "tools").mkdir()
    rig = "import pytest\n\n\n@pytest.fixture\ndef times():\n    return {times}\n"
    (root / "tools" / "rig.py").write_text(rig.format(times=1))
    body = ['benchmark.extra_info["times"] = times', "benchmark(work, times)"]
    commit_test(root, "test_rigged", "benchmark, times", body, "a plugin of the command line")
    (root / "tools" / "rig.py").write_text(rig.format(times=3))  # three times the work
    monkeypatch.setenv("PYTHONPATH", str(root / "tools"))
    # The session's own process must be started with that PYTHONPATH (-p rig imports there
    # too): a subprocess, two processes a side (two turns, the rounds counted below).
    result = pytester.runpytest_subprocess(
        "--bench", "-p", "no:cacheprovider", "--bench-ab=HEAD", "--bench-ab-processes=2",
        "--bench-json=out.json", "-p", "rig", "test_rigged.py",
    )  # fmt: skip
    result.assert_outcomes(passed=1)
    text = result.stdout.str()
    assert "not compared" not in text, text
    assert "other side's tree" not in text, text
    (group,) = json.loads((root / "out.json").read_text())["benchmarks"]
    row = rows_of(group)[("test_rigged", "time_ms", "median")]
    assert row["noise"] == "paired"
    assert row["comparison"]["baselineN"] >= 10
    # Each side ran its own tree's plugin: what the fixture gave the test is in each side's
    # record. (The slower side's verdict is the other tests' subject: three sleeps against one
    # cannot always be told apart on two cores loaded far past their count.)
    runs = sides_of(pytester)
    for side, times in (("A", 1), ("B", 3)):
        records = stored_records(store_path(pytester), runs[side].run_id)
        assert records["test_rigged"][0]["data"]["extra_info"] == {"times": times}, side


@pytest.mark.slow
def test_ctrl_c_before_side_a_measured_says_the_session_was_interrupted(
    pytester: pytest.Pytester,
) -> None:
    root = project(pytester)
    # Outside the worktree's checkout: both sides read these.
    hold, started = root / "hold", root / "started"
    (root / "src" / "crunch" / "__init__.py").write_text(
        "import os\nimport time\n\n\ndef work(times=1):\n"
        f"    open({str(started)!r}, 'w').close()\n"
        f"    while os.path.exists({str(hold)!r}):\n"
        "        time.sleep(0.01)\n"
    )
    hold.touch()
    session = Session(root, "--bench", "--bench-ab=HEAD", "--bench-ab-processes=2", "-k", "work")
    try:
        deadline = time.monotonic() + 120
        while not started.exists():  # the test is running on a side
            assert time.monotonic() < deadline, session.output
            time.sleep(0.05)
        session.interrupt()
        assert session.finish(timeout=60) == pytest.ExitCode.INTERRUPTED, session.output
    finally:
        session.kill()
        hold.unlink()
    out = session.output
    assert "interrupted (0 of 1 tests ran)" in out, out
    assert (
        "Baseline: none (nothing compared: the session was interrupted before side A measured any)"
    ) in out, out
    assert "the revision lacks" not in out
    assert ab_worktrees(root) == []


@pytest.mark.slow
def test_the_sessions_own_process_sets_no_fixture_up(pytester: pytest.Pytester) -> None:
    root = project(pytester)
    setups = root / "setups.txt"  # outside the worktree's checkout: every process writes here
    (root / "conftest.py").write_text(
        "import os\n\nimport pytest\n\n\n"
        "def pytest_configure(config):\n"
        "    if config.getoption('bench_ab', None):  # the session's own process\n"
        f"        with open({str(setups)!r}, 'a') as out:\n"
        "            out.write(f'main {os.getpid()}\\n')\n\n\n"
        "@pytest.fixture(scope='session')\n"
        "def server():\n"
        f"    with open({str(setups)!r}, 'a') as out:\n"
        "        out.write(f'server {os.getpid()}\\n')\n"
        "    return 1\n"
    )
    body = ['benchmark.group = "served"', "benchmark(work, server)"]
    commit_test(root, "test_served", "benchmark, server", body, "a test with a session fixture")
    result = run_ab(pytester, "--bench-json=out.json", "test_served.py", processes=2)
    result.assert_outcomes(passed=1)
    lines = [line.split() for line in setups.read_text().splitlines()]
    (main,) = [pid for kind, pid in lines if kind == "main"]
    servers = [pid for kind, pid in lines if kind == "server"]
    # Once in each of the 2 x 2 side sessions, never in the session's own process.
    assert len(servers) == 4, lines
    assert main not in servers
    # Side B's group still names the test's benchmark (no fixture here to carry it).
    (group,) = json.loads((root / "out.json").read_text())["benchmarks"]
    assert group["benchmarkSlug"] == "served"
    assert rows_of(group)[("test_served", "time_ms", "median")]["noise"] == "paired"


@pytest.mark.slow
def test_duet_mode_compares_and_the_report_draws_both_sides(pytester: pytest.Pytester) -> None:
    root = project(pytester)
    result = run_ab(
        pytester,
        "--bench-ab-mode=duet",
        "--bench-json=out.json",
        "--bench-html=out.html",
        "-k",
        "test_work",
        processes=2,
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "benchsdk: A/B against HEAD (*): *runs on both, at the same time (duet)*",
            "    Noise: paired rounds (each test ran on both sides in turns, at the same time, *",
        ]
    )
    assert "one right after the other" not in result.stdout.str()
    group = group_of(root)
    assert group["comparison"]["duet"] is True
    row = rows_of(group)[("test_work", "time_ms", "median")]
    assert row["noise"] == "paired"
    # Two sides at once on a shared 2-core machine: the verdict is the machine's to give (a
    # busy neighbour can starve one side); that the rounds were compared is the mode's.
    assert row["comparison"]["baselineN"] >= 10, row
    page = (root / "out.html").read_text()
    # The rounds' distribution with side A's drawn beside it (the baseline's series).
    assert "Dotted and lighter: the compared baseline run&#x27;s samples (A: HEAD (" in page


@pytest.mark.slow
def test_the_benchmark_fixture_setting_of_the_command_line_reaches_both_sides(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pytest-benchmark and pytest-codspeed are installed (the test extra); the setting that
    # switches them off is given on the command line only (issue 47, item 5): the side
    # sessions switch them off too, so each side measures with this plugin's fixture.
    monkeypatch.delenv("BENCHSDK_BENCHMARK_FIXTURE")
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    project(pytester)
    result = run_ab(
        pytester, "--bench-benchmark-fixture=benchsdk", "--bench-json=out.json", "-k", "work"
    )
    result.assert_outcomes(passed=1)
    text = result.stdout.str()
    assert "not compared" not in text, text
    row = rows_of(group_of(pytester.path))[("test_work", "time_ms", "median")]
    assert row["noise"] == "paired"
