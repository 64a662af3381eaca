"""How sure is a score? Bootstrap intervals of composite scores and rank probabilities.

Public home: :mod:`pytest_benchsdk.compare`. The score math is not repeated here: every
resampled outcome goes through the unchanged :func:`~pytest_benchsdk.scoring.score`, and the
point estimate is ``score()`` of the real records. Nor are the draws: the records are resampled
by :mod:`~pytest_benchsdk._analysis.resampling` (the one resampling engine), and its interval
rule bounds the resampled composites.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from pytest_benchsdk._analysis.resampling import (
    check_resamples,
    check_seed,
    generator,
    group_resamples,
    percentile_interval,
)
from pytest_benchsdk._analysis.scoring import (
    DisplayMetricLike,
    RecordsOutcome,
    ScoringOutcome,
    ScoringSpec,
    ranking_key,
    score_each,
)
from pytest_benchsdk._base.defaults import DEFAULT_SCORE_RESAMPLES
from pytest_benchsdk.records import ParticipantRecords

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "DEFAULT_SCORE_RESAMPLES",
    "ScoreUncertainty",
    "score_uncertainty",
    "tied_with_above",
]

#: Resamples when ``resamples=None``. Each one is a full ``score()`` call (10 participants x
#: 1,000 records: about 4 ms); with 200 a 95 % interval's bounds vary between seeds by a standard
#: deviation of about 5 % of its width, and a rank probability p by sqrt(p(1 - p) / 200), at most
#: 3.5 points.


@attrs.frozen
class ScoreUncertainty:
    """How sure one participant's composite score and rank are (see :func:`score_uncertainty`).

    ``score`` is upstream's composite on the real records; ``low``/``high`` bound it at
    ``level``; ``rank`` is its place in the ranking (1 = best); ``rank_probabilities[i]`` is the
    share of resamples in which the participant had rank ``first_rank + i``: the shares run
    from the best rank it took in some resample to the worst (any other rank: share 0, see
    :meth:`rank_probability`), so a run of many participants keeps a few shares for each, not
    one per participant (10,000 participants: 10,000 each). ``samples`` is how many
    records the participant's resamples draw from: from one (an IDE running one iteration)
    every resample is that record, and the views show no interval (None: not known, a run
    stored before it was kept).
    """

    participant: str
    score: float
    low: float
    high: float
    rank: int
    rank_probabilities: tuple[float, ...] = attrs.field(converter=tuple)
    skipped: bool
    level: float
    resamples: int
    samples: int | None = None
    first_rank: int = 1

    def rank_probability(self, rank: int) -> float:
        """The share of resamples in which the participant had ``rank`` (1 = best)."""
        i = rank - self.first_rank
        return self.rank_probabilities[i] if 0 <= i < len(self.rank_probabilities) else 0.0

    @property
    def from_one_sample(self) -> bool:
        """The interval is of one record's score: it says nothing of how sure the score is."""
        return self.samples is not None and self.samples < 2

    def to_json(self) -> dict[str, Any]:
        """A JSON object with camelCase keys (as ``--bench-json``)."""
        return {
            "participant": self.participant,
            "score": self.score,
            "low": self.low,
            "high": self.high,
            "rank": self.rank,
            "rankProbabilities": list(self.rank_probabilities),
            "skipped": self.skipped,
            "level": self.level,
            "resamples": self.resamples,
            "samples": self.samples,
            "firstRank": self.first_rank,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ScoreUncertainty:
        """Read back :meth:`to_json` (a bound written as ``None`` is NaN)."""
        # Any: attrs types a ``converter=tuple`` field's argument as a bare generic.
        probabilities: Any = tuple(float(p) for p in data.get("rankProbabilities") or ())
        return cls(
            participant=str(data["participant"]),
            score=float(data["score"]),
            low=math.nan if data["low"] is None else float(data["low"]),
            high=math.nan if data["high"] is None else float(data["high"]),
            rank=int(data["rank"]),
            rank_probabilities=probabilities,
            skipped=bool(data.get("skipped", False)),
            level=float(data.get("level", 0.95)),
            resamples=int(data.get("resamples", 0)),
            samples=None if data.get("samples") is None else int(data["samples"]),
            # Runs stored before it was kept hold every rank's share, from rank 1.
            first_rank=int(data.get("firstRank", 1)),
        )


def score_uncertainty(
    outcome: ScoringOutcome,
    spec: ScoringSpec | Mapping[str, Any],
    *,
    display_metrics: Iterable[DisplayMetricLike | Mapping[str, Any]] | None = None,
    resamples: int | None = None,
    seed: int = 0,
    level: float = 0.95,
) -> list[ScoreUncertainty]:
    """Bootstrap each participant's composite score; one :class:`ScoreUncertainty` per
    participant, in ranking order (descending score, skipped participants last, ties in
    participant order, as the terminal ranks).

    Each resample draws, for every participant, as many records as it has, with replacement,
    from all its records (passing and failing, so the success rate varies as it would between
    runs), and scores the resampled outcome with :func:`~pytest_benchsdk.scoring.score`.
    ``resamples`` (default :data:`DEFAULT_SCORE_RESAMPLES`) and ``seed`` (a numpy
    ``Generator``) make the result reproducible.

    * ``low``, ``high``: the percentile interval of the resampled composites at ``level``,
      widened to include the point estimate when it falls outside (a bootstrap distribution of
      medians can be lopsided; an interval that excludes the reported score would read as a
      bug).
    * ``rank_probabilities``: per resample each participant gets rank 1 + the number of
      participants scoring strictly higher (skipped ones rank below all others), so equal
      scores share the better rank and each participant's probabilities sum to 1.

    The cost grows linearly with the participants: a participant with at most one record
    resamples to itself (its draws take no random numbers), so it is scored once, not once
    per resample, and the ranks of a resample come from one sort of its composites.

    With ``spec.group_by`` the participant's aggregate row (its first row) is the score.
    Raises ``ValueError`` for ``level`` outside (0, 1), ``resamples < 1`` or a negative
    ``seed``; :class:`~pytest_benchsdk.scoring.ScoringSpecError` for an invalid spec.
    """
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, exclusive, e.g. 0.95 (got {level!r})")
    resamples = check_resamples(resamples, DEFAULT_SCORE_RESAMPLES)
    check_seed(seed)

    import numpy as np

    spec = ScoringSpec.coerce(spec)
    display = None if display_metrics is None else list(display_metrics)
    participants = tuple(outcome.participants)
    # The point estimate: upstream's score of the real records, the participant's first row.
    points = [rows[0] for rows in score_each(RecordsOutcome(participants), spec, display)]
    # The aggregate row of a group_by spec is the row of the same spec without group_by (same
    # records, passing flags and merged samples); scoring resamples without it skips the
    # per-group rows.
    ungrouped = attrs.evolve(spec, group_by=None)

    composites = np.empty((resamples, len(participants)), dtype=np.float64)
    skipped = np.array([point.skipped for point in points], dtype=bool)
    # A participant with at most one record resamples to itself: scored once, for every
    # resample. Its draw takes no random numbers (numpy draws nothing from a range of one
    # value), so leaving it out leaves every other participant's draws as they were.
    varying = [i for i, p in enumerate(participants) if len(p.records) > 1]
    fixed = [i for i, p in enumerate(participants) if len(p.records) <= 1]
    if fixed:
        rows = score_each(RecordsOutcome(tuple(participants[i] for i in fixed)), ungrouped, display)
        composites[:, fixed] = [r[0].composite_score for r in rows]
    draws = group_resamples(
        generator(seed), [len(participants[i].records) for i in varying], resamples
    )
    for r, positions in enumerate(draws):
        # One resample's draws at a time: memory stays one outcome's worth for any run size.
        resampled = tuple(
            _resample(participants[i], drawn) for i, drawn in zip(varying, positions, strict=True)
        )
        rows = score_each(RecordsOutcome(resampled), ungrouped, display)
        composites[r, varying] = [r_[0].composite_score for r_ in rows]

    ranks = _competition_ranks(composites, skipped)
    order = sorted(range(len(participants)), key=lambda i: ranking_key(points[i]))
    tail = (1 - level) / 2
    results = []
    for position, i in enumerate(order, start=1):
        point = points[i].composite_score
        low, high = percentile_interval(composites[:, i], tail)
        column = ranks[:, i]
        first = int(column.min())
        counts = np.bincount(column - first)
        results.append(
            ScoreUncertainty(
                participant=participants[i].participant,
                score=point,
                low=min(low, point),
                high=max(high, point),
                rank=position,
                rank_probabilities=(counts / resamples).tolist(),
                first_rank=first,
                skipped=points[i].skipped,
                level=level,
                resamples=resamples,
                samples=len(participants[i].records),
            )
        )
    return results


def _resample(participant: ParticipantRecords, positions: list[int]) -> ParticipantRecords:
    """The participant's records at the drawn ``positions`` (none drawn: as it is)."""
    records = participant.records
    if not records:
        return participant
    return ParticipantRecords(participant.participant, [records[i] for i in positions])


def _competition_ranks(
    composites: npt.NDArray[np.float64], skipped: npt.NDArray[np.bool_]
) -> npt.NDArray[np.int64]:
    """Per resample (row), each participant's rank: 1 + how many rank strictly above it (a
    scored participant: the scored ones with a strictly higher composite; a skipped one: every
    scored participant and the skipped ones with a strictly higher composite).

    One sort per resample and kind, not a comparison of every pair: a run of 10,000
    participants would otherwise compare 10^8 pairs per resample."""
    import numpy as np

    ranks: npt.NDArray[np.int64] = np.ones(composites.shape, dtype=np.int64)
    scored = ~skipped
    ranks[:, skipped] += int(scored.sum())
    for kind in (scored, skipped):
        if not kind.any():
            continue
        block = composites[:, kind]
        for r, row in enumerate(block):
            # NaN is higher than nothing and nothing is higher than NaN: left out of the sort,
            # and searched for it finds every sorted value at or below it (none above).
            ordered = np.sort(row[~np.isnan(row)])
            ranks[r, kind] += len(ordered) - np.searchsorted(ordered, row, side="right")
    return ranks


def tied_with_above(uncertainties: Sequence[ScoreUncertainty]) -> dict[str, str]:
    """The ties of a ranking: each participant whose interval overlaps the interval of the
    participant ranked just above it, mapped to that participant. Skipped participants are
    never tied. ``uncertainties`` in any order (they are read by ``rank``)."""
    ranked = sorted(uncertainties, key=lambda u: u.rank)
    ties: dict[str, str] = {}
    for above, below in itertools.pairwise(ranked):
        if above.skipped or below.skipped:
            continue
        if below.low <= above.high and above.low <= below.high:
            ties[below.participant] = above.participant
    return ties
