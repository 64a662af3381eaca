"""``pytest-benchsdk init [DIR]``: a starter benchmark project, like upstream's ``create-bench``.

Writes a working ``bench_example.py`` (two participants, phases, steps, measures, scoring,
display and thresholds), the pytest settings that collect it (``pytest.ini``, or the lines to
add when the directory already has a pytest configuration file) and a GitHub Actions workflow
that runs it as a dry run and keeps the HTML report. It never overwrites a file: when one of
them exists it names them all, writes nothing and exits with status 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

__all__ = ["FILES", "main", "scaffold"]

PROG = "pytest-benchsdk init"

BENCH_EXAMPLE = '''\
"""A starter benchmark: two ways to serialise the same payload, compared.

Run it:  pytest --bench --bench-dry-run
Report:  pytest --bench --bench-dry-run --bench-html bench-report.html

Replace the participants with the providers, libraries or versions of your service that you
want to compare, and the task with what one iteration of your benchmark does.
"""

from __future__ import annotations

import json
import pickle
import time

from pytest_benchsdk import Participant, Phase, define_benchmark_config, define_task

PAYLOAD = {"items": [{"id": i, "name": f"item-{i}", "tags": ["a", "b", "c"]} for i in range(2000)]}

config = define_benchmark_config(
    benchmark_slug="example-serialisers",
    benchmark_name="Example: serialisers",
    participants=[
        # Extra keyword values become attributes the task reads (participant.dumps).
        Participant("json", dumps=json.dumps, loads=json.loads),
        Participant("pickle", dumps=pickle.dumps, loads=pickle.loads),
        # A participant that needs credentials lists them; without them it is skipped:
        # Participant("my-service", required_env_vars=["MY_SERVICE_TOKEN"], ...),
    ],
    # "cold" runs first for each participant, then "warm".
    phases=[Phase("cold", 3), Phase("warm", 10)],
    display={
        "metrics": [
            {"key": "roundtrip_ms", "label": "Round trip", "unit": "ms",
             "direction": "lower-better"},
            {"key": "size_kb", "label": "Size", "unit": "KB", "direction": "lower-better"},
        ],
        "steps": [{"key": "encode", "label": "Encode"}, {"key": "decode", "label": "Decode"}],
    },
    # Each participant scores 0-100 from the median, p95 and p99 of its metrics.
    scoring={
        "metrics": [
            # A p99 needs about 100 samples to mean more than "the slowest one": weight it
            # once your phases run that many iterations.
            {"key": "roundtrip_ms", "ceiling": 500,
             "weights": {"median": 0.6, "p95": 0.2, "p99": 0.0}},
            {"key": "size_kb", "ceiling": 2000,
             "weights": {"median": 0.2, "p95": 0.0, "p99": 0.0}},
        ],
    },
    # Pass/fail limits per participant; each is an item of its own in the session.
    thresholds={
        "roundtrip_ms": ["p95 < 2000"],
        "success_rate": [">= 0.99"],
    },
)


@define_task
def task(participant, phase, step, measure, log):
    started = time.perf_counter()
    encoded = step("encode", lambda: participant.dumps(PAYLOAD))
    decoded = step("decode", lambda: participant.loads(encoded))
    measure(roundtrip_ms=(time.perf_counter() - started) * 1000, size_kb=len(encoded) / 1024)
    log(f"{phase} round trip done", {"bytes": len(encoded)})
    assert decoded == PAYLOAD, "the round trip changed the payload"
'''

PYTEST_INI = """\
[pytest]
# Collect and run bench_*.py files (without it: pytest --bench).
bench = true
bench_files = bench_*.py
"""

PYPROJECT_SNIPPET = """\
[tool.pytest.ini_options]
bench = true
bench_files = ["bench_*.py"]
"""

WORKFLOW = """\
name: benchmarks

on:
  push:
  pull_request:
  workflow_dispatch:

