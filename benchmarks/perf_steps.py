"""The measurement floor: what a step and an iteration cost, against a ``perf_counter_ns()`` pair.

Every latency the runner records includes some of the runner's own work. This script measures
how much, for the smallest tasks there are, and prints it in µs and as a multiple of the
reference: the median reading of two back-to-back ``time.perf_counter_ns()`` calls (what an
empty timed region reads on this interpreter).

Scenarios (each a benchmark of its own; ``N`` iterations each):

* an empty task (sync / async): its recorded ``latency_ms`` (target: sync <= 3 µs);
* ten empty steps per task, ``step("s", noop)`` / ``with step("s"):`` (sync), ``await
  step("s", noop)`` / ``await step("s", async_noop)`` / ``async with step("s"):`` (async), and
  the sync function form with ``capture_output=False``: the cost of one step is (median task
  latency - median empty-task latency) / 10, what a step adds to the task that takes it
  (targets: sync <= 3 µs, async <= 6 µs); the step's own recorded latency is printed beside;
* a 200 µs busy-wait task (``while perf_counter_ns() < end``), sync and async: its recorded
  latency against 200 µs (target: within 2 %);
* the same empty and ten-step tasks at concurrency 4 (sync tasks then run on threads).

Both paths users have: in-process through the engine (``pytest_benchsdk.executor.Executor``,
``run_inline`` like the plugin at concurrency 1), and through real pytest sessions
(``pytest --bench --bench-dry-run --bench-no-store --bench-json``, one bench file per
scenario, the records read back from the JSON; the store is left out: it is written after each
iteration, outside its time). Each is repeated; figures are medians of the repeats' medians
(best and worst repeat beside). Records keep nanoseconds (before issue 30 they kept 0.001 ms,
so a task's figure resolved 1 µs and a per-step figure 0.1 µs). Targets are checked on both
paths; exits 1 if any fails.

Run: ``python benchmarks/perf_steps.py [--repeat N] [--iterations N] [--no-pytest]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs

from pytest_benchsdk.context import TaskContext
from pytest_benchsdk.executor import Executor, GroupPlan, IterationSpec

STEPS = 10
BUSY_NS = 200_000
TARGET_SYNC_STEP_US = 3.0
TARGET_ASYNC_STEP_US = 6.0
TARGET_EMPTY_TASK_US = 3.0
TARGET_BUSY_ERROR = 0.02


def pair_ns(samples: int = 200_000) -> float:
    """Median of ``b - a`` for ``a = perf_counter_ns(); b = perf_counter_ns()``."""
    clock = time.perf_counter_ns
    deltas = []
    for _ in range(samples):
        a = clock()
        b = clock()
        deltas.append(b - a)
    return float(statistics.median(deltas))


# ------------------------------------------------------------------------ the scenarios


def _noop() -> None:
    pass


async def _async_noop() -> None:
    pass


def _busy() -> None:
    clock = time.perf_counter_ns
    end = clock() + BUSY_NS
    while clock() < end:
        pass


def _empty(ctx: TaskContext) -> None:
    pass


async def _empty_async(ctx: TaskContext) -> None:
    pass


def _fn_steps(ctx: TaskContext) -> None:
    step = ctx.step
    for _ in range(STEPS):
        step("s", _noop)


def _fn_steps_no_capture(ctx: TaskContext) -> None:
    step = ctx.step
    for _ in range(STEPS):
        step("s", _noop, capture_output=False)


def _block_steps(ctx: TaskContext) -> None:
    step = ctx.step
    for _ in range(STEPS):
        with step("s"):
            pass


async def _fn_steps_async(ctx: TaskContext) -> None:
    step = ctx.step
    for _ in range(STEPS):
        await step("s", _noop)


async def _coro_steps_async(ctx: TaskContext) -> None:
    step = ctx.step
    for _ in range(STEPS):
        await step("s", _async_noop)


async def _block_steps_async(ctx: TaskContext) -> None:
    step = ctx.step
    for _ in range(STEPS):
        async with step("s"):
            pass


def _busy_task(ctx: TaskContext) -> None:
    _busy()


async def _busy_task_async(ctx: TaskContext) -> None:
    _busy()


@attrs.frozen
class Scenario:
    """One benchmark: ``kind`` says what its figure is (``task``: the empty task's latency;
    ``step``: per-step cost against the ``baseline`` scenario; ``busy``: latency vs 200 µs)."""

    name: str
    label: str
    invoke: Callable[[TaskContext], object]
    is_async: bool
    kind: str
    # The pytest-session form of the task body (indented under ``def task(step):``).
    body: str
    concurrency: int = 1
    baseline: str | None = None
    target_us: float | None = None


_FN = "for _ in range(10):\n    step('s', noop)"
_FN_ASYNC = "for _ in range(10):\n    await step('s', noop)"
SCENARIOS = (
    Scenario("empty", "empty sync task", _empty, False, "task", "pass", 1, None, 3.0),
    Scenario("fn", "sync step(name, fn)", _fn_steps, False, "step", _FN, 1, "empty", 3.0),
    Scenario(
        "fn_nocap",
        "sync step(name, fn, capture_output=False)",
        _fn_steps_no_capture,
        False,
        "step",
        "for _ in range(10):\n    step('s', noop, capture_output=False)",
        1,
        "empty",
        3.0,
    ),
    Scenario(
        "block",
        "sync with step(name)",
        _block_steps,
        False,
        "step",
        "for _ in range(10):\n    with step('s'):\n        pass",
        1,
        "empty",
        3.0,
    ),
    Scenario("busy", "sync 200 µs busy-wait", _busy_task, False, "busy", "busy()"),
    Scenario("a_empty", "empty async task", _empty_async, True, "task", "pass"),
    Scenario(
        "a_fn",
        "async await step(name, fn)",
        _fn_steps_async,
        True,
        "step",
        _FN_ASYNC,
        1,
        "a_empty",
        6.0,
    ),
    Scenario(
        "a_coro",
        "async await step(name, async_fn)",
        _coro_steps_async,
        True,
        "step",
        "for _ in range(10):\n    await step('s', async_noop)",
        1,
        "a_empty",
        6.0,
    ),
    Scenario(
        "a_block",
        "async async with step(name)",
        _block_steps_async,
        True,
        "step",
        "for _ in range(10):\n    async with step('s'):\n        pass",
        1,
        "a_empty",
        6.0,
    ),
    Scenario("a_busy", "async 200 µs busy-wait", _busy_task_async, True, "busy", "busy()"),
    Scenario("c_empty", "empty sync task, concurrency 4", _empty, False, "task", "pass", 4),
    Scenario(
        "c_fn", "sync step(name, fn), concurrency 4", _fn_steps, False, "step", _FN, 4, "c_empty"
    ),
    Scenario("ca_empty", "empty async task, concurrency 4", _empty_async, True, "task", "pass", 4),
    Scenario(
        "ca_fn",
        "async await step(name, fn), concurrency 4",
        _fn_steps_async,
        True,
        "step",
        _FN_ASYNC,
        4,
        "ca_empty",
    ),
)


@attrs.frozen
class Sample:
    """One repeat of one scenario: median task latency and median recorded step latency (µs)."""

    task_us: float
    step_us: float | None


def _sample(records: list[Any]) -> Sample:
    """From wire-form records (dicts) or TaskRecords."""

    def get(obj: Any, wire: str, attr: str) -> Any:
        return obj[wire] if isinstance(obj, dict) else getattr(obj, attr)

    tasks = [get(r, "latencyMs", "latency_ms") * 1000.0 for r in records]
    steps = [
        get(s, "latencyMs", "latency_ms") * 1000.0
        for r in records
        for s in get(r, "steps", "steps")
        if get(s, "name", "name") != "task"
    ]
    return Sample(statistics.median(tasks), statistics.median(steps) if steps else None)


# ------------------------------------------------------------------------ in-process


def _specs(scenario: Scenario, count: int) -> Iterator[IterationSpec]:
    for i in range(count):
        yield IterationSpec(
            key=i,
            participant=None,
            participant_name="perf",
            phase=None,
            task_index=i,
            ordinal=i,
            invoke=scenario.invoke,
            is_async=scenario.is_async,
        )


def run_engine(executor: Executor, scenario: Scenario, count: int, label: str) -> Sample:
    plan = GroupPlan(
        group_id=label,
        mode="participant",
        concurrency=scenario.concurrency,
        stagger_delay_ms=0,
        iterations=list(_specs(scenario, count)),
    )
    if scenario.concurrency == 1:
        outcomes = [executor.run_inline(plan, i, release=True) for i in range(count)]
    else:
        outcomes = [future.result() for future in executor.start_group(plan).values()]
    for outcome in outcomes:
        if outcome.error is not None:
            raise outcome.error
    return _sample([outcome.record for outcome in outcomes])


# ------------------------------------------------------------------------ pytest sessions

_FILE = """
import time

