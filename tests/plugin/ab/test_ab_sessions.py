"""``--bench-ab=REV``: real sessions in a real git repository, each side in its own process.

The project under test is a small package (``src/crunch``) whose ``work()`` sleeps
``DELAY_S``; the bench file times it. A commit holds the revision (side A); the working tree
(side B) is edited by each test.
"""

from __future__ import annotations

import json
import os
import signal
import tempfile
import time
from pathlib import Path

import pytest

from helpers.gitrepo import ab_worktrees, git
from helpers.processes import Session
from helpers.sessions import bench_cli, store_path, stored_records, stored_runs

PACKAGE = """
import time

DELAY_S = {delay}


def work() -> None:
    time.sleep(DELAY_S)
"""

BENCH = """
from crunch import work

from pytest_benchsdk import Participant, TaskError, define_benchmark_config, define_task

config = define_benchmark_config(
    benchmark_slug="crunch",
    benchmark_name="Crunch",
    participants=[Participant("py")],
    iterations={iterations},
)


@define_task
def task(step):
    step("work", work)
"""


def project(pytester: pytest.Pytester, delay: float = 0.002, iterations: int = 8) -> Path:
    """The package and its bench file, committed; returns the repository's root."""
    root = pytester.path
    (root / "src" / "crunch").mkdir(parents=True)
    (root / "src" / "crunch" / "__init__.py").write_text(PACKAGE.format(delay=delay))
    (root / "bench_crunch.py").write_text(BENCH.format(iterations=iterations))
    (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["src"]\n')
    (root / ".gitignore").write_text(".benchmarks/\n*.so\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "the revision")
    return root


def set_delay(root: Path, delay: float) -> None:
    (root / "src" / "crunch" / "__init__.py").write_text(PACKAGE.format(delay=delay))


#: One process a side (the default is 4) where the number of processes is not the subject: a
#: side process is a pytest session of its own, the costliest part of an A/B test.
ONE_PROCESS = "--bench-ab-processes=1"


def run_ab(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """An A/B session in a process of its own (its sides are processes it starts), one process
    a side unless ``args`` say how many."""
    if any(a.startswith("--bench-ab=") for a in args) and not any(
        a.startswith("--bench-ab-processes") for a in args
    ):
        args = (ONE_PROCESS, *args)
    return pytester.runpytest_inprocess("--bench", "-p", "no:cacheprovider", *args)


@pytest.mark.slow
def test_an_unchanged_tree_is_compared_pairwise_and_both_sides_are_stored_linked(
    pytester: pytest.Pytester,
) -> None:
    root = project(pytester)
    result = run_ab(pytester, "--bench-ab=HEAD", "--bench-json=out.json", "-v")
    result.assert_outcomes(passed=8)
    sha = git(root, "rev-parse", "HEAD").strip()
    result.stdout.fnmatch_lines(
        [
            f"benchsdk: A/B against HEAD ({sha[:7]}): side A runs that revision (worktree *",
            f"  A/B: side B (the working tree) against revision {sha[:7]}; side A is run *",
            f"  Compared with A: HEAD ({sha[:7]}):",
            "    Noise: paired rounds *",
            "    py           latency_ms  median  * paired, 8 rounds *",
        ]
    )
    assert "platform" in result.stdout.str()  # says nothing is reported
    runs = {run.knobs["abSide"]: run for run in stored_runs(store_path(pytester))}
    assert set(runs) == {"A", "B"}
    assert runs["A"].knobs["abRun"] == runs["B"].run_id
    assert runs["A"].knobs["abRevision"] == runs["B"].knobs["abRevision"] == sha
    assert runs["A"].dry_run
    assert runs["B"].dry_run
    for run in runs.values():
        assert len(stored_records(store_path(pytester), run.run_id)["py"]) == 8
    data = json.loads((root / "out.json").read_text())
    (benchmark,) = data["benchmarks"]
    comparison = benchmark["comparison"]
    assert comparison["paired"] is True
    assert comparison["baselineRunId"] == runs["A"].run_id
    assert {row["noise"] for row in comparison["rows"]} == {"paired"}
    assert benchmark["result"]["ab"] == {
        "side": "B",
        "revision": sha,
        "otherRunId": runs["A"].run_id,
    }
    assert ab_worktrees(root) == []  # removed at the end
    listing = bench_cli(root, "runs")
    assert "A/B side A" in listing
    assert "A/B side B" in listing
    shown = bench_cli(root, "show", runs["A"].run_id[:12])
    assert f"A/B: side A (revision {sha[:7]}); side B is run {runs['B'].run_id[:12]}…" in shown


@pytest.mark.slow
def test_a_slower_working_tree_fails_the_session_naming_the_row(
    pytester: pytest.Pytester,
) -> None:
    root = project(pytester, delay=0.002)
    set_delay(root, 0.020)  # ten times: clear under any load
    result = run_ab(pytester, "--bench-ab=HEAD", "--bench-compare-fail")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["*regressed (--bench-compare-fail): crunch: py latency_ms median: * regressed (paired*"]
    )
    runs = {run.knobs["abSide"]: run for run in stored_runs(store_path(pytester))}
    assert runs["B"].status == "failed"  # the regression
    assert runs["A"].status == "passed"


@pytest.mark.slow
def test_a_faster_working_tree_is_an_improvement(pytester: pytest.Pytester) -> None:
    root = project(pytester, delay=0.020)
    set_delay(root, 0.002)
    result = run_ab(pytester, "--bench-ab=HEAD", "--bench-compare-fail")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(["    py           latency_ms  median  * improved  *"])


PIDS = """
import os
from pathlib import Path

DELAY_S = 0.001


def work() -> None:
    side = "B" if Path(__file__).resolve().is_relative_to(Path(os.environ["AB_ROOT"])) else "A"
    with open(os.environ["AB_PIDS"], "a") as out:
        out.write(f"{side} {os.getpid()}\\n")
"""


@pytest.mark.slow
@pytest.mark.parametrize("processes", [1, 3])
def test_each_side_runs_in_as_many_processes_as_asked(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, processes: int
) -> None:
    root = project(pytester, iterations=6)
    (root / "src" / "crunch" / "__init__.py").write_text(PIDS)
    git(root, "commit", "-q", "-am", "record the pids")
    pids = root / "pids.txt"
    monkeypatch.setenv("AB_PIDS", str(pids))
    monkeypatch.setenv("AB_ROOT", str(root.resolve()))
    result = run_ab(pytester, "--bench-ab=HEAD", f"--bench-ab-processes={processes}")
    result.assert_outcomes(passed=6)
    said = "1 process;" if processes == 1 else f"{processes} processes taking turns"
    result.stdout.fnmatch_lines([f"benchsdk: A/B against HEAD * each in {said}*"])
    seen: dict[str, set[str]] = {"A": set(), "B": set()}
    for line in pids.read_text().splitlines():
        side, pid = line.split()
        seen[side].add(pid)
    assert {side: len(found) for side, found in seen.items()} == {"A": processes, "B": processes}
    runs = {run.knobs["abSide"]: run for run in stored_runs(store_path(pytester))}
    assert runs["A"].knobs["abProcesses"] == runs["B"].knobs["abProcesses"] == processes


@pytest.mark.slow
def test_side_b_failing_fails_its_items_with_the_task_s_message(
    pytester: pytest.Pytester,
) -> None:
    root = project(pytester)
    (root / "src" / "crunch" / "__init__.py").write_text(
        "from pytest_benchsdk import TaskError\n\n\ndef work():\n"
        "    raise TaskError('the new code is broken', code='broken')\n"
    )
    result = run_ab(pytester, "--bench-ab=HEAD")
    result.assert_outcomes(failed=8)
    result.stdout.fnmatch_lines(["*the new code is broken*"])
    runs = {run.knobs["abSide"]: run for run in stored_runs(store_path(pytester))}
    a = stored_records(store_path(pytester), runs["A"].run_id)["py"]
    b = stored_records(store_path(pytester), runs["B"].run_id)["py"]
    assert {r["status"] for r in a} == {"success"}
    assert {r["status"] for r in b} == {"error"}


@pytest.mark.slow
def test_a_bench_file_the_revision_lacks_runs_against_the_revision_s_code(
    pytester: pytest.Pytester,
) -> None:
    root = project(pytester)
    (root / "bench_new.py").write_text(
        BENCH.format(iterations=2).replace('"crunch"', '"crunch-new"')
    )
    result = run_ab(pytester, "--bench-ab=HEAD", "bench_new.py")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "benchsdk: A/B: bench_new.py does not exist at *: side A runs the working tree's "
            "bench file against that revision's code"
        ]
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bench-ab=no-such-branch"], "*git cannot resolve 'no-such-branch' to a commit*"),
        (["--bench-ab=HEAD", "--bench-compare"], "*--bench-ab and --bench-compare*pick one*"),
        (["--bench-ab=HEAD", "-n", "2"], "*run it without pytest-xdist*"),
        (["--bench-ab-setup=true"], "*--bench-ab-setup is for A/B sessions: add --bench-ab=REV*"),
        (
            ["--bench-ab=HEAD", "--bench-ab-processes=0"],
            "*--bench-ab-processes expects an integer >= 1*",
        ),
        (
            ["--bench-ab=HEAD", "--bench-ab-setup=echo building; exit 3"],
            "*--bench-ab-setup 'echo building; exit 3' exited 3 in *",
        ),
    ],
    ids=["unknown-rev", "with-compare", "with-xdist", "setup-alone", "no-processes", "setup-fails"],
)
def test_what_an_ab_session_cannot_do_is_a_usage_error(
    pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    root = project(pytester)
    # Refused before any side starts: the session's own process is not the subject.
    result = pytester.runpytest_inprocess("--bench", "-p", "no:cacheprovider", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert ab_worktrees(root) == []


def test_outside_a_git_repository_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=BENCH.format(iterations=1).replace("from crunch import work\n", "work = print\n")
    )
    result = pytester.runpytest_inprocess("--bench", "-p", "no:cacheprovider", "--bench-ab=HEAD")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*is not in a git repository*"])


@pytest.mark.slow
def test_compiled_extensions_the_revision_lacks_need_a_setup_command(
    pytester: pytest.Pytester,
) -> None:
    root = project(pytester)
    built = root / "src" / "crunch" / "_fast.cpython-311-x86_64-linux-gnu.so"
    built.write_bytes(b"")  # untracked build output, as `build_ext --inplace` leaves it
    result = run_ab(pytester, "--bench-ab=HEAD")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*imports source trees*src/crunch/_fast.cpython-311-x86_64-linux-gnu.so*--bench-ab-setup*"]
    )
    built_there = "touch src/crunch/_fast.cpython-311-x86_64-linux-gnu.so"
    result = run_ab(pytester, "--bench-ab=HEAD", f"--bench-ab-setup={built_there}")
    result.assert_outcomes(passed=8)


