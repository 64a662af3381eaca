"""Terminal text: the run header after collection and the ranked summary at session end."""

from __future__ import annotations

import json
import math
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .._runs import BenchmarkRun, RecordSample
from ..compare import RunWarning, ScoreUncertainty, tied_with_above
from ..scoring import ScoreResult, compute_stats, ranking_key
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

#: Names (participants, group values, metrics) longer than this are cut with an ellipsis in
#: the summary's tables, so one long name does not pad every row.
MAX_NAME_WIDTH = 40
#: Width at which run-hygiene warnings wrap (their messages explain, so they are long).
_WRAP = 96


def knobs_line(run: BenchmarkRun) -> str:
    """Upstream's knobs line; ``iterations`` is the schedule length per participant."""
    resolved = run.schedule.resolved
    return (
        f"Knobs: iterations={len(run.schedule.slots)}, concurrency={resolved.concurrency}, "
        f"staggerDelayMs={_number(resolved.stagger_delay_ms)}, groupBy={resolved.group_by}"
    )


def terminal_text(text: object) -> str:
    """``str(text)`` on one terminal line: characters that are not printable (a newline, a
    tab, an escape sequence) are written as Python escapes (``\\n``)."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


def _name(text: object) -> str:
    """A name in a table cell: on one line, cut to :data:`MAX_NAME_WIDTH` with an ellipsis."""
    text = terminal_text(text)
    return text if len(text) <= MAX_NAME_WIDTH else text[: MAX_NAME_WIDTH - 1] + "\u2026"


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


def _success(samples: Sequence[RecordSample]) -> str:
    ok = sum(1 for succeeded, _, _ in samples if succeeded)
    return f"{ok}/{len(samples)}"


def _phase_label(phase: str) -> str:
    return f"  phase={_name(phase)}"


def _metric_cells(row: ScoreResult, metric_names: Sequence[str]) -> list[str]:
    by_name = {m.name: m for m in row.metrics}
    cells = []
    for name in metric_names:
        m = by_name.get(name)
        cells.append("-" if m is None else f"{_stat(m.median)}/{_stat(m.p95)}/{_stat(m.p99)}")
    return cells


def _phase_score_rows(
    run: BenchmarkRun, participant: str, metric_names: Sequence[str]
) -> list[list[str]]:
    """The participant's per-phase rows under its scores: success rate and metric stats of
    each phase's records alone (no composite: the ranked score is the participant's)."""
    rows = []
    for phase, results in run.phase_results.items():
        row = next((r for r in results if r.provider == participant), None)
        if row is None:
            continue
        success = "-" if row.skipped else f"{row.success_rate:.0%}"
        rows.append(["", _phase_label(phase), success, *_metric_cells(row, metric_names), ""])
    return rows


def _score_rows(run: BenchmarkRun, results: list[ScoreResult]) -> list[list[str]]:
    metric_names = list(dict.fromkeys(m.name for r in results for m in r.metrics))
    units = {m.name: m.unit for r in results for m in r.metrics}
    header = ["#", "participant", "success"]
    header += [
        f"{_name(name)} med/p95/p99"
        + (f" ({terminal_text(units[name])})" if units.get(name) else "")
        for name in metric_names
    ]
    header.append("score")
    uncertainty = {u.participant: u for u in run.uncertainty or ()}
    ties = tied_with_above(run.uncertainty) if run.uncertainty else {}
    if uncertainty:
        level = next(iter(uncertainty.values())).level
        header += [f"{level:.0%} interval", "keeps rank"]
    aggregates = [r for r in results if r.provider]
    group_by = _group_key(run)
    # Rank participants by their aggregate row (the first row of each participant).
    firsts: dict[str, ScoreResult] = {}
    for r in aggregates:
        firsts.setdefault(r.provider, r)
    ranking = sorted(firsts.values(), key=ranking_key)
    rows = [header]
    for rank, first in enumerate(ranking, start=1):
        for index, row in enumerate(r for r in results if r.provider == first.provider):
            label = _name(first.provider)
            if index > 0 and group_by is not None:
                value = row.dimensions.get(group_by, "(none)")
                label = f"  {_name(group_by)}={_name(value)}"
            place = f"{rank}=" if first.provider in ties else str(rank)
            cells = [place if index == 0 else "", label, f"{row.success_rate:.0%}"]
            cells.extend(_metric_cells(row, metric_names))
            cells.append("skipped" if row.skipped else f"{row.composite_score:.2f}")
            if uncertainty:
                cells.extend(_uncertainty_cells(uncertainty.get(first.provider), index, rank))
            rows.append(cells)
        extra = ["", ""] if uncertainty else []
        rows.extend(row + extra for row in _phase_score_rows(run, first.provider, metric_names))
    return rows


def _uncertainty_cells(estimate: ScoreUncertainty | None, index: int, rank: int) -> list[str]:
    """``[low–high]`` and how often the participant keeps its rank, on its first row."""
    if estimate is None or index > 0 or estimate.skipped:
        return ["", ""]
    keeps = estimate.rank_probabilities[rank - 1] if rank <= len(estimate.rank_probabilities) else 0
    return [f"{estimate.low:.1f}–{estimate.high:.1f}", f"{keeps:.0%}"]


def warning_lines(run: BenchmarkRun) -> list[str]:
    """The run-hygiene warnings: one line per code (the first finding's message, then who
    else has it; every finding is in the store and ``--bench-json``)."""
    by_code: dict[str, list[RunWarning]] = {}
    for warning in run.warnings:
        by_code.setdefault(warning.code, []).append(warning)
    lines = []
    for code, found in by_code.items():
        first = found[0]
        line = f"  warning [{code}] {_name(first.participant)}: {terminal_text(first.message)}"
        others = [
            f"{_name(w.participant)}" + (f" {_name(w.metric)}" if w.metric else "")
            for w in found[1:]
        ]
        if others:
            line += f" (also: {', '.join(others)})"
        lines.extend(textwrap.wrap(line, _WRAP, subsequent_indent="      ", break_on_hyphens=False))
    return lines


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
    lines = [f"  Compared with {terminal_text(comparison.baseline)}:"]
    lines.extend(f"    warning: {terminal_text(w)}" for w in comparison.warnings)
    rows = [
        ["participant", "metric", "stat", "baseline", "current", "change", "interval", "verdict"]
    ]
    for row in comparison.rows:
        c = row.comparison
        unit = f" {row.unit}" if row.unit else ""
        if c is None:
            rows.append(
                [
                    _name(row.participant),
                    _name(row.metric),
                    row.statistic,
                    "",
                    "",
                    "",
                    "",
                    terminal_text(row.note or ""),
                ]
            )
            continue
        rows.append(
            [
                _name(row.participant),
                _name(row.metric),
                row.statistic,
                f"{_stat(c.baseline_statistic)}{unit}",
                f"{_stat(c.current_statistic)}{unit}",
                _change(c.change),
                f"[{_change(c.ci_low)}, {_change(c.ci_high)}]",
                c.verdict,
            ]
        )
    lines.extend(_table(rows, indent="    "))
    return lines


def _change(change: float) -> str:
    if not math.isfinite(change):
        return "n/a" if change != change else ("+inf%" if change > 0 else "-inf%")
    return f"{change * 100:+.1f}%"


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
