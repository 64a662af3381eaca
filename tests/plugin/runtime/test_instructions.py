"""``--bench-instructions`` on real sessions: the pytest command re-runs itself under callgrind
and each measured region records ``instructions`` (a bench file's steps and task bodies, the
``benchmark`` fixture, ``pedantic``, the marker alone); what is missing (valgrind, a C compiler)
is a usage error saying what to install.

Each session is a process of its own (the subject: the process replaces itself with valgrind)
and takes tens of seconds under valgrind. Required when ``CI`` is set (``.ci/run`` installs
Debian's valgrind); without ``CI`` and without valgrind on PATH the counting tests skip.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from helpers.sessions import bench, store_path, stored_records, stored_runs
from helpers.valgrind import need_valgrind

pytestmark = pytest.mark.slow


BENCH = bench(
    'participants=[Participant("small", sdk=200), Participant("large", sdk=2000)], iterations=2',
    """
    import os

    def work(n):
        return sum(i * i for i in range(n))

    @define_task
    def task(participant, step, measure):
        measure(seed=int(os.environ["PYTHONHASHSEED"]))
        step("loop", lambda: work(participant.sdk), calls="auto")
        step("once", lambda: work(participant.sdk))
        with step("block"):
            work(participant.sdk)
    """,
)


def test_a_bench_file_counts_its_steps_and_task_bodies(pytester: pytest.Pytester) -> None:
    need_valgrind()
    pytester.makepyfile(bench_count=BENCH)
    result = pytester.runpytest_subprocess(
        "--bench",
        "--bench-dry-run",
        "--bench-instructions",
        "--bench-instructions-calls=4",
        "-p",
        "no:cacheprovider",
        "bench_count.py",
    )
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    result.stderr.fnmatch_lines(["*counting instructions*under valgrind*PYTHONHASHSEED=0*"])
    result.stdout.fnmatch_lines(["*instructions*"])
    (run,) = stored_runs(store_path(pytester))
    setup = run.environment.instructions
    assert setup is not None
    assert setup["tool"] == "callgrind"
    assert (setup["hash_seed"], setup["hash_seed_from"], setup["calls"]) == ("0", "benchsdk", 4)
    assert str(setup["valgrind"]).startswith("valgrind-")
    assert setup["excluded"] == "allocators"  # the heap's state moves what they execute
    records = stored_records(store_path(pytester), run.run_id)
    per_call: dict[str, list[float]] = {}
    for participant, wires in records.items():
        for wire in wires:
            data = wire["data"]
            assert data["seed"] == 0  # the hash seed reached the measured process
            body = data["instructions"]
            steps = {step["name"]: step.get("data") or {} for step in wire["steps"]}
            assert steps["loop"]["calls"] == 4  # counted calls replace the time calibration
            for name in ("loop", "once", "block"):
                assert steps[name]["instructions"] > 0, (participant, name)
            # The body holds its steps: the loop's warm call and 4 counted ones, the others.
            assert body > 5 * steps["loop"]["instructions"]
            per_call.setdefault(participant, []).append(steps["loop"]["instructions"])
    # Ten times the work counts about ten times the instructions.
    ratio = min(per_call["large"]) / max(per_call["small"])
    assert 7 < ratio < 11, per_call


SUITE = """
import pytest

def work(n):
    return sum(i * i for i in range(n))

def test_called(benchmark):
    assert benchmark(work, 1000) == work(1000)

def test_pedantic(benchmark):
    benchmark.pedantic(work, args=(1000,), rounds=2, iterations=3)

@pytest.mark.benchmark
def test_marker_alone():
    assert work(1000) > 0
