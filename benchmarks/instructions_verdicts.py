"""Do verdicts on counts hold across sessions, whatever the load? (issue 45, "sensitive")

A bench file with three CPU-bound participants (a Python loop, ``json.dumps``, ``sorted``)
saves a baseline in one ``pytest --bench --bench-instructions`` session; then each of
``--sessions`` rounds runs two more sessions against it with ``--bench-compare=base
--bench-compare-fail``: the same code (must pass: a false alarm otherwise) and every
participant's work 1 % larger (its loop 1 % longer: must fail, each participant's
``instructions`` row ``regressed``). Two busy loops are switched on for every other round.
Prints, per round, the exit statuses and each participant's change and verdict, then the
totals: unchanged sessions flagged, +1 % sessions (and participants) caught.

    python benchmarks/instructions_verdicts.py [--sessions 20] [--busy 2]

Needs valgrind and a C compiler (apt-get install valgrind gcc). A session takes 15-40 s.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from _busy import BusyLoops

BENCH_FILE = """
import json
import os

from pytest_benchsdk import Participant, define_benchmark_config, define_task

SCALE = float(os.environ.get("WORK_SCALE", "1"))


def loop(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


def dumps(n):
    return json.dumps([{"id": i, "name": "x" * (i % 9)} for i in range(n)])


def sort(n):
    return sorted((i * 7919) % 10007 for i in range(n))


config = define_benchmark_config(
    benchmark_slug="cpu-verdicts",
    benchmark_name="CPU-bound verdicts",
    participants=[
        Participant("loop", sdk=(loop, 20000)),
        Participant("json", sdk=(dumps, 2000)),
        Participant("sort", sdk=(sort, 5000)),
    ],
    iterations=3,
)


@define_task
def task(participant):
    fn, n = participant.sdk
    fn(round(n * SCALE))
"""


def _session(folder: Path, scale: float, *args: str) -> tuple[int, dict[str, tuple[float, str]]]:
    out = folder / "out.json"
    out.unlink(missing_ok=True)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    command += ["--bench", "--bench-instructions", "--bench-json", str(out), *args, "bench_cpu.py"]
    env = {**os.environ, "WORK_SCALE": str(scale)}
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, env=env)
    rows: dict[str, tuple[float, str]] = {}
    if out.exists():
        run = json.loads(out.read_text())["benchmarks"][0]
        comparison = (run.get("analyses") or {}).get("comparison") or run.get("comparison") or {}
        for row in comparison.get("rows", []):
            if row["metric"] == "instructions" and row["comparison"] is not None:
                rows[row["participant"]] = (row["comparison"]["change"], row["verdict"])
    if done.returncode not in (0, 1):
        raise SystemExit(f"session failed ({done.returncode}):\n{done.stdout[-3000:]}")
    return done.returncode, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=20, help="rounds of two sessions")
    parser.add_argument("--busy", type=int, default=2, help="busy loops in every other round")
    opts = parser.parse_args()
    busy = BusyLoops(opts.busy)
    false_alarms = caught = caught_rows = rows_total = 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "bench_cpu.py").write_text(textwrap.dedent(BENCH_FILE))
        status, _ = _session(folder, 1.0, "--bench-save=base")
        if status != 0:
            raise SystemExit("the baseline session failed")
        for index in range(opts.sessions):
            loaded = opts.busy > 0 and index % 2 == 1
            busy.on() if loaded else busy.off()
            compare = ("--bench-compare=base", "--bench-compare-fail")
            same_status, same = _session(folder, 1.0, *compare)
            more_status, more = _session(folder, 1.01, *compare)
            false_alarms += same_status != 0
            caught += more_status == 1
            rows_total += len(more)
            caught_rows += sum(verdict == "regressed" for _, verdict in more.values())

            def text(rows: dict[str, tuple[float, str]]) -> str:
                return ", ".join(f"{p} {c:+.2%} {v}" for p, (c, v) in sorted(rows.items()))

            print(
                f"round {index + 1:2d} ({'busy' if loaded else 'idle'}): same exit {same_status} "
                f"[{text(same)}]; +1 % exit {more_status} [{text(more)}]",
                flush=True,
            )
        busy.off()
    print(
        f"\nunchanged code flagged in {false_alarms} of {opts.sessions} sessions; +1 % caught in "
        f"{caught} of {opts.sessions} sessions ({caught_rows} of {rows_total} participant rows "
        "regressed)"
    )


if __name__ == "__main__":
    main()
