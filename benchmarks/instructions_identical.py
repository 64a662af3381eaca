"""Are instruction counts identical across sessions, whatever the load? (issue 45)

Runs a bench file with three CPU-bound participants and a fixture suite of ten benchmarked
tests (the fixture, ``pedantic`` and the marker alone) together in ``--sessions`` separate
``pytest --bench --bench-instructions`` sessions, two busy loops switched on for every other
session, and prints each participant's and test's count per call in each session: whether
they are identical, else the largest deviation from their median. It also times one session
of the bench file and one of the fixture suite with and without the mode (the cost ratio).

    python benchmarks/instructions_identical.py [--sessions 10] [--busy 2] [--iterations 3]

Needs valgrind and a C compiler (apt-get install valgrind gcc). A session takes about a
minute on a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from _busy import BusyLoops

BENCH_FILE = '''
import json
import re
from pytest_benchsdk import Participant, define_benchmark_config, define_task

WORDS = re.compile(r"[a-z]+")
TEXT = "the quick brown fox jumps over the lazy dog " * 20


def dumps(n):
    return json.dumps({{str(i): [i, i * 2, "x" * (i % 7)] for i in range(n)}})


def words(n):
    return sorted(WORDS.findall(TEXT * n))


def fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


config = define_benchmark_config(
    benchmark_slug="cpu-three",
    benchmark_name="Three CPU-bound participants",
    participants=[
        Participant("json", sdk=(dumps, 200)),
        Participant("regex", sdk=(words, 3)),
        Participant("fib", sdk=(fib, 2000)),
    ],
    iterations={iterations},
)


@define_task
def task(participant, step):
    fn, n = participant.sdk
    step("work", lambda: fn(n), calls="auto")
'''

FIXTURE_SUITE = '''
import collections
import hashlib
import json
import re

import pytest

DATA = {str(i): list(range(i % 13)) for i in range(300)}


def test_json_dumps(benchmark):
    benchmark(json.dumps, DATA)


def test_json_loads(benchmark):
    text = json.dumps(DATA)
    benchmark(json.loads, text)


def test_sort(benchmark):
    values = [(i * 7919) % 1009 for i in range(2000)]
    benchmark(sorted, values)


def test_regex(benchmark):
    benchmark(re.findall, r"[0-9]+", json.dumps(DATA))


def test_counter(benchmark):
    benchmark(collections.Counter, "abracadabra" * 200)


def test_sha256(benchmark):
    benchmark(lambda: hashlib.sha256(b"x" * 10000).hexdigest())


def test_comprehension(benchmark):
    benchmark(lambda: [i * i for i in range(3000)])


def test_pedantic(benchmark):
    benchmark.pedantic(sorted, args=(list(range(3000, 0, -1)),), rounds=3, iterations=5)


def test_format(benchmark):
    benchmark(lambda: "".join(f"{i:05d}" for i in range(1000)))


@pytest.mark.benchmark
def test_marker_alone():
    total = 0
    for i in range(5000):
        total += i % 7
    assert total > 0
'''


def _session(
    folder: Path, store: Path, targets: list[str], instructions: bool, keep: str = ""
) -> float:
    """One pytest session's wall time (seconds); raises when it fails. ``keep``: a folder for
    the session's region dumps (``BENCHSDK_CALLGRIND_KEEP``), else none are kept."""
    command = [sys.executable, "-m", "pytest", "--bench", "--bench-dry-run", "-q"]
    command += ["-p", "no:cacheprovider", f"--bench-store={store}", *targets]
    if instructions:
        command.append("--bench-instructions")
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCHSDK_CALLGRIND")}
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        env["BENCHSDK_CALLGRIND_KEEP"] = keep
    started = time.perf_counter()
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, env=env)
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"session failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return took


def _counts(store: Path) -> dict[str, list[float]]:
    """Per participant (``benchmark/participant``): the per-call counts of its records in run
    order (a bench file's step per iteration, a benchmarked test's figures)."""
    db = sqlite3.connect(store)
    slugs = dict(db.execute("SELECT run_id, benchmark_slug FROM runs"))
    found: dict[str, list[float]] = {}
    rows = db.execute("SELECT run_id, participant, wire FROM records ORDER BY task_index")
    for run_id, participant, wire in rows:
        record = json.loads(wire)
        key = f"{slugs[run_id]}/{participant}"
        values: list[float] = []
        for step in record.get("steps") or ():
            count = (step.get("data") or {}).get("instructions")
            if isinstance(count, (int, float)):
                values.append(float(count))
        if not values:
            count = (record.get("data") or {}).get("instructions")
            if isinstance(count, list):
                values.extend(float(v) for v in count)
            elif isinstance(count, (int, float)):
                values.append(float(count))
        found.setdefault(key, []).extend(values)
    db.close()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--busy", type=int, default=2, help="busy loops in every other session")
    parser.add_argument("--iterations", type=int, default=3, help="bench file iterations")
    parser.add_argument("--no-cost", action="store_true", help="skip the cost ratio")
    parser.add_argument("--verbose", action="store_true", help="print every session's counts")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="instructions-identical-") as tmp:
        folder = Path(tmp)
        (folder / "bench_cpu.py").write_text(BENCH_FILE.format(iterations=args.iterations))
        (folder / "test_suite.py").write_text(textwrap.dedent(FIXTURE_SUITE))
        if not args.no_cost:
            shapes = (("bench file", ["bench_cpu.py"]), ("fixture suite", ["test_suite.py"]))
            for label, targets in shapes:
                plain = _session(folder, folder / "cost-plain.sqlite3", targets, False)
                counted = _session(folder, folder / "cost-counted.sqlite3", targets, True)
                print(
                    f"cost, {label}: {plain:.1f} s without the mode, {counted:.1f} s with it: "
                    f"{counted / plain:.1f}×"
                )
        sessions: list[dict[str, list[float]]] = []
        loops = BusyLoops(args.busy)
        try:
            for index in range(args.sessions):
                if index % 2 and args.busy:
                    loops.on()
                else:
                    loops.off()
                store = folder / f"session-{index}.sqlite3"
                keep = os.environ.get("BENCHSDK_CALLGRIND_KEEP", "")
                keep = f"{keep}/session-{index + 1}" if keep else ""
                took = _session(folder, store, ["bench_cpu.py", "test_suite.py"], True, keep)
                sessions.append(_counts(store))
                state = f"{args.busy} busy loops" if index % 2 and args.busy else "idle"
                print(f"session {index + 1}: {took:.1f} s ({state})", flush=True)
        finally:
            loops.off()
    keys = sorted({key for counts in sessions for key in counts})
    identical = 0
    print()
    print(f"{'participant / test':45s} {'per-call count (session 1)':>28s}  across sessions")
    for key in keys:
        runs = [tuple(counts.get(key, ())) for counts in sessions]
        first = runs[0]
        shown = ", ".join(f"{v:,.1f}" for v in first[:3]) + (" …" if len(first) > 3 else "")
        if all(run == first for run in runs):
            identical += 1
            verdict = "identical"
        else:
            worst = 0.0
            for position in range(min(len(run) for run in runs)):
                values = [run[position] for run in runs]
                middle = statistics.median(values)
                if middle:
                    worst = max(worst, max(abs(v - middle) / middle for v in values))
            verdict = f"max deviation from the median {worst * 100:.4f} %"
        print(f"{key:45s} {shown:>28s}  {verdict}")
    print()
    print(f"{identical} of {len(keys)} identical in all {len(sessions)} sessions")
    if args.verbose:
        for index, counts in enumerate(sessions):
            print(index + 1, json.dumps(counts))


if __name__ == "__main__":
    main()
