"""Concurrency through the plugin: overlap, ordering, stagger order and early stops.

Behaviour only (who overlaps, in which order, what is cancelled); timing figures live in
``benchmarks/``. The only clock-based assertion is a generous bound on how quickly a stopped
session ends, far from what a correct run takes.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from helpers.sessions import bench, store_path, stored_records, stored_runs

#: An async task that records when it started and ended (monotonic, shared by all iterations).
SPAN_TASK = """
import asyncio, time

@define_task
async def task(participant, task_index, measure):
    started = time.monotonic()
    await asyncio.sleep(0.15)
    measure(start=started, end=time.monotonic())
"""

SYNC_SPAN_TASK = """
import time

@define_task
def task(participant, task_index, measure):
    started = time.monotonic()
    time.sleep(0.15)
    measure(start=started, end=time.monotonic())
"""


def _spans(pytester: pytest.Pytester, *args: str) -> dict[str, list[dict[str, float]]]:
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run", *args)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    (run,) = stored_runs(store_path(pytester))
    return {
        participant: [r["data"] for r in records]
        for participant, records in stored_records(store_path(pytester), run.run_id).items()
    }


def _max_in_flight(spans: list[dict[str, float]]) -> int:
    events = sorted([(s["start"], 1) for s in spans] + [(s["end"], -1) for s in spans])
    level = peak = 0
    for _, delta in events:
        level += delta
        peak = max(peak, level)
    return peak


@pytest.mark.parametrize("task", [SPAN_TASK, SYNC_SPAN_TASK], ids=["async", "sync"])
def test_iterations_overlap_up_to_the_concurrency(pytester: pytest.Pytester, task: str) -> None:
    pytester.makepyfile(
        bench_x=bench('participants=[Participant("p1")], iterations=6, concurrency=3', task)
    )
    spans = _spans(pytester)["p1"]
    assert len(spans) == 6
    assert _max_in_flight(spans) == 3


def test_concurrency_one_never_overlaps(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench('participants=[Participant("p1")], iterations=4', SPAN_TASK))
    spans = _spans(pytester)["p1"]
    assert _max_in_flight(spans) == 1
    assert [s["start"] for s in spans] == sorted(s["start"] for s in spans)


def test_participants_run_one_after_another(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1"), Participant("p2")], iterations=3, concurrency=3',
            SPAN_TASK,
        )
    )
    spans = _spans(pytester)
    assert max(s["end"] for s in spans["p1"]) <= min(s["start"] for s in spans["p2"])


def test_round_mode_runs_every_round_before_the_next(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1"), Participant("p2"), Participant("p3")],\n'
            'iterations=3, concurrency=3, group_by="round"',
            SPAN_TASK,
        )
    )
    spans = _spans(pytester)
    for round_index in range(2):
        this_round_end = max(spans[p][round_index]["end"] for p in spans)
        next_round_start = min(spans[p][round_index + 1]["start"] for p in spans)
        assert this_round_end <= next_round_start
    # Within a round the participants overlap (concurrency 3).
    assert _max_in_flight([spans[p][0] for p in spans]) == 3


def test_round_mode_concurrency_one_interleaves_in_declared_order(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("a"), Participant("b")], iterations=2, group_by="round"',
            SPAN_TASK,
        )
    )
    spans = _spans(pytester)
    order = sorted(
        ((s["start"], p, i) for p, rows in spans.items() for i, s in enumerate(rows)),
    )
    assert [(p, i) for _, p, i in order] == [("a", 0), ("b", 0), ("a", 1), ("b", 1)]


def test_stagger_starts_in_schedule_order_and_spreads_them(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1")], iterations=5, concurrency=5, stagger_delay_ms=60',
            SPAN_TASK,
        )
    )
    starts = [s["start"] for s in _spans(pytester)["p1"]]
    assert starts == sorted(starts)
    # Anchored ramp: iteration i starts no earlier than t0 + i x 60 ms.
    for i, start in enumerate(starts):
        assert start - starts[0] >= i * 0.060 - 0.010


def test_exitfirst_cancels_the_rest_of_a_running_group(pytester: pytest.Pytester) -> None:
    marker = pytester.path / "cancelled.jsonl"
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1")], iterations=6, concurrency=6',
            f"""
            import asyncio, json

            @define_task
            async def task(task_index, measure):
                if task_index == 0:
                    await asyncio.sleep(0.1)
                    raise TaskError("first fails", code="boom")
                try:
                    await asyncio.sleep(60)
                except asyncio.CancelledError:
                    with open({str(marker)!r}, "a") as f:
                        f.write(json.dumps(task_index) + "\\n")
                    raise
                measure(done=True)
            """,
        )
    )
    started = time.monotonic()
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run", "-x")
    elapsed = time.monotonic() - started
    result.assert_outcomes(failed=1)
    # The five 60 s iterations were cancelled, not waited for.
    assert elapsed < 30
    assert sorted(json.loads(line) for line in marker.read_text().splitlines()) == [1, 2, 3, 4, 5]
    (run,) = stored_runs(store_path(pytester))
    assert run.status == "interrupted"
    assert [r["taskIndex"] for r in stored_records(store_path(pytester), run.run_id)["p1"]] == [0]


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_cancels_running_iterations_and_keeps_finished_ones(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1")], iterations=8, concurrency=4',
            """
            import asyncio

            @define_task
            async def task(task_index, measure):
                await asyncio.sleep(0.2 if task_index < 4 else 60)
                measure(i=task_index)
            """,
        )
    )
    # A shell's background jobs ignore SIGINT; give the child the default handler explicitly.
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "--bench", "--bench-dry-run", "-p", "no:cacheprovider"],
        cwd=pytester.path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        runs = stored_runs(store_path(pytester)) if store_path(pytester).exists() else []
        if runs and runs[0].record_count >= 4:
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=45)
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
    assert "KeyboardInterrupt" in out
    (run,) = stored_runs(store_path(pytester))
    assert run.status == "interrupted"
    records = stored_records(store_path(pytester), run.run_id)["p1"]
    assert [r["taskIndex"] for r in records] == [0, 1, 2, 3]


ENVIRONMENT_READERS = bench(
    'participants=[Participant("p1"), Participant("p2")], iterations=60, concurrency=4',
    """
    # Threads take turns as often as CPython allows: the race shows in every run, not only
    # on a loaded machine (without the fix a run counted about a hundred KeyErrors).
    sys.setswitchinterval(1e-6)

    @define_task
    async def task(measure):
        # What httpx.AsyncClient() does (urllib's getproxies): read the whole environment,
        # while pytest's main thread goes from item to item.
        failures = 0
        for _ in range(300):
            try:
                dict(os.environ)
            except KeyError:
                failures += 1
            await asyncio.sleep(0)
        measure(value=1, failures=failures)
    """,
    prelude="import asyncio\nimport os\nimport sys\n",
)


@pytest.mark.slow
def test_iterations_can_read_the_whole_environment_while_pytest_moves_between_items(
    pytester: pytest.Pytester,
) -> None:
    """pytest removes ``PYTEST_CURRENT_TEST`` after each item on the main thread; an iteration
    running meanwhile that iterated ``os.environ`` failed with ``KeyError`` (pytest #10876)."""
    pytester.makepyfile(bench_env=ENVIRONMENT_READERS)
    result = pytester.runpytest_subprocess("--bench", "--bench-dry-run", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=120)
    (run,) = stored_runs(store_path(pytester))
    records = stored_records(store_path(pytester), run.run_id)
    failures = [r["data"]["failures"] for rs in records.values() for r in rs]
    assert len(failures) == 120
    assert sum(failures) == 0


def test_pytest_updates_its_current_test_variable_itself_again_after_a_bench_session(
    pytester: pytest.Pytester,
) -> None:
    from _pytest import runner

    own = runner._update_current_test_var
    pytester.makepyfile(bench_env=bench())
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)
    assert runner._update_current_test_var is own
