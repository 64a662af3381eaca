"""Which known name a misspelt one most likely means: the Damerau–Levenshtein distance
(insertions, deletions, substitutions and swaps of two neighbours, each one edit) and the
closest name within a number of edits."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

__all__ = ["MAX_EDITS", "closest_within", "edit_distance"]

#: How many edits away a name may be to be suggested: one or two slips of the keyboard
#: (``througput_rps`` for ``throughput_rps``, ``concurency`` for ``concurrency``).
MAX_EDITS: Final = 2


def edit_distance(a: str, b: str) -> int:
    """The edits that turn ``a`` into ``b``: inserting, deleting or replacing a character, or
    swapping two neighbours (the optimal-string-alignment distance)."""
    if a == b:
        return 0
    if not a or not b:
        return len(a) + len(b)
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, start=1):
            cost = 0 if ca == cb else 1
            best = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                best = min(best, previous2[j - 2] + 1)
            current[j] = best
        previous2, previous = previous, current
    return previous[-1]


def closest_within(name: str, names: Iterable[str], max_edits: int = MAX_EDITS) -> str | None:
    """The name of ``names`` fewest edits away from ``name`` (the first of equals), when it is
    at most ``max_edits`` away and is not ``name`` itself; None otherwise. Case counts as an
    edit less than anything: ``Latency_ms`` finds ``latency_ms``."""
    best: tuple[int, str] | None = None
    folded = name.casefold()
    for candidate in names:
        if candidate == name:
            continue
        distance = edit_distance(folded, candidate.casefold())
        if distance > max_edits or distance >= len(candidate):
            continue
        if best is None or distance < best[0]:
            best = (distance, candidate)
    return None if best is None else best[1]
