"""Between-run noise: how much a comparison row's statistic moves from one complete run to
the next, read from the earlier runs' values (the history), and which noise a verdict rests on.

Part of :mod:`pytest_benchsdk._analysis.baseline` (which re-exports every name in
``__all__``).
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from pytest_benchsdk._base.numbers import change_text, significant

__all__ = [
    "HISTORY_RUNS",
    "MIN_HISTORY_RUNS",
    "NOISE_COUNT",
    "NOISE_HISTORY",
    "NOISE_PAIRED",
    "NOISE_WITHIN_RUN",
    "TOO_NOISY_BAND",
    "TOO_NOISY_FACTOR",
    "BetweenRunNoise",
    "HistoryKey",
    "between_run_noise",
    "history_key",
]

#: Earlier complete runs a row's statistic needs before their spread counts.
MIN_HISTORY_RUNS: Final = 3
#: The between-run noise is estimated from at most this many of the latest earlier runs.
HISTORY_RUNS: Final = 30
#: What a row's verdict rests on: the samples' own spread, or the earlier runs' spread.
NOISE_WITHIN_RUN: Final = "within-run"
NOISE_HISTORY: Final = "history"
#: The noise of an A/B comparison: the spread of the rounds' pairs.
NOISE_PAIRED: Final = "paired"
#: A count's row (``instructions``): its noise is the counts' own spread within each run.
NOISE_COUNT: Final = "count"
#: A history band too wide to judge anything: wider than this (relative; 1.0 is ×2, the history
#: cannot tell a doubling from its own movement) **and** than :data:`TOO_NOISY_FACTOR` times the
#: within-run interval's reach. Such a row is judged within the run and says so.
TOO_NOISY_BAND: Final = 1.0
TOO_NOISY_FACTOR: Final = 10.0
# The median of |N(0, 1)|: the median absolute value of a normal deviate is 0.6745 σ.
_MEDIAN_ABS_NORMAL: Final = 0.6744897501960817

#: A row of the comparison: ``(participant, metric, statistic)``, and the phase after them for
#: a phase's row (:func:`history_key`).
HistoryKey = tuple[str, ...]


def history_key(
    participant: str, metric: str, statistic: str, phase: str | None = None
) -> HistoryKey:
    """The key of a row's values in a history: a phase's rows have their own."""
    key = (participant, metric, statistic)
    return key if phase is None else (*key, phase)


@attrs.frozen
class BetweenRunNoise:
    """How much a statistic moves from one complete run to the next, from ``runs`` earlier
    runs (oldest first): ``typical`` is the median absolute change between consecutive runs
    (as a ratio: ``0.05`` for 5 %), ``band`` the change a new run must exceed to stand out
    from them, either way (``+band`` up, ``÷(1 + band)`` down; see
    :func:`between_run_noise`)."""

    runs: int
    typical: float
    band: float
    #: Earlier runs left out of the noise: judged changed (regressed/improved) for this row
    #: in their own comparison, and before the row's last change point.
    changed: int = 0
    before_change: int = 0
    #: The largest change between two consecutive runs, either way (as a ratio: ``1.44`` for
    #: ×2.44 up or down), what the runs did rather than what a band allows; None in rows
    #: stored before it was kept.
    largest: float | None = None

    def moved_text(self) -> str:
        """How far the runs moved from one to the next, either way: ``12.0%``, ``×2.44``
        beyond a doubling (the band's figures past ×2 say little: ``up to +6372×``)."""
        if self.largest is None:
            return "unknown"
        if self.largest > 1:
            return f"×{significant(1 + self.largest)}"
        return change_text(self.largest).lstrip("+")

    def left_out_text(self) -> str | None:
        """``2 judged changed, 3 before a change point left out`` (None: nothing left out)."""
        parts = []
        if self.changed:
            parts.append(f"{self.changed} judged changed")
        if self.before_change:
            parts.append(f"{self.before_change} before a change point")
        return f"{', '.join(parts)} left out" if parts else None

    def beaten_by(self, change: float) -> bool:
        """``change`` (relative) is outside the band: ``1 + change`` beyond ``1 + band`` or
        below ``1 / (1 + band)``."""
        if change <= -1:
            return True
        return abs(math.log1p(change)) > math.log1p(self.band)

    def to_json(self) -> dict[str, Any]:
        return {
            "runs": self.runs,
            "typical": self.typical,
            "band": self.band,
            "leftOutChanged": self.changed,
            "leftOutBeforeChange": self.before_change,
            "largest": self.largest,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BetweenRunNoise:
        return cls(
            int(data["runs"]),
            float(data["typical"]),
            float(data["band"]),
            int(data.get("leftOutChanged", 0)),
            int(data.get("leftOutBeforeChange", 0)),
            None if data.get("largest") is None else float(data["largest"]),
        )


def between_run_noise(
    values: Sequence[float], alpha: float = 0.05, rows: int = 1
) -> BetweenRunNoise | None:
    """The between-run noise of a statistic from its values in earlier runs, oldest first
    (None with fewer than :data:`MIN_HISTORY_RUNS` values, or a value that is not > 0).

    The changes between consecutive runs, as log ratios, are what a comparison of the current
    run with its baseline faces. The band is the larger of

    * ``t(1 - alpha/(2 · rows), k) · m / 0.6745`` with ``m`` the **median** of the ``k``
      absolute changes: a standard deviation read off the median (``0.6745 σ`` for normal
      noise), which an outlier run hardly moves. Student's t with ``k`` degrees of freedom
      instead of the normal quantile, because a σ read off a few changes is itself uncertain
      (3 earlier runs give 2 changes): 8.9 σ from 3 runs, 3.0 σ from 11, 2.7 σ from 31 at
      ``rows = 4``; the normal band would fail about one unchanged session in four with a
      short history. A session fails when *any* of its ``rows`` regressed, so the quantile is
      Bonferroni's for the session (``alpha / rows``): an unchanged session, not each row,
      fails at most ``alpha`` of the time under normal noise;
    * the **second-largest** absolute change: machine noise is heavy-tailed and comes in
      bursts (a burst of load lifts one run's p95 tenfold, and the next run falls back: two
      large changes), which a band drawn from the typical change would call regressions; the
      largest change but one covers the bursts seen so far, while a single step (a regression
      since, kept in the history) counts once and does not widen the band, so a regression
      stays one until the baseline moves.
    """
    if len(values) < MIN_HISTORY_RUNS or not all(math.isfinite(v) and v > 0 for v in values):
        return None
    logs = [math.log(v) for v in values]
    changes = sorted(abs(b - a) for a, b in itertools.pairwise(logs))
    typical = statistics.median(changes)
    if rows < 1:
        raise ValueError(f"rows must be at least 1 (got {rows})")
    from scipy import stats  # lazily: scipy is imported only when a comparison runs

    z = float(stats.t.ppf(1 - alpha / (2 * rows), df=len(changes)))
    band = max(z * typical / _MEDIAN_ABS_NORMAL, changes[-2])
    return BetweenRunNoise(
        len(values), math.expm1(typical), math.expm1(band), largest=math.expm1(changes[-1])
    )
