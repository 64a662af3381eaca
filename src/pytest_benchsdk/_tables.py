"""Plain-text tables of a run's results, shared by the session's summary (``_plugin/terminal``)
and the store CLI (``cli``): names and numbers in cells, aligned tables, the ranked scores, the
run-hygiene warnings and the baseline comparison. No pytest here.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence

from ._baseline import BaselineComparison
from ._hygiene import RunWarning
from ._uncertainty import ScoreUncertainty, tied_with_above
from .scoring import ScoreResult, ranking_key

__all__ = [
    "MAX_NAME_WIDTH",
    "change_text",
    "comparison_table",
    "name_cell",
    "phase_label",
    "score_rows",
    "stat_text",
    "table",
    "terminal_text",
    "warning_lines",
]

#: Names (participants, group values, metrics) longer than this are cut with an ellipsis in
#: the summary's tables, so one long name does not pad every row.
MAX_NAME_WIDTH = 40
#: Width at which run-hygiene warnings wrap (their messages explain, so they are long).
_WRAP = 96


def terminal_text(text: object) -> str:
    """``str(text)`` on one terminal line: characters that are not printable (a newline, a
    tab, an escape sequence) are written as Python escapes (``\\n``)."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


def name_cell(text: object) -> str:
    """A name in a table cell: on one line, cut to :data:`MAX_NAME_WIDTH` with an ellipsis."""
    text = terminal_text(text)
    return text if len(text) <= MAX_NAME_WIDTH else text[: MAX_NAME_WIDTH - 1] + "\u2026"


def stat_text(value: float) -> str:
    """A statistic in a cell: 3 significant digits (never fewer than the integer part)."""
    if not math.isfinite(value):
        return str(value)
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def change_text(change: float) -> str:
    """A relative change as a signed percentage (``+12.3%``; ``n/a`` for NaN)."""
    if not math.isfinite(change):
        return "n/a" if change != change else ("+inf%" if change > 0 else "-inf%")
    return f"{change * 100:+.1f}%"


def table(rows: list[list[str]], indent: str = "  ") -> list[str]:
    """Rows of cells as aligned lines (columns two spaces apart, no trailing spaces)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        (
            indent + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]


def phase_label(phase: str) -> str:
    return f"  phase={name_cell(phase)}"


def _metric_cells(row: ScoreResult, metric_names: Sequence[str]) -> list[str]:
    by_name = {m.name: m for m in row.metrics}
    cells = []
    for name in metric_names:
        m = by_name.get(name)
        cells.append(
            "-" if m is None else f"{stat_text(m.median)}/{stat_text(m.p95)}/{stat_text(m.p99)}"
        )
    return cells


def _phase_score_rows(
    phase_results: Mapping[str, Sequence[ScoreResult]],
    participant: str,
    metric_names: Sequence[str],
) -> list[list[str]]:
    """The participant's per-phase rows under its scores: success rate and metric stats of
    each phase's records alone (no composite: the ranked score is the participant's)."""
    rows = []
    for phase, results in phase_results.items():
        row = next((r for r in results if r.provider == participant), None)
        if row is None:
            continue
        success = "-" if row.skipped else f"{row.success_rate:.0%}"
        rows.append(["", phase_label(phase), success, *_metric_cells(row, metric_names), ""])
    return rows


def score_rows(
    results: Sequence[ScoreResult],
    uncertainty: Sequence[ScoreUncertainty] | None,
    group_by: str | None,
    phase_results: Mapping[str, Sequence[ScoreResult]],
) -> list[list[str]]:
    """The ranked scores table (header first): rank (``n=`` for a tie), participant, success,
    each metric's med/p95/p99, the composite and, with ``uncertainty``, its interval and how
    often it keeps its rank; ``group_by`` rows and ``phase_results`` rows under their
    participant."""
    metric_names = list(dict.fromkeys(m.name for r in results for m in r.metrics))
    units = {m.name: m.unit for r in results for m in r.metrics}
    header = ["#", "participant", "success"]
    header += [
        f"{name_cell(name)} med/p95/p99"
        + (f" ({terminal_text(units[name])})" if units.get(name) else "")
        for name in metric_names
    ]
    header.append("score")
    by_participant = {u.participant: u for u in uncertainty or ()}
    ties = tied_with_above(uncertainty) if uncertainty else {}
    if by_participant:
        level = next(iter(by_participant.values())).level
        header += [f"{level:.0%} interval", "keeps rank"]
    aggregates = [r for r in results if r.provider]
    # Rank participants by their aggregate row (the first row of each participant).
    firsts: dict[str, ScoreResult] = {}
    for r in aggregates:
        firsts.setdefault(r.provider, r)
    ranking = sorted(firsts.values(), key=ranking_key)
    rows = [header]
    for rank, first in enumerate(ranking, start=1):
        for index, row in enumerate(r for r in results if r.provider == first.provider):
            label = name_cell(first.provider)
            if index > 0 and group_by is not None:
                value = row.dimensions.get(group_by, "(none)")
                label = f"  {name_cell(group_by)}={name_cell(value)}"
            place = f"{rank}=" if first.provider in ties else str(rank)
            cells = [place if index == 0 else "", label, f"{row.success_rate:.0%}"]
            cells.extend(_metric_cells(row, metric_names))
            cells.append("skipped" if row.skipped else f"{row.composite_score:.2f}")
            if by_participant:
                cells.extend(_uncertainty_cells(by_participant.get(first.provider), index, rank))
            rows.append(cells)
        extra = ["", ""] if by_participant else []
        rows.extend(
            row + extra for row in _phase_score_rows(phase_results, first.provider, metric_names)
        )
    return rows


def _uncertainty_cells(estimate: ScoreUncertainty | None, index: int, rank: int) -> list[str]:
    """``[low–high]`` and how often the participant keeps its rank, on its first row."""
    if estimate is None or index > 0 or estimate.skipped:
        return ["", ""]
    keeps = estimate.rank_probabilities[rank - 1] if rank <= len(estimate.rank_probabilities) else 0
    return [f"{estimate.low:.1f}–{estimate.high:.1f}", f"{keeps:.0%}"]


def warning_lines(warnings: Sequence[RunWarning]) -> list[str]:
    """The run-hygiene warnings: one line per code (the first finding's message, then who
    else has it; every finding is in the store and ``--bench-json``)."""
    by_code: dict[str, list[RunWarning]] = {}
    for warning in warnings:
        by_code.setdefault(warning.code, []).append(warning)
    lines = []
    for code, found in by_code.items():
        first = found[0]
        line = f"  warning [{code}] {name_cell(first.participant)}: {terminal_text(first.message)}"
        others = [
            f"{name_cell(w.participant)}" + (f" {name_cell(w.metric)}" if w.metric else "")
            for w in found[1:]
        ]
        if others:
            line += f" (also: {', '.join(others)})"
        lines.extend(textwrap.wrap(line, _WRAP, subsequent_indent="      ", break_on_hyphens=False))
    return lines


def comparison_table(comparison: BaselineComparison) -> list[str]:
    """``--bench-compare``'s table: what the baseline is, the setup warnings, one row per
    participant × metric × statistic."""
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
                    name_cell(row.participant),
                    name_cell(row.metric),
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
                name_cell(row.participant),
                name_cell(row.metric),
                row.statistic,
                f"{stat_text(c.baseline_statistic)}{unit}",
                f"{stat_text(c.current_statistic)}{unit}",
                change_text(c.change),
                f"[{change_text(c.ci_low)}, {change_text(c.ci_high)}]",
                c.verdict,
            ]
        )
    lines.extend(table(rows, indent="    "))
    return lines
