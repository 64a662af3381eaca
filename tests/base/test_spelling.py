"""The edit distance that suggests a misspelt key (issue 46, part 3)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pytest_benchsdk._base.spelling import closest_within, edit_distance


def test_edits_count_swaps_of_neighbours_as_one() -> None:
    assert edit_distance("througput_rps", "throughput_rps") == 1
    assert edit_distance("latnecy_ms", "latency_ms") == 1  # a swap, not two replacements
    assert edit_distance("concurency", "concurrency") == 1
    assert edit_distance("", "abc") == 3
    assert edit_distance("kitten", "sitting") == 3


@given(st.text(max_size=8), st.text(max_size=8))
def test_the_distance_is_symmetric_and_zero_only_for_equals(a: str, b: str) -> None:
    assert edit_distance(a, b) == edit_distance(b, a)
    assert (edit_distance(a, b) == 0) == (a == b)
    assert edit_distance(a, b) <= max(len(a), len(b))


def test_the_closest_key_within_two_edits() -> None:
    keys = ["latency_ms", "cpu_ms", "througput_rps"]
    assert closest_within("throughput_rps", keys) == "througput_rps"
    assert closest_within("cpu_msx", keys) == "cpu_ms"
    assert closest_within("Latency_ms", keys) == "latency_ms"
    # Three edits away, or a key that is itself there: no suggestion.
    assert closest_within("tti_ms", keys) is None
    assert closest_within("cpu_ms", keys) is None
    # A one-letter key is not "two edits" from any other short key.
    assert closest_within("x", ["y", "ab"]) is None
