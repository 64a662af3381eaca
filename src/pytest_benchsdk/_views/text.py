"""A finished run as plain text: the session's ``benchmarks`` section and ``pytest-benchsdk
show`` print these lines, so both say the same.

Everything comes from the :class:`~pytest_benchsdk.results.RunSummary`; numbers go through
:mod:`pytest_benchsdk._base.numbers` (three significant digits, times in the unit that reads best),
names and messages through :func:`~pytest_benchsdk._views.escape.terminal_text` (no control
character reaches the terminal).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from typing import Any, Final

from pytest_benchsdk._analysis.baseline import BaselineComparison, MetricComparison
from pytest_benchsdk._analysis.changepoints import ChangePoint, fewest_runs
from pytest_benchsdk._analysis.hygiene import RunWarning, shared_finding
from pytest_benchsdk._analysis.scoring import ScoreResult
from pytest_benchsdk._base.defaults import BENCHMARK_COLUMNS
from pytest_benchsdk._base.numbers import (
    TIME_UNITS,
    change_of_values,
    change_text,
    column_scale,
    in_unit,
    is_time_unit,
    percent,
    phase_subject,
    quantity,
    significant,
    stat_triple,
)
from pytest_benchsdk._base.percentiles import BEST_TAIL_NOTE
from pytest_benchsdk._views.escape import terminal_text
from pytest_benchsdk.results import (
    HISTORY_RULE,
    HistorySeries,
    Knobs,
    MetricSummary,
    ParticipantSummary,
    RankedParticipant,
    RelativeRow,
    RelativeSummary,
    RoundsKnobs,
    RunHistory,
    RunSummary,
    SampleStats,
    ScoreTable,
    metric_unit,
)

__all__ = [
    "COLUMNS",
    "MAX_NAME_WIDTH",
    "RELATIVE_ROWS",
    "WARNINGS_PER_CODE",
    "change_point_text",
    "column_lines",
    "comparison_legend",
    "comparison_lines",
    "comparison_reasons",
    "detectable_cell",
    "distinct_cells",
    "history_lines",
    "knobs_line",
    "latency_scale",
    "metric_scales",
    "name_cell",
    "names_told_apart",
    "relative_lines",
    "relative_more",
    "relative_sentence",
    "relative_shown",
    "rounds_cell",
    "rounds_line",
    "rule_lines",
    "score_rows",
    "short_summary_lines",
    "stats_cell",
    "step_scales",
    "summary_lines",
    "table",
    "threshold_lines",
    "title_line",
    "unranked_note",
    "warmup_line",
    "warning_finding",
    "warning_groups",
    "warning_lines",
    "warnings_more",
    "warnings_shown",
]

#: Names (participants, group values, metrics) longer than this are cut with an ellipsis in
#: the tables, so one long name does not pad every row.
MAX_NAME_WIDTH: Final = 40
#: Width at which long lines (warnings, threshold messages) wrap.
_WRAP: Final = 96


#: Of a name cut to :data:`MAX_NAME_WIDTH`, the characters kept from its end.
_NAME_TAIL: Final = 24
#: Of a name whose cut reads like another's, the characters kept from its start.
_NAME_HEAD: Final = 16

#: The cells of the names one view shows, told apart (:func:`names_told_apart`); a name
#: outside it is cut on its own.
_TOLD_APART: ContextVar[Mapping[str, str] | None] = ContextVar("_TOLD_APART", default=None)


def _cut(text: str) -> str:
    if len(text) <= MAX_NAME_WIDTH:
        return text
    head = MAX_NAME_WIDTH - 1 - _NAME_TAIL
    return f"{text[:head]}…{text[-_NAME_TAIL:]}"


def _common_prefix(texts: Sequence[str]) -> int:
    """How many leading characters all ``texts`` share (characters, not path parts)."""
    shortest = min(texts, key=len)
    for index, char in enumerate(shortest):
        if any(text[index] != char for text in texts):
            return index
    return len(shortest)


def distinct_cells(names: Iterable[str]) -> dict[str, str]:
    """Each name's cell, so that no two names read the same: cut in the middle
    (:func:`name_cell`); names whose cuts collide (parametrized tests differing in an id
    longer than the tail kept) keep their start and everything from where they differ
    (``test_unstructure…[True-UnstructureStrategy.AS_DICT]``), else they are shown whole.
    A wider table is better than two rows that read as one test."""
    texts = list(dict.fromkeys(terminal_text(name) for name in names))
    cells = {text: _cut(text) for text in texts}
    by_cell: dict[str, list[str]] = {}
    for text, cell in cells.items():
        by_cell.setdefault(cell, []).append(text)
    for same in by_cell.values():
        if len(same) < 2:
            continue
        common = _common_prefix(same)
        # From the parameter list's bracket when the names share it: the whole id reads.
        start = same[0].rfind("[", 0, common) if "[" in same[0][:common] else common
        start = max(start, _NAME_HEAD)
        told = {text: f"{text[:_NAME_HEAD]}…{text[start:]}" for text in same}
        distinct = len(set(told.values())) == len(same)
        for text in same:
            cells[text] = told[text] if distinct and len(told[text]) < len(text) else text
    return cells


@contextmanager
def names_told_apart(names: Iterable[str]) -> Iterator[None]:
    """Within it, :func:`name_cell` shows ``names`` so that no two read the same."""
    token = _TOLD_APART.set(distinct_cells(names))
    try:
        yield
    finally:
        _TOLD_APART.reset(token)


def name_cell(text: object) -> str:
    """A name in a table cell: on one line, cut to :data:`MAX_NAME_WIDTH` in its middle, its
    start and its end kept (``test_unstructu…UnstructureStrategy.AS_DICT]``): what tells names
    apart is most often at their end (a parametrized test's id); within
    :func:`names_told_apart`, a name whose cut reads like another's keeps more."""
    text = terminal_text(text)
    told = _TOLD_APART.get()
    return (told or {}).get(text) or _cut(text)


def _summary_names(summary: RunSummary) -> list[str]:
    """Every participant name a summary's views show, and its phase subjects."""
    names: list[str] = []
    for p in summary.participants:
        names.append(p.name)
        names.extend(phase_subject(p.name, ph.phase) for ph in p.phases)
    return names


def table(rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    """Rows of cells as aligned lines (columns two spaces apart, no trailing spaces)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        (
            indent + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]


#: Participants a terminal table lists at most without ``-v``: past it, the first and the
#: last half as many and one line counting the others between them (a run of 10,000
#: participants would print 10,000 lines per table). ``-v``, ``--bench-json``, the HTML
#: report and ``pytest-benchsdk show -v`` list every one.
TABLE_PARTICIPANTS: Final = 200


def folded_table(
    rows: Sequence[Sequence[str]],
    indent: str = "  ",
    *,
    verbose: int = 0,
    noun: str = "participants",
) -> list[str]:
    """:func:`table` (``rows[0]`` its header), past :data:`TABLE_PARTICIPANTS` participants
    (a row and the indented phase rows under it; ``noun`` names them) and without ``-v`` the
    first and last half as many, with a line counting the others."""
    lines = table(rows, indent)
    starts = [
        i for i in range(1, len(rows)) if not any(cell.startswith("  ") for cell in rows[i][:2])
    ]
    if verbose > 0 or len(starts) <= TABLE_PARTICIPANTS:
        return lines
    half = TABLE_PARTICIPANTS // 2
    hidden = len(starts) - 2 * half
    return [
        *lines[: starts[half]],
        f"{indent}… {hidden:,} more {noun} (the {half} first and the {half} last are "
        "listed; -v lists every one, as --bench-json and --bench-html do)",
        *lines[starts[-half] :],
    ]


def _wrapped(line: str) -> list[str]:
    return textwrap.wrap(line, _WRAP, subsequent_indent="      ", break_on_hyphens=False) or [""]


def stats_cell(stats: SampleStats | None, unit: str, reference: float | None = None) -> str:
    """``med/p95/p99`` with one unit (``11.2/13.0/20.1 µs``); ``-`` without samples.
    ``reference``: the column's scale (:func:`column_scale`), so a column reads in one unit."""
    if stats is None:
        return "-"
    return stat_triple(stats.median, stats.p95, stats.p99, unit, reference)


def latency_scale(summary: RunSummary) -> float | None:
    """The scale of a latency column: the largest median of its rows (participants, phases)."""
    return column_scale(
        s.median
        for p in summary.ran_participants
        for s in (p.latency, *(ph.latency for ph in p.phases))
        if s is not None
    )


def metric_scales(summary: RunSummary) -> dict[str, float | None]:
    """Each metric's scale in a ``med/p95/p99`` column: the largest median of its rows
    (participants, phases), so one metric reads in one unit down the column."""
    medians: dict[str, list[float]] = {}
    for p in summary.ran_participants:
        for m in (*p.metrics, *(m for ph in p.phases for m in ph.metrics)):
            if m.stats is not None:
                medians.setdefault(m.key, []).append(m.stats.median)
    return {key: column_scale(values) for key, values in medians.items()}


def step_scales(summary: RunSummary) -> dict[str, float | None]:
    """Each step's scale in the steps' ``med/p95/p99`` column (the largest median of it)."""
    medians: dict[str, list[float]] = {}
    for p in summary.ran_participants:
        for step in p.steps:
            if step.latency is not None:
                medians.setdefault(step.name, []).append(step.latency.median)
    return {name: column_scale(values) for name, values in medians.items()}


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.4g}"


def knobs_line(knobs: Knobs) -> str:
    """Upstream's knobs line; ``iterations`` is the schedule length per participant. Phases
    sized on the command line (``--bench-phase-iterations``) add each phase's size. A group
    of benchmarked tests has no such knobs: its line is its rounds' settings
    (:func:`rounds_line`)."""
    if knobs.rounds is not None:
        return rounds_line(knobs.rounds)
    line = (
        f"Knobs: iterations={knobs.iterations}, concurrency={knobs.concurrency}, "
        f"staggerDelayMs={_number(knobs.stagger_delay_ms)}, groupBy={knobs.group_by}"
    )
    if knobs.phases_sized:
        line += ", phases=" + ",".join(
            f"{terminal_text(name)}={count}" for name, count in knobs.phases
        )
    return line


def _setting(name: str, value: object) -> str:
    if value is None:
        return f"{name}=per test"
    if name in ("min_time", "max_time") and isinstance(value, (int, float)):
        return f"{name}={quantity(float(value), 's')}"
    return f"{name}={terminal_text(value)}"


def rounds_line(rounds: RoundsKnobs) -> str:
    """A group of benchmarked tests' knobs: pytest-benchmark's settings of the calibrated
    rounds its tests share (``min_rounds=5, min_time=5.00 µs, max_time=1.00 s, ...``; ``per
    test`` where they differ)."""
    settings = ", ".join(_setting(name, value) for name, value in rounds.settings())
    return f"Rounds per test (@pytest.mark.benchmark; pedantic() runs its own): {settings}"


def warmup_line(knobs: Knobs) -> str | None:
    """The warm-up: how many iterations each participant runs first (never scored); with
    phases, each phase's count (it runs right before the phase), and why a cold-named phase has
    none."""
    plan = knobs.phase_warmup
    if not plan:
        if not knobs.warmup:
            return None
        return f"Warm-up: {knobs.warmup} iteration(s) per participant first, never scored"
    asked = knobs.warmup
    parts = ", ".join(
        f"{terminal_text(phase)} {count}" + (" (named cold)" if source == "cold" and asked else "")
        for phase, count, source in plan
    )
    if any(count for _, count, _ in plan):
        return f"Warm-up: per participant right before each phase, never scored: {parts}"
    if asked and any(source == "cold" for _, _, source in plan):
        return f"Warm-up: none: {parts}; Phase(name, n, warmup=N) warms a cold phase"
    return None


def _clock(iso: str) -> datetime | None:
    try:
        return datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return None


def _span_line(summary: RunSummary) -> str | None:
    """``Ran 08:00:01–08:00:04 UTC (3.21 s)``: the benchmark's own iterations."""
    if summary.started_at is None or summary.finished_at is None:
        return None
    start, end = _clock(summary.started_at), _clock(summary.finished_at)
    if start is None or end is None:
        return None
    took = span_text(max(0.0, (end - start).total_seconds()))
    return (
        f"Ran {start:%Y-%m-%d %H:%M:%S}–{end:%H:%M:%S} UTC ({took}); "
        f"status: {summary.status.text()}"
    )


def span_text(seconds: float) -> str:
    """How long a run took, at the resolution of its stored times (upstream's ISO timestamps
    have milliseconds): ``< 1 ms``, ``72 ms``, ``3.21 s``, never ``0 ns``."""
    if seconds < 0.0005:
        return "< 1 ms"
    if seconds < 0.9995:
        return f"{seconds * 1000:.0f} ms"
    return quantity(seconds, "s")


# -- the participants' table ------------------------------------------------------------------


def _success(passed: int, ran: int) -> str:
    return f"{passed}/{ran}"


def rounds_cell(p: ParticipantSummary) -> str:
    """A benchmarked test's ``rounds × iterations`` (``-`` when it has none: it failed)."""
    if p.rounds is None:
        return "-"
    return f"{p.rounds.rounds:,} × {p.rounds.iterations:,}"


def single_test(summary: RunSummary) -> ParticipantSummary | None:
    """The one test of a group of benchmarked tests that has only it (pytest-benchmark's
    ``--benchmark-group-by=fullname`` makes a group of each test), when it passed: its
    group reads as one line (:func:`single_test_line`), with nothing to rank or compare."""
    if summary.knobs.rounds is None or len(summary.participants) != 1:
        return None
    p = summary.participants[0]
    if p.skipped is not None or p.ran != 1 or p.passed != 1 or p.rounds is None:
        return None
    return p


def single_test_line(p: ParticipantSummary) -> str:
    """A lone benchmarked test in a line: its rounds × iterations and each metric's
    ``med/p95/p99`` (``time_ms`` first, as the scores show it)."""
    metrics = sorted(p.metrics, key=lambda m: not m.scored)
    figures = ", ".join(
        f"{name_cell(m.label)} {stats_cell(m.stats, m.unit)}" for m in metrics if m.stats
    )
    assert p.rounds is not None
    rounds, calls = p.rounds.rounds, p.rounds.iterations
    counts = (
        f"{rounds:,} round{'' if rounds == 1 else 's'} × "
        f"{calls:,} iteration{'' if calls == 1 else 's'}"
    )
    return f"{name_cell(p.name)}: {counts}; med/p95/p99 {figures}"


def _participant_rows(
    summary: RunSummary, with_ran: bool, *, phases: bool = True
) -> list[list[str]]:
    if summary.knobs.rounds is not None:
        # Benchmarked tests: one record each, whose latency is its median per call (the
        # scores have its rounds' statistics): how it was measured instead.
        rows = [["participant", "success", "rounds × iterations"]]
        rows += [
            [name_cell(p.name), _success(p.passed, p.ran), rounds_cell(p)]
            for p in summary.participants
            if p.skipped is None
        ]
        return rows
    header = ["participant", "success", "latency med/p95/p99"]
    if with_ran:
        header.insert(1, "ran")
    rows = [header]
    scale = latency_scale(summary)
    # Every selected participant: one that never ran (an interrupted session) shows 0/n.
    for p in summary.participants:
        if p.skipped is not None:
            continue
        parts = [(name_cell(p.name), p.ran, p.passed, p.planned, p.latency)]
        parts += [
            (
                f"  {name_cell(phase_subject(p.name, ph.phase))}",
                ph.ran,
                ph.passed,
                ph.planned,
                ph.latency,
            )
            for ph in (p.phases if phases else ())
        ]
        for label, ran, passed, planned, latency in parts:
            row = [label, _success(passed, ran), stats_cell(latency, "ms", scale)]
            if with_ran:
                row.insert(1, f"{ran}/{planned}")
            rows.append(row)
    return rows


def _unscored(p: ParticipantSummary) -> list[MetricSummary]:
    return [m for m in p.metrics if not m.scored]


#: Unscored metrics per participant the section lists without ``-v``: a task that measures
#: thousands of keys must not bury the scores under a table of them.
METRIC_ROWS: Final = 20


def _metric_rows(summary: RunSummary, limit: int | None) -> tuple[list[list[str]], int]:
    """Measured metrics that are not scored: one row per participant × metric (× phase), the
    first ``limit`` metrics of each participant (all for None); and how many were left out."""
    rows = [["participant", "metric", "med/p95/p99", "n"]]
    hidden = 0
    scales = metric_scales(summary)
    for p in summary.ran_participants:
        unscored = _unscored(p)
        if limit is not None and len(unscored) > limit:
            hidden += len(unscored) - limit
            unscored = unscored[:limit]
        for m in unscored:
            label = name_cell(m.label) + (" ↑" if m.lower_is_better is False else "")
            count = str(m.stats.count) if m.stats is not None else "0"
            scale = scales.get(m.key)
            rows.append([name_cell(p.name), label, stats_cell(m.stats, m.unit, scale), count])
            for ph in p.phases:
                pm = next((x for x in ph.metrics if x.key == m.key), None)
                if pm is not None:
                    rows.append(
                        [
                            f"  {name_cell(phase_subject(p.name, ph.phase))}",
                            label,
                            stats_cell(pm.stats, pm.unit, scale),
                            str(pm.stats.count) if pm.stats is not None else "0",
                        ]
                    )
    return rows, hidden


def _step_rows(summary: RunSummary) -> list[list[str]]:
    rows = [["participant", "step", "med/p95/p99", "n", "failed"]]
    scales = step_scales(summary)
    for p in summary.ran_participants:
        for s in p.steps:
            count = str(s.latency.count) if s.latency is not None else "0"
            rows.append(
                [
                    name_cell(p.name),
                    name_cell(s.label),
                    stats_cell(s.latency, "ms", scales.get(s.name)),
                    count,
                    str(s.failed),
                ]
            )
    return rows


# -- scores -----------------------------------------------------------------------------------


def _score_scales(table: ScoreTable) -> dict[str, float | None]:
    """Each scored metric's column scale: the largest median of its rows (aggregate, group
    and phase rows), so a column reads in one unit."""
    medians: dict[str, list[float]] = {}
    for entry in table.ranking:
        for row in (*entry.rows, *(r for _, r in entry.phase_rows)):
            for m in row.metrics:
                medians.setdefault(m.name, []).append(m.median)
    return {key: column_scale(values) for key, values in medians.items()}


def _metric_cells(
    row: ScoreResult, table: ScoreTable, scales: Mapping[str, float | None] | None = None
) -> list[str]:
    by_name = {m.name: m for m in row.metrics}
    cells = []
    for key, unit, _ in table.metrics:
        m = by_name.get(key)
        scale = (scales or {}).get(key)
        cells.append("-" if m is None else stat_triple(m.median, m.p95, m.p99, unit, scale))
    return cells


def _rank_cell(entry: RankedParticipant) -> str:
    if entry.rank is None:
        return "-"
    return f"{entry.rank}=" if entry.tied_with_above else str(entry.rank)


def _score_cell(row: ScoreResult) -> str:
    if row.skipped:
        return "skipped"
    return f"{row.composite_score:.2f}"


def score_rows(table_: ScoreTable, *, phases: bool = True) -> list[list[str]]:
    """The ranked scores table (header first): rank (``n=`` tied with the one above, ``-``
    nothing to rank), participant, success, each metric's med/p95/p99, the composite and, with
    intervals, the interval and how often the participant keeps its rank; ``group_by`` rows
    and (``phases``) phase rows under their participant."""
    header = ["#", "participant", "success"]
    header += [
        f"{name_cell(label)}{' ↑' if key in table_.higher_is_better else ''} med/p95/p99"
        for key, _, label in table_.metrics
    ]
    header.append("score")
    intervals = table_.level is not None
    if intervals:
        assert table_.level is not None
        header += [f"{table_.level:.0%} interval", "keeps rank"]
    rows = [header]
    scales = _score_scales(table_)
    for entry in table_.ranking:
        for index, row in enumerate(entry.rows):
            label = name_cell(entry.participant)
            if index > 0 and table_.group_by is not None:
                value = row.dimensions.get(table_.group_by, "(none)")
                label = f"  {name_cell(table_.group_by)}={name_cell(value)}"
            cells = [_rank_cell(entry) if index == 0 else "", label, percent(row.success_rate)]
            cells += _metric_cells(row, table_, scales)
            cells.append(_score_cell(row))
            if intervals:
                cells += _interval_cells(entry) if index == 0 else ["", ""]
            rows.append(cells)
        for phase, row in entry.phase_rows if phases else ():
            cells = [
                "",
                f"  {name_cell(phase_subject(entry.participant, phase))}",
                "-" if row.skipped else percent(row.success_rate),
            ]
            cells += _metric_cells(row, table_, scales)
            cells.append("")
            if intervals:
                cells += ["", ""]
            rows.append(cells)
    return rows


def unranked_note(table_: ScoreTable) -> str | None:
    """Why some participants have ``-`` for a rank: none of their iterations passed, or none
    of the scored metrics was measured (every score is empty); None when all are ranked."""
    unranked = [e for e in table_.ranking if e.rank is None and not e.row.skipped]
    if not unranked:
        return None
    if all(e.row.success_rate == 0 for e in unranked):
        return "- : no iteration passed, nothing to rank"
    return "- : no participant measured a scored metric, nothing to rank"


def _interval_cells(entry: RankedParticipant) -> list[str]:
    u = entry.uncertainty
    if u is None or u.skipped or entry.rank is None:
        return ["", ""]
    if u.from_one_sample:
        # Every resample of one record is that record: no interval, and no rank kept by it.
        return ["n/a (1 sample)", ""]
    keeps = entry.keeps_rank
    return [f"{u.low:.1f}–{u.high:.1f}", "" if keeps is None else percent(keeps)]


def _dimensions_line(table_: ScoreTable) -> str | None:
    if not table_.dimensions:
        return None
    parts = ", ".join(
        f"{terminal_text(k)}={terminal_text(v)}" for k, v in table_.dimensions.items()
    )
    return f"Dimensions: {parts}"


# -- the relative summary ---------------------------------------------------------------------


def relative_sentence(
    relative: RelativeSummary, row: RelativeRow, name: Callable[[str], str] = str
) -> str:
    """``keepalive: 10.8× faster than new-client on request_ms median, 95 % CI 9.1–12.6×``,
    or, when the comparison finds no difference, ``b and a: no clear difference on ms median
    (1.00×, 95 % CI 0.97–1.03×)``; ``name`` writes the names and the metric's label for the
    view (escapes them)."""
    interval = f"{relative.level * 100:.0f} % CI {significant(row.low)}–{significant(row.high)}×"
    if row.verdict == "unchanged":
        # "1.00× faster" would claim an order the interval does not support; an interval that
        # leaves out 1× names what decided instead.
        decided = ""
        if row.decided_by == "mann-whitney" and row.p_value is not None:
            alpha = f" ≥ {row.alpha:g}" if row.alpha is not None else ""
            decided = f"; decided by the Mann–Whitney test, p = {row.p_value:.2g}{alpha}"
        elif row.decided_by == "noise-threshold" and row.noise_threshold is not None:
            decided = (
                f"; the interval does not clear the {row.noise_threshold * 100:g} % noise threshold"
            )
        return (
            f"{name(relative.reference)} and {name(row.participant)}: no clear difference on "
            f"{name(relative.label)} {relative.statistic} ({significant(row.factor)}×, {interval}"
            f"{decided})"
        )
    if not relative.lower_is_better:
        word = "higher"
    else:
        word = "faster" if is_time_unit(relative.unit) else "lower"
    return (
        f"{name(relative.reference)}: {significant(row.factor)}× {word} than "
        f"{name(row.participant)} on {name(relative.label)} {relative.statistic}, {interval}"
    )


#: Lines of the relative summary the terminal and Markdown list (the closest to the best
#: first); the others are counted in one line: ``--bench-json`` and the HTML report have
#: every one.
RELATIVE_ROWS: Final = 5


def relative_shown(relative: RelativeSummary) -> tuple[tuple[RelativeRow, ...], int]:
    """The rows of the relative summary a view lists (at most :data:`RELATIVE_ROWS`, the
    closest to the best first) and how many it leaves to :func:`relative_more`."""
    rows = relative.rows
    return rows[:RELATIVE_ROWS], max(0, len(rows) - RELATIVE_ROWS)


def relative_more(hidden: int) -> str:
    """The line that counts the relative rows a view left out."""
    return (
        f"… and {hidden:,} more (further behind): --bench-json and the HTML report "
        "(--bench-html) list every one"
    )


def relative_lines(summary: RunSummary) -> list[str]:
    """The relative summary under the ranking: a line per participant after the best, the
    closest ones (:func:`relative_shown`)."""
    relative = summary.relative
    if relative is None or not relative.rows:
        return []
    rows, hidden = relative_shown(relative)
    lines = ["  Relative:"] + [f"    {relative_sentence(relative, row, name_cell)}" for row in rows]
    if hidden:
        lines.append(f"    {relative_more(hidden)}")
    return lines


# -- thresholds, warnings, comparison ---------------------------------------------------------


def threshold_lines(summary: RunSummary) -> list[str]:
    verdicts = summary.thresholds
    if not verdicts:
        return []
    counts = {
        o: sum(1 for v in verdicts if v.outcome == o) for o in ("passed", "failed", "skipped")
    }
    head = f"  Thresholds: {counts['passed']} passed, {counts['failed']} failed"
    if counts["skipped"]:
        head += f", {counts['skipped']} skipped"
    lines = [head]
    for verdict in verdicts:
        if verdict.outcome != "passed":
            mark = "FAILED" if verdict.outcome == "failed" else "skipped"
            lines.extend(
                "    " + line for line in _wrapped(f"{mark} {terminal_text(verdict.message())}")
            )
    return lines


def warning_groups(warnings: Iterable[RunWarning]) -> list[tuple[RunWarning, list[str]]]:
    """The warnings to show, one per code and participant (× phase, with phases; metrics that
    say the same are one warning already): participants whose finding says the same (code,
    metrics, message) are shown together. Each group: its first warning and every participant
    in it (``e2b · cold`` for a phase's)."""
    # Each group's participants as an ordered set: a finding shared by 10,000 participants
    # is not 10,000 scans of a list.
    groups: dict[tuple[str, tuple[str, ...], str], tuple[RunWarning, dict[str, None]]] = {}
    for warning in warnings:
        key = (warning.code, warning.metrics, warning.message)
        groups.setdefault(key, (warning, {}))[1][warning.subject] = None
    return [(warning, list(who)) for warning, who in groups.values()]


#: Findings of one code the terminal and Markdown write out (the first ones, in the run's
#: order); the others are counted in one line: a group of 200 benchmarked tests would
#: otherwise print a wall of near-identical advice. ``--bench-json``, the store and the HTML
#: report keep every one.
WARNINGS_PER_CODE: Final = 3


def warnings_shown(
    warnings: Iterable[RunWarning],
) -> list[tuple[RunWarning, list[str]] | tuple[str, list[str]]]:
    """:func:`warning_groups` as a view lists them: at most :data:`WARNINGS_PER_CODE` of each
    code, each code's others as ``(code, their subjects)`` right after its last one shown."""
    shown: list[tuple[RunWarning, list[str]] | tuple[str, list[str]]] = []
    hidden: dict[str, list[str]] = {}
    # The names already in each code's hidden list: a set, not a scan of the list per name.
    listed: dict[str, set[str]] = {}
    counts: dict[str, int] = {}
    for warning, who in warning_groups(warnings):
        counts[warning.code] = counts.get(warning.code, 0) + 1
        if counts[warning.code] <= WARNINGS_PER_CODE:
            shown.append((warning, who))
        else:
            if warning.code not in hidden:
                hidden[warning.code] = []
                listed[warning.code] = set()
                shown.append((warning.code, hidden[warning.code]))
            names, seen = hidden[warning.code], listed[warning.code]
            for name in who:
                if name not in seen:
                    seen.add(name)
                    names.append(name)
    return shown


def warnings_more(code: str, who: Sequence[str], name: Callable[[str], str] = str) -> str:
    """The line that counts a code's findings a view left out."""
    first = ", ".join(name(n) for n in who[:3]) + (", …" if len(who) > 3 else "")
    return (
        f"warning [{code}] {len(who):,} more participants ({first}): --bench-json and the HTML "
        "report (--bench-html) list every one"
    )


#: The width a warning's one line fits in by default (an 80-column terminal).
_WARNING_LINE: Final = 79


def warning_finding(message: str) -> str:
    """A warning's finding without its explanation and advice: the message up to its first
    ``: `` or ``; `` (``p99 comes from 6 sample(s)``)."""
    cuts = [i for i in (message.find(": "), message.find("; ")) if i > 0]
    return message[: min(cuts)] if cuts else message


def _one_warning_line(code: str, who: Sequence[str], metrics: str, finding: str) -> str:
    """``  warning [code] a, b +3 more (metric): finding``, the names cut to fit
    :data:`_WARNING_LINE` columns where the finding leaves room."""
    names = [name_cell(name) for name in who]
    shown = len(names)
    while True:
        listed = ", ".join(names[:shown]) + (
            f" +{len(names) - shown} more" if shown < len(names) else ""
        )
        about = f"{listed} ({metrics})" if metrics else listed
        line = f"  warning [{code}] {about}: {finding}"
        if len(line) <= _WARNING_LINE or shown <= 1:
            return line
        shown -= 1


def _warning_facts(warning: RunWarning) -> str:
    """A warning's finding without its explanation and advice (stored with it, else cut
    from its message)."""
    return warning.finding or warning_finding(warning.message)


def _warning_advice(warning: RunWarning) -> str | None:
    """What follows a warning's finding in its message (``: the rounds spread widely, …``),
    None when its finding is not known apart."""
    finding = warning.finding
    if not finding or not warning.message.startswith(finding):
        return None
    return warning.message[len(finding) :]


#: The footer of the default form's warnings.
WARNINGS_FOOTER: Final = (
    "  (why each warning matters and what to do: -v or --bench-warnings=full, or "
    "pytest-benchsdk show -v)"
)


def warning_lines(
    warnings: Iterable[RunWarning], *, verbose: int = 0, full: bool = False, tests: bool = False
) -> list[str]:
    """The run-hygiene warnings, a code at a time (every finding is in the store,
    ``--bench-json``, the Markdown summary and the HTML report). A code found once (one
    finding, maybe shared by several participants: the same message) is one line: its
    finding, the names cut to fit 80 columns. A code found several times is one line too,
    counting who it is about and saying what the findings say together (``warning
    [high-variance] 24 tests (time_ms): coefficient of variation 33–278% (over 30%); -v lists
    them``). A last line says where the rest is. With ``-v`` (``verbose`` > 0) or ``full``
    (``--bench-warnings=full``) each code's message in full: for several findings, the
    shared line with the advice once, then each participant's finding on a line of its own.
    ``tests``: the participants are benchmarked tests."""
    warnings = list(warnings)
    by_code: dict[str, list[tuple[RunWarning, list[str]]]] = {}
    for warning, who in warning_groups(warnings):
        by_code.setdefault(warning.code, []).append((warning, who))
    participants = {
        code: list(dict.fromkeys(w.participant for w in warnings if w.code == code))
        for code in by_code
    }
    detailed = verbose > 0 or full
    lines: list[str] = []
    for code, found in by_code.items():
        if len(found) == 1:
            warning, who = found[0]
            metrics = ", ".join(name_cell(m) for m in warning.metrics)
            if not detailed:
                finding = terminal_text(warning_finding(_warning_facts(warning)))
                lines.append(_one_warning_line(code, who, metrics, finding))
                continue
            names = ", ".join(name_cell(name) for name in who)
            about = f"{names} ({metrics})" if metrics else names
            lines.extend(_wrapped(f"  warning [{code}] {about}: {terminal_text(warning.message)}"))
            continue
        lines.extend(
            _shared_warning_lines(code, found, participants[code], detailed=detailed, tests=tests)
        )
    if lines and not detailed:
        lines.append(WARNINGS_FOOTER)
    return lines


#: Up to this many participants, the line of several findings of one code names them.
_NAMED_SUBJECTS: Final = 3


def _shared_warning_lines(
    code: str,
    found: Sequence[tuple[RunWarning, list[str]]],
    participants: Sequence[str],
    *,
    detailed: bool,
    tests: bool,
) -> list[str]:
    """Several findings of one code (about ``participants``): one line (see
    :func:`warning_lines`), and with ``detailed`` the advice once and each finding on a line
    of its own."""
    subjects = list(dict.fromkeys(name for _, who in found for name in who))
    metrics = list(dict.fromkeys(m for warning, _ in found for m in warning.metrics))
    figures = [warning.figure for warning, _ in found]
    known = [figure for figure in figures if figure is not None]
    shared = shared_finding(code, known, rounds=tests) if len(known) == len(figures) else None
    if shared is None:
        shared = f"{_warning_facts(found[0][0])}, …"
    metric_names = ", ".join(name_cell(m) for m in metrics)
    if not detailed and len(subjects) <= _NAMED_SUBJECTS:
        shared_line = f"{terminal_text(shared)}; -v lists them"
        return [_one_warning_line(code, subjects, metric_names, shared_line)]
    if len(subjects) <= _NAMED_SUBJECTS:
        # A few (one participant's several metrics, say): named, not "1 participants".
        about = ", ".join(name_cell(name) for name in subjects)
    elif any(warning.phase is not None for warning, _ in found):
        of = "test" if tests else "participant"
        plural = "" if len(participants) == 1 else "s"
        about = f"{len(subjects):,} phases of {len(participants):,} {of}{plural}"
    else:
        about = f"{len(subjects):,} {'tests' if tests else 'participants'}"
    if metrics:
        about += f" ({metric_names})"
    head = f"  warning [{code}] {about}: {terminal_text(shared)}"
    if not detailed:
        return [f"{head}; -v lists them"]
    advices = {_warning_advice(warning) for warning, _ in found}
    advice = advices.pop() if len(advices) == 1 else None
    lines = _wrapped(head + terminal_text(advice) if advice else head)
    for warning, who in found:
        names = ", ".join(name_cell(name) for name in who)
        if len(metrics) > 1:
            names += f" ({', '.join(name_cell(m) for m in warning.metrics)})"
        text = _warning_facts(warning) if advice else warning.message
        lines.extend(
            textwrap.wrap(
                f"    {names}: {terminal_text(text)}",
                _WRAP,
                subsequent_indent="        ",
                break_on_hyphens=False,
            )
        )
    return lines


#: Past this smallest detectable change (+900 %: ten times) ``detects`` says no figure.
DETECTS_BOUND: Final = 9.0
#: What ``detects`` reads past :data:`DETECTS_BOUND`.
BEYOND_TENFOLD: Final = "beyond ×10"


def detectable_cell(row: MetricComparison) -> str:
    """``≥13.1%``: the smallest change the row could tell from noise; ``beyond ×10`` past
    +900 % (``≥15414×`` says nothing more: the row cannot tell a tenfold change from
    noise)."""
    detectable = row.detectable
    if detectable is None:
        return ""
    if not math.isfinite(detectable):
        return "-"
    if detectable > DETECTS_BOUND:
        return BEYOND_TENFOLD
    return f"≥{change_text(detectable).lstrip('+')}"


def comparison_legend(comparison: BaselineComparison) -> str | None:
    """What ``detects`` means, with the rows' sample sizes (None without compared rows)."""
    sizes = sorted(
        {n for row in comparison.rows if row.comparison is not None
         for n in (row.comparison.baseline_n, row.comparison.current_n)}
    )  # fmt: skip
    if not sizes:
        return None
    n = f"n = {sizes[0]}" if len(sizes) == 1 else f"n = {sizes[0]}–{sizes[-1]}"
    if comparison.paired:
        return (
            f"detects: the smallest change a row can tell from noise ({n} rounds, each run on "
            "both sides); unchanged rules out only a change that large"
        )
    return (
        f"detects: the smallest change a row can tell from noise ({n} per side, or the earlier "
        "runs' spread); unchanged rules out only a change that large"
    )


def comparison_reasons(comparison: BaselineComparison) -> list[str]:
    """Why each puzzling ``unchanged`` row is one (its interval alone would not say so), and
    what else a verdict rests on (a history too noisy, a tail not judged). Rows of one metric
    and statistic with the same reason share its line (``a, b, c value p95: not judged: …``)."""
    shared: dict[tuple[str, str, str], list[str]] = {}
    for row in comparison.rows:
        if row.reason:
            head = f"{row.metric} {row.statistic_label}" + (
                " is unchanged: " if row.verdict == "unchanged" else ": "
            )
            shared.setdefault((head, row.reason, row.statistic), []).append(row.subject)
    return [f"{', '.join(who)} {head}{reason}" for (head, reason, _), who in shared.items()]


def comparison_lines(comparison: BaselineComparison | None, note: str | None) -> list[str]:
    """``--bench-compare``'s table under a run (or why nothing was compared): the baseline,
    where the noise comes from, the setup differences, one row per participant × metric ×
    statistic with its verdict, the noise that decided it and the smallest change it could
    have seen, then why each puzzling ``unchanged`` is one."""
    if note:
        return [f"  Baseline: none ({terminal_text(note)})"]
    if comparison is None:
        return []
    lines = [f"  Compared with {terminal_text(comparison.baseline)}:"]
    if comparison.says_noise:
        lines.append(f"    {comparison.noise_line()}")
    judged = comparison.judged_line()
    if judged is not None:
        lines.append(f"    {terminal_text(judged)}")
    lines += [f"    warning: {terminal_text(w)}" for w in comparison.warnings]
    if not comparison.rows:
        return [*lines, "    no rows: no participant of this run ran"]
    rows = [
        [
            "participant",
            "metric",
            "stat",
            "baseline",
            "current",
            "change",
            "interval",
            "verdict",
            "noise",
            "detects",
        ]
    ]
    for row in comparison.rows:
        c = row.comparison
        if c is None:
            rows.append(
                [
                    name_cell(row.subject),
                    name_cell(row.metric),
                    row.statistic_label,
                    "",
                    "",
                    "",
                    "",
                    terminal_text(row.note or ""),
                    "",
                    "",
                ]
            )
            continue
        unit = row.unit or metric_unit(row.metric, None)
        base = c.baseline_statistic
        rows.append(
            [
                name_cell(row.subject),
                name_cell(row.metric),
                row.statistic_label,
                in_unit([c.baseline_statistic], unit, base),
                in_unit([c.current_statistic], unit, base),
                change_text(c.change),
                f"[{change_text(c.ci_low)}, {change_text(c.ci_high)}]",
                row.verdict_label + ("*" if row.reason else ""),
                row.noise_label,
                detectable_cell(row),
            ]
        )
    lines.extend(table(rows, indent="    "))
    legend = comparison_legend(comparison)
    if legend is not None:
        lines.extend("  " + line for line in _wrapped(f"  {legend}"))
    for reason in comparison_reasons(comparison):
        lines.extend("  " + line for line in _wrapped(f"  * {terminal_text(reason)}"))
    lines.extend(rule_lines(comparison))
    return lines


#: Rows of ``--bench-compare-fail=STAT:LIMIT`` verdicts listed when none failed (else the
#: failed ones only).
RULE_ROWS: Final = 10


def rule_lines(comparison: BaselineComparison) -> list[str]:
    """``--bench-compare-fail=STAT:LIMIT``'s verdicts: the failed ones, or every one when no
    more than :data:`RULE_ROWS` (else a count)."""
    rules = comparison.rules
    if not rules:
        return []
    failed = [rule for rule in rules if rule.failed]
    shown = failed or (list(rules) if len(rules) <= RULE_ROWS else [])
    lines = [f"  --bench-compare-fail: {len(failed)} of {len(rules)} expression verdict(s) failed"]
    lines.extend(f"    {terminal_text(rule.line())}" for rule in shown)
    return lines


# -- the whole run ----------------------------------------------------------------------------


def title_line(summary: RunSummary, where: str | None = None) -> str:
    place = where if where is not None else (summary.file or "")
    tail = f" [{terminal_text(place)}]" if place else ""
    return f"{terminal_text(summary.benchmark_name)} ({summary.benchmark_slug}){tail}"


#: pytest-benchmark's columns, as ``--bench-columns`` names them.
COLUMNS: Final = BENCHMARK_COLUMNS
#: ``--benchmark-time-unit``'s units: (label, per second).
_FIXED_UNITS: Final = {"ns": ("ns", 1e9), "us": ("µs", 1e6), "ms": ("ms", 1e3), "s": ("s", 1.0)}


def _column_cell(
    column: str,
    stats: SampleStats,
    unit: str,
    p: ParticipantSummary,
    time_unit: str | None = None,
) -> str:
    if column == "outliers":
        # pytest-benchmark's: beyond 1 standard deviation; beyond 1.5 IQR.
        figures = p.fixture.stats if p.fixture is not None else {}
        if "stddev_outliers" not in figures:
            return "-"
        return f"{figures['stddev_outliers']};{figures['iqr_outliers']}"
    if column in ("rounds", "iterations"):
        # A benchmarked test's own count (its record keeps at most 1,000 of its rounds);
        # else how many samples there are, one iteration each.
        if p.rounds is not None:
            count = p.rounds.rounds if column == "rounds" else p.rounds.iterations
            return f"{count:,}"
        return f"{stats.count:,}" if column == "rounds" else "1"
    if column == "ops":
        seconds = stats.mean * TIME_UNITS[unit] if is_time_unit(unit) else math.nan
        if not seconds > 0:
            return "-"
        ops = 1 / seconds
        return f"{ops:,.0f}" if ops >= 1000 else significant(ops)
    value = stats.iqr if column == "iqr" else stats.get(column)
    fixed = _FIXED_UNITS.get(time_unit or "")
    if fixed is not None and value is not None and is_time_unit(unit):
        label, per_second = fixed
        return f"{significant(value * TIME_UNITS[unit] * per_second)} {label}"
    return quantity(value, unit)


def _row_name(p: ParticipantSummary, names: str) -> str:
    """A row's name (``--benchmark-name``): ``long``, a benchmarked test's node id; ``short``,
    its name without ``test_``; else the participant's name."""
    if p.fixture is not None and names == "long":
        return p.fixture.fullname
    if names == "short":
        return p.name.removeprefix("test_")
    return p.name


def column_lines(
    summary: RunSummary,
    columns: Sequence[str],
    *,
    sort: str | None = None,
    time_unit: str | None = None,
    names: str = "normal",
) -> list[str]:
    """pytest-benchmark's table of the scored metric (else the first per-call metric of a
    benchmark of calibrated steps, else the latency), one row per
    participant that ran, in ``columns`` (``--bench-columns``); OPS are calls per second.
    ``sort`` orders the rows (``--benchmark-sort``: ``min``, ``max``, ``mean``, ``stddev``
    ascending, ``name``, ``fullname``; None: the summary's order), ``time_unit`` fixes the
    time columns' unit (``ns``, ``us``, ``ms``, ``s``), ``names`` names the rows."""
    if not columns or not summary.ran_participants:
        return []
    scored = summary.scores.metrics[0] if summary.scores and summary.scores.metrics else None
    key = scored[0] if scored is not None else (summary.per_call or ("latency_ms",))[0]
    rows: list[list[str]] = [["participant", *(c if c != "ops" else "ops (/s)" for c in columns)]]
    unit = "ms"
    found_rows: list[tuple[ParticipantSummary, SampleStats, str]] = []
    for p in summary.ran_participants:
        found = p.metric(key) if scored is not None or summary.per_call else None
        stats = found.stats if found is not None else p.latency
        unit = found.unit if found is not None else "ms"
        if stats is None:
            continue
        found_rows.append((p, stats, unit))
    if sort in ("name", "fullname"):
        found_rows.sort(key=lambda row: _row_name(row[0], "long" if sort == "fullname" else ""))
    elif sort is not None:
        found_rows.sort(key=lambda row: _sort_value(row[1], sort))
    for p, stats, unit in found_rows:
        cells = [_column_cell(c, stats, unit, p, time_unit) for c in columns]
        rows.append([name_cell(_row_name(p, names)), *cells])
    if len(rows) == 1:
        return []
    return [f"  Columns ({key} per participant):", *table(rows, indent="    ")]


def cprofile_lines(summary: RunSummary) -> list[str]:
    """``--benchmark-cprofile``: each benchmarked test's profiled functions, pytest-benchmark's
    columns (time in seconds)."""
    lines: list[str] = []
    for p in summary.participants:
        rows = p.fixture.cprofile if p.fixture is not None else ()
        if not rows:
            continue
        lines.append(
            f"  cProfile of {terminal_text(p.fixture.fullname if p.fixture else p.name)}"
            " (time in s):"
        )
        cells = [
            ["ncalls", "tottime", "percall", "cumtime", "percall", "filename:lineno(function)"]
        ]
        cells.extend(
            [
                str(row.get("ncalls_recursion", "")),
                f"{row.get('tottime', 0):.4f}",
                f"{row.get('tottime_per', 0):.4f}",
                f"{row.get('cumtime', 0):.4f}",
                f"{row.get('cumtime_per', 0):.4f}",
                terminal_text(str(row.get("function_name", ""))),
            ]
            for row in rows
        )
        lines.extend(table(cells, indent="    "))
    return lines


def _sort_value(stats: SampleStats, key: str) -> float:
    value = stats.get(key)
    return value if value is not None and math.isfinite(value) else math.inf


def summary_lines(
    summary: RunSummary,
    *,
    verbose: int = 0,
    columns: Sequence[str] = (),
    table_options: Mapping[str, Any] | None = None,
    warnings_full: bool = False,
) -> list[str]:
    with names_told_apart(_summary_names(summary)):
        return _summary_lines(
            summary,
            verbose=verbose,
            columns=columns,
            table_options=table_options,
            warnings_full=warnings_full,
        )


def _summary_lines(
    summary: RunSummary,
    *,
    verbose: int = 0,
    columns: Sequence[str] = (),
    table_options: Mapping[str, Any] | None = None,
    warnings_full: bool = False,
) -> list[str]:
    """A finished run, as the ``benchmarks`` section prints it (without its title);
    ``columns``: pytest-benchmark's table too (``--bench-columns``). ``verbose`` is pytest's
    verbosity: below 0 (``-q``) the short form (:func:`short_summary_lines`), above 0 (``-v``)
    every metric and the steps too; ``warnings_full`` (``--bench-warnings=full``): each
    warning in full, as ``-v`` shows them."""
    if verbose < 0:
        return short_summary_lines(
            summary, verbose=verbose, columns=columns, table_options=table_options
        )
    lines = [f"  {knobs_line(summary.knobs)}"]
    if summary.knobs.rounds is not None:
        # A group of benchmarked tests opens as its tests report, with no header: its notes
        # (measured under pytest-xdist) are said here.
        lines.extend(f"  {terminal_text(note)}" for note in summary.notes)
    warmup = warmup_line(summary.knobs)
    if warmup:
        lines.append(f"  {warmup}")
    if summary.ab is not None:
        lines.append(f"  {summary.ab.line()}")
    span = _span_line(summary)
    status = summary.status
    lines.append(f"  {span}" if span else f"  Status: {status.text()}")
    ran, planned = status.ran, status.planned
    if ran < planned and status.state != "interrupted" and ran:
        if summary.knobs.rounds is not None:
            lines.append(
                f"  {ran}/{planned} benchmarked tests left a record (the others were skipped, "
                "or never called the benchmark fixture)"
            )
        else:
            lines.append(
                f"  {ran}/{planned} planned iterations left a record (the others were skipped "
                "or failed before their task ran)"
            )
    alone = single_test(summary) if verbose <= 0 else None
    if not summary.ran_participants:
        # Every participant skipped (missing env vars, pytest.skip) or nothing ran before the
        # session stopped: no table of empty rows.
        lines.append("  No participant ran.")
    elif alone is not None:
        # A group of one test (--benchmark-group-by=fullname): one line, no tables of one row
        # (its score, against a ceiling made from itself, ranks nothing); -v has the tables.
        lines.append(f"  {single_test_line(alone)}")
        lines.extend(column_lines(summary, columns, **(table_options or {})))
    else:
        with_ran = any(p.ran < p.planned for p in summary.participants if p.skipped is None)
        lines.extend(folded_table(_participant_rows(summary, with_ran), verbose=verbose))
        if any(_unscored(p) for p in summary.ran_participants):
            scored = summary.scores is not None
            lines.append("  Metrics (not scored):" if scored else "  Metrics:")
            rows, hidden = _metric_rows(summary, None if verbose > 0 else METRIC_ROWS)
            lines.extend(folded_table(rows, indent="    ", verbose=verbose, noun="rows"))
            if hidden:
                lines.append(
                    f"    ({hidden:,} more metrics not listed: -v lists them; --bench-json and "
                    "--bench-markdown have every one)"
                )
            # Said once, under the scores, when the scores table has such a metric too.
            said_below = summary.scores is not None and bool(summary.scores.higher_is_better)
            participants_ran = summary.ran_participants
            if not said_below and any(
                m.lower_is_better is False for p in participants_ran for m in _unscored(p)
            ):
                lines.append(f"    ({BEST_TAIL_NOTE})")
        # The implicit "task" step alone is the latency again: no table for it.
        named = any(s.name != "task" for p in summary.ran_participants for s in p.steps)
        if verbose > 0 and named:
            lines.append("  Steps:")
            lines.extend(table(_step_rows(summary), indent="    "))
        scores = summary.scores
        if scores is not None and scores.ranking:
            lines.append("  Scores:")
            dimensions = _dimensions_line(scores)
            if dimensions:
                lines.append(f"    {dimensions}")
            lines.extend(folded_table(score_rows(scores), indent="    ", verbose=verbose))
            if scores.has_ties:
                lines.append("    (n= : tied with the participant above: their intervals overlap)")
            unranked = unranked_note(scores)
            if unranked is not None:
                lines.append(f"    ({unranked})")
            if scores.higher_is_better:
                lines.append(f"    ({BEST_TAIL_NOTE})")
        lines.extend(relative_lines(summary))
        lines.extend(column_lines(summary, columns, **(table_options or {})))
        if verbose > 0:
            lines.extend(cprofile_lines(summary))
    lines.extend(threshold_lines(summary))
    lines.extend(
        warning_lines(
            summary.warnings,
            verbose=verbose,
            full=warnings_full,
            tests=summary.knobs.rounds is not None,
        )
    )
    lines.extend(comparison_lines(summary.comparison, summary.comparison_note))
    for p in summary.participants:
        if p.skipped is not None:
            lines.append(f"  Skipped {name_cell(p.name)}: {terminal_text(p.skipped)}")
    lines.extend(f"  ERROR {terminal_text(error)}" for error in summary.errors)
    if summary.dashboard_url:
        lines.append(f"  View at: {terminal_text(summary.dashboard_url)}")
    return lines


def short_summary_lines(
    summary: RunSummary,
    *,
    verbose: int = -1,
    columns: Sequence[str] = (),
    table_options: Mapping[str, Any] | None = None,
) -> list[str]:
    with names_told_apart(_summary_names(summary)):
        return _short_summary_lines(
            summary, verbose=verbose, columns=columns, table_options=table_options
        )


def _short_summary_lines(
    summary: RunSummary,
    *,
    verbose: int = -1,
    columns: Sequence[str] = (),
    table_options: Mapping[str, Any] | None = None,
) -> list[str]:
    """A finished run in short (``-q``): its status (and A/B sides), the scores (else each
    participant's latency) without phase rows, the relative summary, ``--bench-columns``'
    table (asked for), the verdicts (thresholds, the baseline comparison) and errors; the
    warnings and skipped participants counted in a line each.
    ``-qq`` (``verbose`` -2 or less) leaves out the relative summary and those counts. The
    knobs, metrics, steps and each warning's text are in the default output."""
    lines = [] if summary.ab is None else [f"  {summary.ab.line()}"]
    span = _span_line(summary)
    lines.append(f"  {span}" if span else f"  Status: {summary.status.text()}")
    scores = summary.scores
    alone = single_test(summary)
    if not summary.ran_participants:
        lines.append("  No participant ran.")
    elif alone is not None:
        lines.append(f"  {single_test_line(alone)}")
    elif scores is not None and scores.ranking:
        lines.extend(folded_table(score_rows(scores, phases=False)))
        if scores.has_ties:
            lines.append("  (n= : tied with the participant above: their intervals overlap)")
    else:
        with_ran = any(p.ran < p.planned for p in summary.participants if p.skipped is None)
        lines.extend(folded_table(_participant_rows(summary, with_ran, phases=False)))
    if verbose == -1:
        lines.extend(relative_lines(summary))
    lines.extend(column_lines(summary, columns, **(table_options or {})))
    lines.extend(threshold_lines(summary))
    lines.extend(comparison_lines(summary.comparison, summary.comparison_note))
    if verbose == -1:
        if summary.warnings:
            codes = ", ".join(dict.fromkeys(w.code for w in summary.warnings))
            count = len(warning_groups(summary.warnings))
            lines.append(
                f"  {count} warning(s) ({codes}): without -q a line per code, with -v each one"
            )
        skipped = [name_cell(p.name) for p in summary.participants if p.skipped is not None]
        if skipped:
            lines.append(f"  Skipped {', '.join(skipped)} (without -q: why)")
    lines.extend(f"  ERROR {terminal_text(error)}" for error in summary.errors)
    if summary.dashboard_url:
        lines.append(f"  View at: {terminal_text(summary.dashboard_url)}")
    return lines


# -- a benchmark's history (pytest-benchsdk history) ------------------------------------------


def _when(iso: str) -> str:
    """``2026-12-01 10:39`` of a stored ISO time."""
    return iso[:16].replace("T", " ")


def _short(run_id: str) -> str:
    return run_id if len(run_id) <= 12 else run_id[:12] + "…"


def change_point_text(series: HistorySeries, change: ChangePoint) -> str:
    """``+31.7% regressed from run 8a1b2c3d4e5f… (2026-12-01 10:41): 20.2 → 26.6 ms
    (p=0.005)``."""
    start = series.starts(change)
    return (
        f"{change_text(change.change)} {series.direction(change)} from run "
        f"{_short(start.run_id)} ({_when(start.started_at)}): "
        f"{change_of_values(change.before, change.after, series.unit)}"
        f" (p={change.p_value:.2g})"
    )


def history_lines(history: RunHistory) -> list[str]:
    """A benchmark's history: per participant a table of its statistics over the complete
    runs (oldest first; ``▲``/``▼`` where a change starts), then each series' change
    points."""
    knobs = knobs_line(history.knobs).removeprefix("Knobs: ")
    kind = "dry runs" if history.dry_run else "reporting runs"
    lines = [
        f"{terminal_text(history.benchmark_name)} ({history.benchmark_slug}): "
        f"{len(history.runs)} complete run(s), oldest first ({kind}; {knobs})"
    ]
    lines.extend("  " + line for line in _wrapped(f"Kept: {HISTORY_RULE}."))
    left_out = history.left_out_line()
    if left_out:
        lines.append(f"  {left_out}")
    if history.anchor_left_out:
        lines.append(f"  The run it ends with is not in it: {history.anchor_left_out}")
    enough = fewest_runs()
    if len(history.runs) < enough:
        lines.append(
            f"  Too few runs for change points: a change needs {enough} runs at least to stand "
            "out from shuffling at 5 %."
        )
    by_participant: dict[str, list[HistorySeries]] = {}
    for series in history.series:
        by_participant.setdefault(series.subject, []).append(series)
    for participant, group in by_participant.items():
        lines.append(f"  {name_cell(participant)}")
        header = ["run", "started"] + [f"{name_cell(s.label)} {s.statistic_label}" for s in group]
        columns: list[dict[str, str]] = []
        # Every time column in one display unit (never 1254 ns beside 0.750 µs): the one that
        # fits the largest column's median; other columns keep their own units.
        medians = {id(s): sorted(p.value for p in s.points)[len(s.points) // 2] for s in group}
        seconds = [
            medians[id(s)] * TIME_UNITS[s.unit]
            for s in group
            if s.points and s.unit is not None and is_time_unit(s.unit)
        ]
        for series in group:
            reference = medians[id(series)] if series.points else 0.0
            if seconds and series.unit is not None and is_time_unit(series.unit):
                reference = max(seconds, key=abs) / TIME_UNITS[series.unit]
            marks = {
                series.starts(c).run_id: "▲" if c.after > c.before else "▼"
                for c in series.change_points
            }
            columns.append(
                {
                    p.run_id: in_unit([p.value], series.unit, reference)
                    + (f" {marks[p.run_id]}" if p.run_id in marks else "")
                    for p in series.points
                }
            )
        rows = [header]
        for run in history.runs:
            cells = [column.get(run.run_id, "-") for column in columns]
            if any(cell != "-" for cell in cells):
                rows.append([_short(run.run_id), _when(run.started_at), *cells])
        lines.extend(table(rows, indent="    "))
        quiet = [f"{name_cell(s.label)} {s.statistic_label}" for s in group if not s.change_points]
        found = [(s, c) for s in group for c in s.change_points]
        if found:
            lines.append("    Change points:")
            for series, change in found:
                lines.extend(
                    "    " + line
                    for line in _wrapped(
                        f"  {name_cell(series.label)} {series.statistic_label}: "
                        f"{change_point_text(series, change)}"
                    )
                )
        if quiet and len(history.runs) >= enough:
            lines.extend("    " + line for line in _wrapped(f"No change point: {', '.join(quiet)}"))
    return lines
