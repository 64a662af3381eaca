"""The session's runs as one JSON document (``--bench-json``).

Per benchmark: the run's :class:`~pytest_benchsdk.results.RunSummary` (``result``: every fact
the other views print), its status and threshold verdicts at the top for quick reading, and
beside them what only JSON carries: every record in upstream's wire form, the warm-up records,
the run-config snapshot, the platform summary. The keys of earlier versions (``scores``,
``uncertainty``, ``warnings``, ``comparison`` …) are kept, with the same content.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_benchsdk._base.js import js_json
from pytest_benchsdk._base.runenv import RunEnvironment
from pytest_benchsdk.results import BenchmarkRun, RunSummary

__all__ = ["VERSION", "benchmark_json", "json_document", "json_text"]

#: The document's ``version``: 1 plus keys (``status``, ``thresholds``, ``result``) added since.
VERSION = 1


def benchmark_json(
    run: BenchmarkRun, summary: RunSummary | None, environment: RunEnvironment
) -> dict[str, Any]:
    """One benchmark's entry."""
    analyses = run.analyses
    comparison: dict[str, Any] | None = None
    if analyses.comparison is not None:
        comparison = analyses.comparison.to_json()
    elif analyses.comparison_note:
        comparison = {"note": analyses.comparison_note}
    return {
        "file": run.file_key,
        "benchmarkSlug": run.config.benchmark_slug,
        "benchmarkName": run.config.benchmark_name,
        "localRunId": run.local_run_id,
        "runId": run.platform_run_id,
        "dashboardUrl": run.dashboard_url or None,
        "status": None if summary is None else summary.status.to_json(),
        "config": run.local_config_snapshot(environment),
        "skipped": [s.to_wire() for s in run.schedule.skipped]
        + [{"name": name, "reason": why} for name, why in run.skipped_participants.items()],
        "participants": run.records_json(),
        "scores": None if run.results is None else [r.to_wire() for r in run.results],
        "summary": run.platform_summary,
        "warmup": run.warmup_json(),
        "comparison": comparison,
        "uncertainty": None
        if analyses.uncertainty is None
        else [u.to_json() for u in analyses.uncertainty],
        "warnings": [w.to_json() for w in analyses.warnings],
        "thresholds": [t.to_json() for t in analyses.thresholds],
        "errors": list(run.errors),
        "result": None if summary is None else summary.to_json(),
    }


def json_document(
    benchmarks: Sequence[dict[str, Any]], environment: RunEnvironment, dry_run: bool
) -> dict[str, Any]:
    return {
        "version": VERSION,
        "environment": environment.to_dict(),
        "dryRun": dry_run,
        "benchmarks": list(benchmarks),
    }


def json_text(document: dict[str, Any]) -> str:
    """Strict JSON: NaN and Infinity are written as null, like the records the platform
    receives (``JSON.stringify``'s rule), so every JSON reader parses the file."""
    return js_json(document, indent=2) + "\n"
