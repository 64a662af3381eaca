"""The shapes of the platform's answers: the one place they are checked.

Every :class:`~._client.BenchmarkClient` method that reads something out of an answer checks
its shape here first, so the rest of the package (delivery, operations, the commands) reads
fields of checked dicts and lists and never meets a JSON list where it expects an object. A
2xx answer of the wrong shape raises :class:`MalformedAnswerError` naming the request, what
came and what was expected; the caller decides what that means (the delivery stops for the
session and keeps the upload queued; a command prints it and exits 1).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pytest_benchsdk.platform._errors import MalformedAnswerError

__all__ = ["answer_object", "describe_json", "id_of", "item_list", "member_list", "member_object"]

JSON = dict[str, Any]


def describe_json(value: Any) -> str:
    """How a JSON value is named in messages: ``a JSON list``, ``null`` …"""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a JSON boolean"
    if isinstance(value, (int, float)):
        return "a JSON number"
    if isinstance(value, str):
        return "a JSON string"
    if isinstance(value, list):
        return "a JSON list"
    if isinstance(value, dict):
        return "a JSON object"
    return type(value).__name__


def _malformed(
    what: str, where: str, value: Any, expected: str, redact: Callable[[str], str]
) -> MalformedAnswerError:
    place = f"its {where}" if where else "the platform's answer"
    return MalformedAnswerError(
        redact(
            f"{what}: malformed answer: {place} is {describe_json(value)} where {expected} "
            "is expected; nothing was taken from it"
        )
    )


def answer_object(data: Any, what: str, redact: Callable[[str], str] = str) -> JSON:
    """``data`` (a parsed 2xx answer; ``{}`` for an empty body) when it is a JSON object."""
    if not isinstance(data, dict):
        raise _malformed(what, "", data, "a JSON object", redact)
    return data


def member_object(
    data: JSON, key: str, what: str, *, required: bool = False, redact: Callable[[str], str] = str
) -> JSON | None:
    """``data[key]`` when it is an object; ``None`` when missing or null (unless
    ``required``)."""
    value = data.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, dict):
        raise _malformed(what, f'"{key}"', value, "a JSON object", redact)
    return value


def member_list(
    data: JSON, key: str, what: str, *, required: bool = False, redact: Callable[[str], str] = str
) -> list[Any] | None:
    """``data[key]`` when it is a list; ``None`` when missing or null (unless ``required``)."""
    value = data.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, list):
        raise _malformed(what, f'"{key}"', value, "a JSON list", redact)
    return value


def item_list(data: Any, what: str, *legacy: str, redact: Callable[[str], str] = str) -> list[Any]:
    """Upstream's ``items ?? <legacy> ?? []`` of an object answer, each a list when given."""
    answer = answer_object(data, what, redact)
    for key in ("items", *legacy):
        found = member_list(answer, key, what, redact=redact)
        if found is not None:
            return list(found)
    return []


def id_of(
    data: JSON, key: str, what: str, *, where: str, redact: Callable[[str], str] = str
) -> str:
    """``data[key]``: a non-empty string or an integer id, as text."""
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        raise _malformed(what, f'"{where}"', value, "a non-empty id", redact)
    return str(value)
