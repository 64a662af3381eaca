"""Executor concurrency overhead: how close N iterations in flight get to the ideal makespan.

* 200 async iterations of ``await asyncio.sleep(0.1)`` at concurrency 200 — ideal makespan
  100 ms; target ratio (makespan / ideal) <= 1.10.
* 40 sync iterations of ``time.sleep(0.1)`` at concurrency 20 (each on its own thread) — ideal
  makespan 200 ms; target ratio <= 1.20.

Drives :class:`pytest_benchsdk.executor.Executor` directly (no pytest). Run:
``python benchmarks/perf_concurrency.py [--repeat N]``; prints each figure (best and median of
the repeats) with PASS/FAIL against its target and exits 1 if any median fails.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures as cf
import statistics
import sys
import time
from collections.abc import Callable

from pytest_benchsdk.context import TaskContext
from pytest_benchsdk.executor import Executor, GroupPlan, IterationSpec


def _specs(
    count: int, invoke: Callable[[TaskContext], object], is_async: bool
) -> list[IterationSpec]:
    return [
        IterationSpec(
            key=i,
            participant=None,
            participant_name="perf",
            phase=None,
            task_index=i,
            ordinal=i,
            invoke=invoke,
            is_async=is_async,
        )
        for i in range(count)
    ]


async def _async_sleep(ctx: TaskContext) -> None:
    await asyncio.sleep(0.1)


def _sync_sleep(ctx: TaskContext) -> None:
    time.sleep(0.1)


def makespan_ratio(
    executor: Executor, label: str, count: int, concurrency: int, is_async: bool, ideal_s: float
) -> float:
    invoke = _async_sleep if is_async else _sync_sleep
    plan = GroupPlan(
        group_id=label,
        mode="participant",
        concurrency=concurrency,
        stagger_delay_ms=0,
        iterations=_specs(count, invoke, is_async),
    )
    started = time.perf_counter()
    futures = executor.start_group(plan)
    # One wake-up at the end (not one per future) so the figure is the executor's own makespan.
    cf.wait(list(futures.values()))
    elapsed = time.perf_counter() - started
    for future in futures.values():
        outcome = future.result()
        if outcome.error is not None:
            raise outcome.error
    return elapsed / ideal_s


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per scenario (default 5)")
    args = parser.parse_args(argv)
    scenarios = [
        ("async", 200, 200, True, 0.1, 1.10),
        ("sync", 40, 20, False, 0.2, 1.20),
    ]
    failed = False
    with Executor() as executor:
        executor.loop  # start the loop outside the measurement  # noqa: B018
        for name, count, concurrency, is_async, ideal, target in scenarios:
            ratios = [
                makespan_ratio(executor, f"{name}-{r}", count, concurrency, is_async, ideal)
                for r in range(args.repeat)
            ]
            median = statistics.median(ratios)
            verdict = "PASS" if median <= target else "FAIL"
            failed |= verdict == "FAIL"
            print(
                f"{name:5}: {count} iterations x {int(ideal * 1000 * concurrency / count)} ms "
                f"at concurrency {concurrency}: makespan/ideal median {median:.3f} "
                f"(best {min(ratios):.3f}, worst {max(ratios):.3f}, n={len(ratios)}) "
                f"target <= {target:.2f} {verdict}"
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
