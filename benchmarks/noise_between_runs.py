"""Between-run noise on this machine: how often ``--bench-compare-fail`` fails an unchanged run,
and whether a real slowdown is still caught.

Real pytest sessions (``pytest --bench --bench-dry-run --bench-compare --bench-compare-fail``),
one after another, into one results store, on a CPU-bound benchmark: each iteration hashes a
16 KB buffer ``--rounds`` times (about 2 ms), 40 iterations for each of two participants, the
latency compared (median and p95).

1. ``--runs`` unchanged sessions. Each compares with ``latest`` (the newest complete run); a
   session that exits 1 with ``regressed (--bench-compare-fail)`` is a **false alarm**. The
   first sessions have fewer than 3 earlier runs (within-run noise only), the later ones the
   history's between-run noise too. For every compared session the stored comparison also
   says what the within-run rule alone would have said.
2. ``--slowed`` sessions in which participant ``p1`` does 30 % more work (``BENCH_SLOWDOWN=1.3``,
   read by the bench file): each should fail with ``p1 latency_ms median ... regressed``. A
   session that failed the gate is never ``latest``, so each is compared with the last
   unchanged run.

Run: ``python benchmarks/noise_between_runs.py [--runs 40] [--slowed 10] [--load N] [--keep DIR]``
(``--load N``: N busy-looping processes run beside the sessions, a neighbour that takes a core;
``--keep``: leave the project and its store there, e.g. for ``pytest-benchsdk history``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from _busy import busy_loops

from pytest_benchsdk import ResultStore

BENCH = """
import hashlib
import os

from pytest_benchsdk import Participant, define_benchmark_config, define_task

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "120"))
SLOWDOWN = float(os.environ.get("BENCH_SLOWDOWN", "1"))
BUFFER = bytes(range(256)) * 64  # 16 KB

config = define_benchmark_config(
    benchmark_slug="noise",
    benchmark_name="Between-run noise",
    participants=[Participant("p1"), Participant("p2")],
    iterations=40,
)


@define_task
def task(participant):
    rounds = round(ROUNDS * (SLOWDOWN if participant.name == "p1" else 1))
    digest = BUFFER
    for _ in range(rounds):
        digest = hashlib.sha256(digest + BUFFER).digest()
"""


def session(project: Path, env: dict[str, str]) -> tuple[int, str]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "bench_noise.py",
            "--bench",
            "--bench-dry-run",
            "--bench-compare",
            "--bench-compare-fail",
            "-q",
            "-p",
            "no:cacheprovider",
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode, done.stdout


def newest_comparison(store_path: Path) -> dict[str, Any] | None:
    with ResultStore(store_path) as store:
        run = store.list_runs(limit=1)[0]
        body = store.analysis(run.run_id, "comparison")
    return body if isinstance(body, dict) and "rows" in body else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40, help="unchanged sessions")
    parser.add_argument("--slowed", type=int, default=10, help="sessions with p1 30 %% slower")
    parser.add_argument("--rounds", type=int, default=120, help="sha256 rounds per iteration")
    parser.add_argument("--keep", metavar="DIR", help="keep the project and its store here")
    parser.add_argument(
        "--load", type=int, default=0, metavar="N", help="busy-looping processes beside the runs"
    )
    args = parser.parse_args()
    with busy_loops(args.load):
        run(args)


def run(args: argparse.Namespace) -> None:

    project = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="benchsdk-noise-"))
    project.mkdir(parents=True, exist_ok=True)
    (project / "bench_noise.py").write_text(textwrap.dedent(BENCH).lstrip())
    store_path = project / ".benchmarks" / "benchsdk.sqlite3"
    base_env = {**os.environ, "BENCH_ROUNDS": str(args.rounds)}
    base_env.pop("BENCH_SLOWDOWN", None)

    started = time.perf_counter()
    # (compared, history rows, gate failed, within-run alone would have failed)
    unchanged: list[tuple[bool, bool, bool, bool]] = []
    for index in range(args.runs):
        status, out = session(project, base_env)
        comparison = newest_comparison(store_path)
        if status not in (0, 1):
            sys.exit(f"session {index} exited {status}:\n{out}")
        rows = comparison["rows"] if comparison else []
        history = bool(rows) and any(r.get("history") for r in rows)
        failed = status == 1 and "regressed (--bench-compare-fail)" in out
        within = any((r.get("comparison") or {}).get("verdict") == "regressed" for r in rows)
        unchanged.append((comparison is not None, history, failed, within))
        print(
            f"unchanged {index + 1:3d}: {'compared' if comparison else 'first'}"
            f"{' +history' if history else ''}{'  FALSE ALARM' if failed else ''}"
            f"{'  (within-run alone: regressed)' if within and not failed else ''}",
            flush=True,
        )
    slowed: list[tuple[bool, bool]] = []
    for index in range(args.slowed):
        status, out = session(project, {**base_env, "BENCH_SLOWDOWN": "1.3"})
        comparison = newest_comparison(store_path) or {"rows": []}
        p1_median = next(
            (
                r
                for r in comparison["rows"]
                if r["participant"] == "p1" and r["statistic"] == "median"
            ),
            {},
        )
        caught = status == 1 and p1_median.get("verdict") == "regressed"
        slowed.append((caught, bool(p1_median.get("history"))))
        change = (p1_median.get("comparison") or {}).get("change")
        print(
            f"slowed    {index + 1:3d}: p1 median {'' if change is None else f'{change:+.1%} '}"
            f"{p1_median.get('verdict')} ({p1_median.get('noise')})",
            flush=True,
        )
    elapsed = time.perf_counter() - started

    compared = [u for u in unchanged if u[0]]
    with_history = [u for u in compared if u[1]]
    within_only = [u for u in compared if not u[1]]

    def rate(items: list[tuple[bool, bool, bool, bool]], column: int) -> str:
        if not items:
            return "-"
        hits = sum(1 for item in items if item[column])
        return f"{hits}/{len(items)} ({hits / len(items):.0%})"

    print()
    print(
        f"{len(unchanged)} unchanged + {len(slowed)} slowed sessions in {elapsed:.0f} s "
        f"({args.load} busy-looping neighbour(s); load average now "
        f"{', '.join(f'{x:.1f}' for x in os.getloadavg())})"
    )
    print(f"false alarms, sessions with history noise: {rate(with_history, 2)}")
    print(f"false alarms, sessions with within-run noise only: {rate(within_only, 2)}")
    print(
        f"within-run rule alone on the sessions with history: {rate(with_history, 3)} would "
        "have failed"
    )
    hits = sum(1 for caught, _ in slowed if caught)
    print(f"+30 % on p1 caught (p1 latency median regressed, session failed): {hits}/{len(slowed)}")
    summary = {
        "unchanged": len(unchanged),
        "falseAlarmsWithHistory": [sum(u[2] for u in with_history), len(with_history)],
        "falseAlarmsWithinRunOnly": [sum(u[2] for u in within_only), len(within_only)],
        "withinRuleAloneOnHistorySessions": [sum(u[3] for u in with_history), len(with_history)],
        "slowedCaught": [hits, len(slowed)],
    }
    print(json.dumps(summary))
    if not args.keep:
        shutil.rmtree(project, ignore_errors=True)


if __name__ == "__main__":
    main()
