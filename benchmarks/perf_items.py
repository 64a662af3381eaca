"""Per-iteration overhead of the plugin, as ratios against plain pytest in the same run.

N no-op benchmark iterations collected and run by pytest-benchsdk (dry run, local store on:
the defaults) versus N no-op ``pytest.mark.parametrize`` cases in a plain test file, at each
requested size. Each side is a whole pytest process; the script alternates them, repeats, and
reports per size the median wall time (the whole process, session end and exit included) and
peak RSS (the child's, from ``wait4``) of each, the medians of the ratios of each back-to-back
pair (targets: time <= 1.10, memory <= 1.10) and the memory the plugin adds per iteration
((plugin - plain) / N; target <= 1 KiB).

    python benchmarks/perf_items.py [--iterations 2000 20000] [--repeat 5]
    python benchmarks/perf_items.py --iterations 100000 --repeat 1   # memory per iteration
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

# Runs one pytest session in a fresh interpreter; the parent times the whole process (start-up,
# the session end, interpreter exit) and reads its peak RSS from wait4().
RUNNER = """
import sys
import pytest
raise SystemExit(int(pytest.main(sys.argv[1:])))
"""


#: The children's environment. With ``PYTHONDONTWRITEBYTECODE`` set (this machine's shells set
#: it) no bytecode is ever cached: every run compiles every module of pytest, its plugins and
#: pytest-benchsdk from source (and pytest rewrites their asserts again), which a user's
#: installed packages never do. The warm-up run below caches them as an install would;
#: ``--no-bytecode-cache`` measures the compiling runs instead.
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


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
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"pytest failed ({args}):\n{output[-3000:].decode(errors='replace')}")
    # ru_maxrss: KiB on Linux, bytes on macOS.
    peak_kib = usage.ru_maxrss / (1024 if sys.platform == "darwin" else 1)
    # CPU time (user + system) of the child: what the process itself did, without the time
    # it waited for a core another process held (on a shared machine, most of the noise).
    return {"seconds": elapsed, "peak_kib": peak_kib, "cpu": usage.ru_utime + usage.ru_stime}


#: Targets for both ratios (plugin / plain pytest).
TARGET = 1.10


def measure(iterations: int, repeat: int, *, without_store: bool = False) -> dict[str, Any]:
    """Per size: each side's median seconds and peak KiB, and the medians of the ratios of
    each back-to-back pair (plugin run / the plain run beside it), which cancel the machine's
    load drifting between pairs."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "bench_noop.py").write_text(textwrap.dedent(BENCH_FILE.format(n=iterations)))
        (root / "test_noop.py").write_text(textwrap.dedent(TEST_FILE.format(n=iterations)))
        common = ["-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--rootdir", str(root)]
        plugin_args = [*common, "--bench", "--bench-dry-run", "bench_noop.py"]
        plain_args = [*common, "-p", "no:benchsdk", "test_noop.py"]
        plugin: list[dict[str, float]] = []
        plain: list[dict[str, float]] = []
        # The plugin without its results store: what the store's durability costs.
        storeless: list[dict[str, float]] = []
        storeless_args = [*plugin_args, "--bench-no-store"]
        # Warm the filesystem and bytecode caches (and pytest's rewritten plugin modules).
        _run(plain_args, root)
        _run(plugin_args, root)
        for round_ in range(repeat):
            # Alternate which side goes first (ABBA), so a drift of the machine's load
            # within a pair does not always favour the same side.
            if round_ % 2 == 0:
                plain.append(_run(plain_args, root))
                plugin.append(_run(plugin_args, root))
            else:
                plugin.append(_run(plugin_args, root))
                plain.append(_run(plain_args, root))
            if without_store:
                storeless.append(_run(storeless_args, root))

    def median(rows: list[dict[str, float]], key: str) -> float:
        return statistics.median(row[key] for row in rows)

    def ratio(key: str, side: list[dict[str, float]] = plugin) -> float:
        return statistics.median(b[key] / a[key] for a, b in zip(plain, side, strict=True))

    return {
        "plain_s": median(plain, "seconds"),
        "plugin_s": median(plugin, "seconds"),
        "plain_kib": median(plain, "peak_kib"),
        "plugin_kib": median(plugin, "peak_kib"),
        "time_ratio": ratio("seconds"),
        "cpu_ratio": ratio("cpu"),
        "memory_ratio": ratio("peak_kib"),
        "time_ratios": [b["seconds"] / a["seconds"] for a, b in zip(plain, plugin, strict=True)],
        "storeless_ratio": ratio("seconds", storeless) if storeless else None,
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
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--without-store",
        action="store_true",
        help="also run the plugin with --bench-no-store each round (its time ratio)",
    )
    parser.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="run the children with PYTHONDONTWRITEBYTECODE=1 (every module compiled each run)",
    )
    opts = parser.parse_args()
    if opts.no_bytecode_cache:
        CHILD_ENV["PYTHONDONTWRITEBYTECODE"] = "1"
    for iterations in opts.iterations:
        m = measure(iterations, opts.repeat, without_store=opts.without_store)
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
        for label, key in (("time ratio  ", "time_ratio"), ("memory ratio", "memory_ratio")):
            ok = m[key] <= TARGET
            print(f"  {label} {m[key]:.2f} (target <= {TARGET}) {'PASS' if ok else 'FAIL'}")
        print(f"  CPU-time ratio {m['cpu_ratio']:.2f} (user + system time of each process)")
        if m["storeless_ratio"] is not None:
            print(f"  time ratio without the store (--bench-no-store): {m['storeless_ratio']:.2f}")
        print("  time ratio of each pair: " + ", ".join(f"{r:.2f}" for r in m["time_ratios"]))
        print(f"  memory the plugin adds per iteration: {added:.0f} bytes (target <= 1024)")


if __name__ == "__main__":
    main()
