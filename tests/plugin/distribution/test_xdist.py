"""Under pytest-xdist the controller receives the same records and computes the same scores."""

from __future__ import annotations

import pytest

from helpers.sessions import SCORING, bench, read_json, stable_record, store_path, stored_runs

pytest.importorskip("xdist")

# Deterministic measures (from participant and index only), so scores are equal across runs.
SOURCE_A = bench(
    'participants=[Participant("p1"), Participant("p2"), Participant("p3")],\n'
    f'phases=[Phase("cold", 1), Phase("warm", 2)],\nscoring={SCORING}',
    """
    @define_task
    def task(participant, phase, task_index, step, measure, log):
        base = {"p1": 20, "p2": 35, "p3": 60}[participant.name]
        step("work", lambda: None)
        measure(value=base + task_index)
        log("iteration", {"i": task_index})
        if participant.name == "p3" and task_index == 2:
            raise TaskError("p3 broke", code="broken", data={"at": task_index})
    """,
    slug="xdist-a",
)

SOURCE_B = bench(
    'participants=[Participant("q1"), Participant("q2")], iterations=3, concurrency=2, '
    f'group_by="round",\nscoring={SCORING}',
    """
    import asyncio

    @define_task
    async def task(participant, task_index, measure):
        await asyncio.sleep(0.002)
        measure(value={"q1": 10, "q2": 40}[participant.name] + 2 * task_index)
    """,
    slug="xdist-b",
)


def _summary(doc: dict) -> dict:
    """Per benchmark: stable records per participant, scores, skipped and errors."""
    return {
        run["benchmarkSlug"]: {
            "records": {
                p["participant"]: [stable_record(r) for r in p["records"]]
                for p in run["participants"]
            },
            "scores": run["scores"],
            "skipped": run["skipped"],
            "errors": run["errors"],
            "participants": run["config"]["participants"],
        }
        for run in doc["benchmarks"]
    }


def _run(pytester: pytest.Pytester, name: str, *args: str) -> tuple[pytest.RunResult, dict]:
    out = pytester.path / f"{name}.json"
    result = pytester.runpytest_inprocess(
        "-p", "xdist", "--bench", "--bench-dry-run", "--bench-json", str(out), *args
    )
    return result, read_json(out)


def _compare_serial_and_parallel(pytester: pytest.Pytester, *parallel_args: str) -> None:
    pytester.makepyfile(bench_a=SOURCE_A, bench_b=SOURCE_B)
    serial, serial_doc = _run(pytester, "serial", "-n", "0")
    serial.assert_outcomes(passed=14, failed=1)
    parallel, parallel_doc = _run(pytester, "parallel", "-n", "2", *parallel_args)
    parallel.assert_outcomes(passed=14, failed=1)
    assert "2 workers" in parallel.stdout.str()
    _each_participant_on_one_worker(parallel, {"p1", "p2", "p3"})

    expected = _summary(serial_doc)
    assert set(expected) == {"xdist-a", "xdist-b"}
    assert _summary(parallel_doc) == expected
    # sanity: the comparison covers real content
    a = expected["xdist-a"]
    assert [r["taskIndex"] for r in a["records"]["p3"]] == [0, 1, 2]
    assert a["records"]["p3"][2]["errorCode"] == "broken"
    assert [row["provider"] for row in a["scores"]] == ["p1", "p2", "p3"]
    assert [row["provider"] for row in expected["xdist-b"]["scores"]] == ["q1", "q2"]

    # the controller alone wrote the store: one run per file per session, with every record
    runs = stored_runs(store_path(pytester))
    assert sorted((r.benchmark_slug, r.record_count) for r in runs) == [
        ("xdist-a", 9),
        ("xdist-a", 9),
        ("xdist-b", 6),
        ("xdist-b", 6),
    ]
    # and printed the summary
    parallel.stdout.fnmatch_lines(["*= benchmarks =*", "Demo (xdist-a) [[]bench_a.py[]]"])


@pytest.mark.slow
def test_xdist_load_gives_the_same_records_and_scores(pytester: pytest.Pytester) -> None:
    # --dist load needs concurrency 1 (bench_b declares 2)
    pytester.makepyfile(bench_a=SOURCE_A, bench_b=SOURCE_B)
    serial, serial_doc = _run(pytester, "serial", "-n", "0", "--bench-concurrency=1")
    serial.assert_outcomes(passed=14, failed=1)
    parallel, parallel_doc = _run(
        pytester, "parallel", "-n", "2", "--dist", "load", "--bench-concurrency=1"
    )
    parallel.assert_outcomes(passed=14, failed=1)
    expected = _summary(serial_doc)
    assert set(expected) == {"xdist-a", "xdist-b"}
    assert expected["xdist-a"]["scores"] is not None
    assert _summary(parallel_doc) == expected
    # --bench-concurrency 1 lets a file that declares 2 run under --dist load, scored.
    b = next(run for run in parallel_doc["benchmarks"] if run["benchmarkSlug"] == "xdist-b")
    assert [r["provider"] for r in b["scores"]] == ["q1", "q2"]
    runs = stored_runs(store_path(pytester))
    assert sorted((r.benchmark_slug, r.record_count) for r in runs) == [
        ("xdist-a", 9),
        ("xdist-a", 9),
        ("xdist-b", 6),
        ("xdist-b", 6),
    ]


def _each_participant_on_one_worker(result: pytest.RunResult, participants: set[str]) -> None:
    """Under -v: each participant's items of bench_a.py passed on one worker, under its plain
    id (the group never shows in an id)."""
    workers: dict[str, set[str]] = {}
    for line in result.outlines:
        if line.startswith("[gw") and "PASSED" in line and "bench_a.py::" in line:
            worker = line.split("]", 1)[0].lstrip("[")
            participant = line.split("::task[", 1)[1].split("-", 1)[0]
            workers.setdefault(participant, set()).add(worker)
    assert set(workers) == participants
    assert all(len(ws) == 1 for ws in workers.values()), workers
    result.stdout.fnmatch_lines(["[[]gw*] PASSED * bench_a.py::task[[]p1-cold-0[]]*"])
    assert "@" not in result.stdout.str()


@pytest.mark.slow
def test_xdist_loadgroup_gives_the_same_records_and_scores(pytester: pytest.Pytester) -> None:
    # Which worker runs what is decided in tests/plugin/distribution/test_scheduling.py on
    # fake nodes; here a real session keeps each participant on one worker end to end.
    _compare_serial_and_parallel(pytester, "--dist", "loadgroup", "-v")


@pytest.mark.slow
def test_xdist_failure_output_is_the_same(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_a=SOURCE_A)
    result, _ = _run(pytester, "parallel", "-n", "2")
    result.assert_outcomes(passed=8, failed=1)
    result.stdout.fnmatch_lines(["[[]TaskError (broken)[]] p3 broke", '  data: {"at":2}'])
    result.stdout.fnmatch_lines(["    1  p1 *", "    2  p2 *", "    3  p3 *"])
