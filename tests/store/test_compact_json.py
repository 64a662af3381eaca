"""The store's compact JSON (one C encoder made once) writes what ``json.dumps`` writes and
refuses what it refuses, so a record's stored text is the same either way."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_benchsdk.store._connection import compact_json

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=30,
)


@given(JSON_VALUES)
def test_same_text_as_json_dumps(value: Any) -> None:
    expected = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    assert compact_json(value) == expected


@pytest.mark.parametrize("value", [math.nan, [math.inf], {"x": -math.inf}])
def test_nan_and_infinity_are_refused(value: Any) -> None:
    with pytest.raises(ValueError, match="Out of range float"):
        compact_json(value)


def test_a_value_that_is_not_json_is_refused_and_the_next_call_still_works() -> None:
    with pytest.raises(TypeError, match="set is not JSON serializable"):
        compact_json({"a": [1, {2}]})
    assert compact_json({"a": [1, 2]}) == '{"a":[1,2]}'


def test_a_circular_value_is_refused() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference"):
        compact_json({"a": loop})
    assert compact_json(["é"]) == '["é"]'
