"""``--bench-instructions`` under pytest-xdist (``-n 2``): the workers run under callgrind (the
session re-runs itself under valgrind, which traces the workers it starts) and each counts its
own measured regions; the records reach the controller with their counts, a benchmarked
test's too (a count does not mind the neighbours: no side-by-side note).

A real session under valgrind (the subject: the process replaces itself), tens of seconds.
"""

from __future__ import annotations

import pytest

from helpers.sessions import bench, store_path, stored_records, stored_runs
from helpers.valgrind import need_valgrind

pytest.importorskip("xdist")
pytestmark = pytest.mark.slow

BENCH = bench(
    'participants=[Participant("small", sdk=300), Participant("large", sdk=3000)], iterations=2',
    """
    import os

    def work(n):
        return sum(i * i for i in range(n))

    @define_task
    def task(participant, step, measure):
        measure(worker=os.environ.get("PYTEST_XDIST_WORKER", "controller"))
        step("loop", lambda: work(participant.sdk), calls="auto")
    """,
)

SUITE = """
def test_counted(benchmark):
    benchmark(sum, range(100))
"""


def test_the_workers_count_and_the_controller_keeps_their_counts(
    pytester: pytest.Pytester,
) -> None:
    need_valgrind()
    pytester.makepyfile(bench_count=BENCH, test_suite=SUITE)
    result = pytester.runpytest_subprocess(
        "--bench",
        "--bench-dry-run",
        "--bench-instructions",
        "--bench-instructions-calls=3",
        "-n",
        "2",
        "-p",
        "no:cacheprovider",
    )
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    runs = {run.benchmark_slug: run for run in stored_runs(store_path(pytester))}
    run = runs.pop("demo")
    assert run.environment.instructions is not None
    records = stored_records(store_path(pytester), run.run_id)
    loops: dict[str, list[float]] = {}
    workers = set()
    for participant, wires in records.items():
        for wire in wires:
            workers.add(wire["data"]["worker"])
            assert wire["data"]["instructions"] > 0  # the task body, counted in the worker
            (loop,) = wire["steps"]
            assert loop["data"]["calls"] == 3
            loops.setdefault(participant, []).append(loop["data"]["instructions"])
    assert workers, records
    assert workers <= {"gw0", "gw1"}, workers  # measured in the workers
    ratio = min(loops["large"]) / max(loops["small"])
    assert 7 < ratio < 11, loops
    # The terminal shows the counts as counts.
    result.stdout.fnmatch_lines(["*instructions*instr*"])
    # The benchmarked test is counted in a worker too, and kept by the controller.
    (group,) = runs.values()
    ((counted,),) = stored_records(store_path(pytester), group.run_id).values()
    assert min(counted["data"]["instructions"]) > 0, counted  # per round
    assert "side by side" not in result.stdout.str()
