"""A run keeps its selected iterations until the session ends: compactly, with the same
answers (membership, count, order) as the set it was given."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pytest_benchsdk.results._live import _compact


def test_contiguous_indexes_are_a_range() -> None:
    assert _compact({0, 1, 2, 3}) == range(4)
    assert _compact(iter([7, 5, 6])) == range(5, 8)


def test_gaps_and_nothing_stay_a_set() -> None:
    assert _compact({0, 2}) == {0, 2}
    assert _compact(()) == set()


@given(st.sets(st.integers(min_value=-5, max_value=40)))
def test_same_answers_as_the_set(indexes: set[int]) -> None:
    kept = _compact(indexes)
    assert len(kept) == len(indexes)
    assert sorted(kept) == sorted(indexes)
    assert all(i in kept for i in indexes)
    assert all(i not in kept for i in range(-10, 50) if i not in indexes)
    assert bool(kept) == bool(indexes)
