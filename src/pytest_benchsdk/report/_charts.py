"""The report's plotly figures, built from a :class:`~._model.RunReport`.

Private to :mod:`pytest_benchsdk.report`. plotly is imported by the functions (it is an
optional extra, and importing it costs time the plugin should not pay on every run).

Sizes: a strip plot shows at most :data:`STRIP_BUDGET` samples in all (evenly spaced in
record order when there are more, and the chart says so); an ECDF at most :data:`MAX_POINTS`
steps (evenly spaced quantiles, the minimum and maximum kept); the timeline at most
:data:`MAX_POINTS` iterations per participant. Numbers are rounded to 4 significant digits.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Final

from ._model import LATENCY, RunReport, Series

__all__ = ["MAX_POINTS", "Chart", "run_charts"]

#: Points per trace at most (ECDFs, the timeline's iterations per participant).
MAX_POINTS: Final = 2000
#: Strip points per chart at most, shared by its series (each gets at least
#: :data:`MIN_STRIP_POINTS`): every point is an SVG element, and drawing 20,000 of them takes
#: a second in a browser.
STRIP_BUDGET: Final = 6000
MIN_STRIP_POINTS: Final = 200
#: Iterations drawn on the timeline at most, shared by the participants likewise.
TIMELINE_BUDGET: Final = 5000

#: A colour per participant (plotly's default qualitative palette, then D3's).
_PALETTE: Final = (
    "#636efa", "#EF553B", "#00cc96", "#ab63fa", "#FFA15A",
    "#19d3f3", "#FF6692", "#B6E880", "#FF97FF", "#FECB52",
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
)  # fmt: skip


class Chart:
    """One figure of the report: its anchor, its title and the plotly figure."""

    def __init__(self, key: str, title: str, figure: Any, note: str = "") -> None:
        self.key = key
        self.title = title
        self.figure = figure
        self.note = note

    @property
    def trace_count(self) -> int:
        return len(self.figure.data)


def _round(value: float) -> float:
    if value == 0 or not math.isfinite(value):
        return value
    return round(value, 3 - math.floor(math.log10(abs(value))))


def _evenly(values: Sequence[float], limit: int) -> list[float]:
    """At most ``limit`` of ``values``, evenly spaced, first and last kept."""
    n = len(values)
    if n <= limit:
        return list(values)
    return [values[round(i * (n - 1) / (limit - 1))] for i in range(limit)]


def _colour(report: RunReport, participant: str) -> str:
    names = list(report.participants)
    index = names.index(participant) if participant in names else len(names)
    return _PALETTE[index % len(_PALETTE)]


def _layout(title: str, height: int = 420, **extra: Any) -> dict[str, Any]:
    return {
        "title": {"text": title, "font": {"size": 15}},
        "height": height,
        "margin": {"l": 60, "r": 20, "t": 60, "b": 50},
        "template": "plotly_white",
        "font": {"family": "system-ui, -apple-system, Segoe UI, Roboto, sans-serif"},
        "legend": {"orientation": "h", "y": -0.18},
        **extra,
    }


def _distribution(report: RunReport, metric: str, unit: str) -> Chart | None:
    """ECDF (left) and box + strip of every sample (right), one trace pair per series."""
    from plotly.subplots import make_subplots

    series: Sequence[Series] = [s for s in report.samples.get(metric, ()) if s.values]
    if not series:
        return None
    figure = make_subplots(
        rows=1, cols=2, column_widths=[0.5, 0.5], horizontal_spacing=0.12,
        subplot_titles=("ECDF", "Every sample (box and strip)"),
    )  # fmt: skip
    thinned: list[str] = []
    per_series = min(MAX_POINTS, max(MIN_STRIP_POINTS, STRIP_BUDGET // len(series)))
    label_unit = f" ({unit})" if unit else ""
    for s in series:
        colour = _colour(report, s.participant)
        ordered = sorted(s.values)
        n = len(ordered)
        indices = _evenly(list(range(n)), MAX_POINTS)
        xs = [_round(ordered[int(i)]) for i in indices]
        ys = [_round((int(i) + 1) / n) for i in indices]
        figure.add_scatter(
            x=xs, y=ys, mode="lines",
            line={"shape": "hv", "color": colour, "dash": _dash(report, s.phase)},
            name=s.label, legendgroup=s.label, row=1, col=1,
            hovertemplate=f"%{{x}}{label_unit}<br>F = %{{y}}<extra>{_hover(s.label)}</extra>",
        )  # fmt: skip
        shown = _evenly(s.values, per_series)
        if len(shown) < n:
            thinned.append(f"{s.label}: {len(shown):,} of {n:,}")
        figure.add_box(
            x=[_round(v) for v in shown], name=s.label, legendgroup=s.label, showlegend=False,
            boxpoints="all", jitter=0.4, pointpos=-1.7, marker={"size": 4, "opacity": 0.6},
            line={"color": colour}, fillcolor="rgba(0,0,0,0)", orientation="h",
            row=1, col=2, hoverinfo="x",
        )  # fmt: skip
    name = "latency" if metric == LATENCY else metric
    note = ""
    if thinned:
        note = (
            "Strip plot downsampled to evenly spaced samples in record order ("
            + "; ".join(thinned)
            + "): the ECDF uses every sample, the box is of the samples shown."
        )
    figure.update_layout(
        **_layout(
            f"{name}{label_unit}: distribution per participant",
            height=max(420, 60 + 40 * len(series)),
        )
    )
    figure.update_xaxes(title_text=f"{name}{label_unit}", row=1, col=1)
    figure.update_yaxes(title_text="share of samples ≤ x", range=[0, 1.02], row=1, col=1)
    figure.update_xaxes(title_text=f"{name}{label_unit}", row=1, col=2)
    figure.update_yaxes(autorange="reversed", row=1, col=2)
    return Chart(f"dist-{metric}", f"{name}{label_unit}", figure, note)


def _dash(report: RunReport, phase: str | None) -> str:
    """A line style per phase (the colour is the participant's)."""
    styles = ("solid", "dash", "dot", "dashdot", "longdash")
    index = report.phases.index(phase) if phase in report.phases else 0
    return styles[index % len(styles)]


def _hover(text: str) -> str:
    # Inside a hovertemplate, %{...} is a template: keep names literal.
    return text.replace("%", "%%").replace("<", "&lt;")


def _steps(report: RunReport) -> Chart | None:
    from plotly.subplots import make_subplots

    if not report.steps:
        return None
    figure = make_subplots(
        rows=1, cols=2, subplot_titles=("median per step", "p95 per step"),
        horizontal_spacing=0.1,
    )  # fmt: skip
    participants = [p for p in report.participants if any(s.participant == p for s in report.steps)]
    for index, step in enumerate(report.step_names):
        by_participant = {s.participant: s for s in report.steps if s.step == step}
        colour = _PALETTE[(index + 3) % len(_PALETTE)]
        for col, stat in ((1, "median"), (2, "p95")):
            values = [
                _round(getattr(by_participant[p], stat)) if p in by_participant else None
                for p in participants
            ]
            figure.add_bar(
                x=participants, y=values, name=step, legendgroup=step, showlegend=col == 1,
                marker={"color": colour}, row=1, col=col,
                hovertemplate="%{x}: %{y} ms<extra>" + _hover(step) + " " + stat + "</extra>",
            )  # fmt: skip
    figure.update_layout(
        **_layout("Steps: median and p95 latency per step (stacked)", barmode="stack")
    )
    figure.update_yaxes(title_text="ms", row=1, col=1)
    figure.update_yaxes(title_text="ms", row=1, col=2)
    return Chart("steps", "Steps", figure)


def _timeline(report: RunReport) -> Chart | None:
    import plotly.graph_objects as go

    if not report.timeline:
        return None
    figure = go.Figure()
    notes: list[str] = []
    failed_x: list[float] = []
    failed_y: list[int] = []
    failed_text: list[str] = []
    drawn = {b.participant for b in report.timeline}
    limit = min(MAX_POINTS, max(MIN_STRIP_POINTS, TIMELINE_BUDGET // max(1, len(drawn))))
    for participant in report.participants:
        bars = [b for b in report.timeline if b.participant == participant]
        if not bars:
            continue
        shown = bars
        if len(bars) > limit:
            step = len(bars) / limit
            shown = [bars[int(i * step)] for i in range(limit)]
            notes.append(f"{participant}: {len(shown):,} of {len(bars):,} iterations")
        xs: list[float | None] = []
        ys: list[int | None] = []
        for b in shown:
            xs += [_round(b.start_s), _round(b.end_s), None]
            ys += [b.task_index, b.task_index, None]
            if not b.ok:
                failed_x.append(_round(b.end_s))
                failed_y.append(b.task_index)
                failed_text.append(participant)
        figure.add_scatter(
            x=xs, y=ys, mode="lines", name=participant,
            line={"color": _colour(report, participant), "width": 3},
            hovertemplate="t = %{x} s, iteration %{y}<extra>"
            + _hover(participant) + "</extra>",
        )  # fmt: skip
    if failed_x:
        figure.add_scatter(
            x=failed_x, y=failed_y, mode="markers", name="failed",
            marker={"symbol": "x", "size": 9, "color": "#d62728"}, text=failed_text,
            hovertemplate="%{text}: iteration %{y} failed at %{x} s<extra></extra>",
        )  # fmt: skip
    figure.update_layout(**_layout("Iterations against run time (start → end)"))
    figure.update_xaxes(title_text="seconds since the run's first iteration started")
    figure.update_yaxes(title_text="iteration (task index)")
    note = ""
    if notes:
        note = (
            "Timeline downsampled to evenly spaced iterations (" + "; ".join(notes) + "); "
            "every failed iteration drawn is marked."
        )
    return Chart("timeline", "Timeline", figure, note)


def _history(report: RunReport, metric: str) -> Chart | None:
    import plotly.graph_objects as go

    history = [p for p in report.history if p.metric == metric]
    if not history:
        return None
    labels = {
        r.run_id: f"{r.started_at[:16].replace('T', ' ')} · {r.run_id[:6]}"
        for r in report.history_runs
    }
    order = [labels[r.run_id] for r in report.history_runs]
    unit = history[0].unit
    figure = go.Figure()
    for participant in report.participants:
        points = [p for p in history if p.participant == participant]
        if not points:
            continue
        colour = _colour(report, participant)
        for stat, dash in (("median", "solid"), ("p95", "dot")):
            figure.add_scatter(
                x=[labels[p.run_id] for p in points],
                y=[_round(getattr(p, stat)) for p in points],
                mode="lines+markers", name=f"{participant} {stat}", legendgroup=participant,
                line={"color": colour, "dash": dash},
                hovertemplate=f"%{{x}}: %{{y}} {unit}<extra>{_hover(participant)} {stat}</extra>",
            )  # fmt: skip
    marked = [p for p in history if p.verdicts]
    if marked:
        regressed = [any("regressed" in v for v in p.verdicts) for p in marked]
        figure.add_scatter(
            x=[labels[p.run_id] for p in marked], y=[_round(p.median) for p in marked],
            mode="markers", name="stored comparison: regressed ▲ / improved ▼",
            marker={
                "symbol": ["triangle-up" if r else "triangle-down" for r in regressed],
                "size": 14, "color": ["#d62728" if r else "#2ca02c" for r in regressed],
            },
            text=[f"{p.participant}: {', '.join(p.verdicts)}" for p in marked],
            hovertemplate="%{text}<extra></extra>",
        )  # fmt: skip
    shapes = []
    current = labels.get(report.run.run_id)
    if current is not None:
        index = order.index(current)
        shapes.append(
            {
                "type": "rect", "xref": "x", "yref": "paper", "x0": index - 0.5,
                "x1": index + 0.5, "y0": 0, "y1": 1, "fillcolor": "rgba(255, 200, 0, 0.25)",
                "line": {"width": 0}, "layer": "below",
            }
        )  # fmt: skip
    name = "latency" if metric == LATENCY else metric
    label_unit = f" ({unit})" if unit else ""
    figure.update_layout(
        **_layout(
            f"{name}{label_unit}: median and p95 across the last {len(order)} stored run(s) "
            "(this run highlighted)",
            shapes=shapes,
        )
    )
    figure.update_xaxes(
        title_text="run", type="category", categoryorder="array", categoryarray=order
    )
    figure.update_yaxes(title_text=f"{name}{label_unit}")
    return Chart(f"history-{metric}", f"History of {name}", figure)


def run_charts(report: RunReport) -> dict[str, list[Chart]]:
    """The figures of one run by section: ``distributions``, ``steps``, ``timeline``,
    ``history``."""
    distributions = [
        chart
        for name, unit in report.metrics.items()
        if (chart := _distribution(report, name, unit)) is not None
    ]
    return {
        "distributions": distributions,
        "steps": [c for c in (_steps(report),) if c is not None],
        "timeline": [c for c in (_timeline(report),) if c is not None],
        "history": [
            chart
            for name in dict.fromkeys([*report.metrics, *(p.metric for p in report.history)])
            if (chart := _history(report, name)) is not None
        ],
    }
