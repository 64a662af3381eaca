"""A real benchmark suite under pytest-benchmark (or pytest-codspeed) and under this plugin,
side by side (issue 47's targets).

Needs two virtual environments with the suite's own dependencies: one with pytest-benchmark
(or pytest-codspeed), one with pytest-benchsdk instead (``pip install -e .``; a suite whose
modules import ``pytest_codspeed`` keeps pytest-codspeed installed there and switches it off,
see ``--ours-args``). For example, for markdown-it-py's package benchmarks::

    python benchmarks/side_by_side.py --suite /tmp/markdown-it-py \\
        --theirs /tmp/venv/mdit-pb --ours /tmp/venv/mdit-ours --runs 3 \\
        -- benchmarking/bench_packages.py --benchmark-min-rounds 20

The suite directory is copied once per side (so each side's ``.benchmarks/``, ``.codspeed/``
and caches stay its own, and the suite's own files are never touched). The pytest arguments
after ``--`` (the suite's own command line) go to both sides; ``--theirs-args`` and
``--ours-args`` add what one side needs (by default ``--bench`` here: pytest-benchmark measures
by default, this plugin with ``--bench``; and what a comparison needs, e.g. ``--codspeed``
there). Each side also gets the file this script reads: ``--benchmark-json`` under
pytest-benchmark, its own ``.codspeed/results_*.json`` under pytest-codspeed, and here
``--bench-export pytest-benchmark:PATH`` (pytest-benchmark's schema).

The sessions alternate, ``--runs`` pairs, which side goes first alternating too. Reported:

* per test (matched by ``fullname``, the node id): the per-call minimum under each, the median
  over the runs of each run's minimum, and their ratio here / there;
* the median over the tests of those ratios (target 1 ± 5 %), with the lowest and highest;
* the session wall time of each run (whole processes), and the median of the pair ratios
  here / there (target ≤ 1.2 with the same settings).

Every session must pass (exit 0) and measure the same tests; a session that does not is
printed with its last lines and the script exits 1. The load average is printed before and
after: the machine is shared, and the figures move with it.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

THEIRS_KINDS = ("pytest-benchmark", "pytest-codspeed")


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _has(venv: Path, module: str) -> bool:
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", f"import {module}"],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


def _kind(venv: Path) -> str:
    """pytest-codspeed when the venv has it and not pytest-benchmark, else pytest-benchmark."""
    if _has(venv, "pytest_codspeed") and not _has(venv, "pytest_benchmark"):
        return "pytest-codspeed"
    if _has(venv, "pytest_benchmark"):
        return "pytest-benchmark"
    raise SystemExit(f"{venv}: neither pytest-benchmark nor pytest-codspeed is installed")


def _time(seconds: float) -> str:
    for unit, scale in (("ns", 1e9), ("µs", 1e6), ("ms", 1e3)):
        if seconds * scale < 1000:
            return f"{seconds * scale:.3g} {unit}"
    return f"{seconds:.3g} s"


class Side:
    """One side: its venv, its copy of the suite, how it is run and how its figures are read."""

    def __init__(self, label: str, venv: Path, where: Path, kind: str, extra: list[str]):
        self.label = label
        self.venv = venv
        self.where = where
        self.kind = kind  # "pytest-benchmark", "pytest-codspeed" or "pytest-benchsdk"
        self.extra = extra
        self.minima: list[dict[str, float]] = []
        self.seconds: list[float] = []

    def command(self, args: list[str], out: Path) -> list[str]:
        if self.kind == "pytest-benchmark":
            output = [f"--benchmark-json={out}"]
        elif self.kind == "pytest-codspeed":
            output = []  # it writes .codspeed/results_*.json itself
        else:
            output = ["--bench-export", f"pytest-benchmark:{out}"]
        return [str(self.venv / "bin" / "python"), "-m", "pytest", *args, *self.extra, *output]

    def run(self, args: list[str], number: int) -> None:
        out = self.where / f".side-by-side-{number}.json"
        codspeed = self.where / ".codspeed"
        before = set(codspeed.glob("results_*.json")) if codspeed.is_dir() else set()
        command = self.command(args, out)
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed packages run: bytecode cached
        started = time.perf_counter()
        done = subprocess.run(
            command, cwd=self.where, env=env, capture_output=True, text=True, check=False
        )
        self.seconds.append(time.perf_counter() - started)
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-25:])
            raise SystemExit(
                f"{self.label} session {number} failed (exit {done.returncode}):\n"
                f"  {shlex.join(command)}\n{tail}"
            )
        if self.kind == "pytest-codspeed":
            files = sorted(set(codspeed.glob("results_*.json")) - before)
            self.minima.append(self._codspeed(files))
        else:
            self.minima.append(self._pytest_benchmark(out))
        if not self.minima[-1]:
            raise SystemExit(f"{self.label} session {number} measured nothing:\n{done.stdout}")

    @staticmethod
    def _pytest_benchmark(out: Path) -> dict[str, float]:
        data = json.loads(out.read_text())
        return {b["fullname"]: b["stats"]["min"] for b in data["benchmarks"]}

    def _codspeed(self, files: list[Path]) -> dict[str, float]:
        """pytest-codspeed's files (one per xdist worker): ``uri`` is the test's absolute path
        and name, ``stats.min_ns`` its per-call minimum."""
        minima = {}
        for path in files:
            for bench in json.loads(path.read_text())["benchmarks"]:
                file, _, name = bench["uri"].partition("::")
                path_ = Path(file)
                if path_.is_absolute():  # outside a git repository; else relative to its root
                    file = path_.resolve().relative_to(self.where.resolve()).as_posix()
                relative = file
                minima[f"{relative}::{name}"] = bench["stats"]["min_ns"] / 1e9
        return minima


def _report(theirs: Side, ours: Side) -> int:
    tests = sorted(set().union(*theirs.minima) | set().union(*ours.minima))
    ratios: list[float] = []
    missing: list[str] = []
    width = min(max((len(t) for t in tests), default=10), 70)
    print(
        f"  {'test':{width}} {'here (min)':>12} {theirs.kind + ' (min)':>24} {'ratio':>7}  "
        "runs: here / there"
    )
    for test in tests:
        a = [run[test] for run in ours.minima if test in run]
        b = [run[test] for run in theirs.minima if test in run]
        if len(a) != len(ours.minima) or len(b) != len(theirs.minima):
            missing.append(test)
            continue
        ratio = statistics.median(a) / statistics.median(b)
        ratios.append(ratio)
        shown = test if len(test) <= width else "…" + test[-(width - 1) :]
        print(
            f"  {shown:{width}} {_time(statistics.median(a)):>12} "
            f"{_time(statistics.median(b)):>24} {ratio:7.3f}  "
            f"{', '.join(_time(v) for v in a)} / {', '.join(_time(v) for v in b)}"
        )
    for test in missing:
        print(f"  {test}: not measured in every session of both sides")
    pairs = [o / t for o, t in zip(ours.seconds, theirs.seconds, strict=True)]
    print(f"  {len(ratios)} tests measured by both, in every session")
    if ratios:
        print(
            f"  median of the per-test min ratios here / {theirs.kind}: "
            f"{statistics.median(ratios):.3f} (target 0.95–1.05; tests "
            f"{min(ratios):.3f}–{max(ratios):.3f})"
        )
    print(
        f"  session wall time: here {', '.join(f'{s:.1f}' for s in ours.seconds)} s; "
        f"{theirs.kind} {', '.join(f'{s:.1f}' for s in theirs.seconds)} s; median pair ratio "
        f"{statistics.median(pairs):.3f} (target <= 1.2; pairs "
        f"{min(pairs):.3f}–{max(pairs):.3f})"
    )
    return 1 if missing else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0] if __doc__ else None,
        usage="%(prog)s --suite DIR --theirs VENV --ours VENV [options] -- PYTEST-ARGS...",
    )
    parser.add_argument("--suite", type=Path, required=True, help="the suite's project directory")
    parser.add_argument("--theirs", type=Path, required=True, help="venv with pytest-benchmark "
                        "or pytest-codspeed")  # fmt: skip
    parser.add_argument("--ours", type=Path, required=True, help="venv with pytest-benchsdk")
    parser.add_argument("--runs", type=int, default=3, help="session pairs (default 3)")
    parser.add_argument("--theirs-args", default="", help="added to their sessions only")
    parser.add_argument(
        "--ours-args", default="--bench", help="added to our sessions only (default --bench)"
    )
    argv = list(sys.argv[1:] if argv is None else argv)
    pytest_args: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, pytest_args = argv[:at], argv[at + 1 :]
    args = parser.parse_args(argv)
    args.theirs, args.ours = args.theirs.absolute(), args.ours.absolute()
    kind = _kind(args.theirs)
    print(f"load average before: {_load()}")
    with tempfile.TemporaryDirectory() as tmp:
        copies = {}
        for label in ("theirs", "ours"):
            copies[label] = Path(tmp) / label / args.suite.resolve().name
            shutil.copytree(args.suite, copies[label], symlinks=True)
        theirs = Side(kind, args.theirs, copies["theirs"], kind, shlex.split(args.theirs_args))
        ours = Side("pytest-benchsdk", args.ours, copies["ours"], "pytest-benchsdk",
                    shlex.split(args.ours_args))  # fmt: skip
        for side in (theirs, ours):
            shown = side.command(pytest_args, Path("OUT.json"))
            print(f"  {side.label}: {shlex.join(shown[1:])}  (in {args.suite.name}/)")
        for number in range(args.runs):
            order = [theirs, ours] if number % 2 == 0 else [ours, theirs]
            for side in order:
                side.run(pytest_args, number)
            print(
                f"  pair {number + 1}: here {ours.seconds[-1]:.1f} s, {kind} "
                f"{theirs.seconds[-1]:.1f} s (load average {_load()})",
                flush=True,
            )
        status = _report(theirs, ours)
    print(f"load average after: {_load()}")
    return status


if __name__ == "__main__":
    sys.exit(main())
