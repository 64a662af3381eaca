"""Per-iteration overhead of the plugin, as ratios against plain pytest in the same run.

N no-op benchmark iterations collected and run by pytest-benchsdk (dry run, local store on:
the defaults) versus N no-op ``pytest.mark.parametrize`` cases in a plain test file, at each
requested size. Each side is a whole pytest process; the script alternates them, repeats, and
reports per size the median wall time and peak RSS of each, their ratios (targets: time <= 1.2,
memory <= 1.2) and the memory the plugin adds per iteration ((plugin - plain) / N).

    python benchmarks/perf_items.py [--iterations 2000 20000] [--repeat 3]
    python benchmarks/perf_items.py --iterations 100000 --repeat 1   # memory per iteration
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

BENCH_FILE = """
from pytest_benchsdk import define_benchmark_config, define_task

config = define_benchmark_config(
    benchmark_slug="noop", benchmark_name="No-op", participants=[{{"name": "noop"}}],
    iterations={n},
)


@define_task
def task():
    pass
"""

TEST_FILE = """
import pytest


@pytest.mark.parametrize("i", range({n}))
def test_noop(i):
    pass
"""

# Runs one pytest session in a fresh interpreter and prints its wall time and peak RSS.
RUNNER = """
import json, resource, sys, time
import pytest
started = time.perf_counter()
code = pytest.main(sys.argv[1:])
elapsed = time.perf_counter() - started
peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print("PERF " + json.dumps({"code": int(code), "seconds": elapsed, "peak_kib": peak_kib}))
"""


def _run(args: list[str], cwd: Path) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, "-c", RUNNER, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    for line in proc.stdout.splitlines():
        if line.startswith("PERF "):
            result: dict[str, float] = json.loads(line[5:])
            if result["code"] != 0:
                raise SystemExit(f"pytest failed ({args}):\n{proc.stdout[-3000:]}")
            return result
    raise SystemExit(f"no result from {args}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")


#: Targets for both ratios (plugin / plain pytest).
TARGET = 1.2


def measure(iterations: int, repeat: int) -> dict[str, float]:
    """Median seconds and peak KiB of each side for ``iterations`` items."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "bench_noop.py").write_text(textwrap.dedent(BENCH_FILE.format(n=iterations)))
        (root / "test_noop.py").write_text(textwrap.dedent(TEST_FILE.format(n=iterations)))
        common = ["-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--rootdir", str(root)]
        plugin_args = [*common, "--bench", "--bench-dry-run", "bench_noop.py"]
        plain_args = [*common, "-p", "no:benchsdk", "test_noop.py"]
        plugin: list[dict[str, float]] = []
        plain: list[dict[str, float]] = []
        _run(plain_args, root)  # warm the filesystem and bytecode caches
        for _ in range(repeat):
            plain.append(_run(plain_args, root))
            plugin.append(_run(plugin_args, root))

    def median(rows: list[dict[str, float]], key: str) -> float:
        return statistics.median(row[key] for row in rows)

    return {
        "plain_s": median(plain, "seconds"),
        "plugin_s": median(plugin, "seconds"),
        "plain_kib": median(plain, "peak_kib"),
        "plugin_kib": median(plugin, "peak_kib"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--iterations",
        "--items",  # the option's earlier name
        type=int,
        nargs="+",
        default=[2000, 20000],
        help="iterations (= items) per run; one or more sizes (default: 2000 20000)",
    )
    parser.add_argument("--repeat", type=int, default=3)
    opts = parser.parse_args()
    for iterations in opts.iterations:
        m = measure(iterations, opts.repeat)
        time_ratio = m["plugin_s"] / m["plain_s"]
        mem_ratio = m["plugin_kib"] / m["plain_kib"]
        added = (m["plugin_kib"] - m["plain_kib"]) * 1024 / iterations
        print(f"iterations: {iterations}, repeats: {opts.repeat} (medians)")
        print(
            f"  plain pytest parametrize: {m['plain_s']:.2f} s, "
            f"peak RSS {m['plain_kib'] / 1024:.0f} MiB"
        )
        print(
            f"  pytest-benchsdk items:    {m['plugin_s']:.2f} s, "
            f"peak RSS {m['plugin_kib'] / 1024:.0f} MiB"
        )
        for label, ratio in (("time ratio  ", time_ratio), ("memory ratio", mem_ratio)):
            ok = ratio <= TARGET
            print(f"  {label} {ratio:.2f} (target <= {TARGET}) {'PASS' if ok else 'FAIL'}")
        print(f"  memory the plugin adds per iteration: {added:.0f} bytes")


if __name__ == "__main__":
    main()