"""


def test_benchmarked_tests_count_each_shape(pytester: pytest.Pytester) -> None:
    need_valgrind()
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest_subprocess(
        "--bench", "--bench-dry-run", "--bench-instructions", "-p", "no:cacheprovider"
    )
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    (run,) = stored_runs(store_path(pytester))
    records = stored_records(store_path(pytester), run.run_id)
    counts = {name: wires[0]["data"]["instructions"] for name, wires in records.items()}
    assert set(counts) == {"test_called", "test_pedantic", "test_marker_alone"}
    assert len(counts["test_pedantic"]) == 2  # one figure a round
    assert all(value > 0 for values in counts.values() for value in values)
    # The same function, the same count per call within a small margin, whatever the shape.
    (called,) = counts["test_called"]
    assert all(abs(v - called) / called < 0.05 for v in counts["test_pedantic"]), counts


def _without_valgrind_path(tmp_path: Path) -> str:
    # A PATH holding the C compiler (for the helper) but no valgrind.
    folder = tmp_path / "bin"
    folder.mkdir()
    for program in ("cc", "gcc", "as", "ld"):
        found = shutil.which(program)
        if found is not None:
            (folder / program).symlink_to(found)
    return str(folder)


def test_without_valgrind_the_session_says_what_to_install(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    if shutil.which("cc") is None and not os.environ.get("CI"):
        pytest.skip("no C compiler (the helper is built before valgrind is looked for)")
    pytester.makepyfile(bench_count=BENCH)
    monkeypatch.setenv("PATH", _without_valgrind_path(tmp_path))
    result = pytester.runpytest_subprocess(
        "--bench", "--bench-dry-run", "--bench-instructions", "bench_count.py"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--bench-instructions counts instructions under Valgrind's callgrind*valgrind was "
         "not found on PATH*apt-get install valgrind*"]
    )  # fmt: skip


def test_without_a_compiler_the_session_says_what_to_install(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytester.makepyfile(bench_count=BENCH)
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # nothing built yet
    result = pytester.runpytest_subprocess(
        "--bench", "--bench-dry-run", "--bench-instructions", "bench_count.py"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*needs a C compiler*no-such-cc*apt-get install gcc*"])


def test_a_session_inside_another_program_is_told_to_run_as_a_command(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(bench_count=BENCH)
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "--bench-instructions", "bench_count.py"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*does not run under callgrind*run pytest as a command*"])


LOOP = bench(
    'participants=["squares"], iterations=3',
    """
    import os

    N = int(os.environ.get("LOOP_N", "3000"))

    def work():
        total = 0
        for i in range(N):
            total += i * i
        return total

    @define_task
    def task():
        work()
    """,
)


def test_one_percent_more_work_fails_a_count_comparison_and_the_same_work_passes(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 45's verdict on counts, end to end: a baseline saved in one session; the next
    session's loop 1 % longer is a regression of ``instructions`` (judged by default in this
    mode, on the counts' own spread); the same loop again is unchanged."""
    need_valgrind()
    pytester.makepyfile(bench_loop=LOOP)
    common = ("--bench", "--bench-instructions", "-p", "no:cacheprovider", "bench_loop.py")
    saved = pytester.runpytest_subprocess(*common, "--bench-save=main")
    assert saved.ret == 0, saved.stdout.str() + saved.stderr.str()

    monkeypatch.setenv("LOOP_N", "3030")
    longer = pytester.runpytest_subprocess(*common, "--bench-compare=main", "--bench-compare-fail")
    assert longer.ret == 1, longer.stdout.str()
    longer.stdout.fnmatch_lines(
        [
            "regressed (--bench-compare-fail): demo: squares instructions median: *",
            "*Noise: counts (instructions): judged on their own spread*",
            "*squares*instructions*median*+1.?%*regressed*count, *",
        ]
    )

    monkeypatch.setenv("LOOP_N", "3000")
    same = pytester.runpytest_subprocess(*common, "--bench-compare=main", "--bench-compare-fail")
    assert same.ret == 0, same.stdout.str()
    same.stdout.fnmatch_lines(["*squares*instructions*median*unchanged*count, *"])
