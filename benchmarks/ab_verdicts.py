"""``--bench-ab`` verdicts while the machine's load changes during the session (issue 31).

A small package in its own git repository (``src/crunch``: a pure-Python CPU-bound loop,
``WORK`` rounds of it per call, about 25 ms on this machine) and a bench file importing it.
Each session runs
``pytest --bench --bench-ab=HEAD --bench-json=…`` in it; two busy loops (``python3 -c 'while
True: pass'``) are switched on when half the session's iterations have reported (the script
reads the ``-v`` lines as they come), so the load changes *during* the run, and off at its end.

* A/A: the working tree is the revision (unchanged);
* A/B: the working tree does ``1 + --change`` times the work (+10 %).

Per session the script reads the JSON's comparison and judges each metric the way
``--bench-compare-fail`` does (any judged ``regressed`` row fails the session, the median's or
the p95's): ``latency_ms`` (wall time) and ``cpu_ms`` (``--bench-compare-on=cpu_ms``).
Then how many sessions each verdict failed. Targets: A/A fails at most 1 of 20 sessions,
A/B at least 18 of 20, on wall time too. ``--mode duet`` runs both sides at once instead
(``--bench-ab-mode duet``), for the comparison of the two modes.

``--compare-modes`` alternates interleaved and duet sessions (``--sessions`` of each, A/A
then A/B) and prints per mode how often the median row regressed and its interval width.

``--wall`` measures the cost instead: the median wall time of ``--repeats`` plain sessions
(``pytest --bench``) and as many A/B sessions of the same iterations, alternating (after one of
each not counted), and when each part of a session began (``_phases.py``: the plugins loaded,
the session started, collected, ready, the first item, the items done, the runs finished, the
process's exit). ``--wall-processes 2,4`` alternates A/B sessions of each count with the plain
ones. ``--bytecode`` lets the sessions keep the plugin's compiled bytecode where
``PYTHONDONTWRITEBYTECODE`` is set (as it is for an installed plugin): without it every process,
each side's included, compiles the plugin's modules again.
Target: A/B at most 2.3 × plain.

The default 80 iterations are the published batches' (the A/B how-to, "What it achieves
here"): with the goal's load and nothing else beside it, both metrics met both targets there.

Run: ``python benchmarks/ab_verdicts.py [--sessions 20] [--iterations 80] [--change 0.1]
[--mode interleaved|duet] [--compare-modes] [--wall]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _busy import BusyLoops

PACKAGE = """
import os

WORK = int(400_000 * (1 + float(os.environ.get("AB_CHANGE", "0"))))


def crunch() -> int:
    total = 0
    for i in range(WORK):
        total = (total + i * i) % 1_000_003
    return total
"""

BENCH = """
import os

from crunch import crunch

from pytest_benchsdk import Participant, define_benchmark_config, define_task

config = define_benchmark_config(
    benchmark_slug="crunch-ab",
    benchmark_name="crunch (A/B)",
    participants=[Participant("py")],
    iterations=int(os.environ.get("AB_ITERATIONS", "40")),
)


@define_task
def task(step):
    step("crunch", crunch)
