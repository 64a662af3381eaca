"""The ``benchmark`` fixture against pytest-benchmark itself (issue 35's targets).

Needs an interpreter with both pytest-benchmark and pytest-benchsdk installed (pytest-benchmark
is not a dependency): ``python3 -m venv /tmp/pb && /tmp/pb/bin/pip install pytest-benchmark
-e .``, then ``/tmp/pb/bin/python benchmarks/fixture_vs_pytest_benchmark.py``. Every session is
a whole pytest process in a temporary directory; pytest-benchmark's sessions run with ``-p
no:benchsdk``, ours with ``-p no:benchmark`` (each plugin alone, as a user runs it).

1. **Unchanged and green**: a suite written for pytest-benchmark (plain ``benchmark(fn)``,
   ``pedantic`` with a setup, groups, ``extra_info``, parametrized tests) under
   pytest-benchmark, and under pytest-benchsdk without and with ``--bench``: every session
   must pass.
2. **The same figure**: three functions of about 100 ns, 2 µs and 200 µs, each session
   measuring all three, sessions alternating between the plugins (``--pairs`` pairs, which
   one goes first alternating too). Per function: the median per-call figure of each session
   (ours from the record's kept rounds, pytest-benchmark's ``stats.median``), the ratio of the
   medians over the sessions (target 1 ± 10 %), and the session-to-session spread of each
   plugin's figure, (max − min) / median over its sessions (target: ours no larger).
3. **Wall time**: a suite of 200 benchmarked tests (a ~1 µs function, parametrized), both
   plugins with the same calibration settings (``@pytest.mark.benchmark(max_time=…)``, which
   both read; ``--suite-max-time``, 0.1 s by default), whole processes timed, alternating
   (``--suite-pairs``): the median of the pair ratios ours / pytest-benchmark (target ≤ 1.2),
   and beside it how long each spent measuring (pytest-benchmark's ``stats.total``, the sum
   of its rounds; our records' spans, calibration included) and the rest of the session.

The load average is printed before and after: the machine is shared, and the figures move with
it. Exits 1 when a session of part 1 fails.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from datetime import datetime
from pathlib import Path

SUITE = textwrap.dedent(
    """
    import pytest

    pytestmark = pytest.mark.benchmark(max_time=0.02)


    def join(items):
        return ",".join(items)


    def test_plain(benchmark):
        assert benchmark(join, ["a", "b", "c"]) == "a,b,c"


    @pytest.mark.parametrize("n", [10, 100])
    def test_sort(benchmark, n):
        benchmark.extra_info["n"] = n
        result = benchmark(sorted, list(range(n, 0, -1)))
        assert result[0] == 1
        assert benchmark.stats is None or benchmark.stats["mean"] > 0


    def test_pedantic(benchmark):
        def setup():
            return (list(range(50, 0, -1)),), {}

        assert benchmark.pedantic(sorted, setup=setup, rounds=10, warmup_rounds=1)[0] == 1


    @pytest.mark.benchmark(group="strings", max_time=0.02)
    def test_upper(benchmark):
        assert benchmark("abc".upper) == "ABC"


    class TestGrouped:
        @pytest.mark.benchmark(group="strings", max_time=0.02)
        def test_lower(self, benchmark):
            assert benchmark("ABC".lower) == "abc"
    """
)

FIGURES = textwrap.dedent(
    """
    import pytest

    ITEMS = [str(i) for i in range(5)]
    NUMBERS = list(range(300))
    pytestmark = pytest.mark.benchmark(max_time={max_time})


    def join():  # ~100 ns
        return ",".join(ITEMS)


    def small_sum():  # ~2 µs
        return sum(NUMBERS)


    def squares():  # ~200 µs
        return sum([i * i for i in range(3000)])


    def test_100ns(benchmark):
        benchmark(join)


    def test_2us(benchmark):
        benchmark(small_sum)


    def test_200us(benchmark):
        benchmark(squares)
    """
)

WIDE = textwrap.dedent(
    """
    import pytest

    pytestmark = pytest.mark.benchmark(max_time={max_time})
    WORDS = ["alpha", "beta", "gamma", "delta"] * 5


    @pytest.mark.parametrize("i", range(200))
    def test_case(benchmark, i):
        benchmark(sorted, WORDS)
    """
)

FUNCTIONS = ("test_100ns", "test_2us", "test_200us")


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _pytest(where: Path, args: list[str]) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "", "PYTHONHASHSEED": "0"}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return done, time.perf_counter() - started


OURS = ["-p", "no:benchmark", "--bench", "--bench-no-store"]
THEIRS = ["-p", "no:benchsdk"]


def part_green(where: Path) -> bool:
    (where / "test_suite.py").write_text(SUITE)
    ok = True
    for label, args in (
        ("pytest-benchmark", THEIRS),
        ("pytest-benchsdk without --bench", ["-p", "no:benchmark"]),
        ("pytest-benchsdk --bench", OURS),
    ):
        done, seconds = _pytest(where, [*args, "test_suite.py"])
        last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr
        print(f"  {label:34} exit {done.returncode}  {last}  ({seconds:.1f} s)")
        ok = ok and done.returncode == 0
    return ok


def _ours(where: Path) -> dict[str, float]:
    out = where / "ours.json"
    done, _ = _pytest(where, [*OURS, "--bench-json", str(out), "test_figures.py"])
    if done.returncode != 0:
        raise SystemExit(f"pytest-benchsdk session failed:\n{done.stdout}\n{done.stderr}")
    (run,) = json.loads(out.read_text())["benchmarks"]
    figures = {}
    for participant in run["participants"]:
        (record,) = participant["records"]
        figures[participant["participant"]] = statistics.median(record["data"]["time_ms"]) / 1000
    return figures


def _theirs(where: Path) -> dict[str, float]:
    out = where / "theirs.json"
    done, _ = _pytest(where, [*THEIRS, f"--benchmark-json={out}", "test_figures.py"])
    if done.returncode != 0:
        raise SystemExit(f"pytest-benchmark session failed:\n{done.stdout}\n{done.stderr}")
    return {b["name"]: b["stats"]["median"] for b in json.loads(out.read_text())["benchmarks"]}


def _spread(values: list[float]) -> float:
    return (max(values) - min(values)) / statistics.median(values)


def _time(seconds: float) -> str:
    for unit, scale in (("ns", 1e9), ("µs", 1e6), ("ms", 1e3)):
        if seconds * scale < 1000:
            return f"{seconds * scale:.3g} {unit}"
    return f"{seconds:.3g} s"


def part_figures(where: Path, pairs: int, max_time: float) -> None:
    (where / "test_figures.py").write_text(FIGURES.replace("{max_time}", repr(max_time)))
    ours: list[dict[str, float]] = []
    theirs: list[dict[str, float]] = []
    for pair in range(pairs):
        if pair % 2:
            theirs.append(_theirs(where))
            ours.append(_ours(where))
        else:
            ours.append(_ours(where))
            theirs.append(_theirs(where))
    print(
        f"  {'function':12} {'ours (median of sessions)':>26} {'pytest-benchmark':>18} "
        f"{'ratio':>7} {'spread ours':>12} {'spread theirs':>14}"
    )
    for name in FUNCTIONS:
        a = [session[name] for session in ours]
        b = [session[name] for session in theirs]
        ratio = statistics.median(a) / statistics.median(b)
        print(
            f"  {name:12} {_time(statistics.median(a)):>26} {_time(statistics.median(b)):>18} "
            f"{ratio:7.3f} {_spread(a):12.3f} {_spread(b):14.3f}"
        )
        print(
            f"  {'':12} sessions: ours {', '.join(_time(v) for v in a)}; "
            f"theirs {', '.join(_time(v) for v in b)}"
        )


def _iso(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _measured(label: str, out: Path) -> float:
    """Seconds the session spent measuring: pytest-benchmark's rounds (``stats.total``), our
    records' spans (calibration included)."""
    data = json.loads(out.read_text())
    if label == "theirs":
        return sum(b["stats"]["total"] for b in data["benchmarks"])
    return sum(
        _iso(r["completedAt"]) - _iso(r["startedAt"])
        for run in data["benchmarks"]
        for p in run["participants"]
        for r in p["records"]
    )


