"""Warm-up does what it says: it runs whenever an item of its participant (its phase) runs, also
for one selected item and ``--lf``; each phase's warm-up runs right before that phase, a phase
can opt out, a cold-named phase is measured cold, and ``-k warm`` leaves cold's warm-up out."""

from __future__ import annotations

import pytest

from helpers.sessions import bench, read_json, store_path, stored_runs
from pytest_benchsdk import ResultStore

#: Warm-up iterations measure their (negative) task index, so they are easy to tell apart.
TWO = bench(
    'participants=["json", "pickle"], iterations=5, warmup=2',
    """
    import os

    @define_task
    def task(participant, task_index, measure):
        if os.environ.get("BOOM") == f"{participant.name}-{task_index}":
            raise RuntimeError("boom")
        measure(value=task_index)
    """,
)

PHASES = bench(
    'participants=["p1"],\nphases=[Phase("cold", 2, warmup=1), Phase("warm", 2)], warmup=1'
)


def _run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, list[str]]:
    """A session and the node ids it ran, in the order they ran."""
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run", "-v", *args)
    ran = []
    for line in result.outlines:
        nodeid, _, outcome = line.partition(" ")
        if "::" in nodeid and outcome.startswith(("PASSED", "FAILED", "SKIPPED")):
            ran.append(nodeid)
    return result, ran


def _collected(pytester: pytest.Pytester, *args: str) -> list[str]:
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "--collect-only", "-q", *args
    )
    return [line for line in result.outlines if "::" in line]


def test_one_selected_item_runs_its_participants_warmup_first(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=TWO)
    result, ran = _run(pytester, "bench_x.py::task[pickle-3]")
    assert ran == [
        "bench_x.py::warmup[pickle-0]",
        "bench_x.py::warmup[pickle-1]",
        "bench_x.py::task[pickle-3]",
    ]
    result.stdout.fnmatch_lines(
        [
            "*collected 1 item",
            "benchsdk: also running 2 warm-up item(s) (they run before their phase)",
            "  Warm-up: 2 iteration(s) per participant first, never scored",
        ]
    )
    (run,) = stored_runs(store_path(pytester))
    with ResultStore(store_path(pytester)) as store:
        warmup = {
            p.participant: [r.task_index for r in p.records]
            for p in store.warmup_records(run.run_id)
        }
        measured = {
            p.participant: [r.task_index for r in p.records]
            for p in store.participant_records(run.run_id)
        }
    assert warmup == {"pickle": [-2, -1]}
    assert measured == {"pickle": [3]}


