"""CPU time beside wall time under changing load, within one session (issue 30, part 4).

One real pytest session runs a CPU-bound task (``zlib.compress`` at level 6 on 1 MB) for
``--iterations`` iterations while this script switches two busy loops
(``python3 -c 'while True: pass'`` subprocesses) on and off every ``--switch`` seconds (a few
iterations each way). The task notes the load state it saw when it started and when it ended
(as text, so it is no metric); iterations that straddle a switch are left out. Per state the
script prints the median wall latency (``latencyMs``) and the median ``cpu_ms``, and the ratio
loaded / idle of each.

Target: ``cpu_ms`` moves by at most 5 % between the loaded and the idle iterations, while the
wall time moves by up to 2× (two busy loops on a 2-core machine take about half of each core).
The machine is shared with other sessions: "idle" means without *our* busy loops.

Run: ``python benchmarks/load_cpu_vs_wall.py [--iterations N] [--switch SECONDS]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from _busy import BusyLoops

BENCH_FILE = """
import os
import random
import zlib
from pathlib import Path

from pytest_benchsdk import Participant, define_benchmark_config, define_task

STATE = Path(os.environ["LOAD_STATE_FILE"])
_rng = random.Random(7)
_WORDS = [b"bench", b"pytest", b"participant", b"phase", b"median", b"tail", b"p99"]
DATA = b" ".join(_rng.choice(_WORDS) for _ in range(200_000))[: 1 << 20]

config = define_benchmark_config(
    benchmark_slug="zlib-load",
    benchmark_name="zlib level 6 on 1 MB under changing load",
    participants=[Participant("zlib")],
    iterations=int(os.environ["LOAD_ITERATIONS"]),
)


@define_task
def task(measure):
    before = STATE.read_text()
    zlib.compress(DATA, 6)
    measure(load_start=before, load_end=STATE.read_text())
"""


def switcher(loops: BusyLoops, state: Path, period: float, stop: threading.Event) -> None:
    loaded = False
    while not stop.is_set():
        # The state file says "switching" while the loops start or stop: an iteration that
        # sees it at either end is left out.
        state.write_text("switching")
        if loaded:
            loops.off()
        else:
            loops.on()
        loaded = not loaded
        state.write_text("loaded" if loaded else "idle")
        stop.wait(period)
    state.write_text("switching")
    loops.off()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=400)
    parser.add_argument("--switch", type=float, default=0.4, help="seconds per load state")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "bench_zlib_load.py").write_text(BENCH_FILE)
        state = root / "state"
        state.write_text("idle")
        out = root / "run.json"
        env = {
            **os.environ,
            "LOAD_STATE_FILE": str(state),
            "LOAD_ITERATIONS": str(args.iterations),
        }
        loops, stop = BusyLoops(), threading.Event()
        thread = threading.Thread(target=switcher, args=(loops, state, args.switch, stop))
        thread.start()
        try:
            subprocess.run(
                [sys.executable, "-m", "pytest", "bench_zlib_load.py", "--bench",
                 "--bench-dry-run", "--bench-no-store", "-q", "-p", "no:cacheprovider",
                 "--bench-json", str(out)],
                cwd=root, env=env, check=True, stdout=subprocess.DEVNULL,
            )  # fmt: skip
        finally:
            stop.set()
            thread.join()
        doc = json.loads(out.read_text())
    records = doc["benchmarks"][0]["participants"][0]["records"]
    by_state: dict[str, tuple[list[float], list[float]]] = {"idle": ([], []), "loaded": ([], [])}
    straddled = 0
    for record in records:
        data = record.get("data") or {}
        start, end = data.get("load_start"), data.get("load_end")
        if start != end or start not in by_state or record["status"] != "success":
            straddled += 1
            continue
        by_state[start][0].append(record["latencyMs"])
        by_state[start][1].append(data["cpu_ms"])
    print(f"{len(records)} iterations, {straddled} left out (a load switch during them)")
    print(f"{'state':8} {'n':>4} {'wall median':>12} {'cpu_ms median':>14}")
    medians: dict[str, tuple[float, float]] = {}
    for name, (wall, cpu) in by_state.items():
        if not wall:
            print(f"{name:8} {0:>4} (no iteration)")
            continue
        medians[name] = (statistics.median(wall), statistics.median(cpu))
        print(f"{name:8} {len(wall):>4} {medians[name][0]:>9.2f} ms {medians[name][1]:>11.2f} ms")
    if len(medians) == 2:
        wall_ratio = medians["loaded"][0] / medians["idle"][0]
        cpu_ratio = medians["loaded"][1] / medians["idle"][1]
        print(f"loaded / idle: wall {wall_ratio:.2f}×, cpu_ms {cpu_ratio:.3f}× "
              f"({(cpu_ratio - 1) * 100:+.1f} %; target: within ±5 %)")  # fmt: skip
        print("cpu_ms target met" if abs(cpu_ratio - 1) <= 0.05 else "cpu_ms target NOT met")


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"({time.perf_counter() - t0:.0f} s)")
