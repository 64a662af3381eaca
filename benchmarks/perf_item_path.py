"""The per-item path alone: CPU time per iteration while a session runs its items.

``perf_items.py`` times whole processes (start-up, collection, the session end included), which
on a shared machine move by ±0.1 in ratio from pair to pair. This script isolates what changes
when the per-item path does: it runs N no-op iterations (dry run, store on) and as many plain
``parametrize`` cases in-process, K sessions each, and reads the process's CPU time from the
end of collection to the start of the session end (``pytest_collection_finish`` to
``pytest_sessionfinish``). The fastest of the K sessions (the one the machine disturbed
least) is the figure, per item in µs. CPU time leaves out the time the process waited for a
core; the minimum leaves out most of what another process's cache traffic added.

``--src DIR`` (repeatable) measures another checkout's ``src`` beside this one's (a commit
checked out with ``git worktree add``): each runs in a child process with ``PYTHONPATH=DIR``,
so the per-item cost of two versions can be compared under the same load.

    python benchmarks/perf_item_path.py [--iterations 5000] [--sessions 3] [--src OTHER/src]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

# The same no-op bench file and parametrized test as perf_items.py times whole.
from perf_items import BENCH_FILE, TEST_FILE

# Runs K sessions in one interpreter and prints the fastest run phase's CPU seconds.
CHILD = """
import os, sys, time
import pytest

sessions, args = int(sys.argv[1]), sys.argv[2:]


class RunPhase:
    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session):
        self.started = time.process_time()

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session):
        self.cpu = time.process_time() - self.started


best = None
with open(os.devnull, "w") as devnull:
    for _ in range(sessions):
        phase = RunPhase()
        stdout, sys.stdout = sys.stdout, devnull
        try:
            code = pytest.main(args, plugins=[phase])
        finally:
            sys.stdout = stdout
        if code != 0:
            raise SystemExit(f"pytest failed ({code})")
        best = phase.cpu if best is None else min(best, phase.cpu)
print(best)
"""

CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run_phase(root: Path, args: list[str], sessions: int, src: str | None) -> float:
    env = dict(CHILD_ENV)
    if src is not None:
        env["PYTHONPATH"] = src
    common = ["-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--rootdir", str(root)]
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(sessions), *common, *args],
        cwd=root,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=5000)
    parser.add_argument("--sessions", type=int, default=3, help="sessions per side (default 3)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of all sides (default 2)")
    parser.add_argument(
        "--src", action="append", default=[], help="another checkout's src to measure too"
    )
    opts = parser.parse_args()
    n = opts.iterations
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "bench_noop.py").write_text(textwrap.dedent(BENCH_FILE.format(n=n)))
        (root / "test_noop.py").write_text(textwrap.dedent(TEST_FILE.format(n=n)))
        sides: list[tuple[str, list[str], str | None]] = [
            ("plain pytest parametrize", ["-p", "no:benchsdk", "test_noop.py"], None),
            ("pytest-benchsdk (this tree)", ["--bench", "--bench-dry-run", "bench_noop.py"], None),
        ]
        sides += [
            (f"pytest-benchsdk ({src})", ["--bench", "--bench-dry-run", "bench_noop.py"], src)
            for src in opts.src
        ]
        results: dict[str, list[float]] = {label: [] for label, _, _ in sides}
        for _ in range(opts.rounds):
            for label, args, src in sides:
                results[label].append(run_phase(root, args, opts.sessions, src) / n * 1e6)
    plain = min(results[sides[0][0]])
    print(f"{n} iterations; CPU µs per item while the items run (fastest of {opts.sessions}")
    print(f"sessions, in each of {opts.rounds} rounds; load average {os.getloadavg()[0]:.1f}):")
    for label, values in results.items():
        rounds = ", ".join(f"{v:.0f}" for v in values)
        print(f"  {label:40s} {min(values):6.0f} µs  ({rounds})  {min(values) / plain:.2f}×")


if __name__ == "__main__":
    main()
