"""A run read back from a real store (``stored_summary``, ``rebuild_summary``,
``stored_status``, ``stored_analyses``, ``stored_spec``): what a session kept is what it
printed, and a run without a kept summary (a killed session, an older store) is summarised again
from its records with the same builders."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from helpers.runs import SCORING, config, live_run, record, store_run
from pytest_benchsdk._config.models import Phase
from pytest_benchsdk.records import StepRecord, TaskRecord
from pytest_benchsdk.results import (
    HygieneOptions,
    RunStatus,
    RunSummary,
    rebuild_summary,
    stored_analyses,
    stored_spec,
    stored_status,
    stored_summary,
)
from pytest_benchsdk.store import ResultStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ResultStore]:
    with ResultStore(tmp_path / "results.sqlite3") as opened:
        yield opened


def _records(base: float) -> list[TaskRecord]:
    return [
        record(
            i,
            base + i,
            data={"value": base + i, "wait_us": i},
            phase="cold" if i < 2 else "warm",
            steps=[StepRecord("exec", "success", latency_ms=i + 1.0)],
        )
        for i in range(6)
    ]


def _kept(store: ResultStore, *, keep_summary: bool = True) -> RunSummary:
    bench = config(
        participants=["a", "b"],
        phases=[Phase("cold", 2), Phase("warm", 4)],
        scoring=SCORING,
        thresholds={"value": "p95 < 14"},
        display={"steps": [{"key": "exec", "label": "Run"}]},
    )
    run = live_run(bench, {"a": _records(10), "b": _records(12)})
    return store_run(store, run, resamples=200, hygiene=HygieneOptions(), keep_summary=keep_summary)


def test_a_stored_run_reads_back_as_its_session_printed_it(store: ResultStore) -> None:
    live = _kept(store)
    assert live.local_run_id is not None
    run = store.get_run(live.local_run_id)
    assert stored_summary(store, run) == live
    assert stored_status(store, run) == live.status


def test_what_changes_after_the_session_is_read_from_the_run(store: ResultStore) -> None:
    live = _kept(store)
    assert live.local_run_id is not None
    store.set_platform_run(live.local_run_id, "platform-1", "https://example.test/runs/1")
    store.finish_run(live.local_run_id, "failed")  # a merge or a resubmit set the column
    back = stored_summary(store, store.get_run(live.local_run_id))
    assert (back.platform_run_id, back.dashboard_url) == (
        "platform-1",
        "https://example.test/runs/1",
    )
    assert back.status == attrs.evolve(live.status, state="failed")
    assert back.participants == live.participants


def test_a_run_without_a_summary_is_rebuilt_from_its_records(store: ResultStore) -> None:
    live = _kept(store)
    assert live.local_run_id is not None
    store.delete_analysis(live.local_run_id, "summary")
    rebuilt = stored_summary(store, store.get_run(live.local_run_id))
    # Every fact of the records, the thresholds and warnings kept, the same status.
    assert rebuilt.participants == live.participants
    assert (rebuilt.thresholds, rebuilt.warnings, rebuilt.status) == (
        live.thresholds,
        live.warnings,
        live.status,
    )
    assert (rebuilt.started_at, rebuilt.finished_at) == (live.started_at, live.finished_at)
    assert rebuilt.scores is not None
    assert live.scores is not None
    assert [(e.participant, e.rank, e.rows) for e in rebuilt.scores.ranking] == [
        (e.participant, e.rank, e.rows) for e in live.scores.ranking
    ]
    assert [e.uncertainty for e in rebuilt.scores.ranking] == [
        e.uncertainty for e in live.scores.ranking
    ]
    assert rebuilt.knobs.phases == live.knobs.phases
    # Only the summary kept the statistics' intervals and the relative summary.
    assert (rebuilt.intervals, rebuilt.relative) == ((), None)


def test_an_unreadable_summary_is_rebuilt_too(store: ResultStore) -> None:
    live = _kept(store)
    assert live.local_run_id is not None
    store.save_analysis(live.local_run_id, "summary", {"benchmarkSlug": "demo"})
    store.save_analysis(live.local_run_id, "status", {"reasons": ["x"]})
    rebuilt = stored_summary(store, store.get_run(live.local_run_id))
    assert rebuilt.participants == live.participants
    assert rebuilt.status.state == "failed"  # the store's column


def test_a_killed_sessions_run_says_what_ran_of_what_was_planned(store: ResultStore) -> None:
    bench = config(participants=["a", "b"], iterations=4)
    run = live_run(bench, {"a": [record(0), record(1)], "b": [record(0)]})
    store_run(store, run, keep_summary=False)
    assert run.local_run_id is not None
    stored = store.get_run(run.local_run_id)
    status = stored_status(store, stored)
    assert status == RunStatus("running", planned=8, ran=3)
    assert status.incomplete == "its session never finished it (killed, or still running)"
    summary = stored_summary(store, stored)
    assert [(p.name, p.planned, p.ran) for p in summary.participants] == [("a", 4, 2), ("b", 4, 1)]
    assert summary.scores is None


def test_the_kept_analyses_read_back_and_an_unreadable_one_is_left_out(
    store: ResultStore,
) -> None:
    live = _kept(store)
    run_id = live.local_run_id
    assert run_id is not None
    analyses = stored_analyses(store, run_id)
    assert (analyses.thresholds, analyses.warnings) == (live.thresholds, live.warnings)
    assert live.scores is not None
    assert analyses.uncertainty == tuple(
        e.uncertainty for e in live.scores.ranking if e.uncertainty is not None
    )
    assert (analyses.comparison, analyses.comparison_note) == (None, None)
    store.save_analysis(run_id, "warnings", [{"not": "a warning"}])
    store.save_analysis(run_id, "comparison", {"note": "no complete run yet"})
    again = stored_analyses(store, run_id)
    assert again.warnings == ()
    assert (again.comparison, again.comparison_note) == (None, "no complete run yet")
    assert again.thresholds == live.thresholds


def test_the_scoring_spec_is_read_from_the_snapshot_with_the_stored_units(
    store: ResultStore,
) -> None:
    live = _kept(store)
    assert live.local_run_id is not None
    run = store.get_run(live.local_run_id)
    spec = stored_spec(store, run)
    assert spec is not None
    assert [(m.name, m.unit) for m in spec.metrics] == [("value", "ms")]
    respelled = stored_spec(store, run, {"value": "s"})
    assert respelled is not None
    assert respelled.metrics[0].unit == "s"


def test_no_spec_without_scoring_or_with_an_unreadable_one(store: ResultStore) -> None:
    bench = config(participants=["p"], iterations=1)
    run = live_run(bench, {"p": [record(0)]})
    store_run(store, run)
    assert run.local_run_id is not None
    stored = store.get_run(run.local_run_id)
    assert stored_spec(store, stored) is None
    broken = attrs.evolve(stored, config_snapshot={"scoring": {"metrics": "none"}})
    assert stored_spec(store, broken) is None
    # The summary is rebuilt all the same, unscored (no TypeError on metrics of another shape).
    for metrics in ("none", {"key": "value"}, ["value", {"key": "value", "label": "V"}]):
        odd = attrs.evolve(stored, config_snapshot={"scoring": {"metrics": metrics}})
        assert rebuild_summary(store, odd).participants


def test_a_summary_rebuilt_with_the_analyses_given(store: ResultStore) -> None:
    live = _kept(store)
    assert live.local_run_id is not None
    run = store.get_run(live.local_run_id)
    fresh = stored_analyses(store, live.local_run_id)
    trimmed = attrs.evolve(fresh, thresholds=fresh.thresholds[:1])
    rebuilt = rebuild_summary(store, run, analyses=trimmed)
    assert rebuilt.thresholds == live.thresholds[:1]
