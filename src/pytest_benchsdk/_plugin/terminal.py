"""Terminal text: the run header after collection and the ranked summary at session end."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .._runs import BenchmarkRun, RecordSample
from .._tables import MAX_NAME_WIDTH, comparison_table, score_rows, terminal_text
from .._tables import name_cell as _name
from .._tables import phase_label as _phase_label
from .._tables import stat_text as _stat
from .._tables import table as _table
from .._tables import warning_lines as _warning_lines
from ..compare import tied_with_above
from ..scoring import ScoreResult, compute_stats
from .options import BenchOptions

__all__ = [
    "MAX_NAME_WIDTH",
    "knobs_line",
    "readable",
    "run_header_lines",
    "summary_lines",
    "terminal_text",
    "verbose_detail",
]


def knobs_line(run: BenchmarkRun) -> str:
    """Upstream's knobs line; ``iterations`` is the schedule length per participant."""
    resolved = run.schedule.resolved
    return (
        f"Knobs: iterations={len(run.schedule.slots)}, concurrency={resolved.concurrency}, "
        f"staggerDelayMs={_number(resolved.stagger_delay_ms)}, groupBy={resolved.group_by}"
    )


def readable(value: Any) -> Any:
    """A JSON value with its floats rounded for reading: 3 significant digits, never fewer
    than the integer part (``0.48585…`` → ``0.486``, ``22.84…`` → ``22.8``, ``1234.5`` →
    ``1234``), like the summary's tables. Ints, bools, strings and non-finite floats stay."""
    if isinstance(value, float):
        if not math.isfinite(value) or value == 0:
            return value
        decimals = max(0, 2 - math.floor(math.log10(abs(value))))
        rounded = round(value, decimals)
        return int(rounded) if decimals == 0 and abs(rounded) < 1e15 else rounded
    if isinstance(value, Mapping):
        return {key: readable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [readable(item) for item in value]
    return value


def verbose_detail(data: object) -> str:
    """A record's ``data`` after ``PASSED`` in ``-v`` lines: compact JSON, numbers rounded
    by :func:`readable` (the stored record keeps full precision), on one line."""
    text = json.dumps(readable(data), separators=(",", ":"), ensure_ascii=False, default=str)
    return terminal_text(text)


def run_header_lines(run: BenchmarkRun) -> list[str]:
    """A benchmark's lines in the session header: name, knobs, warnings, skipped."""
    lines = [
        f"benchsdk: {terminal_text(run.config.benchmark_name)} [{run.file_key}]",
        f"  {knobs_line(run)}",
    ]
    lines.extend(_warmup_line(run))
    lines.extend(f"  {terminal_text(warning)}" for warning in run.schedule.warnings)
    for skipped in run.schedule.skipped:
        lines.append(
            f"  Skipping {terminal_text(skipped.name)}: missing {', '.join(skipped.missing)}"
        )
    return lines


def _warmup_line(run: BenchmarkRun) -> list[str]:
    count = run.schedule.resolved.warmup
    if not count:
        return []
    per = " per phase" if run.config.phases else ""
    return [f"  Warm-up: {count} iteration(s) per participant{per} first, never scored"]


def _number(value: float) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _success(samples: Sequence[RecordSample]) -> str:
    ok = sum(1 for succeeded, _, _ in samples if succeeded)
    return f"{ok}/{len(samples)}"


def warning_lines(run: BenchmarkRun) -> list[str]:
    """The run-hygiene warnings: one line per code (the first finding's message, then who
    else has it; every finding is in the store and ``--bench-json``)."""
    return _warning_lines(run.warnings)


def _score_rows(run: BenchmarkRun, results: list[ScoreResult]) -> list[list[str]]:
    return score_rows(results, run.uncertainty, _group_key(run), run.phase_results)


def _group_key(run: BenchmarkRun) -> str | None:
    scoring = run.config.scoring
    return scoring.group_by if scoring is not None and run.config.on_score is None else None


def _latency_cell(samples: Sequence[RecordSample]) -> str:
    latencies = [latency for _, latency, _ in samples if latency is not None]
    if not latencies:
        return "-"
    stats = compute_stats(latencies)
    return f"{_stat(stats.median)}/{_stat(stats.p95)}/{_stat(stats.p99)}"


def _latency_rows(run: BenchmarkRun, *, with_ran: bool) -> list[list[str]]:
    """Participants' success and latency stats, each followed by its phases' rows; with
    ``with_ran``, a ``ran`` column of done/planned iterations."""
    header = ["participant", "success", "latency med/p95/p99 (ms)"]
    if with_ran:
        header.insert(1, "ran")
    rows = [header]
    phase_of_slot = {slot.index: slot.phase for slot in run.schedule.slots}
    phases = run.phases
    for participant in run.participants:
        selected = run.selected.get(participant, set())
        tally = run.tallies.get(participant)
        samples = [] if tally is None else list(tally.samples())
        parts: list[tuple[str, Sequence[RecordSample], int]] = [
            (_name(participant), samples, len(selected))
        ]
        for phase in phases:
            planned = sum(1 for index in selected if phase_of_slot.get(index) == phase)
            in_phase = [sample for sample in samples if sample[2] == phase]
            parts.append((_phase_label(phase), in_phase, planned))
        for label, records, planned in parts:
            row = [label, _success(records), _latency_cell(records)]
            if with_ran:
                row.insert(1, f"{len(records)}/{planned}")
            rows.append(row)
    return rows


def _tables(run: BenchmarkRun, *, interrupted: bool) -> list[str]:
    lines = [f"  {knobs_line(run)}", *_warmup_line(run)]
    done, planned = run.done_tasks, run.planned_tasks
    if done < planned:
        if interrupted:
            lines.append(f"  Interrupted: {done}/{planned} planned iterations ran")
        elif done:
            lines.append(
                f"  {done}/{planned} planned iterations left a record (the others were "
                "skipped or failed before their task ran)"
            )
    if done == 0:
        # Every participant skipped (missing env vars, pytest.skip) or nothing ran before the
        # session stopped: no table of empty rows.
        lines.append("  No participant ran.")
        return lines
    lines.extend(_table(_latency_rows(run, with_ran=done < planned)))
    if run.results:
        lines.append("  Scores:")
        lines.extend(_table(_score_rows(run, run.results), indent="    "))
    if run.uncertainty and tied_with_above(run.uncertainty):
        lines.append("    (n= : tied with the participant above: their intervals overlap)")
    lines.extend(warning_lines(run))
    lines.extend(comparison_lines(run))
    return lines


def comparison_lines(run: BenchmarkRun) -> list[str]:
    """``--bench-compare``'s table under a run (or why nothing was compared)."""
    if run.comparison_note:
        return [f"  Baseline: none ({terminal_text(run.comparison_note)})"]
    comparison = run.comparison
    if comparison is None:
        return []
    return comparison_table(comparison)


def summary_lines(
    runs: Iterable[BenchmarkRun],
    options: BenchOptions,
    *,
    json_written: bool = True,
    interrupted: bool = False,
) -> list[str]:
    """The ``benchmarks`` section at session end: per run its knobs, latencies (with each
    phase's rows), scores, skipped participants, errors and dashboard link; then where the
    results went. ``interrupted``: the session stopped early (Ctrl-C, ``-x``, ``--maxfail``)."""
    runs = list(runs)
    lines: list[str] = []
    for run in runs:
        title = (
            f"{terminal_text(run.config.benchmark_name)} ({run.config.benchmark_slug}) "
            f"[{run.file_key}]"
        )
        lines.append(title)
        try:
            lines.extend(_tables(run, interrupted=interrupted))
        except Exception as exc:  # one run's odd figures never hide the other runs
            lines.append(f"  ERROR summary failed: {type(exc).__name__}: {exc}")
        for skipped in run.schedule.skipped:
            lines.append(
                f"  Skipped {terminal_text(skipped.name)}: missing {', '.join(skipped.missing)}"
            )
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
