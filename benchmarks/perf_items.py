"""Per-item overhead of the plugin, as a ratio against plain pytest in the same run.

5,000 no-op benchmark iterations collected and run by pytest-benchsdk (dry run, local store on)
versus 5,000 no-op ``pytest.mark.parametrize`` cases in a plain test file. Each side is a whole
pytest process; the script alternates them, repeats, and reports the median wall time and peak
RSS of each, and their ratios (targets: time <= 1.5, memory <= 1.5).

    python benchmarks/perf_items.py [--items 5000] [--repeat 3]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "bench_noop.py").write_text(textwrap.dedent(BENCH_FILE.format(n=opts.items)))
        (root / "test_noop.py").write_text(textwrap.dedent(TEST_FILE.format(n=opts.items)))
        common = ["-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--rootdir", str(root)]
        plugin_args = [*common, "--bench", "--bench-dry-run", "bench_noop.py"]
        plain_args = [*common, "-p", "no:benchsdk", "test_noop.py"]
        plugin: list[dict[str, float]] = []
        plain: list[dict[str, float]] = []
        _run(plain_args, root)  # warm the filesystem and bytecode caches
        for _ in range(opts.repeat):
            plain.append(_run(plain_args, root))
            plugin.append(_run(plugin_args, root))

    def median(rows: list[dict[str, float]], key: str) -> float:
        return statistics.median(row[key] for row in rows)

    t_plugin, t_plain = median(plugin, "seconds"), median(plain, "seconds")
    m_plugin, m_plain = median(plugin, "peak_kib"), median(plain, "peak_kib")
    time_ratio, mem_ratio = t_plugin / t_plain, m_plugin / m_plain
    print(f"items: {opts.items}, repeats: {opts.repeat} (medians)")
    print(f"plain pytest parametrize: {t_plain:.2f} s, peak RSS {m_plain / 1024:.0f} MiB")
    print(f"pytest-benchsdk items:    {t_plugin:.2f} s, peak RSS {m_plugin / 1024:.0f} MiB")
    for label, ratio in (("time ratio  ", time_ratio), ("memory ratio", mem_ratio)):
        print(f"{label} {ratio:.2f} (target <= 1.5) {'PASS' if ratio <= 1.5 else 'FAIL'}")


if __name__ == "__main__":
    main()