from pytest_benchsdk import define_benchmark_config, define_task

config = define_benchmark_config(
    benchmark_slug="floor-{slug}", benchmark_name="Floor {slug}",
    participants=[{{"name": "p"}}], iterations={count}, concurrency={concurrency},
)


def noop():
    pass


async def async_noop():
    pass


def busy():
    clock = time.perf_counter_ns
    end = clock() + {busy_ns}
    while clock() < end:
        pass


@define_task
{prefix}def task(step):
{body}
"""


def _write_files(root: Path, count: int) -> None:
    for scenario in SCENARIOS:
        text = _FILE.format(
            slug=scenario.name.replace("_", "-"),
            count=count,
            concurrency=scenario.concurrency,
            busy_ns=BUSY_NS,
            prefix="async " if scenario.is_async else "",
            body=textwrap.indent(scenario.body, "    "),
        )
        (root / f"bench_{scenario.name}.py").write_text(text)


def run_session(root: Path) -> dict[str, Sample]:
    out = root / "out.json"
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    args += ["-p", "no:xdist", "--rootdir", str(root), "--bench", "--bench-dry-run"]
    args += ["--bench-no-store", "--bench-json", str(out)]
    proc = subprocess.run(
        [*args, *(f"bench_{s.name}.py" for s in SCENARIOS)],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"pytest failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    run = json.loads(out.read_text())
    samples: dict[str, Sample] = {}
    for benchmark in run["benchmarks"]:
        name = Path(benchmark["file"]).stem.removeprefix("bench_")
        samples[name] = _sample(benchmark["participants"][0]["records"])
    return samples


# ------------------------------------------------------------------------ figures


def _median(values: list[float]) -> float:
    return float(statistics.median(values))


def report(path: str, repeats: list[dict[str, Sample]], pair: float) -> bool:
    """Print the figures of one path; False when a target fails."""
    pair_us = pair / 1000.0
    ok = True
    print(f"\n{path} (medians of {len(repeats)} repeats; reference pair {pair:.0f} ns)")
    for scenario in SCENARIOS:
        task = [r[scenario.name].task_us for r in repeats]
        if scenario.kind == "step":
            assert scenario.baseline is not None
            base = [r[scenario.baseline].task_us for r in repeats]
            figure = [(t - b) / STEPS for t, b in zip(task, base, strict=True)]
            recorded = [r[scenario.name].step_us or 0.0 for r in repeats]
            what = f"per step {_median(figure):6.2f} µs"
            extra = f"  step reads {_median(recorded):.1f} µs"
        elif scenario.kind == "busy":
            figure = [t / (BUSY_NS / 1000.0) - 1.0 for t in task]
            what = f"reads {_median(task):7.1f} µs"
            extra = f"  {_median(figure) * 100:+.1f} % of 200 µs"
        else:
            figure = task
            what = f"reads    {_median(figure):6.2f} µs"
            extra = ""
        median = _median(figure)
        verdict = ""
        if scenario.kind == "busy":
            passed = abs(median) <= TARGET_BUSY_ERROR
            verdict = f"target within {TARGET_BUSY_ERROR:.0%} {'PASS' if passed else 'FAIL'}"
            ok &= passed
        elif scenario.target_us is not None:
            passed = median <= scenario.target_us
            verdict = f"target <= {scenario.target_us:g} µs {'PASS' if passed else 'FAIL'}"
            ok &= passed
        spread = f"[{min(figure):.2f}..{max(figure):.2f}]" if scenario.kind != "busy" else ""
        ratio = f"{median / pair_us:5.0f}× pair" if scenario.kind != "busy" else " " * 11
        print(f"  {scenario.label:44} {what} {ratio} {spread:15}{extra}  {verdict}")
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="repeats per path (default 5)")
    parser.add_argument("--iterations", type=int, default=300, help="per scenario (default 300)")
    parser.add_argument("--no-pytest", action="store_true", help="only the in-process engine")
    args = parser.parse_args(argv)
    pair = pair_ns()
    print(f"reference: a perf_counter_ns() pair reads {pair:.0f} ns (median)")
    ok = True
    engine: list[dict[str, Sample]] = []
    with Executor() as executor:
        executor.loop  # start the loop outside the measurement  # noqa: B018
        for r in range(args.repeat):
            engine.append(
                {
                    s.name: run_engine(executor, s, args.iterations, f"{s.name}-{r}")
                    for s in SCENARIOS
                }
            )
    ok &= report("in-process (Executor.run_inline / start_group)", engine, pair)
    if not args.no_pytest:
        sessions: list[dict[str, Sample]] = []
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            _write_files(root, args.iterations)
            for _ in range(args.repeat):
                sessions.append(run_session(root))
        ok &= report("pytest sessions (--bench --bench-dry-run --bench-no-store)", sessions, pair)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
