"""The session's runs as GitHub-flavoured Markdown (``--bench-markdown``), for CI job summaries.

Per benchmark: knobs and the platform link, participants' success and latency, the ranked
scores with their intervals, threshold verdicts, the baseline comparison and the run-hygiene
warnings. Compact tables only, so 20 participants stay far below GitHub's 1 MiB step-summary
limit (and below 64 KB).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Final

import attrs

from ._js import py_number
from ._runs import BenchmarkRun
from ._stats import compute_stats
from ._tables import change_text, stat_text
from .compare import tied_with_above
from .scoring import ranking_key

__all__ = ["ThresholdResult", "markdown_summary"]

#: Names longer than this are cut in the tables.
_MAX_NAME: Final = 40


@attrs.frozen
class ThresholdResult:
    """One threshold item's verdict: ``outcome`` is ``passed``, ``failed`` or ``skipped``."""

    file_key: str
    participant: str
    label: str
    outcome: str
    message: str = ""


def _cell(text: object, limit: int = _MAX_NAME) -> str:
    value = " ".join(str(text).split())
    if len(value) > limit:
        value = value[: limit - 1] + "…"
    return value.replace("|", "\\|")


def _number(value: float | None) -> str:
    return "–" if value is None or not math.isfinite(value) else stat_text(value)


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines


def _latency_rows(run: BenchmarkRun) -> list[list[str]]:
    rows = []
    for participant in run.participants:
        tally = run.tallies.get(participant)
        samples = [] if tally is None else list(tally.samples())
        ok = sum(1 for sample in samples if sample[0])
        latencies = [lat for _, lat, _ in samples if lat is not None]
        stats = compute_stats(latencies) if latencies else None
        latency = (
            "–"
            if stats is None
            else f"{_number(stats.median)} / {_number(stats.p95)} / {_number(stats.p99)}"
        )
        rows.append([_cell(participant), f"{ok}/{len(samples)}", latency])
    return rows


def _score_lines(run: BenchmarkRun) -> list[str]:
    results = run.results
    if not results:
        return []
    firsts: dict[str, object] = {}
    for row in results:
        if row.provider:
            firsts.setdefault(row.provider, row)
    ranking = sorted((r for r in results if firsts.get(r.provider) is r), key=ranking_key)
    metrics = list(dict.fromkeys(m.name for r in ranking for m in r.metrics))
    estimates = {u.participant: u for u in run.uncertainty or ()}
    ties = tied_with_above(run.uncertainty) if run.uncertainty else {}
    header = ["#", "participant", "success", *(f"{_cell(m)} med / p95 / p99" for m in metrics)]
    header.append("score")
    if estimates:
        header.append("95% interval")
    rows = []
    for rank, row in enumerate(ranking, start=1):
        by_name = {m.name: m for m in row.metrics}
        cells = [f"{rank}=" if row.provider in ties else str(rank), _cell(row.provider)]
        cells.append(f"{row.success_rate:.0%}")
        for name in metrics:
            m = by_name.get(name)
            cells.append(
                "–" if m is None else f"{_number(m.median)} / {_number(m.p95)} / {_number(m.p99)}"
            )
        cells.append("skipped" if row.skipped else f"{row.composite_score:.2f}")
        if estimates:
            u = estimates.get(row.provider)
            cells.append("" if u is None or u.skipped else f"{u.low:.1f}–{u.high:.1f}")
        rows.append(cells)
    return ["", "**Scores**", "", *_table(header, rows)]


def _threshold_lines(results: Sequence[ThresholdResult]) -> list[str]:
    if not results:
        return []
    counts = {o: sum(1 for r in results if r.outcome == o) for o in ("passed", "failed", "skipped")}
    head = f"**Thresholds**: ✅ {counts['passed']} passed, ❌ {counts['failed']} failed" + (
        f", {counts['skipped']} skipped" if counts["skipped"] else ""
    )
    marks = {"passed": "✅", "failed": "❌", "skipped": "⏭️"}
    rows = [
        [
            _cell(r.participant),
            f"`{r.label}`",
            marks.get(r.outcome, r.outcome),
            _cell(r.message, 200),
        ]
        for r in results
        if r.outcome != "passed"
    ]
    lines = ["", head]
    if rows:
        lines += ["", *_table(["participant", "threshold", "", "detail"], rows)]
    return lines


def _comparison_lines(run: BenchmarkRun) -> list[str]:
    if run.comparison_note:
        return ["", f"**Baseline**: none ({_cell(run.comparison_note, 300)})"]
    comparison = run.comparison
    if comparison is None:
        return []
    verdicts = {"regressed": "🔴 regressed", "improved": "🟢 improved", "unchanged": "unchanged"}
    rows = []
    for row in comparison.rows:
        c = row.comparison
        if c is None:
            rows.append(
                [
                    _cell(row.participant),
                    _cell(row.metric),
                    row.statistic,
                    "",
                    "",
                    "",
                    _cell(row.note or "", 200),
                ]
            )
            continue
        rows.append(
            [
                _cell(row.participant),
                _cell(row.metric),
                row.statistic,
                f"{_number(c.baseline_statistic)} → {_number(c.current_statistic)}",
                change_text(c.change),
                f"[{change_text(c.ci_low)}, {change_text(c.ci_high)}]",
                verdicts.get(c.verdict, c.verdict),
            ]
        )
    lines = ["", f"**Compared with** {_cell(comparison.baseline, 200)}", ""]
    lines += [f"> ⚠️ {_cell(w, 200)}" for w in comparison.warnings]
    lines += _table(
        ["participant", "metric", "stat", "baseline → current", "change", "interval", "verdict"],
        rows,
    )
    return lines


def _warning_lines(run: BenchmarkRun) -> list[str]:
    if not run.warnings:
        return []
    by_code: dict[str, list[str]] = {}
    for warning in run.warnings:
        who = warning.participant + (f" {warning.metric}" if warning.metric else "")
        by_code.setdefault(warning.code, []).append(_cell(who))
    return ["", "**Warnings**", ""] + [
        f"- `{code}`: {', '.join(whos)}" for code, whos in by_code.items()
    ]


def markdown_summary(
    runs: Iterable[BenchmarkRun], thresholds: Sequence[ThresholdResult] = ()
) -> str:
    """The runs as Markdown (one ``##`` section per benchmark)."""
    lines = ["# Benchmarks", ""]
    for run in runs:
        resolved = run.schedule.resolved
        lines.append(f"## {_cell(run.config.benchmark_name)} (`{run.config.benchmark_slug}`)")
        lines.append("")
        knobs = (
            f"iterations {len(run.schedule.slots)} · concurrency {resolved.concurrency} · "
            f"stagger {py_number(resolved.stagger_delay_ms)} ms · group by {resolved.group_by}"
        )
        if resolved.warmup:
            knobs += f" · warm-up {resolved.warmup}"
        if run.dashboard_url:
            knobs += f" · [platform run]({run.dashboard_url})"
        lines.append(knobs)
        if run.done_tasks:
            lines += [
                "",
                *_table(
                    ["participant", "success", "latency med / p95 / p99 (ms)"], _latency_rows(run)
                ),
            ]
        else:
            lines += ["", "No participant ran."]
        lines += _score_lines(run)
        lines += _threshold_lines([t for t in thresholds if t.file_key == run.file_key])
        lines += _comparison_lines(run)
        lines += _warning_lines(run)
        for skipped in run.schedule.skipped:
            lines.append(f"\n_Skipped {_cell(skipped.name)}: missing {', '.join(skipped.missing)}_")
        for error in run.errors:
            lines.append(f"\n**Error**: {_cell(error, 500)}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
