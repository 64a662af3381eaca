"""``--bench-compare``: find the baseline of a run (store or JSON file) and compare with it.

The comparison itself is the engine's (:mod:`pytest_benchsdk._baseline`); this module reads
the baseline from where REF points: ``latest`` (the newest finished run of the same benchmark
with the same knobs in the store), a stored run id, or a ``--bench-json`` file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from .._baseline import BaselineComparison, compare_runs, setup_differences
from .._runenv import RunEnvironment
from .._runs import BenchmarkRun
from ..records import TaskRecord
from ..store import ResultStore, StoredRun, UnknownRunError

__all__ = ["Baseline", "compare_with_baseline", "current_setup", "find_baseline"]

#: Finished runs only: a run still "running" (or interrupted) is no baseline.
_FINISHED = ("passed", "failed")


@attrs.frozen
class Baseline:
    """Where the baseline came from, its records per participant and its setup."""

    label: str
    run_id: str | None
    records: Mapping[str, Sequence[TaskRecord]]
    setup: Mapping[str, Any]


def _setup_of_stored(run: StoredRun) -> dict[str, Any]:
    return {
        "benchmark": run.benchmark_slug,
        "knobs": dict(run.knobs),
        "environment": run.environment.to_dict(),
    }


def current_setup(run: BenchmarkRun, environment: RunEnvironment) -> dict[str, Any]:
    return {
        "benchmark": run.config.benchmark_slug,
        "knobs": run.schedule.resolved.to_wire(),
        "environment": environment.to_dict(),
    }


def _from_store(store: ResultStore, stored: StoredRun) -> Baseline:
    records = {pr.participant: pr.records for pr in store.participant_records(stored.run_id)}
    return Baseline(
        f"run {stored.run_id} ({stored.started_at})",
        stored.run_id,
        records,
        _setup_of_stored(stored),
    )


def _from_json(path: Path, slug: str) -> Baseline | str:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return f"cannot read {path}: {exc}"
    benchmarks = document.get("benchmarks") if isinstance(document, dict) else None
    found = next(
        (b for b in benchmarks or [] if isinstance(b, dict) and b.get("benchmarkSlug") == slug),
        None,
    )
    if found is None:
        return f"{path} has no run of benchmark {slug}"
    try:
        records = {
            str(part["participant"]): tuple(TaskRecord.from_wire(r) for r in part["records"])
            for part in found.get("participants") or []
        }
    except (KeyError, TypeError, ValueError) as exc:
        return f"{path}: unreadable records ({exc})"
    snapshot = found.get("config") or {}
    knobs = {k: snapshot[k] for k in ("concurrency", "staggerDelayMs", "groupBy") if k in snapshot}
    return Baseline(
        f"{path.name} ({found.get('localRunId') or 'JSON'})",
        found.get("localRunId"),
        records,
        {"benchmark": slug, "knobs": knobs, "environment": document.get("environment") or {}},
    )


def find_baseline(ref: str, run: BenchmarkRun, store: ResultStore | None) -> Baseline | str:
    """The baseline REF names for ``run``, or why there is none (one line)."""
    slug = run.config.benchmark_slug
    path = Path(ref)
    if ref != "latest" and (ref.endswith(".json") or path.is_file()):
        return _from_json(path, slug)
    if store is None:
        return "no results store to find a baseline in (--bench-no-store)"
    if ref == "latest":
        knobs = run.schedule.resolved.to_wire()
        for stored in store.list_runs(limit=1000, benchmark_slug=slug):
            if (
                stored.run_id != run.local_run_id
                and stored.status in _FINISHED
                and stored.knobs == knobs
                and stored.record_count
            ):
                return _from_store(store, stored)
        return (
            f"no finished run of {slug} with the same knobs in {store.path} yet (this run "
            "becomes the baseline of the next one)"
        )
    try:
        stored = store.get_run(ref)
    except UnknownRunError:
        return f"no run {ref} in {store.path}"
    return _from_store(store, stored)


def compare_with_baseline(
    run: BenchmarkRun, baseline: Baseline, environment: RunEnvironment
) -> BaselineComparison:
    """Compare the run's records with the baseline's (the run's scoring spec decides the
    metrics)."""
    current = {pr.participant: pr.records for pr in run.participant_records() if pr.records}
    rows = compare_runs(baseline.records, current, run.spec)
    current_knobs = current_setup(run, environment)
    # A JSON baseline carries only some knobs: compare what both sides have.
    shared = set(baseline.setup.get("knobs") or {}) & set(current_knobs["knobs"])
    ours = {**current_knobs, "knobs": {k: current_knobs["knobs"][k] for k in shared}}
    theirs = {**baseline.setup, "knobs": {k: baseline.setup["knobs"][k] for k in shared}}
    return BaselineComparison(
        baseline.label, baseline.run_id, setup_differences(theirs, ours), rows
    )
