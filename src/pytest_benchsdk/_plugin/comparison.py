"""``--bench-compare``: find the baseline of a run (store or JSON file) and compare with it.

The comparison itself is made with the run's other analyses
(:func:`pytest_benchsdk.results.analyse`); this module reads the baseline from where REF
points: ``latest`` (the newest finished run of the same benchmark with the same knobs in the
store), a stored run id, or a ``--bench-json`` file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .._runenv import RunEnvironment
from ..records import TaskRecord
from ..results import Baseline, BenchmarkRun
from ..store import ResultStore, StoredRun, UnknownRunError

__all__ = ["current_setup", "find_baseline"]

#: Finished runs only: a run still "running" (or interrupted) is no baseline.
_FINISHED = ("passed", "failed")


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