jobs:
  bench:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.12"
      - run: pip install 'pytest-benchsdk[report]'
      # A dry run needs no platform account. To report runs to the benchmarks platform,
      # drop --bench-dry-run and set BENCHMARKS_PLATFORM_API_KEY from a repository secret.
      - run: >
          pytest --bench --bench-dry-run
          --bench-html bench-report.html
          --bench-markdown bench-summary.md
      - if: always()
        run: cat bench-summary.md >> "$GITHUB_STEP_SUMMARY"
      - if: always()
        uses: actions/upload-artifact@v4
        with:
          name: bench-report
          path: bench-report.html
"""

#: The files ``init`` writes, relative to DIR (``pytest.ini`` only without another config).
FILES = ("bench_example.py", "pytest.ini", ".github/workflows/benchmarks.yml")
#: Files that already configure pytest: ``init`` then prints the lines to add instead.
_PYTEST_CONFIGS = ("pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")


class ScaffoldError(Exception):
    """The project cannot be written (printed, exit status 2)."""


def scaffold(directory: Path) -> tuple[list[Path], str | None]:
    """Write the starter project into ``directory`` (created if missing).

    Returns the files written and, when the directory already has a pytest configuration file,
    a note with the settings to add to it. Raises :class:`ScaffoldError` naming every file that
    already exists (nothing is written then).
    """
    if directory.exists() and not directory.is_dir():
        raise ScaffoldError(f"{directory} exists and is not a directory")
    existing_config = next((name for name in _PYTEST_CONFIGS if (directory / name).is_file()), None)
    contents = {"bench_example.py": BENCH_EXAMPLE, ".github/workflows/benchmarks.yml": WORKFLOW}
    if existing_config is None:
        contents["pytest.ini"] = PYTEST_INI
    clashes = [directory / name for name in contents if (directory / name).exists()]
    if clashes:
        names = ", ".join(str(path) for path in clashes)
        raise ScaffoldError(
            f"refusing to overwrite {names}; remove or rename it, or choose another directory"
        )
    written = []
    try:
        for name in FILES:
            if name not in contents:
                continue
            path = directory / name
            path.parent.mkdir(parents=True, exist_ok=True)
            # "x": never replace a file that appeared since the check.
            with path.open("x", encoding="utf-8") as handle:
                handle.write(contents[name])
            written.append(path)
    except OSError as exc:
        raise ScaffoldError(
            f"cannot write {exc.filename or directory}: {exc.strerror or exc}"
        ) from None
    note = None
    if existing_config is not None:
        snippet = PYPROJECT_SNIPPET if existing_config == "pyproject.toml" else PYTEST_INI
        if existing_config in ("tox.ini", "setup.cfg"):
            header = "[pytest]" if existing_config == "tox.ini" else "[tool:pytest]"
            snippet = snippet.replace("[pytest]", header)
        note = (
            f"{directory / existing_config} already configures pytest; add these lines to it "
            f"(or run with --bench):\n\n{snippet}"
        )
    return written, note


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        raise ScaffoldError(message)


def main(argv: Sequence[str]) -> int:
    """``pytest-benchsdk init [DIR]``; returns the exit status."""
    parser = _Parser(
        prog=PROG,
        description="Write a starter benchmark project: bench_example.py, the pytest settings "
        "that collect it and a GitHub Actions workflow that runs it and keeps its HTML report. "
        "Existing files are never overwritten.",
    )
    parser.add_argument("directory", nargs="?", default=".", metavar="DIR", help="default: .")
    try:
        args = parser.parse_args(argv)
        directory = Path(args.directory)
        written, note = scaffold(directory)
    except ScaffoldError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else 0
    for path in written:
        print(f"wrote {path}")
    if note:
        print(note, end="")
    where = "" if str(directory) == "." else f"cd {directory} && "
    print(f"next: {where}pytest --bench --bench-dry-run")
    return 0
