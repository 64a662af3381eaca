"""Terminal text: the run header after collection and the ranked summary at session end."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from .._runs import BenchmarkRun
from ..records import TaskRecord
from ..scoring import ScoreResult, compute_stats
from .options import BenchOptions

__all__ = ["knobs_line", "run_header_lines", "summary_lines"]


def knobs_line(run: BenchmarkRun) -> str:
    """Upstream's knobs line; ``iterations`` is the schedule length per participant."""
    resolved = run.schedule.resolved
    return (
        f"Knobs: iterations={len(run.schedule.slots)}, concurrency={resolved.concurrency}, "
        f"staggerDelayMs={_number(resolved.stagger_delay_ms)}, groupBy={resolved.group_by}"
    )


def run_header_lines(run: BenchmarkRun) -> list[str]:
    """A benchmark's lines in the session header: name, knobs, warnings, skipped."""
    lines = [f"benchsdk: {run.config.benchmark_name} [{run.file_key}]", f"  {knobs_line(run)}"]
    lines.extend(f"  {warning}" for warning in run.schedule.warnings)
    for skipped in run.schedule.skipped:
        lines.append(f"  Skipping {skipped.name}: missing {', '.join(skipped.missing)}")
    return lines


def _number(value: float) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _stat(value: float) -> str:
    if not math.isfinite(value):
        return str(value)
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def _table(rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        (
            indent + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]


def _success(records: Sequence[TaskRecord]) -> str:
    ok = sum(1 for r in records if r.status == "success")
    return f"{ok}/{len(records)}"


def _score_rows(run: BenchmarkRun, results: list[ScoreResult]) -> list[list[str]]:
    metric_names = list(dict.fromkeys(m.name for r in results for m in r.metrics))
    units = {m.name: m.unit for r in results for m in r.metrics}
    header = ["#", "participant", "success"]
    header += [
        f"{name} med/p95/p99" + (f" ({units[name]})" if units.get(name) else "")
        for name in metric_names
    ]
    header.append("score")
    aggregates = [r for r in results if r.provider]
    group_by = _group_key(run)
    # Rank participants by their aggregate row (the first row of each participant).
    firsts: dict[str, ScoreResult] = {}
    for r in aggregates:
        firsts.setdefault(r.provider, r)
    ranking = sorted(firsts.values(), key=lambda r: (r.skipped, -r.composite_score))
    rows = [header]
    for rank, first in enumerate(ranking, start=1):
        for index, row in enumerate(r for r in results if r.provider == first.provider):
            label = first.provider
            if index > 0 and group_by is not None:
                label = f"  {group_by}={row.dimensions.get(group_by, '(none)')}"
            cells = [str(rank) if index == 0 else "", label, f"{row.success_rate:.0%}"]
            by_name = {m.name: m for m in row.metrics}
            for name in metric_names:
                m = by_name.get(name)
                cells.append(
                    "-" if m is None else f"{_stat(m.median)}/{_stat(m.p95)}/{_stat(m.p99)}"
                )
            cells.append("skipped" if row.skipped else f"{row.composite_score:.2f}")
            rows.append(cells)
    return rows


def _group_key(run: BenchmarkRun) -> str | None:
    scoring = run.config.scoring
    return scoring.group_by if scoring is not None and run.config.on_score is None else None


def _latency_rows(run: BenchmarkRun) -> list[list[str]]:
    rows = [["participant", "success", "latency med/p95/p99 (ms)"]]
    for pr in run.participant_records():
        latencies = [r.latency_ms for r in pr.records if isinstance(r.latency_ms, (int, float))]
        stats = compute_stats(latencies) if latencies else None
        rows.append(
            [
                pr.participant,
                _success(pr.records),
                "-"
                if stats is None
                else f"{_stat(stats.median)}/{_stat(stats.p95)}/{_stat(stats.p99)}",
            ]
        )
    return rows


def _tables(run: BenchmarkRun) -> list[str]:
    lines = [f"  {knobs_line(run)}"]
    if run.participants:
        lines.extend(_table(_latency_rows(run)))
    if run.results is not None:
        lines.append("  Scores:")
        lines.extend(_table(_score_rows(run, run.results), indent="    "))
    return lines


def summary_lines(
    runs: Iterable[BenchmarkRun], options: BenchOptions, *, json_written: bool = True
) -> list[str]:
    """The ``benchmarks`` section at session end: per run its knobs, latencies, scores,
    skipped participants, errors and dashboard link; then where the results went."""
    runs = list(runs)
    lines: list[str] = []
    for run in runs:
        title = f"{run.config.benchmark_name} ({run.config.benchmark_slug}) [{run.file_key}]"
        lines.append(title)
        try:
            lines.extend(_tables(run))
        except Exception as exc:  # one run's odd figures never hide the other runs
            lines.append(f"  ERROR summary failed: {type(exc).__name__}: {exc}")
        for skipped in run.schedule.skipped:
            lines.append(f"  Skipped {skipped.name}: missing {', '.join(skipped.missing)}")
        for error in run.errors:
            lines.append(f"  ERROR {error}")
        if run.dashboard_url:
            lines.append(f"  View at: {run.dashboard_url}")
        lines.append("")
    store = options.store_path
    if store is not None and any(run.local_run_id for run in runs):
        lines.append(f"Results stored in {store}")
    if options.json_path is not None and json_written:
        lines.append(f"Results written to {options.json_path}")
    return lines
