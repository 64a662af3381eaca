"""Merging the stores of CI shards (``merge_stores``), on stores written here: a run key's runs
become one run, scored and analysed as one session would have; runs without a key are copied.
``pytest-benchsdk merge`` on real sessions' stores is in ``tests/cli/test_store_cli.py``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest

from helpers.runs import SCORING, config, live_run, record, store_run
from pytest_benchsdk._analysis.scoring import ScoreResult
from pytest_benchsdk.records import TaskRecord
from pytest_benchsdk.results import (
    HygieneOptions,
    RunStatus,
    merge_stores,
    merged_run_id,
    stored_summary,
)
from pytest_benchsdk.store import ResultStore

KEY = "ci-42"


def _values(base: float, count: int = 4) -> list[TaskRecord]:
    return [record(i, base + i, data={"value": base + i}) for i in range(count)]


def _shard(
    path: Path,
    records: dict[str, Sequence[TaskRecord]],
    *,
    run_key: str | None = KEY,
    thresholds: dict[str, str] | None = None,
    interrupted: bool = False,
    scoring: object = SCORING,
) -> str:
    """A store holding one session's run of the participants in ``records`` (a shard:
    ``--bench-provider`` picked them), with scores, intervals and warnings; its run id."""
    fields: dict[str, object] = {"participants": ["p1", "p2", "p3"], "iterations": 4}
    if scoring is not None:
        fields["scoring"] = scoring
    if thresholds is not None:
        fields["thresholds"] = thresholds
    bench = config(**fields)
    selected = {name: {0, 1, 2, 3} for name in records}
    run = live_run(bench, records, selected=selected)
    with ResultStore(path) as store:
        store_run(
            store,
            run,
            run_key=run_key,
            resamples=200,
            hygiene=HygieneOptions(),
            interrupted=interrupted,
        )
    assert run.local_run_id is not None
    return run.local_run_id


def _merge(out: Path, *inputs: Path) -> list[tuple[str, int, tuple[str, ...]]]:
    opened = [ResultStore(path) for path in inputs]
    try:
        with ResultStore(out) as target:
            result = merge_stores(opened, target)
    finally:
        for store in opened:
            store.close()
    return [(m.run_key, m.shards, m.notes) for m in result.merged]


def _record_key(found: tuple[str, Mapping[str, Any]]) -> tuple[str, str]:
    return found[0], str(found[1]["taskIndex"])


def _content(path: Path) -> list[tuple[str, object, object, object]]:
    with ResultStore(path) as store:
        return [
            (
                run.run_id,
                sorted(store.record_wires(run.run_id), key=_record_key),
                [r.to_wire() for r in store.scores(run.run_id)],
                store.analyses(run.run_id),
            )
            for run in sorted(store.list_runs(limit=100), key=lambda r: r.run_id)
        ]


def test_shards_become_one_run_scored_as_one(tmp_path: Path) -> None:
    one = tmp_path / "one.sqlite3"
    _shard(one, {"p1": _values(10), "p3": _values(30)})
    two = tmp_path / "two.sqlite3"
    _shard(two, {"p2": _values(20)})
    whole = tmp_path / "whole.sqlite3"
    _shard(whole, {"p1": _values(10), "p2": _values(20), "p3": _values(30)}, run_key=None)
    out = tmp_path / "out.sqlite3"
    assert _merge(out, one, two) == [(KEY, 2, ())]
    with ResultStore(out) as merged, ResultStore(whole) as single:
        (run,) = merged.list_runs()
        assert run.run_id == merged_run_id("demo", KEY)
        assert (run.participants, run.record_count, run.run_key) == (("p1", "p3", "p2"), 12, KEY)
        assert run.knobs["iterations"] == 4
        summary = stored_summary(merged, run)
        alone = stored_summary(single, single.list_runs()[0])
        # The same facts as one session of every participant would have printed.
        by_name = {p.name: p for p in alone.participants}
        assert [p.name for p in summary.participants] == ["p1", "p3", "p2"]
        assert all(p == by_name[p.name] for p in summary.participants)
        assert summary.scores is not None
        assert alone.scores is not None
        assert [(e.participant, e.rank, e.row) for e in summary.scores.ranking] == [
            (e.participant, e.rank, e.row) for e in alone.scores.ranking
        ]
        assert all(e.uncertainty is not None for e in summary.scores.ranking)
        assert sorted(w.to_json()["participant"] for w in summary.warnings) == sorted(
            w.to_json()["participant"] for w in alone.warnings
        )
        assert summary.status == RunStatus("passed", planned=12, ran=12)


def test_the_worst_status_with_every_reason_and_a_threshold_judged_on_the_whole(
    tmp_path: Path,
) -> None:
    one = tmp_path / "one.sqlite3"
    failing = [record(0, error="boom"), *_values(10)[1:]]
    _shard(one, {"p1": failing}, thresholds={"value": "p95 < 22"})
    two = tmp_path / "two.sqlite3"
    _shard(two, {"p2": _values(20)}, thresholds={"value": "p95 < 22"})
    out = tmp_path / "out.sqlite3"
    _merge(out, one, two)
    with ResultStore(out) as merged:
        summary = stored_summary(merged, merged.list_runs()[0])
    # p2's threshold breached in its shard, p1's iteration failed in the other.
    assert summary.status == RunStatus("failed", ("iterations", "threshold"), 8, 8)
    assert [(v.participant, v.outcome) for v in summary.thresholds] == [
        ("p1", "passed"),
        ("p2", "failed"),
    ]


def test_an_interrupted_shard_makes_the_merge_interrupted_and_incomplete(tmp_path: Path) -> None:
    one = tmp_path / "one.sqlite3"
    _shard(one, {"p1": _values(10, 2)}, interrupted=True)
    two = tmp_path / "two.sqlite3"
    _shard(two, {"p2": _values(20)})
    out = tmp_path / "out.sqlite3"
    _merge(out, one, two)
    with ResultStore(out) as merged:
        run = merged.list_runs()[0]
        assert run.status == "interrupted"
        status = stored_summary(merged, run).status
    assert (status.state, status.planned, status.ran, status.complete) == (
        "interrupted",
        8,
        6,
        False,
    )


def test_a_record_in_two_shards_is_the_later_shards(tmp_path: Path) -> None:
    one = tmp_path / "one.sqlite3"
    _shard(one, {"p1": _values(10)})
    two = tmp_path / "two.sqlite3"
    _shard(two, {"p1": [record(3, 99, data={"value": 99})]})
    out = tmp_path / "out.sqlite3"
    _merge(out, one, two)
    with ResultStore(out) as merged:
        (records,) = merged.participant_records(merged_run_id("demo", KEY))
    assert [r.latency_ms for r in records.records] == [10, 11, 12, 99]


def test_merging_again_or_merging_merges_gives_the_same_store(tmp_path: Path) -> None:
    one, two, plain = (tmp_path / f"{n}.sqlite3" for n in ("one", "two", "plain"))
    _shard(one, {"p1": _values(10)})
    _shard(two, {"p2": _values(20)})
    plain_id = _shard(plain, {"p3": _values(30)}, run_key=None)
    out = tmp_path / "out.sqlite3"
    _merge(out, one, two, plain)
    once = _content(out)
    assert [run_id for run_id, *_ in once] == sorted([merged_run_id("demo", KEY), plain_id])
    _merge(out, one, two, plain)
    assert _content(out) == once
    # The same file twice, the output among the inputs: read once each.
    _merge(out, two, two, out, one)
    assert _content(out) == once
    part1, part2, whole = (tmp_path / f"{n}.sqlite3" for n in ("part1", "part2", "all"))
    _merge(part1, one)
    _merge(part2, two, plain)
    assert _merge(whole, part1, part2) == [(KEY, 0, ())]
    assert _content(whole) == once
    # A run without a key is copied with everything it had.
    assert [c for c in once if c[0] == plain_id] == _content(plain)


def test_shards_scored_by_on_score_are_not_scored_and_the_merge_says_so(tmp_path: Path) -> None:
    one = tmp_path / "one.sqlite3"
    run_id = _shard(one, {"p1": _values(10)}, scoring=None)
    with ResultStore(one) as store:
        # What an on_score session keeps: score rows without a scoring config in the snapshot.
        rows = store.scores(run_id)
        assert rows == []
        store.save_scores(
            run_id,
            [
                ScoreResult.from_wire(
                    {
                        "provider": "p1",
                        "dimensions": {},
                        "metrics": [],
                        "compositeScore": 50,
                        "successRate": 1,
                        "skipped": False,
                    }
                )
            ],
        )
    out = tmp_path / "out.sqlite3"
    assert _merge(out, one) == [
        (KEY, 1, ("not scored: its shards were scored by on_score, which the store does not keep",))
    ]
    with ResultStore(out) as merged:
        assert merged.scores(merged_run_id("demo", KEY)) == []


def test_an_unreadable_scoring_config_is_said(tmp_path: Path) -> None:
    one = tmp_path / "one.sqlite3"
    run_id = _shard(one, {"p1": _values(10)})
    with ResultStore(one) as store:
        run = store.get_run(run_id)
        store.put_run(
            attrs.evolve(run, config_snapshot={"scoring": {"metrics": [{"key": "value"}]}})
        )
    out = tmp_path / "out.sqlite3"
    notes = _merge(out, one)[0][2]
    assert notes[0] == "not scored: its scoring config is unreadable"
    # One reason: the shards' scores (made with the config) are not said to come from on_score.
    assert not any("on_score" in note for note in notes)


def test_metadata_that_holds_for_every_shard_is_kept(tmp_path: Path) -> None:
    one, two = tmp_path / "one.sqlite3", tmp_path / "two.sqlite3"
    first = _shard(one, {"p1": _values(10)})
    second = _shard(two, {"p2": _values(20)})
    with ResultStore(one) as store:
        store.set_platform_run(first, "shared", "https://example.test/shared")
    with ResultStore(two) as store:
        store.set_platform_run(second, "shared", "https://example.test/shared")
    out = tmp_path / "out.sqlite3"
    _merge(out, one, two)
    with ResultStore(out) as merged:
        run = merged.list_runs()[0]
    assert (run.platform_run_id, run.dashboard_url, run.dry_run) == (
        "shared",
        "https://example.test/shared",
        True,
    )
    assert run.session_id is None
    assert run.finished_at is not None


@pytest.mark.parametrize("slug", ["demo", "other"])
def test_the_merged_id_is_the_same_in_every_merge_and_apart_per_benchmark(slug: str) -> None:
    assert merged_run_id(slug, KEY) == merged_run_id(slug, KEY)
    assert merged_run_id(slug, KEY) != merged_run_id(slug, "ci-43")
    assert merged_run_id("demo", KEY) != merged_run_id("demo2", KEY)
    assert len(merged_run_id(slug, KEY)) == 32
