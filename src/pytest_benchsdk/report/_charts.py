"""The report's plotly figures, built from a :class:`~._model.RunReport`.

Private to :mod:`pytest_benchsdk.report`. plotly is imported by the functions (it is an
optional extra, and importing it costs time the plugin should not pay on every run).

Text: plotly reads a small HTML-like markup in every string it draws (``<a href>``, ``<b>``,
``<span style>``, ``<br>``; ``$…$`` as TeX; ``%{…}`` in hover templates), after decoding
entities in the text between tags. Every string from a run (participant, phase, step, metric
and benchmark names, labels, units) goes through :func:`chart_text`, which writes ``&``, ``<``,
``>``, ``$``, ``{`` and ``}`` as entities: plotly then finds no tag and no template in it and
shows the characters as they are. The markup in this module's own templates is literal.

Scales: a distribution chart whose participants' medians differ by more than
:data:`LOG_RATIO` times opens on a logarithmic value axis; every distribution chart (and the
steps chart) has plotly's own buttons to switch between linear and log.

Not drawn: a metric whose every sample is one value (a sentence says it), and a metric whose
series are exactly another's, sample for sample (drawn once under both names,
:func:`same_data`); near-equal data is different data and keeps its chart.

Legends never scroll: a figure is as tall as its legend needs.

Sizes: a strip plot shows at most :data:`STRIP_BUDGET` samples in all (evenly spaced in
record order when there are more, and the chart says so); an ECDF at most :data:`MAX_POINTS`
steps (evenly spaced quantiles, the minimum and maximum kept); the timeline at most
:data:`MAX_POINTS` iterations per participant. Numbers are rounded to 4 significant digits.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, Final

from pytest_benchsdk._base.numbers import change_of_values, quantity
from pytest_benchsdk.report._content import RunReport, Series

__all__ = ["LOG_RATIO", "MAX_POINTS", "Chart", "chart_text", "run_charts"]

#: Medians further apart than this factor open a chart on a log axis.
LOG_RATIO: Final = 10.0

#: Points per trace at most (ECDFs, the timeline's iterations per participant).
MAX_POINTS: Final = 2000
#: Strip points per chart at most, shared by its series (each gets at least
#: :data:`MIN_STRIP_POINTS`): every point is an SVG element, and drawing 20,000 of them takes
#: a second in a browser (6,000 took 0.6 s of the first screen's 1.7 s on our loaded machine).
STRIP_BUDGET: Final = 3000
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


_ENTITIES: Final = str.maketrans(
    {"&": "&amp;", "<": "&lt;", ">": "&gt;", "$": "&#36;", "{": "&#123;", "}": "&#125;"}
)


def chart_text(value: object) -> str:
    """``value`` as text plotly draws literally: no tag, TeX or hover template of a name
    becomes live (see the module's docstring)."""
    return str(value).translate(_ENTITIES)


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
    names = report.participants
    index = names.index(participant) if participant in names else len(names)
    return _PALETTE[index % len(_PALETTE)]


def _layout(title: str, height: int = 420, **extra: Any) -> dict[str, Any]:
    """A figure's layout; ``title`` is markup (its names already through :func:`chart_text`)."""
    return {
        "title": {"text": title, "font": {"size": 15}},
        "height": height,
        "margin": {"l": 60, "r": 20, "t": 60, "b": 50},
        "template": "plotly_white",
        "font": {"family": "system-ui, -apple-system, Segoe UI, Roboto, sans-serif"},
        "legend": {"orientation": "h", "y": -0.18},
        **extra,
    }


def _spread(series: Sequence[Sequence[float]], *, positive_only: bool = False) -> float:
    """How many times the largest median is the smallest: 1 when there is at most one, or a
    value is not positive (a log axis cannot show it); ``positive_only`` leaves those out
    instead (a bar of 0 has nothing to draw anyway)."""
    medians = []
    for values in series:
        if positive_only:
            values = [v for v in values if v > 0]
        elif any(v <= 0 for v in values):
            return 1.0
        if values:
            ordered = sorted(values)
            medians.append(ordered[len(ordered) // 2])
    if len(medians) < 2:
        return 1.0
    return max(medians) / min(medians)


#: The top margin of a chart with scale buttons: the title and the buttons share its first
#: row (the modebar goes to the side), subplot titles sit below.
_BUTTONS_TOP: Final = 84


def _decades(values: Iterable[float]) -> bool:
    """Whether the positive values span a factor of ten or more (a log axis then labels its
    powers of ten only: plotly's in-between labels read "2 5 1 2 5" across a decade)."""
    positive = [v for v in values if v > 0]
    return bool(positive) and max(positive) >= 10 * min(positive)


def _scale_buttons(
    axes: Sequence[str], log: bool, decades: bool, height: int, bottom: int
) -> dict[str, Any]:
    """plotly's own buttons switching ``axes`` (``xaxis``, ``xaxis2`` …) between linear and
    log, at the right of the title row of a figure ``height`` px high with a ``bottom``
    margin; ``log``: the one active at first; ``decades``: label powers of ten only on log."""
    plot = max(1, height - _BUTTONS_TOP - bottom)
    y = 1 + (_BUTTONS_TOP - 12) / plot  # their top 12 px below the figure's

    def args(kind: str) -> list[dict[str, Any]]:
        change: dict[str, Any] = {}
        for axis in axes:
            change[f"{axis}.type"] = kind
            change[f"{axis}.autorange"] = True
            change[f"{axis}.dtick"] = 1 if kind == "log" and decades else None
        return [change]

    return {
        "type": "buttons",
        "direction": "right",
        "active": 1 if log else 0,
        "x": 1.0,
        "xanchor": "right",
        "y": y,
        "yanchor": "top",
        "pad": {"t": 0, "r": 0, "b": 4},
        "showactive": True,
        "font": {"size": 11},
        "buttons": [
            {"label": "linear axis", "method": "relayout", "args": args("linear")},
            {"label": "log axis", "method": "relayout", "args": args("log")},
        ],
    }


def _with_buttons(
    title: str, height: int, axes: Sequence[str], log: bool, decades: bool, **extra: Any
) -> dict[str, Any]:
    """A layout with the scale buttons (and the modebar upright at the side, out of their
    way)."""
    layout = _layout(title, height, **extra)
    bottom = int(layout["margin"]["b"])
    layout["margin"] = {**layout["margin"], "t": _BUTTONS_TOP, "r": 44}
    layout["updatemenus"] = [_scale_buttons(axes, log, decades, height, bottom)]
    if log:
        for axis in axes:
            layout[axis] = {"type": "log", **({"dtick": 1} if decades else {})}
    layout["modebar"] = {"orientation": "v"}
    return layout


def _distribution(
    report: RunReport, metric: str, unit: str, duplicates: dict[str, str]
) -> Chart | None:
    """ECDF (left) and box + strip of every sample (right), one trace pair per series; with a
    stored baseline, each participant's baseline series beside its own (dotted, lighter). A
    series whose samples are all equal is one point, said in the caption."""
    from plotly.subplots import make_subplots

    current: Sequence[Series] = [s for s in report.samples.get(metric, ()) if s.values]
    if not current:
        return None
    baseline = {s.participant: s for s in report.baseline.get(metric, ()) if s.values}
    series: list[Series] = []
    for s in current:
        series.append(s)
        # The baseline right after the participant's last series of this run.
        later = [t for t in current[current.index(s) + 1 :] if t.participant == s.participant]
        if not later and s.participant in baseline:
            series.append(baseline.pop(s.participant))
    figure = make_subplots(
        rows=1, cols=2, column_widths=[0.5, 0.5], horizontal_spacing=0.12,
        subplot_titles=("ECDF", "Every sample (box and strip)"),
    )  # fmt: skip
    thinned: list[str] = []
    constant: dict[float, list[str]] = {}
    per_series = min(MAX_POINTS, max(MIN_STRIP_POINTS, STRIP_BUDGET // len(series)))
    label = report.labels.get(metric, metric)
    also = [report.labels.get(k, k) for k, of in duplicates.items() if of == metric]
    if also:
        label = " = ".join([label, *also])
    label_unit = f" ({unit})" if unit else ""
    axis_title = chart_text(f"{label}{label_unit}")
    counts = {p: sum(1 for s in series if s.participant == p) for p in report.participants}
    for s in series:
        colour = _colour(report, s.participant)
        name = chart_text(s.label)
        # The legend groups each participant's series under its name (one entry per phase
        # or baseline): 14 series read as 7 names, not 14 colour-and-dash pairs.
        group = chart_text(s.participant)
        entry = name
        if counts.get(s.participant, 0) > 1:
            entry = chart_text("baseline" if s.baseline else (s.phase or "this run"))
        ordered = sorted(s.values)
        n = len(ordered)
        opacity = 0.55 if s.baseline else 1.0
        if ordered[0] == ordered[-1]:
            # Every sample equal: an ECDF would be a vertical step on whatever edge the axis
            # puts it; a point says it.
            constant.setdefault(ordered[0], []).append(s.label)
            value = _round(ordered[0])
            marker = {"color": colour, "size": 11, "symbol": "diamond", "opacity": opacity}
            figure.add_scatter(
                x=[value], y=[1.0], mode="markers", name=entry, legendgroup=group,
                legendgrouptitle={"text": group if entry != name else ""}, marker=marker,
                row=1, col=1,
                hovertemplate=f"%{{x}}{chart_text(label_unit)}, all {n:,} samples"
                f"<extra>{name}</extra>",
            )  # fmt: skip
            figure.add_scatter(
                x=[value], y=[name], mode="markers", name=name, legendgroup=group,
                showlegend=False, marker=marker, row=1, col=2, hoverinfo="x",
            )  # fmt: skip
            continue
        indices = _evenly(list(range(n)), MAX_POINTS)
        xs = [_round(ordered[int(i)]) for i in indices]
        ys = [_round((int(i) + 1) / n) for i in indices]
        figure.add_scatter(
            x=xs, y=ys, mode="lines", name=entry, legendgroup=group,
            legendgrouptitle={"text": group if entry != name else ""}, opacity=opacity,
            line={"shape": "hv", "color": colour,
                  "dash": "dot" if s.baseline else _dash(report, s.phase)},
            row=1, col=1,
            hovertemplate=f"%{{x}}{chart_text(label_unit)}<br>F = %{{y}}<extra>{name}</extra>",
        )  # fmt: skip
        shown = _evenly(s.values, per_series)
        if len(shown) < n:
            thinned.append(f"{s.label}: {len(shown):,} of {n:,}")
        figure.add_box(
            x=[_round(v) for v in shown], name=name, legendgroup=group, showlegend=False,
            boxpoints="all", jitter=0.4, pointpos=-1.7,
            marker={"size": 4, "opacity": 0.35 if s.baseline else 0.6},
            line={"color": colour}, fillcolor="rgba(0,0,0,0)", orientation="h",
            row=1, col=2, hoverinfo="x",
        )  # fmt: skip
    notes = []
    for value, names in constant.items():
        notes.append(
            f"Every sample of {', '.join(names)} is {quantity(value, unit)}: drawn as one point."
        )
    if any(s.baseline for s in series):
        notes.append(
            f"Dotted and lighter: the compared baseline run's samples "
            f"({report.summary.comparison.baseline if report.summary.comparison else ''})."
        )
    if thinned:
        notes.append(
            "Strip plot downsampled to evenly spaced samples in record order ("
            + "; ".join(thinned)
            + "): the ECDF uses every sample, the box is of the samples shown."
        )
    if also:
        notes.append(
            f"{', '.join(also)} holds exactly the same samples as {label.split(' = ')[0]} "
            "(every participant and phase, sample for sample): drawn once."
        )
    spread = _spread([s.values for s in current])
    log = spread > LOG_RATIO
    if log:
        notes.append(
            f"Log axis: the medians differ {spread:.0f}× (the buttons switch to a linear axis)."
        )
    # Tall enough for every strip row and every legend line (a group title and its entries,
    # about 19 px each): the legend never scrolls.
    groups = len({s.participant for s in series})
    figure.update_layout(
        **_with_buttons(
            f"{axis_title}: distribution per participant",
            max(440, 84 + 40 * len(series), 84 + 60 + 19 * (len(series) + groups) + 22 * groups),
            ("xaxis", "xaxis2"),
            log,
            _decades(v for s in series for v in s.values),
            legend={
                "orientation": "v",
                "x": 1.02,
                "xanchor": "left",
                "y": 1,
                "yanchor": "top",
                "groupclick": "toggleitem",
                "tracegroupgap": 6,
            },
        )
    )
    _legend_room(figure, [s.participant for s in series])
    figure.update_xaxes(title_text=axis_title, row=1, col=1)
    figure.update_yaxes(title_text="share of samples ≤ x", range=[0, 1.05], row=1, col=1)
    figure.update_xaxes(title_text=axis_title, row=1, col=2)
    figure.update_yaxes(autorange="reversed", type="category", row=1, col=2)
    return Chart(f"dist-{metric}", f"{label}{label_unit}", figure, " ".join(notes))


def _legend_room(figure: Any, names: Iterable[str]) -> None:
    """A right margin that holds a legend beside the plot and, right of it, the modebar (which
    would otherwise sit on the legend's entries)."""
    # About 2 % of the plot's width before the legend, 50 px of line sample, 7 px a
    # character, 40 px for the upright modebar.
    widest = max((len(name) for name in names), default=8)
    figure.update_layout(margin={"r": 120 + 7 * max(widest, 8)})


def _glance(report: RunReport) -> Chart | None:
    """The run at a glance, before any table: the scores of the ranking (best at the top,
    with their intervals) when the run is scored; else each participant's median latency as
    a multiple of the fastest one's."""
    import plotly.graph_objects as go

    figure = go.Figure()
    scores = report.summary.scores
    charted = set(report.participants)
    ranked = (
        [e for e in scores.ranking if e.rank is not None and e.participant in charted]
        if scores is not None
        else []
    )
    if ranked:
        names = [chart_text(e.participant) for e in ranked]
        values = [e.row.composite_score for e in ranked]
        low = [e.uncertainty.low if e.uncertainty else None for e in ranked]
        high = [e.uncertainty.high if e.uncertainty else None for e in ranked]
        ranks = [f"{e.rank}{'=' if e.tied_with_above else ''}" for e in ranked]
        with_interval = all(v is not None for v in (*low, *high))
        error = None
        if with_interval:
            error = {
                "type": "data", "symmetric": False, "color": "#24292f", "thickness": 1.5,
                "array": [h - v for h, v in zip(high, values, strict=True)],  # type: ignore[operator]
                "arrayminus": [v - lo for lo, v in zip(low, values, strict=True)],  # type: ignore[operator]
            }  # fmt: skip
        figure.add_bar(
            y=names, x=values, orientation="h", error_x=error,
            marker={"color": [_colour(report, e.participant) for e in ranked]},
            text=[f"#{r}  {v:.2f}" for r, v in zip(ranks, values, strict=True)],
            textposition="inside", insidetextanchor="start",
            hovertemplate="%{y}: score %{x}<extra></extra>",
        )  # fmt: skip
        figure.update_xaxes(title_text="score (0–100, higher is better)", range=[0, 100])
        title = "At a glance: score per participant (best first)"
        note = "Score: upstream's composite, 0–100."
        if with_interval and scores is not None and scores.level is not None:
            note += f" Whiskers: the {scores.level:.0%} interval."
        if scores is not None and scores.has_ties:
            note += " n= : tied with the participant above (their intervals overlap)."
    else:
        medians = [
            (p.name, p.latency.median)
            for p in report.summary.ran_participants
            if p.name in charted
            and p.latency is not None
            and math.isfinite(p.latency.median)
            and p.latency.median > 0
        ]
        if not medians:
            return None
        medians.sort(key=lambda item: item[1])
        fastest = medians[0][1]
        figure.add_bar(
            y=[chart_text(name) for name, _ in medians],
            x=[_round(m / fastest) for _, m in medians],
            orientation="h",
            marker={"color": [_colour(report, name) for name, _ in medians]},
            text=[f"{m / fastest:.2f}×  ({quantity(m, 'ms')})" for _, m in medians],
            textposition="inside", insidetextanchor="start",
            hovertemplate="%{y}: %{x}× the fastest median latency<extra></extra>",
        )  # fmt: skip
        figure.update_xaxes(title_text="median latency, × the fastest (lower is better)")
        title = "At a glance: median latency relative to the fastest (fastest first)"
        note = "Not scored: the bars compare median latencies."
    count = len(figure.data[0].y)
    figure.update_layout(
        **_layout(title, max(180, 90 + 34 * count), showlegend=False,
                  margin={"l": 20, "r": 20, "t": 50, "b": 50}),
    )  # fmt: skip
    figure.update_yaxes(autorange="reversed", automargin=True, type="category")
    return Chart("glance", "At a glance", figure, note)


def _dash(report: RunReport, phase: str | None) -> str:
    """A line style per phase (the colour is the participant's)."""
    styles = ("solid", "dash", "dot", "dashdot", "longdash")
    index = report.phases.index(phase) if phase in report.phases else 0
    return styles[index % len(styles)]


def _steps(report: RunReport) -> Chart | None:
    """Each step's median latency per participant, the steps side by side (their labels and
    order from ``display.steps``); the p95 and the failures in the hover."""
    import plotly.graph_objects as go

    steps = report.steps
    if not steps:
        return None
    figure = go.Figure()
    with_steps = {s.participant for s in steps}
    participants = [p for p in report.participants if p in with_steps]
    categories = [chart_text(p) for p in participants]
    for index, step in enumerate(report.step_names):
        by_participant = {s.participant: s for s in steps if s.step == step}
        present = [p for p in participants if p in by_participant]
        name = chart_text(step)
        figure.add_bar(
            x=[chart_text(p) for p in present],
            y=[_round(by_participant[p].median) for p in present],
            customdata=[
                [_round(by_participant[p].p95), by_participant[p].count, by_participant[p].failed]
                for p in present
            ],
            name=name, marker={"color": _PALETTE[(index + 3) % len(_PALETTE)]},
            hovertemplate="%{x}: median %{y} ms, p95 %{customdata[0]} ms, "
            f"%{{customdata[1]}} ok, %{{customdata[2]}} failed<extra>{name}</extra>",
        )  # fmt: skip
    log = _spread([[s.median] for s in steps], positive_only=True) > LOG_RATIO
    figure.update_layout(
        **_with_buttons(
            "Steps: median latency per step and participant",
            440,
            ("yaxis",),
            log,
            _decades(s.median for s in steps),
            barmode="group",
            showlegend=True,  # the step's label, also for one step
        )
    )
    figure.update_xaxes(type="category", categoryorder="array", categoryarray=categories)
    figure.update_yaxes(title_text="median (ms)")
    note = "The bars are medians of each step's successful invocations; hover for the p95."
    return Chart("steps", "Steps", figure, note)


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
    by_participant: dict[str, list[Any]] = {}
    for bar in report.timeline:
        by_participant.setdefault(bar.participant, []).append(bar)
    for participant in report.participants:
        bars = by_participant.get(participant, [])
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
                failed_text.append(chart_text(participant))
        name = chart_text(participant)
        figure.add_scatter(
            x=xs, y=ys, mode="lines", name=name,
            line={"color": _colour(report, participant), "width": 3},
            hovertemplate="t = %{x} s, iteration %{y}<extra>" + name + "</extra>",
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
    """A metric's median and p95 per participant over the history's runs (the comparable
    ones: :data:`~pytest_benchsdk.results.HISTORY_RULE`), the change points
    ``pytest-benchsdk history`` finds, and the runs whose stored comparison judged this metric
    regressed or improved."""
    import plotly.graph_objects as go

    history = [p for p in report.history if p.metric == metric]
    if not history or history_constant(report, metric) is not None:
        return None
    # Short labels that fit 30 runs side by side unrotated: each run's number among the
    # benchmark's stored runs; the hover gives its start and id.
    labels = {
        r.run_id: f"#{report.history_numbers.get(r.run_id, index + 1)}"
        for index, r in enumerate(report.history_runs)
    }
    when = {
        r.run_id: f"{r.started_at[:16].replace('T', ' ')} · run {r.run_id[:8]}"
        for r in report.history_runs
    }
    order = [labels[r.run_id] for r in report.history_runs]
    unit = history[0].unit
    figure = go.Figure()
    entries = 0
    runs_of: dict[str, dict[str, Any]] = {}
    for point in history:
        runs_of.setdefault(point.participant, {})[point.run_id] = point
    for participant in report.participants:
        by_run = runs_of.get(participant, {})
        if not by_run:
            continue
        colour = _colour(report, participant)
        name = chart_text(participant)
        for stat, dash in (("median", "solid"), ("p95", "dot")):
            # One point per run of the history, None where the participant has no value: the
            # line breaks there instead of joining runs across a gap.
            ys = [
                _round(getattr(by_run[r.run_id], stat)) if r.run_id in by_run else None
                for r in report.history_runs
            ]
            figure.add_scatter(
                x=order, y=ys, customdata=[when[r.run_id] for r in report.history_runs],
                mode="lines+markers", name=name, legendgroup=name, showlegend=stat == "median",
                connectgaps=False, line={"color": colour, "dash": dash},
                hovertemplate=f"%{{x}} (%{{customdata}}): %{{y}} {chart_text(unit)}"
                f"<extra>{name} {stat}</extra>",
            )  # fmt: skip
        entries += 1
    # The line styles, once (a legend of one entry per participant, not two).
    for stat, dash in (("median", "solid"), ("p95", "dot")):
        figure.add_scatter(
            x=[None], y=[None], mode="lines",
            name=f"{stat} ({'solid' if dash == 'solid' else 'dotted'})",
            line={"color": "#57606a", "dash": dash}, hoverinfo="skip",
        )  # fmt: skip
        entries += 1
    marked = [p for p in history if p.verdicts]
    if marked:
        regressed = [any("regressed" in v for v in p.verdicts) for p in marked]
        figure.add_scatter(
            x=[labels[p.run_id] for p in marked], y=[_round(p.median) for p in marked],
            mode="markers", name="compared: regressed ▲ / improved ▼",
            marker={
                "symbol": ["triangle-up" if r else "triangle-down" for r in regressed],
                "size": 14, "color": ["#d62728" if r else "#2ca02c" for r in regressed],
            },
            text=[chart_text("; ".join(p.verdicts)) for p in marked],
            hovertemplate="%{text}<extra></extra>",
        )  # fmt: skip
    shapes = []
    # The change points `pytest-benchsdk history` finds: a dashed line where each starts.
    changes = [c for c in report.changes if c.metric == metric and c.run_id in labels]
    if changes:
        at = {(p.run_id, p.participant): p for p in history}
        drawn = [c for c in changes if (c.run_id, c.participant) in at]
        figure.add_scatter(
            x=[labels[c.run_id] for c in drawn],
            y=[_round(getattr(at[(c.run_id, c.participant)], c.statistic)) for c in drawn],
            mode="markers", name="change point (pytest-benchsdk history)",
            marker={"symbol": "diamond", "size": 13, "color": "rgba(0,0,0,0)",
                    "line": {"width": 2, "color": "#6e40c9"}},
            text=[
                chart_text(
                    f"{c.participant} {c.label or c.statistic}: {c.change * 100:+.1f}% "
                    f"{c.direction} "
                    f"from this run ("
                    f"{change_of_values(c.before, c.after, unit)}, "
                    f"p = {c.p_value:.2g})"
                )
                for c in drawn
            ],
            hovertemplate="%{text}<extra></extra>",
        )  # fmt: skip
        for index in sorted({order.index(labels[c.run_id]) for c in drawn}):
            shapes.append(
                {
                    "type": "line", "xref": "x", "yref": "paper", "x0": index - 0.5,
                    "x1": index - 0.5, "y0": 0, "y1": 1,
                    "line": {"color": "#6e40c9", "width": 1.5, "dash": "dash"},
                }
            )  # fmt: skip
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
    label = report.labels.get(metric, metric)
    label_unit = f" ({unit})" if unit else ""
    axis_title = chart_text(f"{label}{label_unit}")
    entries += bool(marked) + bool(changes)
    figure.update_layout(
        **_layout(
            f"{axis_title}: median and p95 over {len(order)} comparable run(s) "
            "(this run highlighted)",
            # Every legend line (about 20 px, and the gap after each participant's group) fits
            # beside the plot area (the height less 120 px of margins): it never scrolls.
            height=max(420, 150 + 26 * entries),
            shapes=shapes,
            # The legend beside the plot (plotly makes room for it): never over the axis.
            legend={
                "orientation": "v",
                "x": 1.02,
                "xanchor": "left",
                "y": 1,
                "yanchor": "top",
                "tracegroupgap": 4,
            },
            margin={"l": 60, "r": 20, "t": 60, "b": 60},
        )
    )
    _legend_room(figure, [*report.participants, "compared: regressed ▲ / improved ▼"])
    figure.update_xaxes(
        title_text="run (stored runs of this benchmark, numbered from the oldest; hover for "
        "the date)",
        type="category", categoryorder="array", categoryarray=order, tickangle=0,
    )  # fmt: skip
    figure.update_yaxes(title_text=axis_title)
    return Chart(f"history-{metric}", f"History of {label}", figure)


_Drawn = tuple[tuple[str, str | None, bool, tuple[float, ...]], ...]


def _drawn_series(report: RunReport, metric: str) -> _Drawn:
    """What a metric's distribution chart would draw: every series with its samples in record
    order (the baseline's too)."""
    return tuple(
        (s.participant, s.phase, s.baseline, s.values)
        for s in (*report.samples.get(metric, ()), *report.baseline.get(metric, ()))
        if s.values
    )


def history_constant(report: RunReport, metric: str) -> float | None:
    """The one value a metric's median and p95 have in every run of the history, or None."""
    values = {v for p in report.history if p.metric == metric for v in (p.median, p.p95)}
    return next(iter(values)) if len(values) == 1 else None


def constant_value(report: RunReport, metric: str) -> float | None:
    """The one value of a metric every sample of every series has (this run's and the
    baseline's), or None when the samples differ or there are none."""
    values = {v for _, _, _, samples in _drawn_series(report, metric) for v in samples}
    return next(iter(values)) if len(values) == 1 else None


def same_data(report: RunReport) -> dict[str, str]:
    """metric key -> the earlier metric (latency first, then in the report's order) whose
    series are exactly the same: the same participants and phases with the same samples in
    the same order. Only an exact duplicate: a metric measured around the same call but not
    equal sample for sample (``request_ms`` a few µs off the latency) is its own chart."""
    seen: dict[_Drawn, str] = {}
    out: dict[str, str] = {}
    for metric in report.metrics:
        drawn = _drawn_series(report, metric)
        if not drawn:
            continue
        if drawn in seen:
            out[metric] = seen[drawn]
        else:
            seen[drawn] = metric
    return out


def run_charts(report: RunReport) -> dict[str, list[Chart]]:
    """The figures of one run by section: ``glance``, ``distributions``, ``steps``,
    ``timeline``, ``history``. A metric whose samples are all one value, or exactly another
    metric's (:func:`same_data`), gets no distribution chart (the page says so)."""
    duplicates = same_data(report)
    distributions = [
        chart
        for name, unit in report.metrics.items()
        if name not in duplicates and constant_value(report, name) is None
        if (chart := _distribution(report, name, unit, duplicates)) is not None
    ]
    return {
        "glance": [c for c in (_glance(report),) if c is not None],
        "distributions": distributions,
        "steps": [c for c in (_steps(report),) if c is not None],
        "timeline": [c for c in (_timeline(report),) if c is not None],
        "history": [
            chart
            for name in dict.fromkeys([*report.metrics, *(p.metric for p in report.history)])
            if name not in duplicates
            if (chart := _history(report, name)) is not None
        ],
    }