"""


def make_project(root: Path) -> None:
    (root / "src" / "crunch").mkdir(parents=True)
    (root / "src" / "crunch" / "__init__.py").write_text(PACKAGE)
    (root / "bench_crunch.py").write_text(BENCH)
    (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["src"]\n')
    (root / ".gitignore").write_text(".benchmarks/\n")
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@example.com",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@example.com",
    }
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "the revision"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True)


def set_change(root: Path, change: float) -> None:
    """The working tree's code: ``1 + change`` times the revision's work (0: unchanged)."""
    source = PACKAGE.replace('float(os.environ.get("AB_CHANGE", "0"))', repr(change))
    (root / "src" / "crunch" / "__init__.py").write_text(source if change else PACKAGE)


def ab_session(
    root: Path, iterations: int, mode: str, load_halfway: bool, processes: int = 4
) -> dict[str, Any]:
    """One A/B session; the comparison rows of its JSON by (metric, statistic)."""
    out = root / "ab.json"
    out.unlink(missing_ok=True)
    env = {**os.environ, "AB_ITERATIONS": str(iterations), "PYTHONUNBUFFERED": "1"}
    loops = BusyLoops(2)
    half = f"task[py-{iterations // 2}]"
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "--bench", "--bench-ab=HEAD", f"--bench-ab-mode={mode}",
         f"--bench-ab-processes={processes}", "-v", "-p", "no:cacheprovider",
         "--bench-json", str(out)],
        cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            if load_halfway and half in line and not loops.procs:
                loops.on()
        proc.wait()
    finally:
        loops.off()
    doc = json.loads(out.read_text())
    rows = doc["benchmarks"][0]["comparison"]["rows"]
    return {(row["metric"], row["statistic"]): row for row in rows}


def session_rounds(root: Path) -> dict[str, dict[int, list[float]]]:
    """The last A/B session's rounds from its store: per side, task index → [wall ms, CPU ms]
    (for studying the paired analysis offline on real sessions: ``--rounds-out``)."""
    import sqlite3

    db = sqlite3.connect(root / ".benchmarks" / "benchsdk.sqlite3")
    try:
        runs = db.execute("SELECT run_id, knobs FROM runs ORDER BY id DESC LIMIT 2").fetchall()
        found: dict[str, dict[int, list[float]]] = {}
        for run_id, knobs in runs:
            side = json.loads(knobs)["abSide"]
            found[side] = {}
            for index, wire in db.execute(
                "SELECT task_index, wire FROM records WHERE run_id = ?", (run_id,)
            ):
                record = json.loads(wire)
                found[side][index] = [record["latencyMs"], record["data"]["cpu_ms"]]
        return found
    finally:
        db.close()


def verdicts(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="ab-verdicts-") as tmp:
        root = Path(tmp)
        make_project(root)
        failed: dict[tuple[str, str], int] = {}
        widths: dict[tuple[str, str], list[float]] = {}
        for label, change in (("A/A", 0.0), (f"A/B +{args.change:.0%}", args.change)):
            set_change(root, change)
            for number in range(1, args.sessions + 1):
                rows = ab_session(
                    root, args.iterations, args.mode, load_halfway=True, processes=args.processes
                )
                if args.rounds_out:
                    with open(args.rounds_out, "a") as out:
                        kept = {"label": label, "processes": args.processes,
                                "rounds": session_rounds(root)}  # fmt: skip
                        out.write(json.dumps(kept) + "\n")
                parts = []
                for metric in ("latency_ms", "cpu_ms"):
                    row = rows[(metric, "median")]
                    c = row["comparison"]
                    key = (label, metric)
                    # --bench-compare-fail fails on any judged row: the p95's too.
                    judged = [rows[(metric, s)] for s in ("median", "p95") if (metric, s) in rows]
                    failed[key] = failed.get(key, 0) + any(
                        r["verdict"] == "regressed" for r in judged
                    )
                    widths.setdefault(key, []).append(c["ciHigh"] - c["ciLow"])
                    parts.append(
                        f"{metric} {c['change']:+.1%} [{c['ciLow']:+.1%}, {c['ciHigh']:+.1%}] "
                        f"{row['verdict']}"
                    )
                print(f"{label} session {number:2d}: " + "; ".join(parts), flush=True)
        print()
        print(
            f"mode {args.mode}, {args.processes} processes a side, {args.iterations} iterations, "
            "load switched on halfway"
        )
        for (label, metric), count in failed.items():
            width = statistics.median(widths[(label, metric)])
            print(
                f"{label:10s} {metric:10s}: --bench-compare-fail fails {count}/{args.sessions} "
                f"sessions; median interval width {width:.1%}"
            )


def compare_modes(args: argparse.Namespace) -> None:
    """Interleaved and duet sessions alternating (so both see the same machine), A/A then A/B:
    per mode how often the median row regressed and its median interval width."""
    with tempfile.TemporaryDirectory(prefix="ab-modes-") as tmp:
        root = Path(tmp)
        make_project(root)
        found: dict[tuple[str, str, str], list[tuple[str, float]]] = {}
        for label, change in (("A/A", 0.0), (f"A/B +{args.change:.0%}", args.change)):
            set_change(root, change)
            for number in range(1, args.sessions + 1):
                for mode in ("interleaved", "duet"):
                    rows = ab_session(root, args.iterations, mode, load_halfway=True)
                    for metric in ("latency_ms", "cpu_ms"):
                        row = rows[(metric, "median")]
                        c = row["comparison"]
                        found.setdefault((label, mode, metric), []).append(
                            (row["verdict"], c["ciHigh"] - c["ciLow"])
                        )
                print(f"{label} session pair {number} done", flush=True)
        for (label, mode, metric), rows in sorted(found.items()):
            regressed = sum(verdict == "regressed" for verdict, _ in rows)
            width = statistics.median(w for _, w in rows)
            print(
                f"{label:10s} {mode:12s} {metric:10s}: regressed {regressed}/{len(rows)}; "
                f"median interval width {width:.1%}"
            )


def wall(args: argparse.Namespace) -> None:
    """Plain and A/B sessions alternating: the median wall time of each and their ratio, and
    the median moment each part of a session began (``_phases.py``)."""
    with tempfile.TemporaryDirectory(prefix="ab-wall-") as tmp:
        root = Path(tmp)
        make_project(root)
        phases = root / "phases.jsonl"
        env = {
            **os.environ,
            "AB_ITERATIONS": str(args.iterations),
            "AB_PHASES_OUT": str(phases),
            # The phases plugin (-p _phases) is beside this script.
            "PYTHONPATH": os.pathsep.join(
                p for p in (str(Path(__file__).parent), os.environ.get("PYTHONPATH")) if p
            ),
        }
        if args.bytecode:
            # As an installed plugin: its modules' bytecode is on disk (written by the first
            # session, a warm-up not counted), not compiled again by every process.
            env.pop("PYTHONDONTWRITEBYTECODE", None)
        base = [sys.executable, "-m", "pytest", "--bench", "--bench-dry-run", "-q",
                "-p", "no:cacheprovider", "-p", "_phases"]  # fmt: skip
        counts = [int(n) for n in str(args.wall_processes or args.processes).split(",")]
        kinds: list[tuple[str, list[str]]] = [("plain", [])]
        kinds += [
            (f"A/B {n} a side", ["--bench-ab=HEAD", f"--bench-ab-processes={n}"]) for n in counts
        ]
        times: dict[str, list[float]] = {kind: [] for kind, _ in kinds}
        marks: dict[str, list[dict[str, float]]] = {kind: [] for kind, _ in kinds}
        loads = []
        for repeat in range(args.repeats + 1):
            for kind, extra in kinds:
                phases.unlink(missing_ok=True)
                start = time.perf_counter()
                subprocess.run([*base, *extra], cwd=root, check=True, stdout=subprocess.DEVNULL,
                               env={**env, "AB_T0": repr(time.time())})  # fmt: skip
                if repeat == 0:
                    continue  # the warm-up
                times[kind].append(time.perf_counter() - start)
                marks[kind].append(json.loads(phases.read_text()))
                loads.append(os.getloadavg()[0])
        plain = statistics.median(times["plain"])
        print(
            f"{args.iterations} iterations, "
            f"{'bytecode cached' if args.bytecode else 'as the environment says'}, medians of "
            f"{args.repeats}, load average {min(loads):.1f}-{max(loads):.1f}: plain {plain:.2f} s"
        )
        for kind, _ in kinds[1:]:
            ab_time = statistics.median(times[kind])
            print(f"  {kind}: {ab_time:.2f} s, ratio {ab_time / plain:.2f}")
        for kind, found in marks.items():
            names = list(found[0])
            shown = ", ".join(
                f"{name} {statistics.median(m[name] for m in found if name in m):.2f}"
                for name in names
            )
            print(f"  {kind}: began at (s) {shown}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--iterations", type=int, default=80)
    parser.add_argument("--change", type=float, default=0.10)
    parser.add_argument("--mode", choices=("interleaved", "duet"), default="interleaved")
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--rounds-out", help="append each session's rounds to this JSONL file")
    parser.add_argument("--wall", action="store_true")
    parser.add_argument("--compare-modes", action="store_true")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument(
        "--wall-processes",
        help="--wall: processes a side of each A/B session kind, comma-separated (2,4): the "
        "kinds alternate with the plain sessions",
    )
    parser.add_argument(
        "--bytecode",
        action="store_true",
        help="--wall: let the sessions write and reuse bytecode (as an installed plugin) even "
        "where PYTHONDONTWRITEBYTECODE is set",
    )
    args = parser.parse_args()
    if args.wall:
        wall(args)
    elif args.compare_modes:
        compare_modes(args)
    else:
        verdicts(args)


if __name__ == "__main__":
    main()
