"""What a loop's call shape adds to a per-call figure: ``fn()`` against ``fn(*args, **kwargs)``.

The calibrated step (``step(name, fn, calls="auto")``) loops as :mod:`timeit` does,
``for _ in itertools.repeat(None, n): fn()``; the ``benchmark`` fixture loops as
pytest-benchmark does, ``for _ in range(n): fn(*args, **kwargs)``, also when there are no
arguments. Each matches the tool its figures are compared with, and this script measures why
they cannot share one loop: for a function that returns at once, the second shape adds a fixed
cost per call (on CPython 3.11 the call with ``*()``/``**{}`` unpacks into a new tuple and
dict), which is the figure itself for a ~50 ns function.

For a no-op and for ``",".join`` of ten strings (~150 ns): ``--rounds`` rounds (default 30),
each timing both shapes for ``--calls`` calls (200,000) in an order alternating by round; per
shape the fastest round's time per call, and the median of the per-round differences (the
shapes of one round run within milliseconds of each other, so the machine's speed, which moves
by tens of per cent within seconds here, is nearly the same for both).

Run: ``python benchmarks/call_shapes.py [--rounds N] [--calls N]``.
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

ITEMS = [str(i) for i in range(10)]


def noop() -> None:
    return None


def join() -> str:
    return ",".join(ITEMS)


def timeit_shape(fn: Callable[[], Any], calls: int) -> float:
    started = time.perf_counter()
    for _ in itertools.repeat(None, calls):
        fn()
    return (time.perf_counter() - started) / calls


def pytest_benchmark_shape(fn: Callable[..., Any], calls: int) -> float:
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = {}
    loops = range(calls)
    started = time.perf_counter()
    for _ in loops:
        fn(*args, **kwargs)
    return (time.perf_counter() - started) / calls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--calls", type=int, default=200_000)
    args = parser.parse_args()
    print(
        f"{platform.python_implementation()} {platform.python_version()}; load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {args.rounds} rounds of "
        f"{args.calls:,} calls per shape"
    )
    print(f"{'function':<8} {'fn()':>9} {'fn(*args, **kwargs)':>20} {'added per call':>15}")
    for fn in (noop, join):
        plain: list[float] = []
        unpacked: list[float] = []
        for index in range(args.rounds):
            if index % 2:
                unpacked.append(pytest_benchmark_shape(fn, args.calls))
                plain.append(timeit_shape(fn, args.calls))
            else:
                plain.append(timeit_shape(fn, args.calls))
                unpacked.append(pytest_benchmark_shape(fn, args.calls))
        added = statistics.median(u - p for p, u in zip(plain, unpacked, strict=True))
        print(
            f"{fn.__name__:<8} {min(plain) * 1e9:>6.1f} ns {min(unpacked) * 1e9:>17.1f} ns "
            f"{added * 1e9:>12.1f} ns"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
