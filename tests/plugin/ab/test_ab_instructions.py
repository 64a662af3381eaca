"""``--bench-ab=REV --bench-instructions``: a real A/B session counting instructions. The
session re-runs itself under callgrind, which traces the sides' processes it starts; each side
counts its own measured regions (a bench file's steps and task bodies, a benchmarked test's
calls), so both sides' records carry ``instructions`` and the comparison pairs them.

The session is a process of its own (the subject: it replaces itself with valgrind) and takes
a minute or more (every side process starts under valgrind): one test, one session.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.gitrepo import git
from helpers.sessions import store_path, stored_records, stored_runs
from helpers.valgrind import need_valgrind

pytestmark = pytest.mark.slow

PACKAGE = """
def crunch(rounds: int = {rounds}) -> int:
    total = 0
    for i in range(rounds):
        total = (total + i * i) % 1_000_003
    return total
"""

BENCH = """
from crunch import crunch

from pytest_benchsdk import Participant, define_benchmark_config, define_task

config = define_benchmark_config(
    benchmark_slug="crunch",
    benchmark_name="Crunch",
    participants=[Participant("py")],
    iterations=2,
)


@define_task
def task(step):
    step("crunch", crunch, calls="auto")
"""

TESTS = """
from crunch import crunch


def test_crunch(benchmark):
    benchmark(crunch)
"""


def _project(root: Path) -> None:
    (root / "src" / "crunch").mkdir(parents=True)
    (root / "src" / "crunch" / "__init__.py").write_text(PACKAGE.format(rounds=2000))
    (root / "bench_crunch.py").write_text(BENCH)
    (root / "test_crunch.py").write_text(TESTS)
    (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["src"]\n')
    (root / ".gitignore").write_text(".benchmarks/\n*.json\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "the revision")
    # The working tree (side B) does 10 % more work.
    (root / "src" / "crunch" / "__init__.py").write_text(PACKAGE.format(rounds=2200))


def test_both_sides_count_and_the_comparison_pairs_their_counts(
    pytester: pytest.Pytester,
) -> None:
    need_valgrind()
    _project(pytester.path)
    result = pytester.runpytest_subprocess(
        "--bench",
        "--bench-ab=HEAD",
        "--bench-instructions",
        "--bench-instructions-calls=3",
        "--bench-json",
        "run.json",
        "-p",
        "no:cacheprovider",
    )
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    # One process a side by default when counting (a count needs no process pairs).
    result.stdout.fnmatch_lines(["*A/B against HEAD*each in 1 process;*"])
    store = store_path(pytester)
    runs = stored_runs(store)
    per_side: dict[tuple[str, str], list[float]] = {}
    for run in runs:
        side = str(run.knobs["abSide"])
        assert run.environment.instructions is not None  # the count's setup, on both sides
        for participant, wires in stored_records(store, run.run_id).items():
            for wire in wires:
                counts = wire["data"]["instructions"]
                values = counts if isinstance(counts, list) else [counts]
                assert all(v > 0 for v in values), (side, participant, wire["data"])
                per_side.setdefault((side, participant), []).extend(values)
    assert set(per_side) == {("A", "py"), ("B", "py"), ("A", "test_crunch"), ("B", "test_crunch")}
    for participant in ("py", "test_crunch"):
        ratio = min(per_side[("B", participant)]) / max(per_side[("A", participant)])
        assert 1.07 < ratio < 1.13, (participant, per_side)  # 10 % more work, counted
    # The comparison pairs the sides' counts, in every view (here the JSON and the terminal).
    document = json.loads((pytester.path / "run.json").read_text())
    changes = {}
    for entry in document["benchmarks"]:
        comparison = entry["comparison"]
        assert comparison["paired"] is True
        for row in comparison["rows"]:
            if row["metric"] == "instructions" and row["statistic"] == "median":
                changes[row["participant"]] = row["comparison"]["change"]
                assert row["judged"] is True  # the metric --bench-compare-on defaults to
                # Judged as counts: on their own spread, no Mann-Whitney over three rounds.
                assert row["noise"] == "count", row
                assert row["verdict"] == "regressed", row
    assert set(changes) == {"py", "test_crunch"}, document
    assert all(0.07 < change < 0.13 for change in changes.values()), changes
    result.stdout.fnmatch_lines(["*instructions*median*M instr*M instr*+1?.?%*"])
