"""Terminal text of the session: the ``-v`` result lines; each run's header and the
``benchmarks`` section at the end are the session's (:mod:`pytest_benchsdk._session`, rendered by
:mod:`pytest_benchsdk._views.text` from each run's summary), re-exported here."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from typing import Any

from pytest_benchsdk._analysis.baseline import per_call_keys_of
from pytest_benchsdk._analysis.stats import finite_samples
from pytest_benchsdk._base.numbers import quantity
from pytest_benchsdk._engine.rounds import TIME_KEY
from pytest_benchsdk._session import run_header_lines, section_lines
from pytest_benchsdk._views.escape import terminal_text
from pytest_benchsdk.records import TaskRecord

__all__ = [
    "run_header_lines",
    "section_lines",
    "verbose_detail",
]


def verbose_detail(record: Mapping[str, Any]) -> str:
    """The one figure after ``PASSED`` in ``-v`` lines, from a record's wire JSON: a
    benchmarked test's median time per call over its rounds (``time_ms median 6.75 µs``), a
    record of calibrated steps only their time per call (``slugify4 3.11 µs``), else the
    iteration's latency (``latency 23.1 ms``). The record itself (every measured key) is in
    the store and ``--bench-json``, never on the line: a test's rounds run to thousands."""
    data = record.get("data")
    data = data if isinstance(data, Mapping) else {}
    timed = data.get(TIME_KEY)
    rounds = finite_samples(list(timed)) if isinstance(timed, list) else []
    if rounds:
        return terminal_text(f"{TIME_KEY} median {quantity(statistics.median(rounds), 'ms')}")
    try:
        per_call = per_call_keys_of(TaskRecord.from_wire(record))
    except (KeyError, TypeError, ValueError):
        per_call = None
    if per_call:
        figures = ", ".join(
            f"{key} {quantity(statistics.median(finite_samples([data[key]])), 'ms')}"
            for key in per_call
        )
        return terminal_text(figures)
    latency = record.get("latencyMs")
    if isinstance(latency, (int, float)) and math.isfinite(latency):
        return f"latency {quantity(float(latency), 'ms')}"
    return ""
