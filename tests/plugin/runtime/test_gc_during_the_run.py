"""While bench items run, what collection made is out of the cyclic GC's reach (``gc.freeze``),
and back in it when the session ends; a bench file's items are frozen as soon as they are made
(with the GC paused while they are), and the GC runs again afterwards; what the run keeps is
frozen as it runs, and no garbage cycle an iteration leaves is; a session without bench items,
or a process that froze objects of its own, or turned its GC off, is left as it is."""

from __future__ import annotations

import pytest

from helpers.sessions import bench, read_json

#: The task measures how many objects are frozen while it runs.
BENCH = bench(
    'participants=[Participant("p")], iterations=3',
    """
    import gc

    @define_task
    def task(measure):
        measure(frozen=gc.get_freeze_count(), enabled=int(gc.isenabled()))
    """,
)

#: Reports the frozen count once pytest is done with the session (every plugin unconfigured).
CONFTEST = """
import atexit
import gc

atexit.register(lambda: print(f"frozen at exit: {gc.get_freeze_count()}"))
"""


def _configuring(statement: str) -> str:
    """The conftest that reports at exit, and runs ``statement`` when pytest configures."""
    return f"{CONFTEST}\ndef pytest_configure(config):\n    {statement}\n"


def _measured_in_tasks(pytester: pytest.Pytester, key: str) -> list[float]:
    """What the task measured under ``key`` (``frozen``, ``enabled``), iteration by iteration."""
    (entry,) = read_json(pytester.path / "run.json")["benchmarks"]
    (participant,) = entry["participants"]
    return [r["data"][key] for r in participant["records"]]


@pytest.mark.slow
def test_the_collected_session_is_frozen_while_bench_items_run(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(bench_gc=BENCH)
    result = pytester.runpytest_subprocess("--bench", "--bench-dry-run", "--bench-json", "run.json")
    result.assert_outcomes(passed=3)
    frozen = _measured_in_tasks(pytester, "frozen")
    assert len(frozen) == 3
    # Every module, item and fixture definition of the session: thousands of objects.
    assert min(frozen) > 1000
    assert _measured_in_tasks(pytester, "enabled") == [1, 1, 1]
    result.stdout.fnmatch_lines(["frozen at exit: 0"])


@pytest.mark.slow
def test_a_bench_files_items_are_frozen_as_soon_as_they_are_made(
    pytester: pytest.Pytester,
) -> None:
    # Seen by the next module's collection: before the session's own freeze at its end.
    pytester.makeconftest(
        CONFTEST
        + """
def pytest_collectstart(collector):
    if collector.name == "bench_later.py":
        print(f"frozen before the next file: {gc.get_freeze_count()} enabled: {gc.isenabled()}")
"""
    )
    pytester.makepyfile(bench_gc=BENCH, bench_later=BENCH.replace('"p"', '"q"'))
    result = pytester.runpytest_subprocess("--bench", "--bench-dry-run", "-s")
    result.assert_outcomes(passed=6)
    line = next(x for x in result.stdout.lines if "frozen before the next file: " in x)
    frozen, _, enabled = line.rpartition("frozen before the next file: ")[2].partition(" enabled: ")
    assert int(frozen) > 1000
    assert enabled == "True"
    result.stdout.fnmatch_lines(["frozen at exit: 0"])


@pytest.mark.slow
def test_a_process_that_turned_its_gc_off_keeps_it_off(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(_configuring("gc.disable()"))
    pytester.makepyfile(bench_gc=BENCH)
    result = pytester.runpytest_subprocess("--bench", "--bench-dry-run", "--bench-json", "run.json")
    result.assert_outcomes(passed=3)
    assert _measured_in_tasks(pytester, "enabled") == [0, 0, 0]


@pytest.mark.slow
def test_a_session_without_bench_items_keeps_the_gc_as_it_is(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        test_plain="""
        import gc

        def test_nothing_frozen():
            assert gc.get_freeze_count() == 0
        """
    )
    result = pytester.runpytest_subprocess("--bench", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["frozen at exit: 0"])


@pytest.mark.slow
def test_objects_the_process_froze_itself_stay_frozen(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(_configuring("gc.freeze()  # a process that forks workers, say"))
    pytester.makepyfile(bench_gc=BENCH)
    result = pytester.runpytest_subprocess("--bench", "--bench-dry-run")
    result.assert_outcomes(passed=3)
    line = next(x for x in result.stdout.lines if x.startswith("frozen at exit: "))
    assert int(line.rpartition(" ")[2]) > 0


#: Freezes what the run keeps every 5 items (instead of every 1,000).
SETTLE_OFTEN = """
from pytest_benchsdk._plugin.runtime import heap

heap.SETTLE_EVERY = 5
"""


@pytest.mark.slow
def test_what_the_run_keeps_is_frozen_as_it_runs(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST + SETTLE_OFTEN)
    pytester.makepyfile(bench_gc=BENCH.replace("iterations=3", "iterations=12"))
    result = pytester.runpytest_subprocess("--bench", "--bench-dry-run", "--bench-json", "run.json")
    result.assert_outcomes(passed=12)
    frozen = _measured_in_tasks(pytester, "frozen")
    # Each freeze adds what the items before it left (their reports, at least).
    # Each freeze adds what the items before it left (their reports, at least); between two
    # freezes nothing is added (objects frozen and then released leave).
    for before, at in ((4, 5), (9, 10)):
        assert frozen[at] - frozen[before] > 30, frozen
        assert max(frozen[before - 3 : before + 1]) <= frozen[before - 4], frozen
    result.stdout.fnmatch_lines(["frozen at exit: 0"])


@pytest.mark.slow
def test_the_garbage_cycles_iterations_leave_are_never_frozen(pytester: pytest.Pytester) -> None:
    # Each iteration leaves a reference cycle behind (garbage at once): a freeze right after an
    # iteration must not keep its cycle, so every one is collected before the session ends.
    pytester.makeconftest(
        CONFTEST
        + SETTLE_OFTEN
        + """
FINALIZED = []

def pytest_sessionfinish(session):
    gc.collect()  # frozen objects are out of its reach
    print(f"cycles collected: {len(FINALIZED)}")
"""
    )
    pytester.makepyfile(
        bench_cycles=bench(
            'participants=[Participant("p")], iterations=12',
            """
            import weakref

            import conftest


            class Node:
                pass


            @define_task
            def task():
                node = Node()
                node.me = node
                weakref.finalize(node, conftest.FINALIZED.append, 1)
            """,
        )
    )
    result = pytester.runpytest_subprocess("--bench", "--bench-dry-run", "-s")
    result.assert_outcomes(passed=12)
    result.stdout.fnmatch_lines(["*cycles collected: 12"])