def test_lf_reruns_a_failed_iteration_after_its_warmup(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(bench_x=TWO)
    monkeypatch.setenv("BOOM", "json-4")
    _run(pytester)[0].assert_outcomes(passed=13, failed=1)
    monkeypatch.delenv("BOOM")
    rerun, ran = _run(pytester, "--lf")
    assert ran == [
        "bench_x.py::warmup[json-0]",
        "bench_x.py::warmup[json-1]",
        "bench_x.py::task[json-4]",
    ]
    rerun.assert_outcomes(passed=3)


def test_k_warm_runs_the_warm_phase_with_its_own_warmup_only(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=PHASES)
    result, ran = _run(pytester, "-k", "warm")
    assert ran == [
        "bench_x.py::warmup[p1-warm-0]",
        "bench_x.py::task[p1-warm-2]",
        "bench_x.py::task[p1-warm-3]",
    ]
    result.stdout.fnmatch_lines(
        [
            "*collected 6 items / 3 deselected / 3 selected",
            "benchsdk: leaving out 1 warm-up item(s) of phases not selected",
        ]
    )
    assert _run(pytester, "-k", "cold")[1] == [
        "bench_x.py::warmup[p1-cold-0]",
        "bench_x.py::task[p1-cold-0]",
        "bench_x.py::task[p1-cold-1]",
    ]
    # Warm-up items on their own run as chosen.
    assert _run(pytester, "-k", "warmup")[1] == [
        "bench_x.py::warmup[p1-cold-0]",
        "bench_x.py::warmup[p1-warm-0]",
    ]


def test_a_cold_named_phase_is_measured_cold_and_a_phase_can_opt_out(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        bench_x=bench('participants=["p1"],\nphases=[Phase("cold", 2), Phase("warm", 1)], warmup=2')
    )
    assert _collected(pytester) == [
        "bench_x.py::task[p1-cold-0]",
        "bench_x.py::task[p1-cold-1]",
        "bench_x.py::warmup[p1-warm-0]",
        "bench_x.py::warmup[p1-warm-1]",
        "bench_x.py::task[p1-warm-2]",
    ]
    result, _ = _run(pytester)
    result.stdout.fnmatch_lines(
        [
            "  Warm-up: per participant right before each phase, never scored: "
            "cold 0 (named cold), warm 2"
        ]
    )
    # Asked for on the phase, a cold phase is warmed; warmup=0 opts any phase out.
    pytester.makepyfile(
        bench_x=bench(
            'participants=["p1"],\n'
            'phases=[Phase("cold", 1, warmup=1), Phase("steady", 1, warmup=0)], warmup=2'
        )
    )
    assert _collected(pytester) == [
        "bench_x.py::warmup[p1-cold-0]",
        "bench_x.py::task[p1-cold-0]",
        "bench_x.py::task[p1-steady-1]",
    ]
    # Only cold phases and a default: the header says why nothing warms up.
    pytester.makepyfile(
        bench_x=bench('participants=["p1"],\nphases=[Phase("Cold_start", 2)], warmup=3')
    )
    result, ran = _run(pytester)
    result.stdout.fnmatch_lines(
        ["  Warm-up: none: Cold_start 0 (named cold); Phase(name, n, warmup=N) warms a cold phase"]
    )
    assert ran == ["bench_x.py::task[p1-Cold_start-0]", "bench_x.py::task[p1-Cold_start-1]"]


def test_a_later_phases_warmup_runs_between_the_phases(pytester: pytest.Pytester) -> None:
    # concurrency 3 runs a phase's iterations as one pool: the warm phase's warm-up must wait
    # for the cold phase's pool, and the warm phase's pool for its warm-up.
    pytester.makepyfile(
        bench_x=bench(
            'participants=["p1", "p2"], concurrency=3,\n'
            'phases=[Phase("cold", 3), Phase("warm", 3)], warmup=2',
            """
            import asyncio
            import itertools

            EVENTS = itertools.count()

            @define_task
            async def task(measure):
                start = next(EVENTS)
                await asyncio.sleep(0.01)
                measure(start=start, end=next(EVENTS))
            """,
        )
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run", "--bench-json", "out.json")
    result.assert_outcomes(passed=16)
    run = read_json(pytester.path / "out.json")["benchmarks"][0]
    for participant in ("p1", "p2"):
        (records,) = (p["records"] for p in run["participants"] if p["participant"] == participant)
        (warmup,) = (p["records"] for p in run["warmup"] if p["participant"] == participant)
        cold = [r["data"] for r in records if r["data"]["phase"] == "cold"]
        warm = [r["data"] for r in records if r["data"]["phase"] == "warm"]
        warmup_data = [r["data"] for r in warmup]
        assert [r["data"]["phase"] for r in warmup] == ["warm", "warm"]
        assert max(r["end"] for r in cold) < min(r["start"] for r in warmup_data)
        assert max(r["end"] for r in warmup_data) < min(r["start"] for r in warm)
        # the cold phase still ran as one pool of 3
        assert max(r["start"] for r in cold) < min(r["end"] for r in cold)


def test_round_mode_warms_each_phase_before_its_rounds(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(
            'participants=["a", "b"], group_by="round",\n'
            'phases=[Phase("one", 1), Phase("two", 1, warmup=1)]'
        )
    )
    assert _collected(pytester) == [
        "bench_x.py::task[a-one-0]",
        "bench_x.py::task[b-one-0]",
        "bench_x.py::warmup[a-two-0]",
        "bench_x.py::warmup[b-two-0]",
        "bench_x.py::task[a-two-1]",
        "bench_x.py::task[b-two-1]",
    ]
    assert _run(pytester, "bench_x.py::task[b-two-1]")[1] == [
        "bench_x.py::warmup[b-two-0]",
        "bench_x.py::task[b-two-1]",
    ]
