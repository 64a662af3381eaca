"""``--bench-compare-on=cpu_ms`` across sessions under changing load (issue 30, parts 4 and 5).

The zlib benchmark (level 6 on 1 MB per iteration) runs as real pytest sessions, one after
the other, into one results store, while two busy loops (``python3 -c 'while True: pass'``)
are switched on or off *between* sessions (alternately, so the history sees both):

1. ``--history`` sessions of unchanged code build the history (the first is saved as the
   baseline ``main``);
2. ``--sessions`` sessions of unchanged code run with
   ``--bench-compare=main --bench-compare-on=cpu_ms --bench-compare-fail``;
3. ``--sessions`` sessions of code doing ``1 + --change`` times the work (+60 %: the payload
   compressed once, then its first 60 % again) run the same way.

Per session the script prints the load, the exit status, the cpu_ms median row (change,
verdict, the noise that decided it, the smallest change it could have detected) and the wall
median; then how many sessions failed. Target: unchanged code fails 0 of 10 sessions, the
+60 % change fails at least 9 of 10. The machine is shared with other sessions: "idle" means
without *our* busy loops.

Run: ``python benchmarks/load_compare_sessions.py [--history N] [--sessions N] [--change F]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _busy import busy_loops

BENCH_FILE = """
import os
import random
import zlib

from pytest_benchsdk import Participant, define_benchmark_config, define_task

_rng = random.Random(7)
_WORDS = [b"bench", b"pytest", b"participant", b"phase", b"median", b"tail", b"p99"]
DATA = b" ".join(_rng.choice(_WORDS) for _ in range(200_000))[: 1 << 20]
EXTRA = DATA[: int(len(DATA) * float(os.environ.get("WORK_CHANGE", "0")))]

config = define_benchmark_config(
    benchmark_slug="zlib-compare",
    benchmark_name="zlib level 6 on 1 MB",
    participants=[Participant("zlib")],
    iterations=int(os.environ.get("WORK_ITERATIONS", "30")),
)


@define_task
def task():
    zlib.compress(DATA, 6)
    if EXTRA:
        zlib.compress(EXTRA, 6)
"""


def session(root: Path, args: list[str], change: float, loaded: bool, iterations: int) -> Any:
    """One pytest session; (exit status, the run's summary JSON)."""
    out = root / "run.json"
    out.unlink(missing_ok=True)
    env = {**os.environ, "WORK_CHANGE": str(change), "WORK_ITERATIONS": str(iterations)}
    with busy_loops(2 if loaded else 0):
        if loaded:
            time.sleep(0.3)  # the loops are running before the session starts
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "bench_zlib_compare.py", "--bench",
             "--bench-dry-run", "--bench-store", str(root / "store.sqlite3"), "-q",
             "-p", "no:cacheprovider", "--bench-json", str(out), *args],
            cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
    doc = json.loads(out.read_text()) if out.exists() else {}
    return done.returncode, doc, done.stdout


def row_of(doc: Any, metric: str, statistic: str) -> dict[str, Any] | None:
    for benchmark in doc.get("benchmarks") or ():
        comparison = benchmark.get("comparison") or {}
        for row in comparison.get("rows") or ():
            if row["metric"] == metric and row["statistic"] == statistic:
                return dict(row)
    return None


LINE = "{:10} {:6} {:>4} {:>10} {:>8} {:>10} {:>18} {:>8} {:>10} {:>8}"


def ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} ms"


def percent(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:+.1f}%"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history", type=int, default=6)
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--change", type=float, default=0.6)
    parser.add_argument("--iterations", type=int, default=30)
    opts = parser.parse_args()
    compare = ["--bench-compare=main", "--bench-compare-on=cpu_ms", "--bench-compare-fail"]
    failed = {"unchanged": 0, "changed": 0}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "bench_zlib_compare.py").write_text(BENCH_FILE)
        header = ("kind", "load", "exit", "cpu_ms med", "change", "verdict", "noise", "detects",
                  "wall med", "wall chg")  # fmt: skip
        print(LINE.format(*header))
        plan = [("history", 0.0)] * opts.history
        plan += [("unchanged", 0.0)] * opts.sessions + [("changed", opts.change)] * opts.sessions
        for index, (kind, change) in enumerate(plan):
            loaded = index % 2 == 1
            args = ["--bench-save", "main"] if index == 0 else compare
            status, doc, output = session(root, args, change, loaded, opts.iterations)
            if kind in failed and status != 0:
                failed[kind] += 1
            if status not in (0, 1):
                print(output[-2000:])
            cpu = row_of(doc, "cpu_ms", "median") or {}
            wall = row_of(doc, "latency_ms", "median") or {}
            cpu_c, wall_c = cpu.get("comparison") or {}, wall.get("comparison") or {}
            print(
                LINE.format(
                    kind,
                    "loaded" if loaded else "idle",
                    status,
                    ms(cpu_c.get("currentStatistic")),
                    percent(cpu_c.get("change")),
                    cpu.get("verdict") or "-",
                    cpu.get("noise") or "-",
                    percent(cpu.get("detectable")),
                    ms(wall_c.get("currentStatistic")),
                    percent(wall_c.get("change")),
                )
            )
    print(
        f"unchanged code failed {failed['unchanged']} of {opts.sessions} sessions (target 0); "
        f"+{opts.change * 100:.0f} % work failed {failed['changed']} of {opts.sessions} "
        f"(target >= {opts.sessions - 1})"
    )


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"({time.perf_counter() - t0:.0f} s)")
