"""The verdicts check (issue 46): a history that cannot hide a change, on a loaded machine.

Real pytest sessions (``pytest --bench --bench-dry-run --bench-compare --bench-compare-fail``),
one after another, into one results store, while two busy loops (``python3 -c 'while True:
pass'``) keep the machine's cores busy for the whole script. The benchmark is CPU-bound: one
participant hashes a 16 KB buffer ``--rounds`` times per iteration (a few ms), ``--iterations``
iterations (30 by default, so the p95 rows have the 20 samples a tail verdict needs).

1. ``--history`` sessions (4) build the history;
2. ``--sessions`` unchanged sessions (6): each one that exits 1 is a **false alarm**;
3. a session doing ``1 + --change`` times the work (+40 %): it must be flagged (exit 1);
4. the same +40 % again in the next session: it must be flagged again. The run of step 3
   failed the gate, so it is not ``latest``; it stays in the history but was judged
   ``regressed``, so it leaves the between-run noise and cannot widen the band that judges
   this session.

Per session the script prints the exit status and, for the median and the p95 row, the change,
the verdict, the noise that decided it (with the runs left out of the history) and the
smallest change the row could see. Target: 0 of 6 false alarms, both +40 % sessions flagged.

Run: ``python benchmarks/verdicts_history.py [--history 4] [--sessions 6] [--change 0.4]
[--load 2] [--repeat N]`` (``--repeat``: the whole check N times, each in a fresh store).
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
import hashlib
import os

from pytest_benchsdk import Participant, define_benchmark_config, define_task

BUFFER = bytes(range(256)) * 64
CHANGE = 1 + float(os.environ.get("WORK_CHANGE", "0"))
ROUNDS = int(int(os.environ.get("WORK_ROUNDS", "60")) * CHANGE)

config = define_benchmark_config(
    benchmark_slug="verdicts-history",
    benchmark_name="Verdicts: history",
    participants=[Participant("sha256")],
    iterations=int(os.environ.get("WORK_ITERATIONS", "30")),
)


@define_task
def task():
    data = BUFFER
    for _ in range(ROUNDS):
        data = hashlib.sha256(data).digest() * 512
"""


def session(root: Path, change: float, rounds: int, iterations: int) -> tuple[int, Any, str]:
    """One pytest session: (exit status, the --bench-json document, the output)."""
    out = root / "run.json"
    out.unlink(missing_ok=True)
    env = {
        **os.environ,
        "WORK_CHANGE": str(change),
        "WORK_ROUNDS": str(rounds),
        "WORK_ITERATIONS": str(iterations),
    }
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "bench_verdicts.py", "--bench", "--bench-dry-run",
         "--bench-store", str(root / "store.sqlite3"), "-q", "-p", "no:cacheprovider",
         "-p", "no:randomly", "--bench-compare", "--bench-compare-fail",
         "--bench-json", str(out)],
        cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    doc = json.loads(out.read_text()) if out.exists() else {}
    return done.returncode, doc, done.stdout


def rows_of(doc: Any) -> dict[str, dict[str, Any]]:
    """The comparison's latency rows by statistic."""
    found: dict[str, dict[str, Any]] = {}
    for benchmark in doc.get("benchmarks") or ():
        for row in (benchmark.get("comparison") or {}).get("rows") or ():
            found[row["statistic"]] = row
    return found


def percent(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:+.1f}%"


def cell(row: dict[str, Any] | None) -> str:
    if not row or not row.get("comparison"):
        return "-"
    history = row.get("history") or {}
    left = []
    if history.get("leftOutChanged"):
        left.append(f"-{history['leftOutChanged']} changed")
    if history.get("leftOutBeforeChange"):
        left.append(f"-{history['leftOutBeforeChange']} before cp")
    noise = row.get("noise") or "-"
    if noise == "history":
        noise = f"history {history.get('runs')}" + (f" ({', '.join(left)})" if left else "")
    detects = row.get("detectable")
    return (
        f"{percent(row['comparison']['change'])} {row.get('verdict')} [{noise}] "
        f"≥{'-' if detects is None else f'{detects * 100:.1f}%'}"
    )


def check(opts: argparse.Namespace) -> dict[str, Any]:
    plan = [("history", 0.0)] * opts.history + [("unchanged", 0.0)] * opts.sessions
    plan += [("changed", opts.change), ("changed again", opts.change)]
    result = {"false alarms": 0, "unchanged": opts.sessions, "flagged": [], "p95 judged": 0}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "bench_verdicts.py").write_text(BENCH_FILE)
        for kind, change in plan:
            status, doc, output = session(root, change, opts.rounds, opts.iterations)
            if status not in (0, 1):
                print(output[-3000:])
            rows = rows_of(doc)
            if kind == "unchanged" and status != 0:
                result["false alarms"] += 1
            if kind.startswith("changed"):
                result["flagged"].append(status == 1)
            if rows.get("p95", {}).get("verdict") not in (None, "not judged"):
                result["p95 judged"] += 1
            print(f"  {kind:14} exit {status}  median {cell(rows.get('median'))}")
            print(f"  {'':14}         p95    {cell(rows.get('p95'))}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history", type=int, default=4)
    parser.add_argument("--sessions", type=int, default=6)
    parser.add_argument("--change", type=float, default=0.4)
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--load", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1)
    opts = parser.parse_args()
    totals = {"false alarms": 0, "unchanged": 0, "flagged": 0, "changed": 0}
    with busy_loops(opts.load):
        time.sleep(0.3)  # the loops run before the first session starts
        for attempt in range(opts.repeat):
            print(f"check {attempt + 1} of {opts.repeat} ({opts.load} busy loops):")
            result = check(opts)
            totals["false alarms"] += result["false alarms"]
            totals["unchanged"] += result["unchanged"]
            totals["flagged"] += sum(result["flagged"])
            totals["changed"] += len(result["flagged"])
            print(
                f"  -> false alarms {result['false alarms']} of {result['unchanged']}; "
                f"+{opts.change * 100:.0f} % flagged {result['flagged']}"
            )
    print(
        f"false alarms {totals['false alarms']} of {totals['unchanged']} unchanged sessions "
        f"(target 0); +{opts.change * 100:.0f} % flagged in {totals['flagged']} of "
        f"{totals['changed']} sessions (target all, the second of each pair included)"
    )


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"({time.perf_counter() - t0:.0f} s)")
