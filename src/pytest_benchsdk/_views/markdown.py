"""The session's runs as GitHub-flavoured Markdown (``--bench-markdown``), for CI job summaries.

Per benchmark, from its :class:`~pytest_benchsdk.results.RunSummary`, the verdict first:
knobs, status and the platform link, the ranked scores with their intervals, the baseline
comparison, the threshold verdicts; then the participants' success and latency, the metrics
that are not scored and the run warnings. Compact tables only, so 20 participants stay far
below GitHub's 1 MiB step-summary limit (and below 64 KB). Every text from a run is escaped:
no HTML, no control character and no table syntax of a name reaches the page.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Final

from pytest_benchsdk._base.numbers import change_text, in_unit, phase_subject
from pytest_benchsdk._base.percentiles import BEST_TAIL_NOTE
from pytest_benchsdk._views.escape import terminal_text
from pytest_benchsdk._views.text import (
    comparison_legend,
    comparison_reasons,
    detectable_cell,
    knobs_line,
    latency_scale,
    metric_scales,
    relative_more,
    relative_sentence,
    relative_shown,
    rounds_cell,
    score_rows,
    stats_cell,
    unranked_note,
    warmup_line,
    warnings_more,
    warnings_shown,
)
from pytest_benchsdk.results import RunSummary, ScoreTable, metric_unit

__all__ = ["cell", "code", "markdown_summary"]

#: Names longer than this are cut in the tables.
_MAX_NAME: Final = 40


def cell(text: object, limit: int = _MAX_NAME) -> str:
    """Text for a Markdown table cell or line: one line, cut to ``limit``, control characters
    as escapes, HTML escaped (``<img>`` is text), ``|`` and backticks escaped."""
    value = " ".join(terminal_text(str(text).replace("\n", " ")).split())
    if len(value) > limit:
        value = value[: limit - 1] + "…"
    return html.escape(value, quote=False).replace("|", "\\|").replace("`", "\\`")


def code(text: object, limit: int = 200) -> str:
    """Text as a Markdown code span in a table cell: HTML needs no escaping there (a code span
    shows ``<`` as it is, and would show ``&lt;`` literally); a backtick cannot end the span."""
    value = " ".join(terminal_text(str(text).replace("\n", " ")).split())
    if len(value) > limit:
        value = value[: limit - 1] + "…"
    return "`" + value.replace("`", "'").replace("|", "\\|") + "`"


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines


def _participant_lines(summary: RunSummary, *, phases: bool = True) -> list[str]:
    if summary.knobs.rounds is not None:
        counted = [
            [cell(p.name), f"{p.passed}/{p.ran}", rounds_cell(p)] for p in summary.ran_participants
        ]
        return ["", *_table(["participant", "success", "rounds × iterations"], counted)]
    rows = []
    scale = latency_scale(summary)
    for p in summary.ran_participants:
        rows.append([cell(p.name), f"{p.passed}/{p.ran}", stats_cell(p.latency, "ms", scale)])
        rows += [
            [
                f"↳ {cell(phase_subject(p.name, ph.phase))}",
                f"{ph.passed}/{ph.ran}",
                stats_cell(ph.latency, "ms", scale),
            ]
            for ph in (p.phases if phases else ())
        ]
    return ["", *_table(["participant", "success", "latency med / p95 / p99"], rows)]


def _metric_lines(summary: RunSummary) -> list[str]:
    rows = []
    scales = metric_scales(summary)
    for p in summary.ran_participants:
        for m in p.metrics:
            if m.scored:
                continue
            count = str(m.stats.count if m.stats is not None else 0)
            label = cell(m.label) + (" ↑" if m.lower_is_better is False else "")
            scale = scales.get(m.key)
            rows.append([cell(p.name), label, stats_cell(m.stats, m.unit, scale), count])
            for ph in p.phases:
                pm = next((x for x in ph.metrics if x.key == m.key), None)
                if pm is not None:
                    n = str(pm.stats.count if pm.stats is not None else 0)
                    label = f"↳ {cell(phase_subject(p.name, ph.phase))}"
                    rows.append([label, rows[-1][1], stats_cell(pm.stats, pm.unit, scale), n])
    if not rows:
        return []
    head = "**Metrics (not scored)**" if summary.scores is not None else "**Metrics**"
    lines = ["", head, "", *_table(["participant", "metric", "med / p95 / p99", "n"], rows)]
    ran = summary.ran_participants
    if any(m.lower_is_better is False and not m.scored for p in ran for m in p.metrics):
        lines += ["", f"_{cell(BEST_TAIL_NOTE, 300)}_"]
    return lines


def _score_lines(scores: ScoreTable | None, *, phases: bool = True) -> list[str]:
    if scores is None or not scores.ranking:
        return []
    # The text view's rows, cell for cell: one ranking, one set of numbers.
    header, *rows = score_rows(scores, phases=phases)
    escaped = [[cell(c, 200) for c in row] for row in rows]
    folded = not phases and any(entry.phase_rows for entry in scores.ranking)
    lines = ["", "**Scores** (per phase in the details)" if folded else "**Scores**", ""]
    if scores.dimensions:
        dims = ", ".join(f"{cell(k)}={cell(v)}" for k, v in scores.dimensions.items())
        lines += [f"Dimensions: {dims}", ""]
    lines += _table([cell(h, 200) for h in header], escaped)
    if scores.has_ties:
        lines += ["", "_n= : tied with the participant above (their intervals overlap)_"]
    unranked = unranked_note(scores)
    if unranked is not None:
        lines += ["", f"_{cell(unranked, 300)}_"]
    if scores.higher_is_better:
        lines += ["", f"_{cell(BEST_TAIL_NOTE, 300)}_"]
    return lines


def _relative_lines(summary: RunSummary) -> list[str]:
    relative = summary.relative
    if relative is None or not relative.rows:
        return []
    rows, hidden = relative_shown(relative)
    lines = ["", "**Relative**", ""] + [
        f"- {relative_sentence(relative, row, cell)}" for row in rows
    ]
    if hidden:
        lines.append(f"- {cell(relative_more(hidden), 300)}")
    return lines


def _threshold_lines(summary: RunSummary) -> list[str]:
    verdicts = summary.thresholds
    if not verdicts:
        return []
    counts = {
        o: sum(1 for v in verdicts if v.outcome == o) for o in ("passed", "failed", "skipped")
    }
    head = f"**Thresholds**: ✅ {counts['passed']} passed, ❌ {counts['failed']} failed" + (
        f", {counts['skipped']} skipped" if counts["skipped"] else ""
    )
    marks = {"failed": "❌", "skipped": "⏭️"}
    rows = [
        [
            cell(v.participant),
            code(v.threshold.label),
            marks[v.outcome],
            cell(v.message(), 300),
        ]
        for v in verdicts
        if v.outcome != "passed"
    ]
    lines = ["", head]
    if rows:
        lines += ["", *_table(["participant", "threshold", "", "detail"], rows)]
    return lines


_COMPARISON_HEADER: Final = (
    "participant",
    "metric",
    "stat",
    "baseline → current",
    "change",
    "interval",
    "verdict",
    "noise",
    "detects",
)


def _comparison_head(summary: RunSummary) -> list[str]:
    """The comparison in the short top: the baseline, how many rows each verdict has, and the
    rows judged changed (every row is in the details)."""
    if summary.comparison_note:
        return ["", f"**Baseline**: none ({cell(summary.comparison_note, 300)})"]
    comparison = summary.comparison
    if comparison is None:
        return []
    counts = {
        verdict: sum(1 for r in comparison.rows if r.judged and r.verdict == verdict)
        for verdict in ("regressed", "improved", "unchanged")
    }
    other = len(comparison.rows) - sum(counts.values())
    tally = (
        f"🔴 {counts['regressed']} regressed · 🟢 {counts['improved']} improved · "
        f"{counts['unchanged']} unchanged" + (f" · {other} not judged" if other else "")
    )
    lines = ["", f"**Compared with** {cell(comparison.baseline, 200)}: {tally}"]
    changed = _comparison_lines(summary, changed_only=True)
    return lines + changed if changed else lines


def _comparison_lines(summary: RunSummary, *, changed_only: bool = False) -> list[str]:
    """The comparison's table with its notes; ``changed_only``: the table of the rows judged
    regressed or improved alone (nothing when there is none)."""
    if summary.comparison_note:
        return ["", f"**Baseline**: none ({cell(summary.comparison_note, 300)})"]
    comparison = summary.comparison
    if comparison is None:
        return []
    verdicts = {"regressed": "🔴 regressed", "improved": "🟢 improved", "unchanged": "unchanged"}
    rows = []
    for row in comparison.rows:
        if changed_only and not (row.judged and row.verdict in ("regressed", "improved")):
            continue
        c = row.comparison
        if c is None:
            rows.append(
                [
                    cell(row.subject),
                    cell(row.metric),
                    row.statistic_label,
                    "",
                    "",
                    "",
                    cell(row.note or "", 200),
                    "",
                    "",
                ]
            )
            continue
        unit, base = row.unit or metric_unit(row.metric, None), c.baseline_statistic
        verdict = verdicts.get(row.verdict or "", row.verdict or "")
        if not row.judged and verdict:
            verdict = f"({verdict})"
        rows.append(
            [
                cell(row.subject),
                cell(row.metric),
                row.statistic_label,
                f"{in_unit([base], unit, base)} → {in_unit([c.current_statistic], unit, base)}",
                change_text(c.change),
                f"[{change_text(c.ci_low)}, {change_text(c.ci_high)}]",
                verdict + ("\\*" if row.reason else ""),
                cell(row.noise_label),
                detectable_cell(row),
            ]
        )
    if changed_only:
        if not rows:
            return []
        return ["", *_table(_COMPARISON_HEADER, rows)]
    lines = ["", f"**Compared with** {cell(comparison.baseline, 200)}", ""]
    if comparison.says_noise:
        lines += [f"_{cell(comparison.noise_line(), 300)}_", ""]
    judged = comparison.judged_line()
    if judged is not None:
        lines += [f"_{cell(judged, 300)}_", ""]
    lines += [f"> ⚠️ {cell(w, 200)}" for w in comparison.warnings]
    lines += _table(_COMPARISON_HEADER, rows)
    legend = comparison_legend(comparison)
    if legend is not None:
        lines += ["", f"_{cell(legend, 300)}_"]
    reasons = comparison_reasons(comparison)
    if reasons:
        lines += [""] + [f"- \\* {cell(reason, 400)}" for reason in reasons]
    return lines


def _warning_lines(summary: RunSummary) -> list[str]:
    if not summary.warnings:
        return []
    lines = ["", "**Warnings**", ""]
    for warning, who in warnings_shown(summary.warnings):
        if isinstance(warning, str):
            lines.append(f"- {cell(warnings_more(warning, who), 600)}")
            continue
        names = ", ".join(cell(name) for name in who)
        metrics = ", ".join(cell(m) for m in warning.metrics)
        about = f"{names} ({metrics})" if metrics else names
        lines.append(f"- `{warning.code}` {about}: {cell(warning.message, 400)}")
    return lines


def _phase_score_lines(scores: ScoreTable | None) -> list[str]:
    """The scores' phase rows (the top has the participants' rows)."""
    if scores is None or not any(entry.phase_rows for entry in scores.ranking):
        return []
    header, *rows = score_rows(scores)
    # A phase row has no rank and names ``participant · phase`` (the text view indents it).
    phase_rows = [row for row in rows if not row[0] and row[1].startswith("  ") and " · " in row[1]]
    width = 2 + len(scores.metrics)
    escaped = [[cell(c, 200) for c in row[1 : width + 1]] for row in phase_rows]
    header = ["participant · phase", *(cell(h, 200) for h in header[2 : width + 1])]
    return ["", "**Scores per phase**", "", *_table(header, escaped)]


def _details(summary: RunSummary) -> list[str]:
    """Everything below the short top, folded: the knobs, the scores per phase, the relative
    summary, the whole comparison, the participants' latency, the metrics that are not
    scored, the warnings and the skipped participants."""
    knobs = knobs_line(summary.knobs).removeprefix("Knobs: ")
    head = cell(knobs, 300)
    warmup = warmup_line(summary.knobs)
    if warmup:
        head += f" · {cell(warmup, 200)}"
    lines = [head]
    # The run's notes (uneven phases, measured under pytest-xdist ...), as the terminal says them.
    lines += [f"\n_{cell(note, 400)}_" for note in summary.notes]
    lines += _phase_score_lines(summary.scores)
    lines += _relative_lines(summary)
    if summary.comparison is not None:
        lines += _comparison_lines(summary)
    if summary.ran_participants:
        lines += _participant_lines(summary)
        lines += _metric_lines(summary)
    lines += _warning_lines(summary)
    for p in summary.participants:
        if p.skipped is not None:
            lines.append(f"\n_Skipped {cell(p.name)}: {cell(p.skipped, 300)}_")
    what = []
    if summary.warnings:
        what.append(f"{len(summary.warnings)} warning(s)")
    skipped = sum(1 for p in summary.participants if p.skipped is not None)
    if skipped:
        what.append(f"{skipped} skipped")
    label = "Details" + (f" ({', '.join(what)})" if what else "")
    return ["", "<details>", f"<summary>{label}</summary>", "", *lines, "", "</details>"]


def markdown_summary(summaries: Iterable[RunSummary]) -> str:
    """The runs as Markdown (one ``##`` section per benchmark), to fit a CI job summary:
    per benchmark a short top (the status, the ranking or the participants' latency without
    phase rows, the threshold verdicts, the comparison's tally and changed rows, errors),
    the rest in a ``<details>`` block. A heading keeps the whole benchmark name."""
    lines = ["# Benchmarks", ""]
    for summary in summaries:
        lines.append(f"## {cell(summary.benchmark_name, 300)} (`{cell(summary.benchmark_slug)}`)")
        lines.append("")
        head = f"status **{cell(summary.status.text(), 200)}**"
        if summary.ab is not None:
            head += f" · {cell(summary.ab.line(), 200)}"
        if summary.dashboard_url:
            head += f" · [platform run]({cell(summary.dashboard_url, 500)})"
        lines.append(head)
        # The verdict first (a job summary is read from the top): the ranking (else each
        # participant's latency), the thresholds and the comparison; the rest folded.
        if not summary.ran_participants:
            lines += ["", "No participant ran."]
        elif summary.scores is not None and summary.scores.ranking:
            lines += _score_lines(summary.scores, phases=False)
        else:
            lines += _participant_lines(summary, phases=False)
        lines += _threshold_lines(summary)
        lines += _comparison_head(summary)
        for error in summary.errors:
            lines.append(f"\n**Error**: {cell(error, 500)}")
        lines += _details(summary)
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
