"""What a REF names (``resolve_ref``, ``find_run``) and the baseline a comparison is made
against (``find_baseline``), on a real store written here."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.runs import config, live_run, record, store_run
from pytest_benchsdk.records import TaskRecord
from pytest_benchsdk.results import (
    Baseline,
    CompareRef,
    RunRefError,
    RunSetup,
    find_baseline,
    find_run,
    resolve_ref,
)
from pytest_benchsdk.store import ResultStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ResultStore]:
    with ResultStore(tmp_path / "results.sqlite3") as opened:
        yield opened


def _run(
    store: ResultStore, base: float = 10.0, *, slug: str = "demo", **finish_args: object
) -> str:
    bench = config(participants=["p"], iterations=3, benchmark_slug=slug)
    run = live_run(bench, {"p": [record(i, base + i) for i in range(3)]})
    store_run(store, run, **finish_args)  # type: ignore[arg-type]
    assert run.local_run_id is not None
    return run.local_run_id


def test_a_ref_is_latest_a_run_id_a_name_a_prefix_or_a_file(
    store: ResultStore, tmp_path: Path
) -> None:
    run_id = _run(store)
    store.set_baseline("main", run_id)
    assert resolve_ref(store, "latest") == CompareRef("latest", "latest")
    assert resolve_ref(store, run_id) == CompareRef("run", run_id, run_id=run_id)
    assert resolve_ref(store, "main") == CompareRef("name", "main")
    assert resolve_ref(store, run_id[:8]) == CompareRef("run", run_id[:8], run_id=run_id)
    assert resolve_ref(store, run_id[:12] + "…").run_id == run_id
    document: dict[str, list[object]] = {"benchmarks": []}
    path = tmp_path / "old"
    path.write_text(json.dumps(document))
    found = resolve_ref(store, str(path))
    assert (found.kind, found.document) == ("json", document)


def test_a_ref_that_names_nothing_says_what_is_close(store: ResultStore, tmp_path: Path) -> None:
    first = _run(store)
    store.set_baseline("main", first)
    with pytest.raises(RunRefError) as nothing:
        resolve_ref(store, "mian")
    message = str(nothing.value)
    assert message.startswith(f"no run id, baseline name or file mian in {store.path}; closest: ")
    assert "main" in message
    assert message.endswith("or a --bench-json file")


def test_an_ambiguous_prefix_lists_the_runs(store: ResultStore) -> None:
    ids = [_run(store) for _ in range(40)]
    heads: dict[str, list[str]] = {}
    for run_id in ids:
        heads.setdefault(run_id[0], []).append(run_id)
    shared = next(head for head, found in heads.items() if len(found) > 1)
    with pytest.raises(RunRefError) as ambiguous:
        find_run(store, shared)
    assert str(ambiguous.value).startswith(f"run id {shared} is ambiguous in {store.path}: ")
    with pytest.raises(RunRefError, match="is ambiguous"):
        resolve_ref(store, shared)


def test_an_empty_store_and_no_store_say_so(tmp_path: Path) -> None:
    with ResultStore(tmp_path / "empty.sqlite3") as empty:
        with pytest.raises(RunRefError, match=r"\(the store holds no runs\)"):
            find_run(empty, "abc")
        with pytest.raises(RunRefError, match=r"abc in .*; closest: latest\. A REF is 'latest'"):
            resolve_ref(empty, "abc")
    with pytest.raises(RunRefError) as missing:
        resolve_ref(None, "main", tmp_path / "s.sqlite3")
    assert str(missing.value).startswith(
        f"no results store at {tmp_path / 's.sqlite3'} to find baseline main in"
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read {ref}: No such file or directory"),
        ("{not json", "{ref} is not JSON"),
        ('{"runs": []}', "{ref} is not a --bench-json file (it has no list of benchmarks)"),
    ],
)
def test_a_json_ref_must_be_a_bench_json_file(
    tmp_path: Path, content: str | None, message: str
) -> None:
    path = tmp_path / "run.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(RunRefError) as refused:
        resolve_ref(None, str(path))
    assert str(refused.value).startswith(message.format(ref=path))


def _setup(store: ResultStore, run_id: str) -> RunSetup:
    return RunSetup.of(store.get_run(run_id))


def test_latest_is_the_newest_complete_run_before_this_one_that_did_not_regress(
    store: ResultStore,
) -> None:
    older = _run(store)
    _run(store, 20.0, regression=True)  # failed --bench-compare-fail: never a baseline
    _run(store, 30.0, interrupted=True)
    current = _run(store, 40.0)
    baseline = find_baseline(CompareRef("latest", "latest"), store, _setup(store, current), current)
    assert isinstance(baseline, Baseline)
    assert baseline.run_id == older
    assert [r.latency_ms for r in baseline.records["p"]] == [10.0, 11.0, 12.0]
    assert baseline.label.startswith(f"run {older} (")
    assert baseline.setup["benchmark"] == "demo"
    # With the between-run noise of the complete runs before this one.
    assert baseline.history_runs == 2
    assert baseline.history


def test_without_an_earlier_complete_run_the_reason_is_said(store: ResultStore) -> None:
    current = _run(store)
    found = find_baseline(CompareRef("latest", "latest"), store, _setup(store, current), current)
    assert found == (
        f"no complete run of demo with the same setup in {store.path} yet; this run, when "
        "complete, is the next one's baseline"
    )
    assert find_baseline(CompareRef("latest", "latest"), None, _setup(store, current), None) == (
        "no results store to find a baseline in (--bench-no-store)"
    )


def test_a_name_is_the_run_it_stands_for_in_this_benchmark(store: ResultStore) -> None:
    named = _run(store)
    other = _run(store, slug="other")
    store.set_baseline("main", named)
    store.set_baseline("main", other)
    current = _run(store)
    ref = CompareRef("name", "main")
    baseline = find_baseline(ref, store, _setup(store, current), current)
    assert isinstance(baseline, Baseline)
    assert baseline.run_id == named
    assert baseline.label.startswith(f"baseline main: run {named} (")
    store.set_baseline("only-other", other)
    found = find_baseline(CompareRef("name", "only-other"), store, _setup(store, current), current)
    assert found == (
        "baseline only-other names no run of demo (it names runs of other; pytest-benchsdk "
        "baseline set only-other RUN names one)"
    )


def test_a_run_ref_is_that_run(store: ResultStore) -> None:
    earlier = _run(store, 5.0)
    current = _run(store)
    ref = CompareRef("run", earlier, run_id=earlier)
    baseline = find_baseline(ref, store, _setup(store, current), current)
    assert isinstance(baseline, Baseline)
    assert baseline.run_id == earlier


def test_a_json_ref_is_its_run_of_this_benchmark(store: ResultStore, tmp_path: Path) -> None:
    current = _run(store)
    wire = TaskRecord(task_index=0, status="success", latency_ms=3.0).to_wire()
    document = {
        "environment": {"python_version": "3.11"},
        "benchmarks": [
            {
                "benchmarkSlug": "demo",
                "localRunId": "abc",
                "config": {"concurrency": 2, "groupBy": "round", "other": 1},
                "participants": [{"participant": "p", "records": [wire]}],
            },
            {"benchmarkSlug": "broken", "participants": [{"participant": "p"}]},
        ],
    }
    path = tmp_path / "old.json"
    path.write_text(json.dumps(document))
    ref = resolve_ref(store, str(path))
    baseline = find_baseline(ref, store, _setup(store, current), current)
    assert isinstance(baseline, Baseline)
    assert (baseline.label, baseline.run_id) == ("old.json (abc)", "abc")
    assert baseline.setup["knobs"] == {"concurrency": 2, "groupBy": "round"}
    assert [r.latency_ms for r in baseline.records["p"]] == [3.0]
    other = RunSetup("missing", {}, True)
    assert find_baseline(ref, store, other, None) == f"{path} has no run of benchmark missing"
    broken = RunSetup("broken", {}, True)
    assert str(find_baseline(ref, store, broken, None)).startswith(f"{path}: unreadable records")
