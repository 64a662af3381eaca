"""The comparison of a run with its baseline: per participant (× phase) × metric ×
statistic a row (:class:`MetricComparison`) with the within-run comparison, the between-run
noise and the verdict they give together, and the whole (:class:`BaselineComparison`) with
the setup differences and the ``--bench-compare-fail`` rules' verdicts.

Part of :mod:`pytest_benchsdk._analysis.baseline` (which re-exports every name in
``__all__``); the noise, the metrics, the A/B pairing and the rules are its sibling modules.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, Final

import attrs

from pytest_benchsdk._analysis.baseline.metrics import (
    COUNT_METRICS,
    CPU_METRIC,
    ComparedMetric,
    check_compare_on,
    compared_metrics,
    measured_keys,
    per_call_keys,
    record_phase,
    samples_of,
)
from pytest_benchsdk._analysis.baseline.noise import (
    HISTORY_RUNS,
    MIN_HISTORY_RUNS,
    NOISE_COUNT,
    NOISE_HISTORY,
    NOISE_PAIRED,
    NOISE_WITHIN_RUN,
    TOO_NOISY_BAND,
    TOO_NOISY_FACTOR,
    BetweenRunNoise,
    HistoryKey,
    between_run_noise,
    history_key,
)
from pytest_benchsdk._analysis.baseline.pairing import paired_samples
from pytest_benchsdk._analysis.baseline.rules import CompareRule, RuleVerdict, judge_rules
from pytest_benchsdk._analysis.compare import (
    Comparison,
    Statistic,
    compare_counts,
    compare_paired,
    compare_samples,
)
from pytest_benchsdk._analysis.scoring import ScoringSpec
from pytest_benchsdk._base.defaults import DEFAULT_COUNT_THRESHOLD, DEFAULT_NOISE_THRESHOLD
from pytest_benchsdk._base.numbers import change_of_values, change_text, phase_subject
from pytest_benchsdk._base.percentiles import statistic_label
from pytest_benchsdk.records import TaskRecord

__all__ = [
    "COMPARED_STATISTICS",
    "TAIL_SAMPLES",
    "Baseline",
    "BaselineComparison",
    "MetricComparison",
    "compare_runs",
    "compare_with_baseline",
    "pooled_participants",
    "setup_differences",
]

#: The statistics each metric is compared on.
COMPARED_STATISTICS: Final[tuple[Statistic, ...]] = ("median", "p95")
#: ... and a count (``instructions``).
COUNTS_STATISTICS: Final[tuple[Statistic, ...]] = ("median",)
#: A tail statistic is judged only with at least this many samples beyond it on each side:
#: 20 samples per side for a p95, 100 for a p99 (below that, the nearest-rank percentile is the
#: largest sample, and one slow iteration decides the verdict: a p95 of 16 samples is their
#: maximum).
TAIL_SAMPLES: Final = 1


def paired_rounds_needed(alpha: float) -> int:
    """The paired rounds a verdict needs: the fewest with which the Wilcoxon signed-rank
    test can reach ``p < alpha`` at all (its smallest two-sided p is ``2 / 2**n``: 6 rounds
    for 0.05; with 5, every row would read ``unchanged`` whatever the change)."""
    n = 1
    while 2.0 / 2**n >= alpha:
        n += 1
    return n


def _moved(history: BetweenRunNoise) -> str:
    """``moved by up to ×2.44 from one to the next`` (or, for a row stored before the runs'
    largest move was kept, ``move too much between themselves``)."""
    if history.largest is None:
        return "move too much between themselves"
    return f"moved by up to {history.moved_text()} from one to the next"


def tail_samples_needed(statistic: str) -> int:
    """The samples per side a statistic's verdict needs (1 for the median)."""
    if statistic.startswith("p") and statistic[1:].isdigit():
        beyond = 1 - int(statistic[1:]) / 100
        if beyond > 0:
            return math.ceil(TAIL_SAMPLES / beyond - 1e-9)
    return 1


