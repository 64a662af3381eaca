"""The report page: one self-contained HTML file, plotly.js inlined once.

Private to :mod:`pytest_benchsdk.report`. Every text from a run (names, messages, knobs) is
HTML-escaped; the strings in the charts go through :func:`~._charts.chart_text`.

The page's scripts: plotly.js, gzipped and base64-encoded in a data block (``<script
type="application/octet-stream">``, which the browser never runs: 1.9 MB instead of 4.8), each
figure's JSON in a data block likewise, and one small loader. The loader unpacks plotly.js with
the browser's ``DecompressionStream``, runs it, and draws each figure when it comes near the
viewport (``IntersectionObserver``; all of them before printing), so the page is interactive as
soon as the figures on screen are drawn. It marks the page's ``<body>`` with
``data-interactive-ms`` (those first figures drawn) and ``data-rendered-ms`` (every figure
drawn), in ms since navigation, for ``benchmarks/perf_report.py`` (and ``data-library-ms``:
plotly.js unpacked and run).

A Content Security Policy allows only the scripts carrying this page's nonce (random per
render): the loader and the plotly.js it starts. A ``<script>`` that an escaping slip let into
the page would not run, and neither the page nor plotly may fetch, load a font, image or frame
from elsewhere, so the file makes no network request even if something tried.
"""

from __future__ import annotations

import base64
import functools
import gzip
import html
import json
import math
import os
import secrets
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Final

from pytest_benchsdk._base.files import write_atomically
from pytest_benchsdk._base.numbers import change_text, in_unit, phase_subject, quantity
from pytest_benchsdk._base.percentiles import BEST_TAIL_NOTE
from pytest_benchsdk._views.text import (
    comparison_legend,
    detectable_cell,
    knobs_line,
    latency_scale,
    metric_scales,
    relative_sentence,
    relative_shown,
    rounds_cell,
    score_rows,
    stats_cell,
    unranked_note,
    warning_groups,
)
from pytest_benchsdk.report._charts import (
    Chart,
    constant_value,
    history_constant,
    run_charts,
    same_data,
)
from pytest_benchsdk.report._content import MAX_CODES, RunReport, load_run
from pytest_benchsdk.results import HISTORY_RULE, FailureGroup, SampleStats, metric_unit
from pytest_benchsdk.store import ResultStore

#: First messages listed per error code.
MAX_MESSAGES: Final = 5

#: Participants (rows) a table shows open at most: past it, the first and the last half as
#: many, the rows between them folded in a closed ``<details>`` (which the browser's
#: find-in-page searches): a table of 10,000 participants stays readable at both ends.
TABLE_ROWS: Final = 200
#: Participants a warning names before the others are folded.
WARNING_NAMES: Final = 20

__all__ = ["CSP", "render_report", "write_report"]

