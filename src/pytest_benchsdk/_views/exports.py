"""Finished runs in the formats other benchmark tools read: github-action-benchmark's custom
JSON and the Bencher Metric Format.

Both render :class:`~pytest_benchsdk.results.RunSummary` objects and compute nothing: each
participant's latency and measured metrics as their median, p95 and p99, the intervals the
model holds for them (:attr:`~pytest_benchsdk.results.RunSummary.intervals`), and a scored
run's composite score with its interval. ``pytest-benchsdk export RUN --format FORMAT`` and
``--bench-export FORMAT:PATH`` write them.

* ``gab`` / ``gab-bigger``: `github-action-benchmark
  <https://github.com/benchmark-action/github-action-benchmark>`_ reads a JSON list of
  ``{name, unit, value, range?, extra?}`` with ``tool: customSmallerIsBetter`` or
  ``customBiggerIsBetter`` — one direction per file, so ``gab`` holds the entries where smaller
  is better (every time; a metric no config gives a direction counts as one) and
  ``gab-bigger`` the others (the scores, ``higher-better`` metrics). ``range`` is text there
  (the action shows it in its tooltips): the interval, ``95% CI low–high``.
* ``bmf``: `Bencher <https://bencher.dev/docs/reference/bencher-metric-format/>`_ reads
  ``{benchmark: {measure: {value, lower_value?, upper_value?}}}``; one benchmark per
  participant (``slug/participant``), one measure per metric and statistic
  (``latency_ms median``), the interval as ``lower_value``/``upper_value``.

With phases, each participant × phase is exported too, after the participant's whole run, its
phase in the name: ``slug/e2b · cold/latency_ms median`` (gab), ``slug/e2b · cold`` (bmf).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Final

import attrs

from pytest_benchsdk._base.js import js_json
from pytest_benchsdk._base.numbers import significant
from pytest_benchsdk._views.pytest_benchmark import PYTEST_BENCHMARK, pytest_benchmark_document
from pytest_benchsdk.results import (
    LATENCY,
    ParticipantSummary,
    PhaseSummary,
    RunSummary,
    SampleStats,
)

__all__ = [
    "EXPORT_FORMATS",
    "EXPORT_STATISTICS",
    "ExportEntry",
    "bmf_document",
    "export_entries",
    "export_text",
    "gab_entries",
]

#: The formats, as ``--format`` and ``--bench-export`` name them (``pytest-benchmark``:
#: :mod:`pytest_benchsdk._views.pytest_benchmark`).
EXPORT_FORMATS: Final = ("gab", "gab-bigger", "bmf", PYTEST_BENCHMARK)
#: The statistics each metric is exported as.
EXPORT_STATISTICS: Final = ("median", "p95", "p99")
#: The iteration's CPU time (the executor's ``cpu_ms``).
_CPU: Final = "cpu_ms"
#: The composite score's measure (bigger is better).
SCORE: Final = "score"


@attrs.frozen
class ExportEntry:
    """One exported number: a participant's ``statistic`` of ``metric`` in ``unit``, its
    interval (``low``/``high`` at ``level``, when the model has one) and direction."""

    benchmark: str
    participant: str
    metric: str
    statistic: str
    unit: str
    value: float
    smaller_is_better: bool
    count: int
    low: float | None = None
    high: float | None = None
    level: float | None = None
    run_id: str | None = None
    #: The phase (None: the participant's whole run).
    phase: str | None = None

    @property
    def subject(self) -> str:
        """The participant, with its phase: ``e2b``, ``e2b · cold``."""
        return self.participant if self.phase is None else f"{self.participant} · {self.phase}"


def _metrics(
    p: ParticipantSummary | PhaseSummary, per_call: bool = False
) -> Iterator[tuple[str, str, bool, SampleStats]]:
    """``(key, unit, smaller is better, stats)`` of the latency and each measured metric (the
    latency and the iteration's CPU time left out of a benchmark judged per call: there they
    measure the calibration loops' length)."""
    if p.latency is not None and not per_call:
        yield LATENCY, "ms", True, p.latency
    for m in p.metrics:
        if m.stats is not None and not (per_call and m.key == _CPU):
            yield m.key, m.unit, m.lower_is_better is not False, m.stats


def export_entries(summaries: Iterable[RunSummary]) -> list[ExportEntry]:
    """Every exported number of the runs: per participant that passed an iteration, the
    latency (not of a benchmark of calibrated steps, :attr:`RunSummary.per_call`: their
    per-call metrics are the figures) and each metric as median, p95 and p99 (then the same
    of each of its phases, with phases), then the composite score of a scored run.
    Non-finite numbers (a metric with no finite sample) are left out."""
    out: list[ExportEntry] = []
    for summary in summaries:
        slug = summary.benchmark_slug
        run_id = summary.local_run_id
        for participant in summary.ran_participants:
            parts: list[tuple[str | None, ParticipantSummary | PhaseSummary]] = [
                (None, participant),
                *((ph.phase, ph) for ph in participant.phases),
            ]
            for phase, p in parts:
                for key, unit, smaller, stats in _metrics(p, bool(summary.per_call)):
                    for statistic in EXPORT_STATISTICS:
                        value = stats.get(statistic)
                        if not math.isfinite(value):
                            continue
                        # The model's intervals are of the participant's whole run.
                        interval = (
                            summary.interval(participant.name, key, statistic)
                            if phase is None
                            else None
                        )
                        out.append(
                            ExportEntry(
                                benchmark=slug,
                                participant=participant.name,
                                metric=key,
                                statistic=statistic,
                                unit=unit,
                                value=value,
                                smaller_is_better=smaller,
                                count=stats.count,
                                low=None if interval is None else interval.low,
                                high=None if interval is None else interval.high,
                                level=None if interval is None else interval.level,
                                run_id=run_id,
                                phase=phase,
                            )
                        )
        out.extend(_scores(summary))
    return out


def _scores(summary: RunSummary) -> Iterator[ExportEntry]:
    table = summary.scores
    if table is None:
        return
    for entry in table.ranking:
        row = entry.row
        if entry.rank is None or row.skipped or not math.isfinite(row.composite_score):
            continue
        u = entry.uncertainty
        known = u is not None and not u.skipped and math.isfinite(u.low) and math.isfinite(u.high)
        participant = summary.participant(entry.participant)
        yield ExportEntry(
            benchmark=summary.benchmark_slug,
            participant=entry.participant,
            metric=SCORE,
            statistic="composite",
            unit="points",
            value=row.composite_score,
            smaller_is_better=False,
            count=participant.ran if participant is not None else 0,
            low=u.low if known and u is not None else None,
            high=u.high if known and u is not None else None,
            level=u.level if known and u is not None else None,
            run_id=summary.local_run_id,
        )


def _measure(entry: ExportEntry) -> str:
    return SCORE if entry.metric == SCORE else f"{entry.metric} {entry.statistic}"


def _range(entry: ExportEntry) -> str | None:
    if entry.low is None or entry.high is None or entry.level is None:
        return None
    return f"{entry.level * 100:.0f}% CI {significant(entry.low)}–{significant(entry.high)}"


def gab_entries(summaries: Iterable[RunSummary], *, bigger: bool = False) -> list[dict[str, Any]]:
    """github-action-benchmark's custom entries: those where smaller is better
    (``customSmallerIsBetter``), or with ``bigger`` the others (``customBiggerIsBetter``).
    ``name`` is ``slug/participant/measure`` (stable across runs: keys, not labels)."""
    out: list[dict[str, Any]] = []
    for entry in export_entries(summaries):
        if entry.smaller_is_better == bigger:
            continue
        item: dict[str, Any] = {
            "name": f"{entry.benchmark}/{entry.subject}/{_measure(entry)}",
            "unit": entry.unit,
            "value": entry.value,
        }
        shown = _range(entry)
        if shown is not None:
            item["range"] = shown
        extra = f"n = {entry.count}"
        if entry.run_id:
            extra += f"\nrun {entry.run_id}"
        item["extra"] = extra
        out.append(item)
    return out


def bmf_document(summaries: Iterable[RunSummary]) -> dict[str, dict[str, dict[str, float]]]:
    """The Bencher Metric Format: ``{"slug/participant": {"metric statistic": {value,
    lower_value, upper_value}}}`` (the bounds when the model has an interval)."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for entry in export_entries(summaries):
        metric: dict[str, float] = {"value": entry.value}
        if entry.low is not None and entry.high is not None:
            metric["lower_value"] = entry.low
            metric["upper_value"] = entry.high
        out.setdefault(f"{entry.benchmark}/{entry.subject}", {})[_measure(entry)] = metric
    return out


def export_text(format: str, summaries: Sequence[RunSummary]) -> str:
    """The runs in ``format`` (one of :data:`EXPORT_FORMATS`) as a JSON document."""
    if format == "bmf":
        document: Any = bmf_document(summaries)
    elif format == PYTEST_BENCHMARK:
        document = pytest_benchmark_document(summaries)
    elif format in ("gab", "gab-bigger"):
        document = gab_entries(summaries, bigger=format == "gab-bigger")
    else:
        raise ValueError(
            f"unknown export format {format!r}; expected one of {', '.join(EXPORT_FORMATS)}"
        )
    return js_json(document, indent=2) + "\n"
