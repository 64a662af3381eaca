"""What the plugin costs a pytest session that runs no benchmark.

A one-test project (one ``test_*.py`` with one test, and a ``bench_*.py`` beside it that is not
collected, so the "bench files were left out" hint runs too) is run as whole pytest processes,
with the plugin (``pytest``) and without it (``pytest -p no:benchsdk``), interleaved pair by
pair (which side goes first alternates). Bytecode is cached first (``PYTHONDONTWRITEBYTECODE``
is cleared for the children). Reported: each side's median wall time, the median of the
back-to-back pair ratios (target <= 1.05), and ``python -X importtime`` of
``import pytest_benchsdk.plugin`` after ``import pytest`` (the plugin's own modules,
cumulative; target < 30 ms), with the list of the package's modules a plain session imports.

    python benchmarks/perf_import.py [--pairs 10]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TEST_FILE = "def test_one():\n    assert 1 + 1 == 2\n"
BENCH_FILE = """
from pytest_benchsdk import define_benchmark_config, define_task

config = define_benchmark_config(
    benchmark_slug="s", benchmark_name="S", participants=[{"name": "a"}], iterations=1
)


@define_task
def task():
    pass
"""
#: Prints the package's modules a plain session imported (run by the last pytest process).
MODULES = """
import sys
import pytest
status = pytest.main(sys.argv[1:])
print("MODULES", sorted(m for m in sys.modules if m.startswith("pytest_benchsdk")))
"""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.pop("PYTEST_ADDOPTS", None)
    return env


def _run(project: Path, args: list[str]) -> tuple[float, float]:
    """One pytest process: its wall time and its CPU time (user + system, from ``wait4``: on a
    shared machine the CPU time moves far less with the load than the wall time)."""
    start = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=project, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"pytest {args} failed with status {child.returncode}")
    return elapsed, usage.ru_utime + usage.ru_stime


def _import_ms() -> tuple[float, float]:
    """Cumulative import time of ``pytest_benchsdk.plugin`` (ms) after pytest is imported, and
    the sum of the self times of the package's modules."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import pytest, pytest_benchsdk.plugin"],
        env=_env(), capture_output=True, text=True, check=True,
    )  # fmt: skip
    cumulative = own = 0.0
    for line in done.stderr.splitlines():
        match = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if not match:
            continue
        self_us, cumulative_us, _, name = match.groups()
        if name.startswith("pytest_benchsdk"):
            own += int(self_us) / 1000
        if name == "pytest_benchsdk.plugin":
            cumulative = int(cumulative_us) / 1000
    return cumulative, own


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "pytest.ini").write_text("[pytest]\n")
        (project / "test_one.py").write_text(TEST_FILE)
        (project / "bench_left_out.py").write_text(BENCH_FILE)
        with_plugin: list[str] = []
        without: list[str] = ["-p", "no:benchsdk"]
        for _ in range(2):  # warm: bytecode written, files in the page cache
            _run(project, with_plugin)
            _run(project, without)
        times: dict[str, list[float]] = {"with": [], "without": []}
        cpu: dict[str, list[float]] = {"with": [], "without": []}
        ratios: list[float] = []
        cpu_ratios: list[float] = []
        for pair in range(args.pairs):
            order = [("with", with_plugin), ("without", without)]
            if pair % 2:
                order.reverse()
            took = {name: _run(project, argv) for name, argv in order}
            for name, (wall, used) in took.items():
                times[name].append(wall)
                cpu[name].append(used)
            ratios.append(took["with"][0] / took["without"][0])
            cpu_ratios.append(took["with"][1] / took["without"][1])
        done = subprocess.run(
            [sys.executable, "-c", MODULES, "-q", "-p", "no:cacheprovider"],
            cwd=project, env=_env(), capture_output=True, text=True, check=True,
        )  # fmt: skip
        modules = next(line for line in done.stdout.splitlines() if line.startswith("MODULES"))
    cumulative, own = _import_ms()
    print(f"one-test session, {args.pairs} interleaved pairs (bytecode cached)")
    print(f"  with the plugin     median {statistics.median(times['with']) * 1000:7.1f} ms")
    print(f"  -p no:benchsdk      median {statistics.median(times['without']) * 1000:7.1f} ms")
    print(
        f"  wall-time ratio     median {statistics.median(ratios):.3f} "
        f"(pairs {min(ratios):.3f}-{max(ratios):.3f}; target <= 1.05)"
    )
    print(
        f"  CPU time            median {statistics.median(cpu['with']) * 1000:7.1f} ms vs "
        f"{statistics.median(cpu['without']) * 1000:.1f} ms; ratio median "
        f"{statistics.median(cpu_ratios):.3f} (pairs {min(cpu_ratios):.3f}-{max(cpu_ratios):.3f})"
    )
    print(
        f"import pytest_benchsdk.plugin after pytest: {cumulative:.1f} ms cumulative, "
        f"{own:.1f} ms in the package's own modules (target < 30 ms)"
    )
    print(f"  {modules}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
