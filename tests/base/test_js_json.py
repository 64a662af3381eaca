"""``js_json`` (``JSON.stringify``): plain JSON is written without being copied first (issue 48,
item 8: a summary of 10,000 participants is 20 MB of JSON), and what needs the copy (NaN,
infinities, mappings that are not dicts) reads the same as it would without."""

from __future__ import annotations

import json
import math
import types

import pytest

from pytest_benchsdk._base.js import js_json


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (
            {"a": 1.5, "b": [1, 2, (3, 4)], "c": {"d": None}},
            '{"a":1.5,"b":[1,2,[3,4]],"c":{"d":null}}',
        ),
        ({"a": math.nan, "b": [math.inf, -math.inf]}, '{"a":null,"b":[null,null]}'),
        (types.MappingProxyType({"a": 1}), '{"a":1}'),
        ({"é": "<>"}, '{"é":"<>"}'),
        ({1: "x", 2.5: "y"}, '{"1":"x","2.5":"y"}'),
    ],
)
def test_js_json_writes_what_json_stringify_writes(value: object, text: str) -> None:
    assert js_json(value) == text


def test_true_false_and_none_keys_read_the_same_with_or_without_a_nan_beside_them() -> None:
    # JavaScript's keys are text: true, false and null (json.dumps writes them so too).
    assert js_json({True: 1, None: 2}) == '{"true":1,"null":2}'
    assert js_json({True: math.nan, None: 2}) == '{"true":null,"null":2}'


def test_plain_json_is_not_copied_first(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_benchsdk._base import js

    copied: list[object] = []
    real = js._json_safe

    def counting(value: object) -> object:
        copied.append(value)
        return real(value)

    monkeypatch.setattr(js, "_json_safe", counting)
    summary = {"participants": [{"name": f"p{i}", "median": 1.0 + i} for i in range(1000)]}
    assert json.loads(js_json(summary)) == summary
    assert copied == []
    assert js_json({"a": [math.nan]}) == '{"a":[null]}'
    assert copied
