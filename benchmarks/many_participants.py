"""Many participants against many iterations, as ratios measured in the same run (issue 48).

N participants of one iteration each (a sweep over many configurations) against one
participant of N iterations: the same number of items, records and samples, so what a
participant costs beyond its iteration is the difference. Each side is a whole pytest process
(``--bench --bench-dry-run --bench-html``: scoring with its intervals, the warnings, the store,
the HTML report; bytecode cached as installed packages have it); the script alternates them,
repeats, and reports per size the median wall time and peak RSS (the child's, from ``wait4``)
of each, the medians of the ratios of each back-to-back pair (target: time <= 2.0) and each
HTML report's size. The many-participant session's time per participant should stay flat as N
grows (it grew with N before: 10,000 participants took 504 s against 10 s).

    python benchmarks/many_participants.py [--participants 500 1000 2000 5000] [--repeat 3]
    python benchmarks/many_participants.py --participants 10000 --repeat 1
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

BENCH_FILE = """
from pytest_benchsdk import Participant, define_benchmark_config, define_task

config = define_benchmark_config(
    benchmark_slug="many", benchmark_name="Many",
    participants={participants},
    iterations={iterations},
    scoring={{"metrics": [{{"key": "v", "unit": "ms", "ceiling": 100,
                           "weights": {{"median": 0.6, "p95": 0.25, "p99": 0.15}}}}]}},
)


@define_task
def task(participant, task_index, measure):
    measure(v=1.0 + (len(participant.name) * 7 + task_index) % 13)
"""

RUNNER = """
import sys
import pytest
raise SystemExit(int(pytest.main(sys.argv[1:])))
"""

#: The children's environment: bytecode cached, as installed packages have it (this
#: machine's shells set ``PYTHONDONTWRITEBYTECODE``; see ``perf_items.py``).
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

#: Target for the time ratio (N participants x 1 / 1 participant x N).
TARGET = 2.0


def _run(args: list[str], cwd: Path) -> dict[str, float]:
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", RUNNER, *args],
        cwd=cwd,
        env=CHILD_ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert proc.stdout is not None
    output = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"pytest failed ({args}):\n{output[-3000:].decode(errors='replace')}")
    peak_kib = usage.ru_maxrss / (1024 if sys.platform == "darwin" else 1)
    return {
        "seconds": elapsed,
        "peak_kib": peak_kib,
        "cpu": usage.ru_utime + usage.ru_stime,
        "lines": output.count(b"\n"),
    }


def _side(root: Path, name: str, participants: str, iterations: int) -> list[str]:
    folder = root / name
    folder.mkdir()
    source = BENCH_FILE.format(participants=participants, iterations=iterations)
    (folder / "bench_many.py").write_text(textwrap.dedent(source))
    return [
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "--rootdir",
        str(folder),
        "--bench",
        "--bench-dry-run",
        "--bench-html",
        str(folder / "report.html"),
        str(folder / "bench_many.py"),
    ]


def measure(n: int, repeat: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        many_args = _side(root, "many", f'[Participant(f"p{{i}}") for i in range({n})]', 1)
        one_args = _side(root, "one", '[Participant("p0")]', n)
        many: list[dict[str, float]] = []
        one: list[dict[str, float]] = []
        # Warm the bytecode and filesystem caches (a small run of each).
        _run(one_args, root / "one")
        for round_ in range(repeat):
            # ABBA: a drift of the machine's load within a pair favours neither side.
            if round_ % 2 == 0:
                one.append(_run(one_args, root / "one"))
                many.append(_run(many_args, root / "many"))
            else:
                many.append(_run(many_args, root / "many"))
                one.append(_run(one_args, root / "one"))
        many_report = (root / "many" / "report.html").stat().st_size
        one_report = (root / "one" / "report.html").stat().st_size

    def median(rows: list[dict[str, float]], key: str) -> float:
        return statistics.median(row[key] for row in rows)

    def ratio(key: str) -> float:
        return statistics.median(b[key] / a[key] for a, b in zip(one, many, strict=True))

    return {
        "one_s": median(one, "seconds"),
        "many_s": median(many, "seconds"),
        "one_kib": median(one, "peak_kib"),
        "many_kib": median(many, "peak_kib"),
        "time_ratio": ratio("seconds"),
        "cpu_ratio": ratio("cpu"),
        "memory_ratio": ratio("peak_kib"),
        "time_ratios": [b["seconds"] / a["seconds"] for a, b in zip(one, many, strict=True)],
        "many_report": many_report,
        "one_report": one_report,
        "many_lines": median(many, "lines"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--participants",
        type=int,
        nargs="+",
        default=[500, 1000, 2000, 5000],
        help="N: participants of one iteration, against one participant of N (default: "
        "500 1000 2000 5000)",
    )
    parser.add_argument("--repeat", type=int, default=3)
    opts = parser.parse_args()
    print(f"load average: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    for n in opts.participants:
        m = measure(n, opts.repeat)
        ok = m["time_ratio"] <= TARGET
        print(f"N = {n:,}, repeats: {opts.repeat} (medians)")
        print(
            f"  1 participant x {n:,} iterations: {m['one_s']:.2f} s, "
            f"peak RSS {m['one_kib'] / 1024:.0f} MiB, report {m['one_report'] / 1e6:.2f} MB"
        )
        print(
            f"  {n:,} participants x 1 iteration: {m['many_s']:.2f} s, "
            f"peak RSS {m['many_kib'] / 1024:.0f} MiB, report {m['many_report'] / 1e6:.2f} MB "
            f"({m['many_report'] / n / 1024:.2f} KiB per participant)"
        )
        print(
            f"  time ratio {m['time_ratio']:.2f} (target <= {TARGET}) {'PASS' if ok else 'FAIL'}"
            f"; CPU-time ratio {m['cpu_ratio']:.2f}; memory ratio {m['memory_ratio']:.2f}"
        )
        print("  time ratio of each pair: " + ", ".join(f"{r:.2f}" for r in m["time_ratios"]))
        print(f"  many participants: {m['many_s'] / n * 1000:.2f} ms per participant")


if __name__ == "__main__":
    main()