def part_wall(where: Path, pairs: int, max_time: float) -> None:
    (where / "test_wide.py").write_text(WIDE.replace("{max_time}", repr(max_time)))
    ratios: list[float] = []
    outside: list[float] = []
    for pair in range(pairs):
        order = [("ours", OURS), ("theirs", THEIRS)]
        if pair % 2:
            order.reverse()
        seconds: dict[str, float] = {}
        measured: dict[str, float] = {}
        for label, args in order:
            out = where / f"wide-{label}.json"
            flag = ["--bench-json", str(out)] if label == "ours" else [f"--benchmark-json={out}"]
            done, took = _pytest(where, [*args, *flag, "test_wide.py"])
            if done.returncode != 0:
                raise SystemExit(f"{label} failed:\n{done.stdout[-3000:]}\n{done.stderr}")
            seconds[label] = took
            measured[label] = _measured(label, out)
        ratios.append(seconds["ours"] / seconds["theirs"])
        rest = {k: seconds[k] - measured[k] for k in seconds}
        outside.append(rest["ours"] / rest["theirs"])
        print(
            f"  pair {pair + 1}: ours {seconds['ours']:.2f} s ({measured['ours']:.2f} s "
            f"measuring), pytest-benchmark {seconds['theirs']:.2f} s ({measured['theirs']:.2f} s "
            f"in its rounds); ratio {ratios[-1]:.3f}; outside the measurement "
            f"{rest['ours']:.2f} vs {rest['theirs']:.2f} s"
        )
    print(
        f"  median ratio {statistics.median(ratios):.3f} (target <= 1.2); outside the "
        f"measurement {statistics.median(outside):.3f}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--pairs", type=int, default=5, help="session pairs of part 2")
    parser.add_argument("--max-time", type=float, default=1.0, help="max_time of part 2 (s)")
    parser.add_argument("--suite-pairs", type=int, default=3, help="session pairs of part 3")
    parser.add_argument("--suite-max-time", type=float, default=0.1, help="max_time of part 3 (s)")
    parser.add_argument("--skip", action="append", default=[], help="green, figures or wall")
    args = parser.parse_args(argv)
    try:
        import pytest_benchmark  # noqa: F401
    except ImportError:
        print("pytest-benchmark is not installed for this interpreter: see the docstring")
        return 2
    print(f"load average before: {_load()}")
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        if "green" not in args.skip:
            print("1. a pytest-benchmark suite, unchanged:")
            ok = part_green(where)
        if "figures" not in args.skip:
            print(f"2. median per-call figure, {args.pairs} session pairs:")
            part_figures(where, args.pairs, args.max_time)
        if "wall" not in args.skip:
            print(
                f"3. 200 benchmarked tests (max_time={args.suite_max_time}), "
                f"{args.suite_pairs} pairs of whole sessions:"
            )
            part_wall(where, args.suite_pairs, args.suite_max_time)
    print(f"load average after: {_load()}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
