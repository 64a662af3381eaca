"""Is a change real? :func:`compare_samples` compares two samples of one metric: the relative
change of a statistic (upstream's percentile rule, :mod:`~pytest_benchsdk._analysis.stats`), its
bootstrap interval (drawn by :mod:`~pytest_benchsdk._analysis.resampling`, the one resampling
engine), a Mann–Whitney U p-value and a verdict (:class:`Comparison`).

Public home: :mod:`pytest_benchsdk.compare`, which also gathers the other analyses' public
names from their homes (``uncertainty``, ``hygiene``, ``changepoints``).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Final, Literal, get_args

import attrs

from pytest_benchsdk._analysis.resampling import (
    MAX_CHUNK_CELLS,
    bootstrap,
    check_resamples,
    check_seed,
    generator,
    percentile_interval,
)
from pytest_benchsdk._analysis.stats import median_positions, percentile_index, trimmed_range
from pytest_benchsdk._base.defaults import (
    DEFAULT_COUNT_THRESHOLD,
    DEFAULT_NOISE_THRESHOLD,
    DEFAULT_RESAMPLES,
)

if TYPE_CHECKING:
    from typing import TypeAlias

    import numpy as np
    import numpy.typing as npt

    #: Rows of positions into a sample (one resample a row).
    Positions: TypeAlias = npt.NDArray[np.int32] | npt.NDArray[np.intp]

__all__ = [
    "DEFAULT_RESAMPLES",
    "STATISTICS",
    "VERDICTS",
    "Comparison",
    "Statistic",
    "Verdict",
    "compare_counts",
    "compare_paired",
    "compare_samples",
    "detectable_change",
]

Statistic = Literal["median", "p95", "p99", "mean"]
"""What :func:`compare_samples` compares: upstream's median, nearest-rank p95/p99, or the mean."""

Verdict = Literal["regressed", "improved", "unchanged"]
"""A comparison's conclusion, from the current run's point of view."""

STATISTICS: Final[tuple[Statistic, ...]] = get_args(Statistic)
VERDICTS: Final[tuple[Verdict, ...]] = get_args(Verdict)

#: Bootstrap resamples per side when ``resamples=None``. With 2,000 the interval's bounds vary
#: between seeds by a standard deviation of about 2 % of its width (measured on lognormal
#: samples, n = 50 and 1,000), and one comparison of 1,000 samples per side takes about 10 ms.


