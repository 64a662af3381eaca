"""The one rule for what a baseline name may stand for (``save_baseline``), which
``--bench-save`` and ``pytest-benchsdk baseline set`` both follow: a complete run, unless
forced; on a real store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.runs import record
from helpers.store_processes import ENV
from pytest_benchsdk.results import BaselineRefused, RunStatus, save_baseline, utc_text
from pytest_benchsdk.store import ResultStore, StoredRun


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ResultStore]:
    with ResultStore(tmp_path / "results.sqlite3") as opened:
        yield opened


def _run(store: ResultStore) -> StoredRun:
    run_id = store.begin_run(
        benchmark_slug="demo",
        benchmark_name="Demo",
        file="bench_demo.py",
        knobs={"iterations": 3, "concurrency": 1, "staggerDelayMs": 0, "groupBy": "participant"},
        participants=("p1", "p2"),
        config_snapshot={"benchmarkSlug": "demo"},
        environment=ENV,
        dry_run=True,
    )
    return store.get_run(run_id)


@pytest.mark.parametrize(
    "status",
    [RunStatus("passed", planned=6, ran=6), RunStatus("failed", ("threshold",), 6, 6)],
)
def test_a_complete_run_is_named_passed_or_failed(store: ResultStore, status: RunStatus) -> None:
    first, second = _run(store), _run(store)
    line = save_baseline(store, "main", first, status)
    (saved,) = store.baselines("main")
    # No record has a time: the time the session opened the run.
    assert line == (
        f"Baseline main of demo: run {first.run_id[:12]}… (started "
        f"{utc_text(first.started_at)}, {status.text()}), saved {utc_text(saved.updated_at)}"
    )
    moved = save_baseline(store, "main", second, status)
    assert moved.endswith(f"(was run {first.run_id[:12]}…)")
    assert [b.run_id for b in store.baselines("main")] == [second.run_id]


@pytest.mark.parametrize(
    ("status", "why"),
    [
        (
            RunStatus("interrupted", planned=6, ran=3, complete=False),
            "it was interrupted (3 of 6 iterations ran)",
        ),
        (
            RunStatus("passed", planned=3, ran=3, complete=False),
            "it ran a subset of the benchmark (-k, a node id, --lf)",
        ),
        (
            RunStatus("running", planned=6, ran=2),
            "its session never finished it (killed, or still running)",
        ),
    ],
)
def test_an_incomplete_run_is_refused_unless_forced(
    store: ResultStore, status: RunStatus, why: str
) -> None:
    run = _run(store)
    with pytest.raises(BaselineRefused) as refused:
        save_baseline(store, "main", run, status)
    assert str(refused.value) == (
        f"Baseline main of demo: not saved, the run is not complete: {why}; pytest-benchsdk "
        f"baseline set --force main {run.run_id[:12]} names it anyway"
    )
    assert store.baselines() == []
    line = save_baseline(store, "main", run, status, force=True)
    assert line.splitlines()[1] == (
        f"  note: the run is not complete ({why}): comparisons with it see only what it ran"
    )
    assert [b.run_id for b in store.baselines("main")] == [run.run_id]


def test_the_name_is_checked_first(store: ResultStore) -> None:
    with pytest.raises(ValueError, match="'latest' cannot be a baseline name"):
        save_baseline(store, "latest", _run(store), RunStatus("passed"))


def test_each_saved_baseline_carries_its_own_run_times(store: ResultStore) -> None:
    # Issue 46: three baselines saved one after another all showed the session's start (the
    # runs of one session are opened together); each now says when its own iterations ran,
    # and when it was saved.
    status = RunStatus("passed", planned=2, ran=2)
    runs = [_run(store) for _ in range(3)]
    for n, run in enumerate(runs):
        for index in range(2):
            store.add_record(run.run_id, "p1", record(index, 500.0, offset=60 * n))
    lines = [save_baseline(store, f"b{n}", run, status) for n, run in enumerate(runs)]
    assert [line.split("(", 1)[1].split(",", 1)[0] for line in lines] == [
        "ran 2026-12-01 08:00:00–08:00:01 UTC",
        "ran 2026-12-01 08:01:00–08:01:01 UTC",
        "ran 2026-12-01 08:02:00–08:02:01 UTC",
    ]
    for line, run in zip(lines, runs, strict=True):
        assert utc_text(run.started_at) not in line.split(", saved")[0]
        (named,) = [b for b in store.baselines() if b.run_id == run.run_id]
        assert line.endswith(f", saved {utc_text(named.updated_at)}")