HOLD = """
import os
import time

DELAY_S = 0.001


def work() -> None:
    if os.environ.get("AB_HOLD"):
        print("holding", flush=True)
        time.sleep(120)
"""


@pytest.mark.slow
def test_a_killed_session_s_worktree_is_removed_by_the_next_one(
    pytester: pytest.Pytester,
) -> None:
    root = project(pytester)
    (root / "src" / "crunch" / "__init__.py").write_text(HOLD)
    session = Session(
        root,
        "--bench",
        "--bench-ab=HEAD",
        ONE_PROCESS,
        "-v",
        "-s",
        env={**os.environ, "AB_HOLD": "1"},
    )
    try:
        session.wait_for("benchsdk: A/B against")
        left = ab_worktrees(root)
        assert len(left) == 1
        session.proc.kill()  # SIGKILL: nothing of the session's end runs
        session.finish()
    finally:
        session.kill()
    assert ab_worktrees(root) == left
    result = run_ab(pytester, "--bench-ab=HEAD")
    result.stdout.fnmatch_lines([f"benchsdk: A/B: removed the worktree {left[0]} a killed *"])
    result.assert_outcomes(passed=8)
    assert ab_worktrees(root) == []
    assert not Path(left[0]).exists()


@pytest.mark.slow
def test_ctrl_c_stores_both_sides_as_interrupted_and_removes_the_worktree(
    pytester: pytest.Pytester,
) -> None:
    root = project(pytester)
    (root / "src" / "crunch" / "__init__.py").write_text(
        HOLD.replace('os.environ.get("AB_HOLD")', 'os.path.exists("hold")')
    )
    (root / "hold").touch()
    session = Session(root, "--bench", "--bench-ab=HEAD", ONE_PROCESS, "-v")
    try:
        session.wait_for("benchsdk: A/B against")
        session.interrupt()
        assert session.finish(timeout=60) == pytest.ExitCode.INTERRUPTED, session.output
    finally:
        session.kill()
    assert ab_worktrees(root) == []
    runs = stored_runs(store_path(pytester))
    assert {run.status for run in runs} == {"interrupted"}
    assert {run.knobs["abSide"] for run in runs} == {"A", "B"}
    assert not [p for p in Path(tempfile.gettempdir()).glob("benchsdk-ab-*") if _owned_by(p, root)]


