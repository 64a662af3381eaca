"""Helpers for the end-to-end tests: real pytest sessions (pytester) against the loopback platform.

Imported as ``from helpers.e2e import ...``; no fixtures here (the tests own them).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from helpers.platform_server import API_KEY, LoopbackPlatform, iter_lines
from helpers.sessions import SCORING, bench, store_path, stored_records, stored_runs
from pytest_benchsdk import ResultStore
from pytest_benchsdk.store import StoredRun

__all__ = [
    "E2E_BENCH",
    "PARTICIPANTS",
    "assert_delivered",
    "bench_args",
    "e2e_bench",
    "outcome_file",
    "server_records",
    "use_platform",
]

PARTICIPANTS = ("p1", "p2")


def e2e_bench(slug: str = "demo") -> str:
    """A bench file (benchmark ``slug``, name "Demo"): two participants, two iterations each,
    scoring, log lines at every level, and an on_complete hook that writes the outcome's run id
    and dashboard URL to ``outcome.json`` next to the bench file."""
    return bench(
        f'participants=[Participant("p1"), Participant("p2")], iterations=2,\n'
        f"scoring={SCORING},\non_complete=on_complete",
        """
        @define_task
        def task(participant, task_index, measure, log):
            measure(value={"p1": 20, "p2": 50}[participant.name] + task_index)
            log(f"debug {task_index}", level="debug")
            log(f"info {task_index}")
            log(f"warn {task_index}", level="warn")
            log(f"error {task_index}", level="error")
        """,
        prelude="""
        import json, pathlib

        @define_on_complete
        def on_complete(outcome):
            path = pathlib.Path(__file__).with_name("outcome.json")
            path.write_text(json.dumps({"run_id": outcome.run_id,
                                        "dashboard_url": outcome.dashboard_url}))
        """,
        slug=slug,
    )


E2E_BENCH = e2e_bench()


def use_platform(monkeypatch: pytest.MonkeyPatch, key: str = API_KEY) -> None:
    """Credentials for the sessions under test (the URL goes on the command line)."""
    monkeypatch.setenv("BENCHMARKS_PLATFORM_API_KEY", key)


def bench_args(server: LoopbackPlatform, *extra: str) -> tuple[str, ...]:
    return ("--bench", "--bench-base-url", server.root_url, *extra)


def outcome_file(pytester: pytest.Pytester) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((pytester.path / "outcome.json").read_text())
    return data


def server_records(server: LoopbackPlatform, run_id: str) -> dict[str, list[dict[str, Any]]]:
    """``{participant: [record]}`` as the platform stored them, by task index."""
    out: dict[str, list[dict[str, Any]]] = {}
    for participant, record in server.records(run_id):
        out.setdefault(participant, []).append(record)
    return {p: sorted(rs, key=lambda r: r["taskIndex"]) for p, rs in out.items()}


def _only_run(path: Path, slug: str) -> StoredRun:
    runs = [r for r in stored_runs(path) if r.benchmark_slug == slug]
    assert len(runs) == 1, runs
    return runs[0]


def assert_delivered(
    server: LoopbackPlatform,
    pytester: pytest.Pytester,
    *,
    slug: str = "demo",
    participants: tuple[str, ...] = PARTICIPANTS,
    iterations: int = 2,
    log_levels: tuple[str, ...] = ("info", "warn", "error"),
    store: Path | None = None,
    summary: bool = True,
) -> str:
    """Everything of the one run of ``slug`` is on the platform exactly once; its run id.

    Benchmark, run, participants, one completed worker per participant, every record exactly
    once and equal (wire JSON) to the store's, the log and system-metrics artifacts, the
    summary; and nothing is left in the store's outbox.
    """
    path = store if store is not None else store_path(pytester)
    with server.lock:
        assert server.benchmarks[slug]["name"] == "Demo"
        runs = [r for r in server.runs.values() if r["benchmarkSlug"] == slug]
        assert len(runs) == 1, runs
        run_id = runs[0]["id"]
        parts = {name for (rid, name) in server.participants if rid == run_id}
        workers = [w for w in server.workers.values() if w["runId"] == run_id]
        summaries = list(server.summaries.get(run_id, []))
    assert parts == set(participants)
    assert sorted(w["participant"] for w in workers) == sorted(participants)
    assert {w["status"] for w in workers} == {"completed"}

    local = _only_run(path, slug)
    assert local.platform_run_id == run_id
    assert local.dashboard_url == f"{server.root_url}/acme/benchmarks/{slug}/runs/{run_id}"
    on_server = server_records(server, run_id)
    in_store = stored_records(path, local.run_id)
    assert on_server == in_store
    assert {p: len(rs) for p, rs in on_server.items()} == dict.fromkeys(participants, iterations)
    # Exactly once: no record twice (the comparison above is by participant and index).
    keys = Counter((p, r["taskIndex"]) for p, r in server.records(run_id))
    assert set(keys.values()) == {1}

    uploaded = server.uploaded_artifacts(run_id)
    kinds = Counter((a["workerId"], a["kind"]) for a in uploaded)
    expected_kinds = {"coordinator.log", "system-metrics"} if log_levels else {"system-metrics"}
    assert kinds == Counter({(w["id"], k): 1 for w in workers for k in expected_kinds})
    for artifact in uploaded:
        part = next(w["participant"] for w in workers if w["id"] == artifact["workerId"])
        lines = list(iter_lines(artifact["content"]))
        if artifact["kind"] == "coordinator.log":
            assert artifact["name"] == "worker.log"
            assert [line.split(" ", 4)[4] for line in lines] == [
                f"{level} {i}" for i in range(iterations) for level in log_levels
            ], part
            assert lines == store_log_lines(path, local.run_id, part, log_levels)
        else:
            assert artifact["name"] == "metrics.jsonl"
            assert lines
            assert all("ts" in json.loads(line) for line in lines)

    if summary:
        assert len(summaries) == 1
        assert [row["provider"] for row in summaries[0]["results"]] == list(participants)
        assert summaries[0]["scoring"] == json.loads(SCORING)
    with ResultStore(path) as result_store:
        counts = result_store.outbox_counts()
    assert counts.get("pending", 0) == counts.get("failed", 0) == 0, counts
    return str(run_id)


def store_log_lines(
    path: Path, local_run_id: str, participant: str, levels: tuple[str, ...]
) -> list[str]:
    with ResultStore(path) as store:
        lines = store.log_lines(local_run_id, participant)
    return [line for line in lines if any(f"[{level}]" in line for level in levels)]
