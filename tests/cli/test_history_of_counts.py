"""``pytest-benchsdk history`` on instruction counts (``--bench-instructions``' metric
``instructions``): a series like any metric's, its change points found, its values read as
counts (``instr``, exact in a change), on a store written by real in-process sessions.

The counts are measured by the task itself (``measure(instructions=N)``: the metric key the
counter records), so nine sessions take a few seconds, not nine valgrind sessions.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from helpers.sessions import bench, store_path, stored_runs
from pytest_benchsdk.cli import main

#: A count that moves by a few instructions from run to run (RUN_SEED), 1 % more work from
#: the sixth run on (MORE_WORK).
BENCH = bench(
    'participants=[Participant("p1"), Participant("p2")], iterations=3',
    """
    import os

    @define_task
    def task(participant, task_index, measure):
        seed = int(os.environ.get("RUN_SEED", "0"))
        base = {"p1": 1_000_000, "p2": 250_000}[participant.name]
        more = float(os.environ.get("MORE_WORK", "1")) if participant.name == "p1" else 1.0
        measure(instructions=round(base * more) + seed % 3)
    """,
    slug="counts",
    name="Counts",
)


def _main(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out + err


@pytest.mark.slow
def test_a_count_series_has_its_change_point_and_reads_as_counts(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makepyfile(bench_counts=BENCH)
    for seed in range(9):
        monkeypatch.setenv("RUN_SEED", str(seed))
        monkeypatch.setenv("MORE_WORK", "1.01" if seed >= 5 else "1")
        result = pytester.runpytest_inprocess(
            "--bench", "--bench-dry-run", "-p", "no:cacheprovider"
        )
        assert result.ret == 0, result.stdout.str()
    runs = [run.run_id for run in stored_runs(store_path(pytester))]
    store = store_path(pytester)
    code, out = _main(capsys, "--store", store, "history", "--metric", "instructions")
    assert code == 0, out
    p1 = out[out.index("\n  p1\n") : out.index("\n  p2\n")]
    rows = [line for line in p1.splitlines() if line.strip().startswith(runs[0][:12])]
    # A row's values are counts with their unit, never times.
    assert rows, p1
    assert "1.00 M instr" in rows[0], rows
    assert not re.search(r"\d (ns|µs|ms|s)\b", p1), p1
    text = " ".join(p1.split())
    # The change point is the first run with 1 % more work, and its counts are exact.
    assert re.search(
        rf"instructions median: \+1\.0% regressed from run {runs[5][:12]}… .*"
        r"1,000,00\d → 1,010,00\d instr",
        text,
    ), text
    p2 = out[out.index("\n  p2\n") :]
    assert "No change point: instructions median, instructions p95" in p2, p2
    # --json carries the series with its unit.
    code, out = _main(capsys, "--store", store, "history", "--metric", "instructions", "--json")
    assert code == 0, out
    document = json.loads(out)
    found = re.findall(r'"unit": "([^"]*)"', json.dumps(document))
    assert found, document
    assert set(found) == {"instr"}, found