#: The page's Content Security Policy (``{nonce}``: the render's): scripts with the page's
#: nonce only, inline styles (plotly writes its own), nothing from elsewhere (``data:`` images
#: for plotly's icons; ``blob:`` for its "download as PNG" button).
CSP: Final = (
    "default-src 'none'; script-src 'nonce-{nonce}'; style-src 'unsafe-inline'; "
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
figure.chart .plot[data-state="waiting"] { background: #f6f8fa; border-radius: 4px;
  display: flex; align-items: center; justify-content: center; color: #57606a; }
ul.relative { margin: 4px 0 10px; padding-left: 20px; }
code { background: #f6f8fa; padding: 0 3px; border-radius: 3px; }
ul.messages { margin: 0; padding-left: 18px; }
"""


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


def _folded_table(
    head: Sequence[str],
    rows: Sequence[Sequence[str]],
    classes: Sequence[str] = (),
    noun: str = "participants",
) -> str:
    """:func:`_table`, past :data:`TABLE_ROWS` participants (a row and the ``phase`` rows
    under it) the first and last half as many open and the others folded between them."""
    blocks: list[list[int]] = []
    for index in range(len(rows)):
        cls = classes[index] if index < len(classes) else ""
        if cls != "phase" or not blocks:
            blocks.append([])
        blocks[-1].append(index)
    if len(blocks) <= TABLE_ROWS:
        return _table(head, rows, classes)

    def part(chosen: list[list[int]]) -> str:
        kept = [i for block in chosen for i in block]
        return _table(
            head,
            [rows[i] for i in kept],
            [classes[i] if i < len(classes) else "" for i in kept],
        )

    half = TABLE_ROWS // 2
    middle = blocks[half:-half]
    return (
        part(blocks[:half])
        + f'<details class="folded"><summary>{len(middle):,} more {noun}, between the '
        f"first {half} and the last {half} (folded; the browser's find searches them "
        "too)</summary>" + part(middle) + "</details>" + part(blocks[-half:])
    )


def _td(value: object, *, num: bool = False, raw: bool = False) -> str:
    text = str(value) if raw else _e(value)
    return f'<td class="num">{text}</td>' if num else f"<td>{text}</td>"


#: The loader (see the module's docstring). Plain ES2020, no library; ``MARGIN`` px below
#: the viewport count as near.
_LOADER: Final = """
(() => {
  const body = document.body;
  const nonce = document.currentScript.nonce;
  const CONFIG = {"displaylogo": false, "responsive": true};
  const MARGIN = 400;
  const plots = Array.from(document.querySelectorAll("figure.chart > .plot"));
  const mark = (name) => body.setAttribute(name, String(Math.round(performance.now())));
  let drawn = 0;
  const draw = (div) => {
    if (div.dataset.state !== "waiting") return Promise.resolve();
    div.dataset.state = "drawing";
    const figure = JSON.parse(document.getElementById(div.id + "-data").textContent);
    div.textContent = "";
    return Plotly.newPlot(div, figure.data, figure.layout, CONFIG).then(() => {
      div.dataset.state = "drawn";
      drawn += 1;
      if (drawn === plots.length) mark("data-rendered-ms");
    });
  };
  const unpack = async () => {
    const packed = document.getElementById("plotly-js");
    if (!packed) return;
    const text = atob(packed.textContent.trim());
    const bytes = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    const stream = new DecompressionStream("gzip");
    const writer = stream.writable.getWriter();
    writer.write(bytes);
    writer.close();
    const reader = stream.readable.getReader();
    const chunks = [];
    let size = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.length;
    }
    const whole = new Uint8Array(size);
    let at = 0;
    for (const chunk of chunks) {
      whole.set(chunk, at);
      at += chunk.length;
    }
    const source = new TextDecoder().decode(whole);
    const script = document.createElement("script");
    script.nonce = nonce;
    script.textContent = source;
    document.head.appendChild(script);
    mark("data-library-ms");
  };
  const onScreen = (el) => {
    const box = el.getBoundingClientRect();
    return box.bottom > 0 && box.top < innerHeight;
  };
  if (!plots.length) {
    mark("data-interactive-ms");
    mark("data-rendered-ms");
    return;
  }
  unpack().then(() => {
    // The charts on screen first: the page is interactive once they are drawn.
    Promise.all(plots.filter(onScreen).map(draw)).then(() => mark("data-interactive-ms"));
    const observer = new IntersectionObserver((entries) => {
      for (const entry of entries) {
        if (entry.isIntersecting) {
          observer.unobserve(entry.target);
          draw(entry.target);
        }
      }
    }, { rootMargin: MARGIN + "px 0px" });
    plots.forEach((div) => observer.observe(div));
    addEventListener("beforeprint", () => plots.forEach(draw));
  }).catch((error) => {
    for (const div of plots) {
      div.textContent = "This browser could not draw the charts (" + error + "); they need "
        + "DecompressionStream: Chrome 80, Firefox 113, Safari 16.4 or later.";
    }
    console.error(error);
  });
})();
"""


@functools.cache
def _packed_plotly() -> str:
    """plotly.js as the page carries it: gzipped, base64 (computed once per process)."""
    from plotly.offline import get_plotlyjs

    packed = gzip.compress(get_plotlyjs().encode("utf-8"), compresslevel=9, mtime=0)
    return base64.b64encode(packed).decode("ascii")


def _json_block(value: Any) -> str:
    """JSON for a ``<script type="application/json">`` block: nothing in it can end the block
    or start markup (``<``, ``>`` and ``&`` as JSON escapes)."""
    text = json.dumps(value, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


class _Figures:
    """Renders figures as data blocks for the loader."""

    def __init__(self) -> None:
        self.count = 0

    def html(self, chart: Chart) -> str:
        import plotly.io as pio

        self.count += 1
        height = chart.figure.layout.height or 420
        div_id = f"fig-{self.count}"
        figure = json.loads(pio.to_json(chart.figure, validate=False))
        caption = f"<figcaption>{_e(chart.note)}</figcaption>" if chart.note else ""
        return (
            f'<figure class="chart" data-chart="{_e(chart.key)}" '
            f'data-traces="{chart.trace_count}">'
            f'<div class="plot" id="{div_id}" data-state="waiting" style="height:{height}px">'
            "chart drawn when scrolled into view</div>"
            f'<script type="application/json" id="{div_id}-data">'
            f"{_json_block(figure)}</script>{caption}</figure>"
        )


def _stats_td(stats: SampleStats | None, unit: str, scale: float | None = None) -> str:
    return _td(stats_cell(stats, unit, scale), num=True)


def _scores(report: RunReport) -> str:
    """The ranked scores, row for row the terminal's (one ranking: the summary's)."""
    scores = report.summary.scores
    if scores is None:
        return '<p class="muted">Not scored (the benchmark declares no scoring).</p>'
    header, *rows = score_rows(scores)
    classes = ["" if row[1] and not row[1].startswith("  ") else "phase" for row in rows]
    body = [[_td(cell, num=index != 1) for index, cell in enumerate(row)] for row in rows]
    out = ""
    if scores.dimensions:
        dims = ", ".join(f"{k}={v}" for k, v in scores.dimensions.items())
        out += f'<p class="muted">Dimensions: {_e(dims)}</p>'
    out += _folded_table([_e(h) for h in header], body, classes)
    if scores.has_ties:
        out += (
            '<p class="muted">n= : tied with the participant above (their intervals overlap).</p>'
        )
    unranked = unranked_note(scores)
    if unranked is not None:
        out += f'<p class="muted">{_e(unranked)}.</p>'
    if scores.higher_is_better:
        out += f'<p class="muted">{_e(BEST_TAIL_NOTE)}.</p>'
    if scores.level is None:
        out += '<p class="muted">No score intervals stored for this run.</p>'
    return out


def _relative(report: RunReport) -> str:
    """The relative summary under the ranking (the summary's, as the terminal prints it)."""
    relative = report.summary.relative
    if relative is None or not relative.rows:
        return ""
    shown, hidden = relative_shown(relative)
    items = "".join(f"<li>{relative_sentence(relative, row, _e)}</li>" for row in shown)
    out = f'<ul class="relative" data-reference="{_e(relative.reference)}">{items}</ul>'
    if hidden:
        # Every one stays here, folded: the terminal and Markdown count them.
        rest = "".join(
            f"<li>{relative_sentence(relative, row, _e)}</li>"
            for row in relative.rows[len(shown) :]
        )
        out += (
            f'<details class="relative-more"><summary>{hidden:,} more (further behind)</summary>'
            f'<ul class="relative">{rest}</ul></details>'
        )
    return out


def _participants(report: RunReport) -> str:
    """Success and latency per participant (and phase): the summary's; of benchmarked
    tests, how each was measured (rounds × iterations) instead of the latency."""
    rows: list[list[str]] = []
    classes: list[str] = []
    if report.summary.knobs.rounds is not None:
        for p in report.summary.ran_participants:
            rows.append(
                [_td(p.name), _td(f"{p.passed}/{p.ran}", num=True), _td(rounds_cell(p), num=True)]
            )
        return _folded_table(["participant", "passed", "rounds × iterations"], rows)
    scale = latency_scale(report.summary)
    for p in report.summary.ran_participants:
        rows.append(
            [
                _td(p.name),
                _td(f"{p.passed}/{p.ran}", num=True),
                _td(f"{p.ran}/{p.planned}", num=True),
                _stats_td(p.latency, "ms", scale),
            ]
        )
        classes.append("")
        for ph in p.phases:
            rows.append(
                [
                    _td(phase_subject(p.name, ph.phase)),
                    _td(f"{ph.passed}/{ph.ran}", num=True),
                    _td(f"{ph.ran}/{ph.planned}", num=True),
                    _stats_td(ph.latency, "ms", scale),
                ]
            )
            classes.append("phase")
    head = ["participant", "passed / iterations", "ran / planned", "latency med/p95/p99"]
    return _folded_table(head, rows, classes)


def _metrics(report: RunReport) -> str:
    """Every measured metric that is not scored (the scored ones are in the scores table), with
    a row per phase under each, as the terminal prints them."""
    rows: list[list[str]] = []
    classes: list[str] = []
    scales = metric_scales(report.summary)
    for p in report.summary.ran_participants:
        for m in p.metrics:
            if m.scored:
                continue
            rows.append(
                [
                    _td(p.name),
                    _td(m.label + (" ↑" if m.lower_is_better is False else "")),
                    _stats_td(m.stats, m.unit, scales.get(m.key)),
                    _td(m.stats.count if m.stats is not None else 0, num=True),
                ]
            )
            classes.append("")
            for ph in p.phases:
                pm = next((x for x in ph.metrics if x.key == m.key), None)
                if pm is None:
                    continue
                rows.append(
                    [
                        _td(phase_subject(p.name, ph.phase)),
                        _td(m.label + (" ↑" if m.lower_is_better is False else "")),
                        _stats_td(pm.stats, pm.unit, scales.get(m.key)),
                        _td(pm.stats.count if pm.stats is not None else 0, num=True),
                    ]
                )
                classes.append("phase")
    if not rows:
        return ""
    head = "Metrics (not scored)" if report.summary.scores is not None else "Metrics"
    table = _folded_table(["participant", "metric", "med/p95/p99", "n"], rows, classes, "rows")
    ran = report.summary.ran_participants
    if any(m.lower_is_better is False and not m.scored for p in ran for m in p.metrics):
        table += f'<p class="muted">{_e(BEST_TAIL_NOTE)}.</p>'
    return f"<h4>{head}</h4>" + table


def _thresholds(report: RunReport) -> str:
    verdicts = report.summary.thresholds
    if not verdicts:
        return '<p class="muted">No thresholds.</p>'
    marks = {"passed": "passed", "failed": "breached", "skipped": "skipped"}
    rows = [
        [
            _td(v.participant),
            f"<td><code>{_e(v.threshold.label)}</code></td>",
            f'<td class="{"regressed" if v.outcome == "failed" else ""}">{marks[v.outcome]}</td>',
            _td(v.message()),
        ]
        for v in verdicts
    ]
    return _folded_table(["participant", "threshold", "verdict", "detail"], rows)


def _failures(report: RunReport) -> str:
    groups = [(p.name, g) for p in report.summary.participants for g in p.failures]
    total = sum(g.count for _, g in groups)
    if not total:
        return '<p class="muted">No iteration failed.</p>'
    by_code: dict[str, list[tuple[str, FailureGroup]]] = {}
    for name, group in groups:
        by_code.setdefault(group.code, []).append((name, group))
    ordered = sorted(by_code.items(), key=lambda kv: (-sum(g.count for _, g in kv[1]), kv[0]))
    rows = []
    for code, found in ordered[:MAX_CODES]:
        messages = [f"{name} #{i}: {m}" for name, g in found for i, m in g.messages]
        items = "".join(f"<li>{_e(m)}</li>" for m in messages[:MAX_MESSAGES])
        rows.append(
            [
                _td(code),
                _td(f"{sum(g.count for _, g in found):,}", num=True),
                _td(", ".join(name for name, _ in found)),
                _td(f'<ul class="messages">{items or "<li>(no message)</li>"}</ul>', raw=True),
            ]
        )
    shown = sum(g.count for _, found in ordered[:MAX_CODES] for _, g in found)
    out = f"<p>{total:,} failed iteration(s).</p>"
    out += _table(["error code", "count", "participants", f"first {MAX_MESSAGES} messages"], rows)
    if shown < total:
        out += (
            f'<p class="muted">{total - shown:,} more failure(s) under other error '
            f"codes (only the {MAX_CODES} most frequent codes are listed).</p>"
        )
    return out


def _setup(report: RunReport) -> str:
    run, summary = report.run, report.summary
    env = summary.environment
    rows = [
        ("run id", run.run_id),
        ("benchmark", f"{summary.benchmark_name} ({summary.benchmark_slug})"),
        ("file", summary.file or "–"),
        ("status", summary.status.text()),
        ("ran", f"{summary.started_at or '–'} / {summary.finished_at or '–'}"),
        ("dry run", "yes" if summary.dry_run else "no"),
        ("git", f"{env.git_sha or '–'} {env.git_ref or ''}".strip()),
        ("machine", f"{env.platform} {env.arch} ({env.machine}), {env.cpu_count or '?'} CPUs"),
        ("host", env.hostname or "–"),
        ("python", f"{env.implementation} {env.python_version}"),
    ]
    if summary.run_key:
        rows.append(("run key", summary.run_key))
    if summary.dashboard_url:
        rows.append(("dashboard", summary.dashboard_url))
    out = _table(["", ""], ([_td(k), _td(v)] for k, v in rows))
    # A group of benchmarked tests has its rounds' settings instead of a bench file's knobs.
    heading = "Knobs" if summary.knobs.rounds is None else "Rounds"
    out += f"<h4>{heading}</h4><p>{_e(knobs_line(summary.knobs))}</p>"
    out += "".join(f"<p>{_e(note)}</p>" for note in summary.notes)
    if summary.ab is not None:
        out += f"<p>{_e(summary.ab.line())}</p>"
    return out


def _comparison(report: RunReport) -> str:
    summary = report.summary
    if summary.comparison_note:
        return f'<p class="muted">Baseline: none ({_e(summary.comparison_note)}).</p>'
    comparison = summary.comparison
    if comparison is None:
        return '<p class="muted">No baseline comparison stored (run with --bench-compare).</p>'
    out = f"<p>Compared with {_e(comparison.baseline)}.</p>"
    if comparison.says_noise:
        out += f'<p class="muted">{_e(comparison.noise_line())}.</p>'
    judged = comparison.judged_line()
    if judged is not None:
        out += f'<p class="muted">{_e(judged)}.</p>'
    for warning in comparison.warnings:
        out += f'<p class="muted">warning: {_e(warning)}</p>'
    rows = []
    for row in comparison.rows:
        c = row.comparison
        if c is None:
            cells = [_td(row.subject), _td(row.metric), _td(row.statistic_label)]
            cells += [_td("–"), _td("–"), _td("–"), _td("–"), _td(row.note or "")]
            cells += [_td(""), _td(""), _td("")]
            rows.append(cells)
            continue
        unit, base = row.unit or metric_unit(row.metric, None), c.baseline_statistic
        verdict = row.verdict_label
        cls = verdict if verdict in ("regressed", "improved") else ""
        rows.append(
            [
                _td(row.subject),
                _td(row.metric),
                _td(row.statistic_label),
                _td(in_unit([base], unit, base), num=True),
                _td(in_unit([c.current_statistic], unit, base), num=True),
                _td(change_text(c.change), num=True),
                _td(f"[{change_text(c.ci_low)}, {change_text(c.ci_high)}]", num=True),
                f'<td class="{cls}">{_e(verdict)}</td>',
                _td(row.noise_label),
                _td(detectable_cell(row), num=True),
                _td(row.reason or ""),
            ]
        )
    head = ["participant", "metric", "stat", "baseline", "current", "change", "interval"]
    head += ["verdict", "noise", "detects", "why unchanged"]
    out += _table(head, rows)
    legend = comparison_legend(comparison)
    if legend is not None:
        out += f'<p class="muted">{_e(legend)}.</p>'
    return out


def _warnings(report: RunReport) -> str:
    warnings = report.summary.warnings
    if not warnings:
        return '<p class="muted">No run warnings stored.</p>'
    # Participants with the same finding share a row (as in the terminal), every one named:
    # one finding of 10,000 participants is one row, not 10,000 copies of its advice.
    rows = [
        [_td(w.code), _td(_names(who), raw=True), _td(", ".join(w.metrics)), _td(w.message)]
        for w, who in warning_groups(warnings)
    ]
    return _table(["code", "participant", "metric", "message"], rows)


def _names(who: Sequence[str]) -> str:
    """Participants' names, past :data:`WARNING_NAMES` the others folded (HTML)."""
    shown = _e(", ".join(who[:WARNING_NAMES]))
    if len(who) <= WARNING_NAMES:
        return shown
    rest = _e(", ".join(who[WARNING_NAMES:]))
    return f"{shown} <details><summary>+{len(who) - WARNING_NAMES:,} more</summary>{rest}</details>"


def _history_note(report: RunReport) -> str:
    """Which runs the history holds (the one rule ``pytest-benchsdk history`` follows too),
    what it left out, and the marks."""
    marked = sorted({p.run_id for p in report.history if p.verdicts})
    n = len(report.history_runs)
    text = (
        f"{n} run(s) of {report.summary.benchmark_slug}, oldest first, numbered among all its "
        f"stored runs: each run's median and p95 as its summary printed them. Kept: "
        f"{HISTORY_RULE} (the runs pytest-benchsdk history shows)."
    )
    if report.history_left_out:
        text += f" {report.history_left_out}."
    if report.history_run_left_out:
        text += f" This run is not in it: {report.history_run_left_out}."
    if marked:
        text += (
            f" {len(marked)} run(s) had a regressed/improved verdict on the charted metric in "
            "their stored comparison (triangles)."
        )
    out = f'<p class="muted history-rule">{_e(text)}</p>'
    for key in dict.fromkeys(p.metric for p in report.history):
        value = history_constant(report, key)
        if value is not None:
            unit = report.metrics.get(key, "")
            label = report.labels.get(key, key)
            line = f"{label}: constant, {quantity(value, unit)} in every run (no chart)."
            out += f'<p class="muted constant">{_e(line)}</p>'
    return out


def _not_charted(report: RunReport) -> str:
    """The metrics with no distribution chart: one value throughout, or exactly another
    metric's samples."""
    lines = []
    duplicates = same_data(report)
    for key, unit in report.metrics.items():
        label = report.labels.get(key, key)
        if key in duplicates:
            continue
        value = constant_value(report, key)
        if value is not None:
            lines.append(
                f"{label}: constant, every sample of every participant is "
                f"{quantity(value, unit)} (no chart)."
            )
    return "".join(f'<p class="muted constant">{_e(line)}</p>' for line in lines)


def _section(report: RunReport, figures: _Figures) -> str:
    run, summary = report.run, report.summary
    charts = run_charts(report)
    parts = [
        f'<section class="run" id="run-{_e(run.run_id)}" data-run-id="{_e(run.run_id)}">',
        f'<h2>{_e(summary.benchmark_name)} <span class="muted">({_e(summary.benchmark_slug)}) · '
        f"run {_e(run.run_id[:12])} · {_e(summary.started_at or run.started_at)} · "
        f'<span class="status">{_e(summary.status.text())}</span></span></h2>',
        f'<p class="muted charted">{_e(report.charted_note)}</p>' if report.charted_note else "",
        *(figures.html(c) for c in charts["glance"]),
        '<h3 id="scores-' + _e(run.run_id) + '">Ranked scores</h3>',
        _scores(report),
        _relative(report),
        _participants(report),
        _metrics(report),
        "<h3>Thresholds</h3>",
        _thresholds(report),
        "<h3>Distributions</h3>",
    ]
    if report.phases:
        phases = _e(", ".join(report.phases))
        parts.append(f'<p class="muted">One series per participant and phase ({phases}).</p>')
    if report.baseline_note:
        parts.append(f'<p class="muted">Baseline: {_e(report.baseline_note)}.</p>')
    parts.append(_not_charted(report))
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
        why = f": {report.history_run_left_out}" if report.history_run_left_out else ""
        parts.append(
            f'<p class="muted history-rule">No history{_e(why)}. Kept: {_e(HISTORY_RULE)}.</p>'
        )
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
        f'<a href="#run-{_e(r.run.run_id)}">{_e(r.summary.benchmark_name)} · '
        f"{_e(r.run.run_id[:8])}</a>"
        for r in reports
    )
    title = "Benchmark report" + (
        f": {reports[0].summary.benchmark_name}" if len(reports) == 1 else ""
    )
    nonce = secrets.token_urlsafe(18)
    scripts = []
    if figures.count:
        scripts.append(
            '<script type="application/octet-stream" id="plotly-js" '
            f'data-encoding="gzip+base64">{_packed_plotly()}</script>'
        )
    scripts.append(f'<script nonce="{nonce}">{_LOADER}</script>')
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{CSP.format(nonce=nonce)}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            '<meta name="generator" content="pytest-benchsdk">',
            f"<title>{_e(title)}</title>",
            f"<style>{_STYLE}</style>",
            "</head><body>",
            f'<header class="page"><h1>{_e(title)}</h1>'
            f"<p>{len(reports)} run(s) · store {_e(store.path)}</p></header>",
            "<main>",
            f'<nav class="toc">{toc}</nav>' if len(reports) > 1 else "",
            '<noscript><p class="muted">The charts need JavaScript; the tables are all '
            "here.</p></noscript>",
            *sections,
            "</main>",
            *scripts,
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
    write_atomically(target, text)
