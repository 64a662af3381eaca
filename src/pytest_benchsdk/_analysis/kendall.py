"""Kendall's tau-b of a series against its order, with scipy's p-value, in plain Python.

The run-hygiene trend test (:mod:`pytest_benchsdk._analysis.hygiene`) asks whether a run's samples
drift over its iterations: Kendall's tau of ``(index, value)``. ``scipy.stats.kendalltau``
answers that, but importing scipy at every session end costs ~0.5 s and ~75 MiB, more than a
20,000-iteration run's own bookkeeping. :func:`kendall_trend` computes the same statistic and
p-value as ``scipy.stats.kendalltau(range(n), values)`` (``variant="b"``, ``method="auto"``,
two-sided; ``tests/analysis/test_kendall_trend.py`` holds them to scipy's): the discordant pairs
by a Fenwick tree in O(n log n), the exact null distribution (Mahonian numbers, in integers)
where scipy uses it (no ties and n <= 33, or at most one discordant or concordant pair), and the
normal approximation with the tie-corrected variance otherwise.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

__all__ = ["kendall_trend"]


def _discordant(ranks: Sequence[int], size: int) -> int:
    """Pairs ``i < j`` with ``ranks[i] > ranks[j]`` (ranks 1..size; ties are not counted)."""
    tree = [0] * (size + 1)
    discordant = 0
    for seen, rank in enumerate(ranks):
        # Earlier values <= this one, from the tree; the rest of the earlier ones are greater.
        at, not_greater = rank, 0
        while at > 0:
            not_greater += tree[at]
            at -= at & -at
        discordant += seen - not_greater
        at = rank
        while at <= size:
            tree[at] += 1
            at += at & -at
    return discordant


def _exact_p(n: int, concordant: int) -> float:
    """Two-sided exact p-value of ``concordant`` pairs among ``n`` untied values (scipy's
    ``_kendall_p_exact``, in integers: counts of permutations by inversions)."""
    total = n * (n - 1) // 2
    c = min(concordant, total - concordant)
    if n <= 2:
        return 1.0
    if c == 0:
        return 2.0 / math.factorial(n) if n < 171 else 0.0
    if c == 1:
        return 2.0 / math.factorial(n - 1) if n < 172 else 0.0
    if 4 * c == n * (n - 1):
        return 1.0
    # counts[k]: permutations of j items with k inversions, for k <= c, built up j = 3..n.
    counts = [1, 1] + [0] * (c - 1)
    for j in range(3, n + 1):
        running = 0
        for k in range(c + 1):
            running += counts[k]
            counts[k] = running
        if j <= c:
            # Subtract from the top down, so each uses the previous pass's sums.
            for k in range(c, j - 1, -1):
                counts[k] -= counts[k - j]
    return min(1.0, 2.0 * sum(counts) / math.factorial(n))


def _tie_terms(values: Sequence[float]) -> tuple[int, int]:
    """Over groups of equal values of size t: sum t(t-1)/2 and sum t(t-1)(2t+5) (scipy's
    ``count_rank_tie``; its t(t-1)(t-2) term only counts with ties in the positions too)."""
    pairs = fifth = 0
    for t in Counter(values).values():
        if t > 1:
            pairs += t * (t - 1) // 2
            fifth += t * (t - 1) * (2 * t + 5)
    return pairs, fifth


def kendall_trend(values: Sequence[float]) -> tuple[float, float]:
    """``(tau, p_value)`` of Kendall's tau-b between the positions ``0..n-1`` and ``values``
    (finite floats), as ``scipy.stats.kendalltau`` gives them; ``(nan, nan)`` when fewer than
    two values or all of them equal."""
    n = len(values)
    if n < 2:
        return math.nan, math.nan
    order = sorted(set(values))
    rank_of = {value: rank for rank, value in enumerate(order, start=1)}
    ranks = [rank_of[value] for value in values]
    total = n * (n - 1) // 2
    ties, ties_fifth = _tie_terms(values)
    if ties == total:
        return math.nan, math.nan
    discordant = _discordant(ranks, len(order))
    # Positions never tie, so a pair is concordant, discordant, or tied in values only.
    con_minus_dis = total - ties - 2 * discordant
    tau = con_minus_dis / math.sqrt(total) / math.sqrt(total - ties)
    tau = min(1.0, max(-1.0, tau))
    if ties == 0 and (n <= 33 or min(discordant, total - discordant) <= 1):
        return tau, _exact_p(n, total - discordant)
    m = n * (n - 1.0)
    variance = (m * (2 * n + 5) - ties_fifth) / 18
    z = con_minus_dis / math.sqrt(variance)
    return tau, math.erfc(abs(z) / math.sqrt(2))
