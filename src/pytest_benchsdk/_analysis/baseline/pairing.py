"""A/B pairing: the two sides of an A/B session ran the same rounds, so a comparison pairs
their samples round by round (a bench file's iterations by task index, a benchmarked test's
rounds turn by turn), and says which pair of processes ran each round.

Part of :mod:`pytest_benchsdk._analysis.baseline`; :func:`paired_samples` is what
:func:`~pytest_benchsdk._analysis.baseline.compare_runs` calls with ``paired=True``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pytest_benchsdk._analysis.baseline.metrics import ComparedMetric, samples_of
from pytest_benchsdk._analysis.scoring import ScoringSpec
from pytest_benchsdk.records import TaskRecord

__all__ = ["paired_samples"]


def paired_samples(
    now_records: Sequence[TaskRecord],
    then_records: Sequence[TaskRecord],
    metrics: Sequence[ComparedMetric],
    spec: ScoringSpec | None,
    processes: int = 1,
) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, list[int]]]:
    """Each metric's samples of the rounds both sides have one for, in the same order on both
    sides, and each round's cluster: the pair of processes that ran it. A bench file's
    iteration is a round (records paired by task index, round ``i`` in pair
    ``i % processes``); a benchmarked test's record holds its rounds turn by turn
    (:func:`_turns`): in turn ``t`` (pair ``t``) the sides' rounds pair in run order, as many
    as both have."""
    then_by_index = {record.task_index: record for record in then_records}
    now: dict[str, list[float]] = {}
    then: dict[str, list[float]] = {}
    clusters: dict[str, list[int]] = {}
    for record in now_records:
        other = then_by_index.get(record.task_index)
        if other is None:
            continue
        mine = samples_of([record], metrics, spec)
        theirs = samples_of([other], metrics, spec)
        turns = _turns(other), _turns(record)
        for metric in metrics:
            a, b = theirs.get(metric.key, []), mine.get(metric.key, [])
            if len(a) == 1 and len(b) == 1:
                pairs = [(a[0], b[0], record.task_index % processes)]
            elif turns[0] is not None and turns[1] is not None and len(turns[0]) == len(turns[1]):
                pairs = _turn_pairs(a, b, turns[0], turns[1])
            else:
                continue
            for x, y, cluster in pairs:
                then.setdefault(metric.key, []).append(x)
                now.setdefault(metric.key, []).append(y)
                clusters.setdefault(metric.key, []).append(cluster)
    return now, then, clusters


def _turns(record: TaskRecord) -> list[int] | None:
    """How many of a benchmarked test's per-round figures each of its turns gave (an A/B
    session's record, ``_engine.rounds.repeated_record``: ``rounds`` → ``repetitions``), or
    None for any other record."""
    rounds = (record.data or {}).get("rounds") if record.status == "success" else None
    counts = rounds.get("repetitions") if isinstance(rounds, Mapping) else None
    if not isinstance(counts, list) or not all(
        isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts
    ):
        return None
    return counts


def _turn_pairs(
    a: Sequence[float], b: Sequence[float], turns_a: Sequence[int], turns_b: Sequence[int]
) -> list[tuple[float, float, int]]:
    """The rounds of ``a`` and ``b`` paired turn by turn (``(a's, b's, turn)``); none when
    the values do not add up to their turns (a figure that was not a finite number)."""
    if len(a) != sum(turns_a) or len(b) != sum(turns_b):
        return []
    pairs: list[tuple[float, float, int]] = []
    start_a = start_b = 0
    for turn, (count_a, count_b) in enumerate(zip(turns_a, turns_b, strict=True)):
        pairs += [(a[start_a + j], b[start_b + j], turn) for j in range(min(count_a, count_b))]
        start_a += count_a
        start_b += count_b
    return pairs
