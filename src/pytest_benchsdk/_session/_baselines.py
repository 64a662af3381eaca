"""``--bench-save NAME``: keep a session's complete run under a baseline name (per benchmark),
for a later ``--bench-compare=NAME``."""

from __future__ import annotations

from pytest_benchsdk.results import BenchmarkRun, short_run_id
from pytest_benchsdk.store import ResultStore

__all__ = ["save_name"]


def save_name(store: ResultStore, name: str, run: BenchmarkRun) -> str:
    """Keep the run under ``name`` when it is complete; the line that says what happened."""
    slug, run_id, summary = run.config.benchmark_slug, run.local_run_id, run.summary
    if run_id is None or summary is None:
        return f"Baseline {name} of {slug}: not saved (the run has no stored summary)"
    status = summary.status
    if not status.complete or status.state not in ("passed", "failed"):
        why = (
            "it was interrupted"
            if status.state == "interrupted"
            else "it ran a subset of the benchmark (-k, a node id, --lf)"
        )
        return f"Baseline {name} of {slug}: not saved, the run is not complete ({why})"
    before = store.set_baseline(name, run_id)
    moved = f" (was run {short_run_id(before)})" if before and before != run_id else ""
    return f"Baseline {name} of {slug}: run {short_run_id(run_id)}{moved}"