@attrs.frozen
class Comparison:
    """The result of :func:`compare_samples`.

    ``change`` is ``stat(current) / stat(baseline) - 1`` (positive: the current statistic is
    larger); ``ci_low``/``ci_high`` bound it at level ``1 - alpha``; ``p_value`` is the two-sided
    Mann–Whitney U p-value of the samples; ``verdict`` is ``'regressed'``, ``'improved'`` or
    ``'unchanged'`` (see :func:`compare_samples`). ``detectable`` is the smallest change these
    samples can tell from noise: the noise threshold plus the interval's half-width (a change
    must put the whole interval beyond the threshold, and the interval is about as wide
    wherever it lies), so an ``unchanged`` verdict says "no change of ``detectable`` or more".
    """

    statistic: Statistic
    lower_is_better: bool
    baseline_statistic: float
    current_statistic: float
    baseline_n: int
    current_n: int
    change: float
    ci_low: float
    ci_high: float
    p_value: float
    verdict: Verdict
    alpha: float
    noise_threshold: float
    resamples: int
    seed: int
    detectable: float = attrs.field()

    @detectable.default
    def _detectable(self) -> float:
        return detectable_change(self.ci_low, self.ci_high, self.noise_threshold)

    @property
    def significant(self) -> bool:
        """The Mann–Whitney U test passed (``p_value < alpha``)."""
        return self.p_value < self.alpha

    @property
    def beyond_noise(self) -> bool:
        """The whole interval lies beyond the noise threshold, on either side."""
        return self.ci_low > self.noise_threshold or self.ci_high < -self.noise_threshold

    def to_json(self) -> dict[str, Any]:
        """A JSON object with camelCase keys (as ``--bench-json``); a non-finite bound (a
        resampled baseline statistic of 0) is written ``None``, as ``JSON.stringify`` would."""
        return {
            "statistic": self.statistic,
            "lowerIsBetter": self.lower_is_better,
            "baselineStatistic": self.baseline_statistic,
            "currentStatistic": self.current_statistic,
            "baselineN": self.baseline_n,
            "currentN": self.current_n,
            "change": self.change,
            "ciLow": _json_number(self.ci_low),
            "ciHigh": _json_number(self.ci_high),
            "pValue": self.p_value,
            "verdict": self.verdict,
            "alpha": self.alpha,
            "noiseThreshold": self.noise_threshold,
            "resamples": self.resamples,
            "seed": self.seed,
            "detectable": _json_number(self.detectable),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Comparison:
        """Read back :meth:`to_json` (a bound written as ``None`` is ±inf, as resampling made
        it)."""
        change = float(data["change"])
        # ``detectable`` is not read: it follows from the interval (a bound written None is
        # infinite).
        return cls(
            statistic=data["statistic"],
            lower_is_better=bool(data["lowerIsBetter"]),
            baseline_statistic=float(data["baselineStatistic"]),
            current_statistic=float(data["currentStatistic"]),
            baseline_n=int(data["baselineN"]),
            current_n=int(data["currentN"]),
            change=change,
            ci_low=-math.inf if data["ciLow"] is None else float(data["ciLow"]),
            ci_high=math.inf if data["ciHigh"] is None else float(data["ciHigh"]),
            p_value=float(data["pValue"]),
            verdict=data["verdict"],
            alpha=float(data["alpha"]),
            noise_threshold=float(data["noiseThreshold"]),
            resamples=int(data["resamples"]),
            seed=int(data["seed"]),
        )


def detectable_change(ci_low: float, ci_high: float, noise_threshold: float) -> float:
    """The smallest change an interval ``[ci_low, ci_high]`` lets a comparison confirm:
    ``noise_threshold`` plus its half-width (infinite for an unbounded interval)."""
    if not (math.isfinite(ci_low) and math.isfinite(ci_high)):
        return math.inf
    return noise_threshold + (ci_high - ci_low) / 2


def compare_counts(
    baseline: Iterable[float],
    current: Iterable[float],
    *,
    statistic: Statistic = "median",
    lower_is_better: bool = True,
    noise_threshold: float = DEFAULT_COUNT_THRESHOLD,
    alpha: float = 0.05,
    trim: float = 0.0,
) -> Comparison:
    """Compare two runs' counts of one metric (``instructions``): counts do not move with load,
    so their noise is their own spread within each run (none when every count is the same),
    not a resampling interval or the wall-time history.

    * ``change`` as :func:`compare_samples` (``stat(current) / stat(baseline) - 1``; ``trim``
      is ignored: the statistics are the samples' own).
    * Each side's spread is its median absolute deviation relative to its median: 0 when the
      counts are identical, and one odd count (a first iteration's colder caches, say) does
      not widen it. ``ci_low``/``ci_high`` are ``change`` minus and plus the two sides'
      spreads together.
    * ``p_value`` is 0 when that interval excludes no change and 1 when it includes it; no
      test is run (``resamples`` is 0).
    * ``verdict``: ``regressed`` when ``ci_low > noise_threshold``, ``improved`` when ``ci_high
      < -noise_threshold`` (mirrored for ``lower_is_better=False``), else ``unchanged``.

    Raises ``ValueError`` as :func:`compare_samples` does (an empty side, a value that is not a
    finite number, a baseline statistic of 0, a negative threshold).
    """
    import numpy as np

    _checked_options(statistic, lower_is_better, alpha, noise_threshold, 1, 0, 0.0)
    before = _sorted_samples(baseline, "baseline")
    after = _sorted_samples(current, "current")
    base = float(_statistic_of_sorted(before, statistic, None)[0])
    now = float(_statistic_of_sorted(after, statistic, None)[0])
    if base == 0:
        raise ValueError(
            f"the baseline's {statistic} is 0, so a relative change is undefined; compare a "
            "metric whose baseline is not 0"
        )
    change = (now - base) / abs(base)

    def spread(values: npt.NDArray[np.float64]) -> float:
        middle = float(np.median(values))
        deviation = float(np.median(np.abs(values - middle)))
        return 0.0 if deviation == 0 else deviation / abs(middle) if middle else math.inf

    width = spread(before) + spread(after)
    low, high = change - width, change + width
    if lower_is_better:
        verdict: Verdict = (
            "regressed"
            if low > noise_threshold
            else "improved"
            if high < -noise_threshold
            else "unchanged"
        )
    else:
        verdict = (
            "improved"
            if low > noise_threshold
            else "regressed"
            if high < -noise_threshold
            else "unchanged"
        )
    return Comparison(
        statistic=statistic,
        lower_is_better=lower_is_better,
        baseline_statistic=base,
        current_statistic=now,
        baseline_n=int(before.size),
        current_n=int(after.size),
        change=change,
        ci_low=low,
        ci_high=high,
        p_value=0.0 if low > 0 or high < 0 else 1.0,
        verdict=verdict,
        alpha=alpha,
        noise_threshold=noise_threshold,
        resamples=0,
        seed=0,
    )


def _json_number(value: float) -> float | None:
    return value if math.isfinite(value) else None


def compare_samples(
    baseline: Iterable[float],
    current: Iterable[float],
    *,
    statistic: Statistic = "median",
    lower_is_better: bool = True,
    noise_threshold: float = DEFAULT_NOISE_THRESHOLD,
    alpha: float = 0.05,
    resamples: int | None = None,
    seed: int = 0,
    trim: float = 0.0,
) -> Comparison:
    """Compare a metric's ``current`` samples with its ``baseline`` samples.

    * ``statistic``: ``'median'``, ``'p95'``, ``'p99'`` (upstream's nearest-rank rule, no
      interpolation) or ``'mean'``. ``trim`` drops ``floor(n × trim)`` samples from each end
      first, exactly as :func:`~pytest_benchsdk.scoring.score` does (``0.05`` is scoring's
      default, and what the summary tables and ``--bench-compare`` use; the default ``0`` keeps
      every sample); the mean is never trimmed. Each resample is trimmed the same way.
    * ``change = stat(current) / stat(baseline) - 1``. For a negative baseline statistic it is
      ``(current - baseline) / |baseline|``, so a positive change still means "larger".
    * ``ci_low``, ``ci_high``: percentile bootstrap interval of the change at level
      ``1 - alpha``: each side is resampled with replacement ``resamples`` times (default
      :data:`DEFAULT_RESAMPLES`), independently, from a numpy ``Generator`` seeded with
      ``seed``, so the result is the same for the same inputs and seed.
    * ``p_value``: two-sided Mann–Whitney U test (``scipy.stats.mannwhitneyu``); 1.0 when every
      value is the same.
    * ``verdict``, for ``lower_is_better=True``: ``'regressed'`` when ``p_value < alpha`` and
      ``ci_low > noise_threshold``; ``'improved'`` when ``p_value < alpha`` and
      ``ci_high < -noise_threshold``; else ``'unchanged'``. Mirrored for
      ``lower_is_better=False`` (a larger statistic is an improvement). A change must thus be
      both significant and, with the interval's confidence, larger than the noise threshold.

    Raises ``ValueError`` for an empty side, a value that is not a finite number (NaN and ±inf
    are rejected rather than dropped, so that ``n`` is always what was passed: filter with
    :func:`math.isfinite` first if they are expected), an unknown statistic, a non-bool
    ``lower_is_better``, ``alpha`` outside (0, 1), a negative or non-finite
    ``noise_threshold``, ``resamples < 1``, a negative ``seed``, or a baseline statistic of 0
    (a relative change is undefined).
    """
    resamples = _checked_options(
        statistic, lower_is_better, alpha, noise_threshold, resamples, seed, trim
    )

    import numpy as np
    from scipy import stats

    baseline_sorted = _sorted_samples(baseline, "baseline")
    current_sorted = _sorted_samples(current, "current")
    baseline_stat = float(_statistic_of_sorted(baseline_sorted, statistic, None, trim)[0])
    current_stat = float(_statistic_of_sorted(current_sorted, statistic, None, trim)[0])
    if baseline_stat == 0:
        raise ValueError(
            f"the baseline's {statistic} is 0, so a relative change is undefined; compare a "
            "metric whose baseline is not 0"
        )
    change = (current_stat - baseline_stat) / abs(baseline_stat)

    rng = generator(seed)
    baseline_boot = _bootstrap(baseline_sorted, statistic, resamples, rng, trim)
    current_boot = _bootstrap(current_sorted, statistic, resamples, rng, trim)
    with np.errstate(divide="ignore", invalid="ignore"):
        changes = (current_boot - baseline_boot) / np.abs(baseline_boot)
    # A resample whose baseline statistic is 0: ±inf when the current one differs, else 0/0,
    # which is no change.
    changes[np.isnan(changes)] = 0.0
    ci_low, ci_high = percentile_interval(changes, alpha / 2)

    p_value = float(
        stats.mannwhitneyu(current_sorted, baseline_sorted, alternative="two-sided").pvalue
    )
    if math.isnan(p_value):  # no variation at all: no evidence of a difference
        p_value = 1.0

    return Comparison(
        statistic=statistic,
        lower_is_better=lower_is_better,
        baseline_statistic=baseline_stat,
        current_statistic=current_stat,
        baseline_n=len(baseline_sorted),
        current_n=len(current_sorted),
        change=change,
        ci_low=ci_low,
        ci_high=ci_high,
        p_value=p_value,
        verdict=_verdict(ci_low, ci_high, p_value, alpha, noise_threshold, lower_is_better),
        alpha=alpha,
        noise_threshold=noise_threshold,
        resamples=resamples,
        seed=seed,
    )


def compare_paired(
    baseline: Iterable[float],
    current: Iterable[float],
    *,
    statistic: Statistic = "median",
    lower_is_better: bool = True,
    noise_threshold: float = DEFAULT_NOISE_THRESHOLD,
    alpha: float = 0.05,
    resamples: int | None = None,
    seed: int = 0,
    trim: float = 0.0,
    clusters: Sequence[int] | None = None,
) -> Comparison:
    """:func:`compare_samples` for **paired** samples: ``baseline[i]`` and ``current[i]`` were
    measured in the same round (an A/B session runs each iteration on both sides, one right
    after the other), so whatever moved the machine between rounds moved both.

    ``baseline_statistic`` and ``current_statistic`` are each side's statistic, as
    :func:`compare_samples` has them. ``change`` for the median is the median of the rounds'
    ratios ``current[i] / baseline[i]``, minus 1 (when every value is positive): a ratio
    within a round cancels what the machine did to both sides in that round, where the ratio
    of the two medians does not when the load changes during the run (each median then lies
    somewhere between the loaded and the idle values). For the other statistics, and for
    values that are not all positive, ``change`` is the ratio of the statistics, as in
    :func:`compare_samples`.

    The interval resamples rounds, both sides' values of a round together, and the p-value
    is the Wilcoxon signed-rank test of the rounds' differences (1.0 when every round's
    difference is 0). ``clusters`` names, per round, the pair of processes that ran it. A
    process has its own speed (its memory layout, where the interpreter's code landed: a few
    per cent, the same for every round it runs), which pairing cannot cancel; with two or more
    clusters the clusters are resampled too (each drawn with all its rounds: the cluster
    bootstrap), widened by ``sqrt(k / (k - 1))`` for ``k`` clusters (a bootstrap of few
    clusters is too narrow by that factor). The interval then spans both bootstraps'
    intervals and the p-value is the larger of the two bootstraps' (twice the share of
    resampled changes on the far side of 0): the between-process spread widens the interval,
    and a few pairs that happen to agree closely never narrow it below the rounds' own. The
    verdict follows :func:`compare_samples`' rule. Raises ``ValueError`` as
    :func:`compare_samples` does, and for sides (or clusters) of different lengths.
    """
    resamples = _checked_options(
        statistic, lower_is_better, alpha, noise_threshold, resamples, seed, trim
    )

    import numpy as np

    before = np.array(list(baseline), dtype=float)
    after = np.array(list(current), dtype=float)
    if before.shape != after.shape:
        raise ValueError(
            f"paired samples need one value per round on each side (got {before.size} "
            f"baseline and {after.size} current values)"
        )
    _sorted_samples(before, "baseline")  # the same checks: flat, not empty, finite
    _sorted_samples(after, "current")
    n = before.size
    labels = None if clusters is None else np.array(list(clusters))
    if labels is not None and labels.shape != before.shape:
        raise ValueError(f"clusters need one label per round (got {labels.size} for {n} rounds)")
    baseline_stat = _paired_statistic(before, statistic, trim)
    current_stat = _paired_statistic(after, statistic, trim)
    if baseline_stat == 0:
        raise ValueError(
            f"the baseline's {statistic} is 0, so a relative change is undefined; compare a "
            "metric whose baseline is not 0"
        )
    by_ratio = statistic == "median" and bool(np.all(before > 0)) and bool(np.all(after > 0))
    if by_ratio:
        ratios = after / before

        def changes_of(rows: Positions) -> npt.NDArray[np.float64]:
            medians: npt.NDArray[np.float64] = np.median(ratios[rows], axis=1) - 1
            return medians

    else:
        changes_of = partial(_paired_changes, before, after, statistic, trim)

    change = float(changes_of(np.arange(n)[np.newaxis, :])[0])
    rng = generator(seed)
    # The rounds resampled, both sides' values of a round together: the within-process noise.
    changes = bootstrap(rng, n, resamples, changes_of, ordered=False)
    ci_low, ci_high = percentile_interval(changes, alpha / 2)
    groups = [] if labels is None else [np.flatnonzero(labels == c) for c in np.unique(labels)]
    if len(groups) >= 2:
        clustered = _cluster_resamples(groups, resamples, rng, changes_of)
        # A bootstrap of k clusters has the spread of a variance estimate divided by k, not
        # by k - 1: widen it by that factor around the change.
        clustered = change + (clustered - change) * math.sqrt(len(groups) / (len(groups) - 1))
        low, high = percentile_interval(clustered, alpha / 2)
        # The process pairs add their spread to the rounds' and take nothing away: a bootstrap
        # of a few pairs that happened to agree closely (their medians within a per cent)
        # would otherwise be narrower than the rounds themselves allow.
        ci_low, ci_high = min(ci_low, low), max(ci_high, high)
        p_value = max(_bootstrap_p_value(changes), _bootstrap_p_value(clustered))
    elif not np.any(after - before):
        p_value = 1.0
    else:
        from scipy import stats  # a second to import: only where the test is needed

        p_value = float(stats.wilcoxon(after, before, alternative="two-sided").pvalue)
        if math.isnan(p_value):
            p_value = 1.0
    return Comparison(
        statistic=statistic,
        lower_is_better=lower_is_better,
        baseline_statistic=baseline_stat,
        current_statistic=current_stat,
        baseline_n=n,
        current_n=n,
        change=change,
        ci_low=ci_low,
        ci_high=ci_high,
        p_value=p_value,
        verdict=_verdict(ci_low, ci_high, p_value, alpha, noise_threshold, lower_is_better),
        alpha=alpha,
        noise_threshold=noise_threshold,
        resamples=resamples,
        seed=seed,
    )


def _bootstrap_p_value(changes: npt.NDArray[np.float64]) -> float:
    """Twice the share of resampled changes on the far side of 0 (at least one resample's
    share; 1.0 when every resample is 0)."""
    import numpy as np

    if not np.any(changes != 0):
        return 1.0
    beyond = min(float(np.mean(changes <= 0)), float(np.mean(changes >= 0)))
    return min(1.0, max(2 * beyond, 1 / changes.size))


def _cluster_resamples(
    groups: Sequence[npt.NDArray[np.intp]],
    resamples: int,
    rng: np.random.Generator,
    changes_of: Callable[[Positions], npt.NDArray[np.float64]],
) -> npt.NDArray[np.float64]:
    """``changes_of`` on ``resamples`` cluster resamples: as many clusters as there are, drawn
    with replacement, each with all its rounds. Resamples of one length are computed as one
    matrix (clusters of unequal sizes give a few lengths)."""
    import numpy as np

    count = len(groups)
    sizes = np.array([g.size for g in groups])
    padded = np.full((count, int(sizes.max())), -1, dtype=np.intp)
    for index, group in enumerate(groups):
        padded[index, : group.size] = group
    out = np.empty(resamples)
    chunk = max(1, MAX_CHUNK_CELLS // int(sizes.sum()))
    for start in range(0, resamples, chunk):
        rows = min(chunk, resamples - start)
        drawn = rng.integers(0, count, size=(rows, count))
        lengths = sizes[drawn].sum(axis=1)
        for length in np.unique(lengths):
            picked = np.flatnonzero(lengths == length)
            cells = padded[drawn[picked]].reshape(picked.size, -1)
            positions = cells[cells >= 0].reshape(picked.size, int(length))
            out[start + picked] = changes_of(positions)
    return out


def _paired_changes(
    before: npt.NDArray[np.float64],
    after: npt.NDArray[np.float64],
    statistic: str,
    trim: float,
    rows: Positions,
) -> npt.NDArray[np.float64]:
    """The relative change of ``statistic`` from ``before`` to ``after`` on each row of
    round positions (both sides of a round drawn together)."""
    import numpy as np

    def of_side(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        order = np.argsort(values, kind="stable")
        rank = np.empty(values.size, dtype=np.intp)
        rank[order] = np.arange(values.size)
        # Ranks of a row, sorted, pick that row's values in order from the sorted side.
        return _statistic_of_sorted(values[order], statistic, np.sort(rank[rows], axis=1), trim)

    then, now = of_side(before), of_side(after)
    with np.errstate(divide="ignore", invalid="ignore"):
        changes: npt.NDArray[np.float64] = (now - then) / np.abs(then)
    zero = then == 0
    changes[zero] = np.where(now[zero] == 0, 0.0, np.copysign(np.inf, now[zero]))
    return changes


def _paired_statistic(values: npt.NDArray[np.float64], statistic: str, trim: float) -> float:
    """``statistic`` of one side's values (the one percentile rule)."""
    import numpy as np

    rows = np.arange(values.size, dtype=np.int32)[np.newaxis, :]
    return float(_statistic_of_sorted(np.sort(values), statistic, rows, trim)[0])


def _checked_options(
    statistic: str,
    lower_is_better: object,
    alpha: float,
    noise_threshold: float,
    resamples: int | None,
    seed: int,
    trim: float,
) -> int:
    """The comparisons' options checked (``ValueError`` naming the bad one); the resamples
    to draw."""
    if statistic not in STATISTICS:
        raise ValueError(
            f"unknown statistic {statistic!r}; expected one of {', '.join(STATISTICS)}"
        )
    if not isinstance(lower_is_better, bool):
        raise ValueError(f"lower_is_better must be True or False (got {lower_is_better!r})")
    _check_real("alpha", alpha)
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, exclusive (got {alpha!r})")
    _check_real("noise_threshold", noise_threshold)
    if not (math.isfinite(noise_threshold) and noise_threshold >= 0):
        raise ValueError(
            f"noise_threshold must be a finite number >= 0, e.g. 0.02 for 2 % (got "
            f"{noise_threshold!r})"
        )
    resamples = check_resamples(resamples, DEFAULT_RESAMPLES)
    check_seed(seed)
    _check_real("trim", trim)
    if not (math.isfinite(trim) and 0 <= trim < 0.5):
        raise ValueError(f"trim must be a number in [0, 0.5), e.g. 0.05 (got {trim!r})")
    return resamples


def _check_real(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number (got {value!r})")


def _verdict(
    ci_low: float,
    ci_high: float,
    p_value: float,
    alpha: float,
    noise_threshold: float,
    lower_is_better: bool,
) -> Verdict:
    if p_value >= alpha:
        return "unchanged"
    larger = ci_low > noise_threshold
    smaller = ci_high < -noise_threshold
    if larger:
        return "regressed" if lower_is_better else "improved"
    if smaller:
        return "improved" if lower_is_better else "regressed"
    return "unchanged"


def _sorted_samples(values: Iterable[float], side: str) -> npt.NDArray[np.float64]:
    import numpy as np

    try:
        array = np.array(values if isinstance(values, np.ndarray) else list(values), dtype=float)
    except (TypeError, ValueError, OverflowError) as error:
        raise ValueError(f"{side} samples must be numbers ({error})") from None
    if array.ndim != 1:
        raise ValueError(
            f"{side} samples must be a flat sequence of numbers (got shape {array.shape})"
        )
    if array.size == 0:
        raise ValueError(f"{side} has no samples; a comparison needs at least one on each side")
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        where = ", ".join(f"[{i}]={float(array[i])!r}" for i in bad[:3]) + (
            " …" if bad.size > 3 else ""
        )
        raise ValueError(
            f"{side} has {bad.size} non-finite value(s) ({where}); drop them first, e.g. with "
            "math.isfinite"
        )
    array.sort()
    return array


def _statistic_of_sorted(
    sorted_values: npt.NDArray[np.float64],
    statistic: str,
    positions: npt.NDArray[np.int32] | None,
    trim: float = 0.0,
) -> npt.NDArray[np.float64]:
    """``statistic`` of each row of ``sorted_values[positions]`` (rows of positions sorted
    ascending, so each row picks an already sorted resample); ``None`` means the sample itself.

    Positions, trimming and percentile indices come from :mod:`pytest_benchsdk._analysis.stats`, so
    a resample's median/p95/p99 follow the same rule as the score's.
    """
    import numpy as np

    if positions is None:
        positions = np.arange(sorted_values.size, dtype=np.int32)[np.newaxis, :]
    if statistic == "mean":
        result: npt.NDArray[np.float64] = sorted_values[positions].mean(axis=1)
        return result
    low_cut, m = trimmed_range(positions.shape[1], trim)
    positions = positions[:, low_cut : low_cut + m]
    if statistic == "median":
        low, high = median_positions(m)
        if low == high:
            return sorted_values[positions[:, low]]
        return (sorted_values[positions[:, low]] + sorted_values[positions[:, high]]) / 2
    percent = {"p95": 95, "p99": 99}[statistic]
    return sorted_values[positions[:, percentile_index(percent, m)]]


def _bootstrap(
    sorted_values: npt.NDArray[np.float64],
    statistic: str,
    resamples: int,
    rng: np.random.Generator,
    trim: float = 0.0,
) -> npt.NDArray[np.float64]:
    """``statistic`` of ``resamples`` resamples with replacement of ``sorted_values`` (drawn by
    the resampling engine; rows of sorted positions pick sorted resamples)."""
    return bootstrap(
        rng,
        sorted_values.size,
        resamples,
        lambda positions: _statistic_of_sorted(sorted_values, statistic, positions, trim),
        ordered=statistic != "mean",  # the mean needs no order
    )
