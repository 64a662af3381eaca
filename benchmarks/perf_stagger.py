"""Executor stagger precision: how close iterations start to their anchored ramp slots.

100 async iterations at concurrency 100 with ``stagger_delay_ms=10``: iteration ``i`` is
scheduled at ``t0 + i × 10 ms`` (``t0`` = the first iteration's start). Reports the p50 / p99 /
max of ``|actual start − scheduled start|`` in ms; target p99 <= 2 ms. The task records its
start with the executor's clock as its first statement.

Run: ``python benchmarks/perf_stagger.py [--repeat N]``; exits 1 if the median p99 fails.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys

from pytest_benchsdk._base.clock import CLOCK
from pytest_benchsdk.context import TaskContext
from pytest_benchsdk.executor import Executor, GroupPlan, IterationSpec

COUNT = 100
STAGGER_MS = 10.0
TARGET_P99_MS = 2.0


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    rank = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[rank]


def run_once(executor: Executor, label: str) -> list[float]:
    starts: dict[int, float] = {}

    async def task(ctx: TaskContext) -> None:
        starts[ctx.task_index] = CLOCK.monotonic()
        await asyncio.sleep(0.005)

    specs = [
        IterationSpec(
            key=i,
            participant=None,
            participant_name="perf",
            phase=None,
            task_index=i,
            ordinal=i,
            invoke=task,
            is_async=True,
        )
        for i in range(COUNT)
    ]
    plan = GroupPlan(
        group_id=label,
        mode="participant",
        concurrency=COUNT,
        stagger_delay_ms=STAGGER_MS,
        iterations=specs,
    )
    for future in executor.start_group(plan).values():
        future.result()
    t0 = starts[0]
    return [abs(starts[i] - (t0 + i * STAGGER_MS / 1000.0)) * 1000.0 for i in range(COUNT)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs (default 5)")
    args = parser.parse_args(argv)
    p99s: list[float] = []
    with Executor() as executor:
        executor.loop  # start the loop outside the measurement  # noqa: B018
        for r in range(args.repeat):
            errors = run_once(executor, f"stagger-{r}")
            p99 = _percentile(errors, 0.99)
            p99s.append(p99)
            print(
                f"run {r + 1}: |start - slot| p50 {_percentile(errors, 0.5):.3f} ms, "
                f"p99 {p99:.3f} ms, max {max(errors):.3f} ms"
            )
    median = statistics.median(p99s)
    verdict = "PASS" if median <= TARGET_P99_MS else "FAIL"
    print(
        f"stagger {STAGGER_MS:g} ms x {COUNT} at concurrency {COUNT}: p99 error median "
        f"{median:.3f} ms (best {min(p99s):.3f}, worst {max(p99s):.3f}) "
        f"target <= {TARGET_P99_MS:g} ms {verdict}"
    )
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