@attrs.frozen
class MetricComparison:
    """One participant × metric × statistic (× ``phase``, with phases): the comparison, or why
    there is none (``note``).

    ``comparison`` is :func:`~pytest_benchsdk.compare.compare_samples`' within-run result;
    ``history`` the between-run noise of the statistic, when enough earlier runs had it. The
    row's :attr:`verdict` needs both: a within-run ``regressed``/``improved`` stands only if
    the change also exceeds the history's ``band``. :attr:`noise` says which of the two asked
    more of the change, :attr:`detectable` the smallest change the row could have confirmed,
    :attr:`reason` why an ``unchanged`` is one when its interval alone would not say so.
    """

    participant: str
    metric: str
    statistic: Statistic
    unit: str | None
    comparison: Comparison | None
    note: str | None = None
    history: BetweenRunNoise | None = None
    #: Whether the row's verdict counts (``--bench-compare-fail``, the summary); a row of a
    #: metric ``--bench-compare-on`` did not name is shown, not judged.
    judged: bool = True
    #: The phase whose samples both sides compare (None: the participant's whole run).
    phase: str | None = None
    #: The sides' samples are paired by round (an A/B session): the interval is the pairs'.
    paired: bool = False
    #: The metric is a count (``instructions``): compared on the counts' own spread with the
    #: count threshold (:func:`~pytest_benchsdk.compare.compare_counts`), no history.
    counted: bool = False

    @property
    def subject(self) -> str:
        """Who the row is about, as the views print it: ``e2b``, or ``e2b · cold``."""
        return phase_subject(self.participant, self.phase)

    @property
    def too_few(self) -> int | None:
        """The smaller side's sample count when it is too few for the statistic's verdict
        (:data:`TAIL_SAMPLES` beyond a p95 or p99 on each side), else None: such a row is
        shown, ``not judged``."""
        c = self.comparison
        if c is None or self.counted:
            return None
        n = min(c.baseline_n, c.current_n)
        return n if n < self._samples_needed else None

    @property
    def _samples_needed(self) -> int:
        needed = tail_samples_needed(self.statistic)
        if self.paired and self.comparison is not None:
            needed = max(needed, paired_rounds_needed(self.comparison.alpha))
        return needed

    @property
    def _history_too_wide(self) -> bool:
        """The history's band is too wide to judge anything: wider than
        :data:`TOO_NOISY_BAND` and than :data:`TOO_NOISY_FACTOR` times the within-run
        interval's reach (:attr:`history_too_short` or :attr:`history_too_noisy` says
        why)."""
        c = self.comparison
        if c is None or self.history is None or self.counted:
            return False
        return self.history.band > max(TOO_NOISY_BAND, TOO_NOISY_FACTOR * c.detectable)

    @property
    def history_too_short(self) -> bool:
        """The history's band is too wide to judge anything, though its runs moved from one
        to the next by no more than the run's own interval can tell (its largest move is
        within :attr:`Comparison.detectable`): the band is wide only because a few changes
        leave Student's t quantile huge (3 earlier runs: 2 changes). Such a history shows
        no drift the run cannot see: the row is judged within the run, as with fewer than
        :data:`MIN_HISTORY_RUNS` earlier runs, and says so."""
        if not self._history_too_wide:
            return False
        c, history = self.comparison, self.history
        if c is None or history is None:
            return False  # pragma: no cover - a band too wide has both
        return history.largest is not None and history.largest <= c.detectable

    @property
    def history_too_noisy(self) -> bool:
        """The history's band is too wide to judge anything and its runs moved by more than
        the run's own interval can tell: the row is shown, ``not judged``, and says so.
        Judging it within the run instead would ignore the very drift the history shows,
        which is how a session of unchanged code fails on a noisy machine."""
        return self._history_too_wide and not self.history_too_short

    @property
    def _history(self) -> BetweenRunNoise | None:
        """The history's noise when it judges the row (not when it is too noisy or too
        short)."""
        return None if self._history_too_wide else self.history

    @property
    def verdict(self) -> str | None:
        c = self.comparison
        if c is None:
            return None
        if self.too_few is not None or self.history_too_noisy:
            return "not judged"
        history = self._history
        beaten = history is None or history.beaten_by(c.change)
        return c.verdict if beaten else "unchanged"

    @property
    def verdict_label(self) -> str:
        """The verdict as the tables print it: in parentheses when it does not count
        (a metric ``--bench-compare-on`` did not name); ``not judged: 16 samples`` for a tail
        with too few samples behind it."""
        if self.too_few is not None:
            return f"not judged: {self.too_few} samples"
        if self.history_too_noisy:
            return "not judged: history too noisy"
        verdict = self.verdict or ""
        return verdict if self.judged or not verdict else f"({verdict})"

    @property
    def noise(self) -> str | None:
        """``within-run`` or ``history``: whose requirement on the change was the larger."""
        if self.comparison is None:
            return None
        if self.counted:
            return NOISE_COUNT
        history = self._history
        if history is not None and history.band > self.comparison.detectable:
            return NOISE_HISTORY
        return NOISE_PAIRED if self.paired else NOISE_WITHIN_RUN

    @property
    def noise_label(self) -> str:
        """``within-run`` or ``history, 6 runs`` (with the runs left out: ``history, 6 runs,
        2 judged changed left out``), ``within-run, history too noisy``."""
        if self.noise == NOISE_HISTORY and self.history is not None:
            left_out = self.history.left_out_text()
            return f"history, {self.history.runs} runs" + (f", {left_out}" if left_out else "")
        if self.history_too_noisy and self.too_few is None:
            return "history too noisy"
        if self.history_too_short and self.too_few is None:
            return "within-run, history too short"
        if self.noise == NOISE_PAIRED and self.comparison is not None:
            return f"paired, {self.comparison.current_n} rounds"
        if self.noise == NOISE_COUNT and self.comparison is not None:
            c = self.comparison
            if c.ci_low == c.ci_high:
                return "count, exact"
            return f"count, ±{change_text((c.ci_high - c.ci_low) / 2).lstrip('+')}"
        return self.noise or ""

    @property
    def detectable(self) -> float | None:
        """The smallest change (relative) this row could have told from noise: the within-run
        one (:attr:`Comparison.detectable`), or the history's band when that is larger."""
        c = self.comparison
        if c is None or self.too_few is not None or self.history_too_noisy:
            return None
        history = self._history
        if history is not None:
            return max(c.detectable, history.band)
        return c.detectable

    @property
    def reason(self) -> str | None:
        """Why the row is ``unchanged`` although its interval lies beyond the noise
        threshold: the Mann–Whitney U test did not pass, or the change is within what earlier
        runs show between themselves (None for every other row)."""
        c = self.comparison
        if c is None:
            return None
        # Too few pairs for the test, while the statistic itself has samples enough.
        if (
            self.too_few is not None
            and self.paired
            and self.too_few >= tail_samples_needed(self.statistic)
        ):
            return (
                f"not judged: {self.too_few} paired rounds; the signed-rank test cannot reach "
                f"p < {c.alpha:g} with fewer than {self._samples_needed} (its smallest p is "
                f"{2.0 / 2**self.too_few:.2g}): shown, not judged; more rounds judge it "
                "(min_rounds, --bench-rounds-min)"
            )
        if self.too_few is not None:
            return (
                f"not judged: {self.too_few} samples; a {self.statistic} verdict needs at least "
                f"{tail_samples_needed(self.statistic)} on each side (below that it is the largest "
                "sample, and one slow iteration would decide): shown, not judged; more "
                "iterations judge it"
            )
        history = self.history
        if self.history_too_noisy and history is not None:
            # No figure: the rows of a statistic share the line (--bench-json has the move).
            moved = (
                "moved from one to the next by more than the run itself can tell"
                if history.largest is not None
                else "move too much between themselves"
            )
            return (
                f"history too noisy: not judged (the last {history.runs} complete runs "
                f"{moved}; a band from them is wider than ×2 and would hide any change; "
                "--bench-ab=REV judges wall time on a noisy machine, --bench-instructions "
                "CPU-bound code)"
            )
        if self.history_too_short and history is not None:
            return (
                f"history too short: judged within the run (the last {history.runs} complete "
                "runs moved from one to the next by less than the run itself can tell, but a "
                f"band from {history.runs - 1} changes is wider than ×2)"
            )
        if self.verdict != "unchanged":
            return None
        if self.counted:
            return _count_reason(c)
        if c.verdict != "unchanged" and self.history is not None:
            band = self.history.band
            left_out = self.history.left_out_text()
            if band > TOO_NOISY_BAND:
                # A band past ×2 is a figure nobody can read (``up to 6372× or -100.0%``):
                # what the runs did instead.
                within = f"{_moved(self.history)}; a band from them is wider than ×2"
            else:
                within = f"up to {change_text(band)} or {change_text(1 / (1 + band) - 1)}"
            return (
                f"a change of {change_text(c.change)} is within what the last "
                f"{self.history.runs} complete runs show between themselves ({within}"
                + (f"; {left_out}" if left_out else "")
                + ")"
            )
        if c.beyond_noise and not c.significant:
            test = "the signed-rank test" if self.paired else "the Mann–Whitney U test"
            return (
                f"{test} did not pass (p = {c.p_value:.2g}, needs < "
                f"{c.alpha:g}): the samples overlap too much to call it a change"
            )
        return None

    @property
    def statistic_label(self) -> str:
        """The statistic as the views name it: ``p95 (best 5 %)`` for a higher-is-better
        metric's best tail."""
        lower = None if self.comparison is None else self.comparison.lower_is_better
        return statistic_label(self.statistic, lower)

    def line(self) -> str:
        """One line for people: participant, metric, statistic, baseline → current, change
        and its interval, verdict."""
        head = f"{self.subject} {self.metric} {self.statistic_label}"
        c = self.comparison
        if c is None:
            return f"{head}: {self.note}"
        # Both in the unit that fits the larger, three significant digits (a 152 ns median
        # is not "0").
        values = change_of_values(c.baseline_statistic, c.current_statistic, self.unit or None)
        return (
            f"{head}: {values}, "
            f"{change_text(c.change)} [{change_text(c.ci_low)}, {change_text(c.ci_high)}] "
            f"{self.verdict} ({self.noise_label})"
        )

    def to_json(self) -> dict[str, Any]:
        """The row; ``verdict``, ``noise``, ``detectable`` and ``reason`` are what the
        properties say (written for readers of the JSON, recomputed when read back)."""
        detectable = self.detectable
        return {
            "participant": self.participant,
            "phase": self.phase,
            "metric": self.metric,
            "statistic": self.statistic,
            "unit": self.unit,
            "comparison": None if self.comparison is None else self.comparison.to_json(),
            "note": self.note,
            "history": None if self.history is None else self.history.to_json(),
            "verdict": self.verdict,
            "noise": self.noise,
            "detectable": detectable if detectable is None or math.isfinite(detectable) else None,
            "reason": self.reason,
            "judged": self.judged,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MetricComparison:
        comparison = data.get("comparison")
        history = data.get("history")
        phase = data.get("phase")  # absent in rows stored before phases were compared apart
        return cls(
            str(data["participant"]),
            str(data["metric"]),
            data["statistic"],
            data.get("unit"),
            None if comparison is None else Comparison.from_json(comparison),
            data.get("note"),
            None if history is None else BetweenRunNoise.from_json(history),
            bool(data.get("judged", True)),
            phase=None if phase is None else str(phase),
            paired=data.get("noise") == NOISE_PAIRED,
            counted=data.get("noise") == NOISE_COUNT,
        )


@attrs.frozen
class BaselineComparison:
    """A run compared with its baseline: what the baseline is, the setup differences, the
    rows (participant × metric × statistic, per phase with phases), and ``history_runs``: how
    many earlier complete runs with the same setup the store held (None: none was looked up,
    e.g. without a store)."""

    baseline: str
    baseline_run_id: str | None
    warnings: tuple[str, ...]
    rows: tuple[MetricComparison, ...]
    history_runs: int | None = None
    #: ``--bench-compare-on``'s keys (empty: the default rows are all judged).
    compare_on: tuple[str, ...] = ()
    #: The rows pair the two sides' rounds (an A/B session, ``--bench-ab``), run by
    #: ``processes`` pairs of processes taking turns.
    paired: bool = False
    processes: int = 1
    #: ``--bench-compare-fail=STAT:LIMIT``'s verdicts.
    rules: tuple[RuleVerdict, ...] = ()
    #: The paired rounds are benchmarked tests', paired turn by turn (each test ran once per
    #: process pair on both sides), not a bench file's iterations.
    turns: bool = False
    #: The two sides of a round ran at the same time (``--bench-ab-mode=duet``), not one
    #: right after the other.
    duet: bool = False

    @property
    def failed_rules(self) -> tuple[RuleVerdict, ...]:
        return tuple(rule for rule in self.rules if rule.failed)

    @property
    def regressions(self) -> tuple[MetricComparison, ...]:
        """The judged rows that regressed (what ``--bench-compare-fail`` fails on)."""
        return tuple(row for row in self.rows if row.judged and row.verdict == "regressed")

    def judged_line(self) -> str | None:
        """Which metrics' verdicts count, when ``--bench-compare-on`` chose them."""
        if not self.compare_on:
            return None
        return (
            f"Judged (--bench-compare-on): {', '.join(self.compare_on)}; the other rows are "
            "shown, their verdicts do not count"
        )

    @property
    def says_noise(self) -> bool:
        """Whether :meth:`noise_line` has something to say (the history was looked up, the
        rows are paired, or some are counts)."""
        return self.history_runs is not None or self.paired or self._count_threshold is not None

    @property
    def _count_threshold(self) -> float | None:
        """The threshold of the count rows (None: no row is a count)."""
        for row in self.rows:
            if row.counted and row.comparison is not None:
                return row.comparison.noise_threshold
        return None

    def noise_line(self) -> str:
        """Where the verdicts' noise comes from, for the comparison's header."""
        threshold = self._count_threshold
        if threshold is None:
            return self._time_noise_line()
        counts = (
            "Counts (instructions): judged on their own spread within each run (none when "
            f"every count is the same) and a threshold of {change_text(threshold).lstrip('+')} "
            "(--bench-compare-count-noise); a count does not move with load, so the history's "
            "noise does not apply"
        )
        if all(row.counted for row in self.rows if row.judged):
            return f"Noise: {counts[0].lower()}{counts[1:]}"
        return f"{self._time_noise_line()}. {counts}"

    def _time_noise_line(self) -> str:
        if self.paired:
            turns = (
                f"; {self.processes} process pairs took turns, and their spread is part of "
                "the intervals"
                if self.processes > 1
                else ""
            )
            when = "at the same time" if self.duet else "one right after the other"
            if self.turns:
                return (
                    f"Noise: paired rounds (each test ran on both sides in turns, {when}, "
                    "and a turn's rounds pair in run order): what the machine did during a "
                    f"turn it did to both sides{turns}"
                )
            return (
                f"Noise: paired rounds (each iteration ran on both sides, {when}): what the "
                f"machine did to a round did it to both sides{turns}"
            )
        runs = self.history_runs or 0
        if runs > HISTORY_RUNS:
            return (
                f"Between-run noise: from the latest {HISTORY_RUNS} of {runs} earlier complete "
                "runs with the same setup"
            )
        if runs >= MIN_HISTORY_RUNS:
            return f"Between-run noise: from the {runs} earlier complete runs with the same setup"
        return (
            f"Between-run noise: unknown ({runs} earlier complete run(s) with the same setup, "
            f"{MIN_HISTORY_RUNS} needed): the verdicts rest on the within-run noise alone"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "baselineRunId": self.baseline_run_id,
            "warnings": list(self.warnings),
            "rows": [row.to_json() for row in self.rows],
            "historyRuns": self.history_runs,
            "compareOn": list(self.compare_on),
            "paired": self.paired,
            "processes": self.processes,
            "rules": [rule.to_json() for rule in self.rules],
            "pairedTurns": self.turns,
            "duet": self.duet,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BaselineComparison:
        runs = data.get("historyRuns")
        return cls(
            str(data["baseline"]),
            data.get("baselineRunId"),
            tuple(str(w) for w in data.get("warnings") or ()),
            tuple(MetricComparison.from_json(row) for row in data.get("rows") or ()),
            None if runs is None else int(runs),
            tuple(str(key) for key in data.get("compareOn") or ()),
            paired=bool(data.get("paired", False)),
            processes=int(data.get("processes", 1)),
            rules=tuple(RuleVerdict.from_json(r) for r in data.get("rules") or ()),
            turns=bool(data.get("pairedTurns", False)),
            duet=bool(data.get("duet", False)),
        )


@attrs.frozen
class Baseline:
    """The run a comparison is made against: where it came from (``label``), its records per
    participant and its setup (``{"benchmark", "knobs", "environment"}``, and ``dry_run``
    when known). ``history``: per row (:func:`history_key`) its values in the earlier
    complete runs with the current run's setup, oldest first, of which the store held
    ``history_runs`` (None: not looked up). Found by :mod:`pytest_benchsdk.results`
    (``find_baseline``)."""

    label: str
    run_id: str | None
    records: Mapping[str, Sequence[TaskRecord]]
    setup: Mapping[str, Any]
    history: Mapping[HistoryKey, Sequence[float]] | None = None
    history_runs: int | None = None
    #: Per row, the earlier runs left out of ``history`` and why (``changed``: judged
    #: regressed/improved for the row in their own comparison; ``before_change``: before the
    #: row's last change point): the counts the row's noise says.
    history_left_out: Mapping[HistoryKey, Mapping[str, int]] | None = None
    #: The baseline ran the same iterations in the same rounds as the run (an A/B session's
    #: side A): rows pair them (see :func:`compare_runs`), ``processes`` pairs of processes
    #: taking turns.
    paired: bool = False
    processes: int = 1
    #: Its records are benchmarked tests' measured in turns (see :class:`BaselineComparison`).
    turns: bool = False
    #: Both sides of a round ran at the same time (see :class:`BaselineComparison`).
    duet: bool = False
    #: Its records hold the samples' tails (False: a five-number summary, as a
    #: pytest-benchmark file saved without ``data`` keeps: its p95/p99 are not known).
    tails_known: bool = True


def compare_with_baseline(
    baseline: Baseline,
    current: Mapping[str, Sequence[TaskRecord]],
    spec: ScoringSpec | None,
    setup: Mapping[str, Any],
    noise_threshold: float = DEFAULT_NOISE_THRESHOLD,
    compare_on: Sequence[str] = (),
    rules: Sequence[CompareRule] = (),
    count_threshold: float = DEFAULT_COUNT_THRESHOLD,
) -> BaselineComparison:
    """The run (``current``: its records per participant; ``setup`` as :class:`Baseline`'s)
    compared with ``baseline``: the rows (:func:`compare_runs`, with the baseline's history)
    and the setup differences (:func:`setup_differences`), and a line for each participant
    whose phases the baseline does not split (:func:`pooled_participants`). ``compare_on``: the
    metrics whose verdicts count (:class:`CompareOnError` for one that no participant
    measured)."""
    check_compare_on(compare_on, current, spec)
    measured = measured_keys(current)
    count_changes = count_setup_differences(baseline.setup, setup)
    rows = compare_runs(
        baseline.records,
        current,
        spec,
        noise_threshold=noise_threshold,
        count_threshold=count_threshold,
        count_note=(
            "not compared: the count's setup differs (see the warnings); counts from two "
            "setups say nothing about the code"
            if count_changes
            else None
        ),
        history=baseline.history,
        history_left_out=baseline.history_left_out,
        compare_on=compare_on,
        paired=baseline.paired,
        processes=baseline.processes,
        # Both sides ran now, on the same machine: their CPU time is comparable too (not of
        # a benchmark of calibrated steps: there it is the calibration loops' CPU time).
        also=[CPU_METRIC]
        if baseline.paired and CPU_METRIC in measured and not per_call_keys(current)
        else [],
    )
    tails: tuple[str, ...] = ()
    if not baseline.tails_known:
        # A five-number summary's "p95" would be its maximum: not compared at all.
        rows = tuple(row for row in rows if row.statistic not in ("p95", "p99"))
        tails = (
            "the baseline kept no samples (min/q1/median/q3/max only: saved without "
            "--benchmark-save-data): its p95 and p99 are not known, so they are not compared",
        )
    pooled = pooled_participants(baseline.records, current)
    notes = tails + (
        (
            f"the baseline's records of {', '.join(pooled)} carry no phases (stored before "
            "phases were recorded, or by another tool): compared over all phases together",
        )
        if pooled
        else ()
    )
    return BaselineComparison(
        baseline.label,
        baseline.run_id,
        (*setup_differences(baseline.setup, setup), *notes),
        rows,
        baseline.history_runs,
        tuple(compare_on),
        paired=baseline.paired,
        processes=baseline.processes,
        rules=judge_rules(rules, baseline.records, current, spec) if rules else (),
        turns=baseline.turns,
        duet=baseline.duet,
    )


def _phases(records: Sequence[TaskRecord]) -> list[str]:
    """The records' phases in first-seen order; empty with fewer than two (one phase is the
    whole run)."""
    phases = [p for p in dict.fromkeys(record_phase(r) for r in records) if p is not None]
    return phases if len(phases) > 1 else []


def pooled_participants(
    baseline: Mapping[str, Sequence[TaskRecord]], current: Mapping[str, Sequence[TaskRecord]]
) -> list[str]:
    """The participants whose current records have phases while their baseline records have
    none: :func:`compare_runs` compares them over all phases together."""
    return [
        name
        for name, records in current.items()
        if name in baseline and _phases(records) and not _phases(baseline[name])
    ]


def compare_runs(
    baseline: Mapping[str, Sequence[TaskRecord]],
    current: Mapping[str, Sequence[TaskRecord]],
    spec: ScoringSpec | None,
    *,
    noise_threshold: float = DEFAULT_NOISE_THRESHOLD,
    alpha: float = 0.05,
    seed: int = 0,
    history: Mapping[HistoryKey, Sequence[float]] | None = None,
    history_left_out: Mapping[HistoryKey, Mapping[str, int]] | None = None,
    compare_on: Sequence[str] = (),
    paired: bool = False,
    also: Sequence[str] = (),
    processes: int = 1,
    count_threshold: float = DEFAULT_COUNT_THRESHOLD,
    count_note: str | None = None,
) -> tuple[MetricComparison, ...]:
    """Rows for every participant of ``current`` (in its order) × compared metric × statistic;
    with phases (two or more in the current records), per participant × phase × metric ×
    statistic, each side's records of that phase (a baseline whose records carry no phases:
    one pooled row per metric × statistic, see :func:`pooled_participants`). A participant
    missing from the baseline, or a side without samples, gets a row with a ``note`` instead
    of a comparison. ``history`` gives per row (:func:`history_key`) the statistic in earlier
    complete runs, oldest first (:func:`between_run_noise` of it goes into the row), and
    ``history_left_out`` per row the earlier runs left out of it and why (the row's noise says so).
    ``compare_on``: the metrics whose rows are judged (empty: every row); see
    :func:`compared_metrics`. ``paired``: the two sides ran the same iterations in the same
    rounds (an A/B session): each row pairs the rounds (:func:`~.pairing.paired_samples`: a bench
    file's iterations by task index, a benchmarked test's rounds turn by turn) for
    :func:`~pytest_benchsdk.compare.compare_paired`, keeping the rounds where both sides
    have a sample; ``processes``: how many process pairs took turns (bench-file round ``i``
    ran in pair ``i % processes``, a test's turn ``t`` in pair ``t``; their spread is part
    of the intervals). ``also``: more metrics to show
    rows for (an A/B session's ``cpu_ms``), judged only when ``compare_on`` names them.
    A count (``instructions``) is compared with :func:`~pytest_benchsdk.compare.compare_counts`
    and ``count_threshold``, paired or not, and never with the history's noise: a count does
    not move with the load the history's spread measures. ``count_note``: the counts are not
    comparable (their setups differ): each count's row carries it instead of a comparison."""
    per_call = per_call_keys(current)
    default = {m.key for m in compared_metrics(spec, per_call=per_call)}
    metrics = compared_metrics(spec, [*compare_on, *also], per_call)
    judged = {
        m.key for m in metrics if m.key in compare_on or (not compare_on and m.key in default)
    }
    # (participant, phase, baseline's records or None, current's records)
    parts: list[tuple[str, str | None, Sequence[TaskRecord] | None, Sequence[TaskRecord]]] = []
    for participant, records in current.items():
        before = baseline.get(participant)
        phases = _phases(records)
        if before is not None and phases and not _phases(before):
            phases = []  # nothing to split the baseline by: pooled against pooled
        if not phases:
            parts.append((participant, None, before, records))
            continue
        for name in phases:
            parts.append(
                (
                    participant,
                    name,
                    None if before is None else [r for r in before if record_phase(r) == name],
                    [r for r in records if record_phase(r) == name],
                )
            )
    rows: list[MetricComparison] = []
    # Every judged row can fail the session: the history's band holds for all of them together.
    compared = sum(part[2] is not None for part in parts)
    compared *= len(judged - COUNT_METRICS) * len(COMPARED_STATISTICS)  # (counts: no history)
    for participant, phase, then_records, now_records in parts:
        if then_records is None:
            rows.extend(
                MetricComparison(
                    participant,
                    m.key,
                    s,
                    m.unit,
                    None,
                    "not in the baseline run",
                    judged=m.key in judged,
                    phase=phase,
                )
                for m in metrics
                for s in COMPARED_STATISTICS
            )
            continue
        clusters: dict[str, list[int]] = {}
        if paired:
            now, then, clusters = paired_samples(
                now_records, then_records, metrics, spec, processes
            )
        else:
            now = samples_of(now_records, metrics, spec)
            then = samples_of(then_records, metrics, spec)
        for metric in metrics:
            counted = metric.key in COUNT_METRICS
            # A count has no tail to compare: its p95 is its coldest iteration's.
            for statistic in COUNTS_STATISTICS if counted else COMPARED_STATISTICS:
                options: dict[str, Any] = (
                    {"counted": True, "noise_threshold": count_threshold}
                    if counted
                    else {
                        "paired": paired,
                        "clusters": clusters.get(metric.key) if paired and processes > 1 else None,
                        "noise_threshold": noise_threshold,
                        "seed": seed,
                    }
                )
                row = (
                    MetricComparison(
                        participant, metric.key, statistic, metric.unit, None, count_note
                    )
                    if counted and count_note is not None
                    else _compare_one(
                        participant,
                        metric,
                        statistic,
                        then.get(metric.key, []),
                        now.get(metric.key, []),
                        alpha=alpha,
                        **options,
                    )
                )
                row = attrs.evolve(row, phase=phase, paired=paired and not counted, counted=counted)
                if not counted:  # (a count's noise is its own spread: no history)
                    key = history_key(participant, metric.key, statistic, phase)
                    past = (history or {}).get(key, ())
                    noise = between_run_noise(list(past)[-HISTORY_RUNS:], alpha, max(compared, 1))
                    if row.comparison is not None and noise is not None:
                        left_out = (history_left_out or {}).get(key, {})
                        noise = attrs.evolve(
                            noise,
                            changed=int(left_out.get("changed", 0)),
                            before_change=int(left_out.get("before_change", 0)),
                        )
                        row = attrs.evolve(row, history=noise)
                if metric.key not in judged:
                    row = attrs.evolve(row, judged=False)
                rows.append(row)
    return tuple(rows)


def _compare_one(
    participant: str,
    metric: ComparedMetric,
    statistic: Statistic,
    then: Sequence[float],
    now: Sequence[float],
    *,
    paired: bool = False,
    clusters: Sequence[int] | None = None,
    counted: bool = False,
    **options: Any,
) -> MetricComparison:
    def row(comparison: Comparison | None, note: str | None = None) -> MetricComparison:
        return MetricComparison(participant, metric.key, statistic, metric.unit, comparison, note)

    if not then or not now:
        if paired:
            return row(None, "no round with a sample on both sides")
        side = "baseline" if not then else "current run"
        return row(None, f"no samples in the {side}")
    compare: Any = (
        compare_counts
        if counted
        else partial(compare_paired, clusters=clusters)
        if paired
        else compare_samples
    )
    try:
        return row(
            compare(
                then,
                now,
                statistic=statistic,
                lower_is_better=metric.lower_is_better,
                trim=metric.trim,
                **options,
            )
        )
    except ValueError as exc:  # e.g. a baseline statistic of 0
        return row(None, str(exc))


def _count_reason(c: Comparison) -> str:
    """Why a count's row is ``unchanged``."""
    if c.ci_low == c.ci_high == 0:
        return "the count is identical"
    threshold = change_text(c.noise_threshold).lstrip("+")
    if abs(c.change) <= c.noise_threshold:
        return (
            f"a change of {change_text(c.change)} is within the count threshold ({threshold}, "
            "--bench-compare-count-noise)"
        )
    spread = change_text((c.ci_high - c.ci_low) / 2).lstrip("+")
    return (
        f"the counts spread by ±{spread} within the runs (their median deviations): the "
        f"change of {change_text(c.change)} is not beyond {threshold} by more than that"
    )


def setup_differences(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> tuple[str, ...]:
    """What differs between two runs' setups, one line each. Each side is
    ``{"benchmark", "knobs", "environment"}`` (``environment``: the store's
    ``RunEnvironment.to_dict()`` form), and ``dry_run`` when known. Only the knobs both sides
    have are compared (a ``--bench-json`` baseline carries only some)."""
    lines: list[str] = []
    if baseline.get("benchmark") != current.get("benchmark"):
        lines.append(f"benchmark differs: {baseline.get('benchmark')} → {current.get('benchmark')}")
    old_dry, new_dry = baseline.get("dry_run"), current.get("dry_run")
    if old_dry is not None and new_dry is not None and old_dry != new_dry:
        kinds = {True: "dry run", False: "reporting run"}
        lines.append(f"dry run differs: {kinds[bool(old_dry)]} → {kinds[bool(new_dry)]}")
    old_knobs, new_knobs = baseline.get("knobs") or {}, current.get("knobs") or {}
    for key in [k for k in new_knobs if k in old_knobs]:
        if old_knobs[key] != new_knobs[key]:
            lines.append(f"knob {key} differs: {old_knobs.get(key)} → {new_knobs.get(key)}")
    old_env, new_env = baseline.get("environment") or {}, current.get("environment") or {}
    for key, label in (
        ("platform", "platform"),
        ("arch", "architecture"),
        ("machine", "machine"),
        ("cpu_count", "CPU count"),
        ("hostname", "host"),
        ("python_version", "Python"),
    ):
        old, new = old_env.get(key), new_env.get(key)
        if old is not None and new is not None and old != new:
            lines.append(f"{label} differs: {old} → {new}")
    # A count depends on its setup as much as on the code: say which part moved.
    return (*lines, *count_setup_differences(baseline, current))


def count_setup_differences(
    baseline: Mapping[str, Any], current: Mapping[str, Any]
) -> tuple[str, ...]:
    """What differs between two runs' count setups (``environment["instructions"]``: the
    valgrind, Python build, architecture, hash seed, calls, what a count leaves out), one line
    each; a part one side has and the other does not differs too (``—`` for the missing)."""
    old_env, new_env = baseline.get("environment") or {}, current.get("environment") or {}
    old_count, new_count = old_env.get("instructions") or {}, new_env.get("instructions") or {}
    if bool(old_count) != bool(new_count):
        kinds = {True: "counted", False: "not counted"}
        return (
            f"instructions {kinds[bool(old_count)]} → {kinds[bool(new_count)]} "
            "(--bench-instructions)",
        )
    return tuple(
        f"instruction count setup {key} differs: {old_count.get(key, '—')} → "
        f"{new_count.get(key, '—')}"
        for key in dict.fromkeys([*old_count, *new_count])
        if old_count.get(key) != new_count.get(key)
    )
