"""The report page: one self-contained HTML file, plotly.js inlined once.

Private to :mod:`pytest_benchsdk.report`. Every text from a run (names, messages, knobs) is
HTML-escaped; the figures' JSON is plotly's, which escapes ``<`` and ``/``. A Content Security
Policy in the page forbids the browser any fetch, font, image or frame from elsewhere, so the
file makes no network request even if something tried.
"""

from __future__ import annotations

import html
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from ..store import ResultStore
from ._charts import Chart, run_charts
from ._model import MAX_CODES, MAX_MESSAGES, RunReport, load_run

__all__ = ["CSP", "render_report", "write_report"]

#: The page's Content Security Policy: inline scripts and styles only, nothing from elsewhere
#: (``data:`` images for plotly's own icons; ``blob:`` for its "download as PNG" button).
CSP: Final = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "img-src data: blob:; font-src data:; connect-src 'none'; base-uri 'none'; form-action 'none'"
)

_STYLE: Final = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0;
       color: #1b1f24; background: #fafbfc; }
header.page { background: #24292f; color: #fff; padding: 14px 28px; }
header.page h1 { margin: 0; font-size: 20px; }
header.page p { margin: 2px 0 0; color: #c9d1d9; }
main { padding: 8px 28px 40px; }
nav.toc a { margin-right: 14px; }
section.run { background: #fff; border: 1px solid #d0d7de; border-radius: 6px;
              padding: 6px 22px 22px; margin: 22px 0; }
h2 { font-size: 19px; border-bottom: 1px solid #d0d7de; padding-bottom: 6px; }
h3 { font-size: 16px; margin-top: 26px; }
table { border-collapse: collapse; margin: 6px 0 10px; }
th, td { border: 1px solid #d0d7de; padding: 3px 9px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.phase td { color: #57606a; }
.regressed { color: #b42318; font-weight: 600; }
.improved { color: #1a7f37; font-weight: 600; }
.muted { color: #57606a; }
figure.chart { margin: 8px 0 18px; }
figure.chart figcaption { color: #57606a; font-size: 12px; }
code { background: #f6f8fa; padding: 0 3px; border-radius: 3px; }
ul.messages { margin: 0; padding-left: 18px; }
"""

_CONFIG: Final = {"displaylogo": False, "responsive": True}


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _num(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(0, digits - 1 - magnitude)
    return f"{value:,.{decimals}f}"


def _table(head: Sequence[str], rows: Iterable[Sequence[str]], classes: Sequence[str] = ()) -> str:
    """A table of already-escaped cells; ``classes`` gives each row's class (may be short)."""
    out = ["<table><thead><tr>", *(f"<th>{h}</th>" for h in head), "</tr></thead><tbody>"]
    for index, row in enumerate(rows):
        cls = classes[index] if index < len(classes) and classes[index] else ""
        out.append(f'<tr class="{cls}">' if cls else "<tr>")
        out.extend(row)
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _td(value: object, *, num: bool = False, raw: bool = False) -> str:
    text = str(value) if raw else _e(value)
    return f'<td class="num">{text}</td>' if num else f"<td>{text}</td>"


class _Figures:
    """Renders figures to HTML; plotly.js goes inline with the first one only."""

    def __init__(self) -> None:
        self.count = 0

    def html(self, chart: Chart) -> str:
        import plotly.io as pio

        self.count += 1
        height = chart.figure.layout.height or 420
        body = pio.to_html(
            chart.figure,
            include_plotlyjs=self.count == 1,
            full_html=False,
            config=_CONFIG,
            div_id=f"fig-{self.count}",
            default_height=f"{height}px",
            validate=False,
        )
        caption = f"<figcaption>{_e(chart.note)}</figcaption>" if chart.note else ""
        return (
            f'<figure class="chart" data-chart="{_e(chart.key)}" '
            f'data-traces="{chart.trace_count}">{body}{caption}</figure>'
        )


def _scores(report: RunReport) -> str:
    if not report.scores:
        return '<p class="muted">Not scored (the benchmark declares no scoring).</p>'
    metrics: list[tuple[str, str]] = []
    for row in report.scores:
        for metric in row.metrics:
            if metric.name not in [name for name, _ in metrics]:
                metrics.append((metric.name, metric.unit))
    head = ["#", "participant", "success"]
    head += [f"{_e(name)} med/p95/p99{f' ({_e(unit)})' if unit else ''}" for name, unit in metrics]
    head += ["score", "95% interval", "keeps rank"]
    rows: list[list[str]] = []
    classes: list[str] = []
    for row in report.scores:
        u = report.uncertainty.get(row.provider)
        is_group = bool(row.dimensions) and u is None
        rank = ""
        if u is not None and not row.skipped:
            rank = f"{u.rank}{'=' if row.provider in report.ties else ''}"
        by_name = {m.name: m for m in row.metrics}
        cells = [
            _td(rank, num=True),
            _td(row.provider + ("" if not row.dimensions else f" {dict(row.dimensions)}")),
            _td("skipped" if row.skipped else f"{row.success_rate * 100:.0f}%", num=True),
        ]
        for name, _ in metrics:
            m = by_name.get(name)
            cells.append(
                _td(
                    "–" if m is None else f"{_num(m.median)}/{_num(m.p95)}/{_num(m.p99)}",
                    num=True,
                )
            )
        cells.append(_td("–" if row.skipped else f"{row.composite_score:.2f}", num=True))
        if u is not None and math.isfinite(u.low) and math.isfinite(u.high):
            cells.append(_td(f"{u.low:.1f}–{u.high:.1f}", num=True))
            keeps = (
                u.rank_probabilities[u.rank - 1]
                if 0 < u.rank <= len(u.rank_probabilities)
                else None
            )
            cells.append(_td("–" if keeps is None else f"{keeps * 100:.0f}%", num=True))
        else:
            cells += [_td("–", num=True), _td("–", num=True)]
        rows.append(cells)
        classes.append("phase" if is_group else "")
    out = _table(head, rows, classes)
    if report.ties:
        out += (
            '<p class="muted">n= : tied with the participant above (their intervals overlap).</p>'
        )
    if not report.uncertainty:
        out += '<p class="muted">No score intervals stored for this run.</p>'
    return out


def _counts(report: RunReport) -> str:
    rows = []
    for participant in report.participants:
        passed, total = report.counts.get(participant, (0, 0))
        rows.append([_td(participant), _td(f"{passed}/{total}", num=True)])
    return _table(["participant", "passed / iterations"], rows)


def _failures(report: RunReport) -> str:
    if not report.failure_total:
        return '<p class="muted">No iteration failed.</p>'
    rows = []
    for group in report.failures:
        messages = "".join(f"<li>{_e(m)}</li>" for m in group.messages) or "<li>(no message)</li>"
        rows.append(
            [
                _td(group.code),
                _td(f"{group.count:,}", num=True),
                _td(", ".join(group.participants)),
                _td(f'<ul class="messages">{messages}</ul>', raw=True),
            ]
        )
    shown = sum(g.count for g in report.failures)
    out = f"<p>{report.failure_total:,} failed iteration(s).</p>"
    out += _table(["error code", "count", "participants", f"first {MAX_MESSAGES} messages"], rows)
    if shown < report.failure_total:
        out += (
            f'<p class="muted">{report.failure_total - shown:,} more failure(s) under other error '
            f"codes (only the {MAX_CODES} most frequent codes are listed).</p>"
        )
    return out


def _setup(report: RunReport) -> str:
    run = report.run
    env = run.environment
    rows = [
        ("run id", run.run_id),
        ("benchmark", f"{run.benchmark_name} ({run.benchmark_slug})"),
        ("file", run.file or "–"),
        ("status", run.status),
        ("started / finished", f"{run.started_at} / {run.finished_at or '–'}"),
        ("dry run", "yes" if run.dry_run else "no"),
        ("git", f"{env.git_sha or '–'} {env.git_ref or ''}".strip()),
        ("machine", f"{env.platform} {env.arch} ({env.machine}), {env.cpu_count or '?'} CPUs"),
        ("host", env.hostname or "–"),
        ("python", f"{env.implementation} {env.python_version}"),
    ]
    if run.run_key:
        rows.append(("run key", run.run_key))
    if run.dashboard_url:
        rows.append(("dashboard", run.dashboard_url))
    out = _table(["", ""], ([_td(k), _td(v)] for k, v in rows))
    knobs = [[_td(key), _td(_json_text(value))] for key, value in run.knobs.items()]
    out += "<h4>Knobs</h4>" + _table(["knob", "value"], knobs)
    return out


def _json_text(value: Any) -> str:
    import json

    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _comparison(report: RunReport) -> str:
    comparison = report.comparison
    if comparison is None:
        return '<p class="muted">No baseline comparison stored (run with --bench-compare).</p>'
    out = f"<p>Compared with {_e(comparison.get('baseline'))}"
    if comparison.get("baselineRunId"):
        out += f" (run <code>{_e(comparison.get('baselineRunId'))}</code>)"
    out += ".</p>"
    for warning in comparison.get("warnings") or ():
        out += f'<p class="muted">warning: {_e(warning)}</p>'
    rows = []
    for row in comparison.get("rows") or ():
        if not isinstance(row, Mapping):
            continue
        unit = f" {row.get('unit')}" if row.get("unit") else ""
        body = row.get("comparison")
        if not isinstance(body, Mapping):
            cells = [_td(row.get("participant")), _td(row.get("metric")), _td(row.get("statistic"))]
            cells += [_td("–"), _td("–"), _td("–"), _td("–"), _td(row.get("note") or "")]
            rows.append(cells)
            continue
        verdict = str(body.get("verdict"))
        cls = verdict if verdict in ("regressed", "improved") else ""
        rows.append(
            [
                _td(row.get("participant")),
                _td(row.get("metric")),
                _td(row.get("statistic")),
                _td(f"{_num(_f(body.get('baselineStatistic')))}{unit}", num=True),
                _td(f"{_num(_f(body.get('currentStatistic')))}{unit}", num=True),
                _td(_pct(body.get("change")), num=True),
                _td(f"[{_pct(body.get('ciLow'))}, {_pct(body.get('ciHigh'))}]", num=True),
                f'<td class="{cls}">{_e(verdict)}</td>',
            ]
        )
    head = ["participant", "metric", "stat", "baseline", "current", "change", "interval", "verdict"]
    return out + _table(head, rows)


def _f(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _pct(value: Any) -> str:
    number = _f(value)
    if number is None or not math.isfinite(number):
        return "n/a"
    return f"{number * 100:+.1f}%"


def _warnings(report: RunReport) -> str:
    if not report.warnings:
        return '<p class="muted">No run warnings stored.</p>'
    rows = [
        [
            _td(w.get("code")),
            _td(w.get("participant")),
            _td(w.get("metric") or ""),
            _td(w.get("message")),
        ]
        for w in report.warnings
    ]
    return _table(["code", "participant", "metric", "message"], rows)


def _history_note(report: RunReport) -> str:
    marked = sorted({p.run_id for p in report.history if p.verdicts})
    n = len(report.history_runs)
    text = (
        f"{n} stored run(s) of {report.run.benchmark_slug}, oldest first. Scored runs: each "
        "scored metric's median and p95 as stored with the run's scores (trimmed as scoring "
        "trims); runs without scores: the latency of passing iterations (untrimmed)."
    )
    if marked:
        text += (
            f" {len(marked)} run(s) had a regressed/improved verdict in their stored comparison "
            "(triangles)."
        )
    return f'<p class="muted">{_e(text)}</p>'


def _section(report: RunReport, figures: _Figures) -> str:
    run = report.run
    charts = run_charts(report)
    parts = [
        f'<section class="run" id="run-{_e(run.run_id)}" data-run-id="{_e(run.run_id)}">',
        f'<h2>{_e(run.benchmark_name)} <span class="muted">({_e(run.benchmark_slug)}) · '
        f"run {_e(run.run_id[:12])} · {_e(run.started_at)}</span></h2>",
        '<h3 id="scores-' + _e(run.run_id) + '">Ranked scores</h3>',
        _scores(report),
        _counts(report),
        "<h3>Distributions</h3>",
    ]
    if report.phases:
        phases = _e(", ".join(report.phases))
        parts.append(f'<p class="muted">One series per participant and phase ({phases}).</p>')
    parts += [figures.html(c) for c in charts["distributions"]] or [
        '<p class="muted">No passing iteration.</p>'
    ]
    parts.append("<h3>Steps</h3>")
    parts += [figures.html(c) for c in charts["steps"]] or [
        '<p class="muted">No steps recorded.</p>'
    ]
    parts.append("<h3>Timeline</h3>")
    parts += [figures.html(c) for c in charts["timeline"]] or [
        '<p class="muted">No iteration times recorded.</p>'
    ]
    parts += ["<h3>Failures</h3>", _failures(report)]
    parts.append("<h3>History</h3>")
    if charts["history"]:
        parts += [_history_note(report), *(figures.html(c) for c in charts["history"])]
    else:
        parts.append('<p class="muted">No history.</p>')
    parts += [
        "<h3>Run setup</h3>",
        _setup(report),
        "<h4>Baseline comparison</h4>",
        _comparison(report),
    ]
    parts += ["<h3>Warnings</h3>", _warnings(report), "</section>"]
    return "\n".join(parts)


def render_report(store: ResultStore, run_ids: Sequence[str], *, history: int = 30) -> str:
    """The HTML report of the stored runs ``run_ids`` (one section each, in that order): one
    self-contained page that opens from disk and makes no network request.

    ``history``: how many stored runs of each benchmark (ending with the run) the history chart
    shows. Raises :class:`~pytest_benchsdk.store.UnknownRunError` for an unknown run id and
    :class:`ImportError` without plotly (``pip install 'pytest-benchsdk[report]'``).
    """
    import plotly  # noqa: F401  (fail early, before reading anything)

    if isinstance(run_ids, str):
        raise TypeError("run_ids must be a sequence of run ids, not one string")
    reports = [load_run(store, run_id, history=history) for run_id in run_ids]
    figures = _Figures()
    sections = [_section(report, figures) for report in reports]
    toc = " ".join(
        f'<a href="#run-{_e(r.run.run_id)}">{_e(r.run.benchmark_name)} · {_e(r.run.run_id[:8])}</a>'
        for r in reports
    )
    title = "Benchmark report" + (f": {reports[0].run.benchmark_name}" if len(reports) == 1 else "")
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            '<meta name="generator" content="pytest-benchsdk">',
            f"<title>{_e(title)}</title>",
            f"<style>{_STYLE}</style>",
            "</head><body>",
            f'<header class="page"><h1>{_e(title)}</h1>'
            f"<p>{len(reports)} run(s) · store {_e(store.path)}</p></header>",
            "<main>",
            f'<nav class="toc">{toc}</nav>' if len(reports) > 1 else "",
            *sections,
            "</main>",
            # When every figure above has been drawn (their scripts run in document order):
            # the time since navigation, for benchmarks/perf_report.py.
            "<script>document.body.setAttribute('data-rendered-ms', "
            "String(Math.round(performance.now())));</script>",
            "</body></html>",
        ]
    )


def write_report(
    store: ResultStore,
    run_ids: Sequence[str],
    path: str | os.PathLike[str],
    *,
    history: int = 30,
) -> None:
    """Write :func:`render_report` to ``path`` (UTF-8; missing parent directories created).

    The file is written next to its final name and moved in place, so a reader never sees
    half a report.
    """
    text = render_report(store, run_ids, history=history)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.partial")
    try:
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