def _owned_by(folder: Path, root: Path) -> bool:
    try:
        owner = json.loads((folder / "owner.json").read_text())
    except OSError:
        return False
    return Path(owner["repository"]) == root.resolve()


LOGGING_BENCH = """
import logging, os, subprocess, sys

from pytest_benchsdk import Participant, define_benchmark_config, define_task

config = define_benchmark_config(
    benchmark_slug="logs",
    benchmark_name="Logs",
    participants=[Participant("p", required_env_vars=["PSECRET"])],
    iterations=2,
)


@define_task
def task(task_index):
    secret = os.environ["PSECRET"]
    logging.getLogger("t").warning("logged %s", secret)
    print("printed", secret)
    print("to stderr", secret, file=sys.stderr)
    subprocess.run([sys.executable, "-c", f"import sys; sys.stderr.write('fd2 {secret}')"])
"""


@pytest.mark.slow
def test_what_a_side_writes_reaches_the_item_s_capture_redacted(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 48, item 3: a side process's log records, stderr and stdout went to the terminal
    raw (secrets and all), past pytest's capture. Now they are the item's captured output, each
    line marked with its side, the secret redacted."""
    secret = "sk-side-secret-0123456789"
    monkeypatch.setenv("PSECRET", secret)
    root = project(pytester)
    (root / "bench_logs.py").write_text(LOGGING_BENCH)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "logs")
    # A subprocess: the sides' processes write to the real file descriptors, which an
    # in-process run would not see.
    result = pytester.runpytest_subprocess(
        "--bench", "-p", "no:cacheprovider", ONE_PROCESS, "--bench-ab=HEAD", "-rA",
        "bench_logs.py",
    )  # fmt: skip
    result.assert_outcomes(passed=2)
    output = result.stdout.str() + result.stderr.str()
    assert secret not in output
    for side in ("A", "B"):
        assert output.count(f"[side {side}] logged ***") == 2, output
        assert output.count(f"[side {side}] printed ***") == 2
        assert output.count(f"[side {side}] to stderr ***") == 2
        assert output.count(f"[side {side}] fd2 ***") == 2
    result.stdout.fnmatch_lines(
        ["*- Captured log call -*", "WARNING  t:bench_logs.py:* ?side ?? logged ***"]
    )


#: Side B's third call writes its process's pid and waits for the test to kill it.
VICTIM = """
import os
import pathlib
import time

ROOT = pathlib.Path({root!r})
CALLS = 0


def work() -> None:
    global CALLS
    CALLS += 1
    if CALLS == 3 and not (ROOT / "killed").exists():
        (ROOT / "victim.pid").write_text(str(os.getpid()))
        end = time.monotonic() + 60
        while not (ROOT / "killed").exists() and time.monotonic() < end:
            time.sleep(0.01)
"""


@pytest.mark.slow
def test_a_side_process_killed_fails_the_rest_of_its_items_in_a_line_each(
    pytester: pytest.Pytester,
) -> None:
    # Issue 48's random kills: each item after a side's process died failed with execnet's
    # traceback (OSError: cannot send (already closed?), ValueError: write to closed file).
    root = project(pytester, iterations=6)
    (root / "src" / "crunch" / "__init__.py").write_text(VICTIM.format(root=str(root)))
    session = Session(root, "--bench", "--bench-ab=HEAD", ONE_PROCESS, "-p", "no:xdist")
    try:
        deadline = time.monotonic() + 120
        while not (root / "victim.pid").exists():
            assert session.proc.poll() is None, session.output
            assert time.monotonic() < deadline, session.output
            time.sleep(0.01)
        os.kill(int((root / "victim.pid").read_text()), signal.SIGKILL)
        (root / "killed").touch()
        code = session.finish(timeout=120)
    finally:
        session.kill()
    output = session.output
    assert code == pytest.ExitCode.TESTS_FAILED, output
    assert "cannot send" not in output, output
    assert "Traceback" not in output, output
    ended = (
        "side B's process has ended (killed, out of memory or crashed): its remaining "
        "iterations cannot run"
    )
    for index in (3, 4, 5):
        assert f"FAILED bench_crunch.py::task[py-{index}] - side B's process has ended" in output
    # (The short summary repeats it after each FAILED, cut at the terminal's width or not,
    # as CI=true says: the failures' own sections hold it alone on a line.)
    assert [line for line in session.lines if line.strip() == ended] == [ended] * 3, output
    # The one it died in: what execnet said, in one line too.
    assert "FAILED bench_crunch.py::task[py-2] - side B's process failed: " in output, output
    assert "4 failed, 2 passed" in output, output
    assert ab_worktrees(root) == []
