"""Tests of pytest_benchsdk.records: wire form, absent vs null, validation, ISO timestamps."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_benchsdk._base.clock import iso_utc
from pytest_benchsdk.records import (
    ABSENT,
    ParticipantRecords,
    StepRecord,
    TaskRecord,
)

# --- iso_utc ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("epoch", "expected"),
    [
        (0, "1970-01-01T00:00:00.000Z"),
        (1796005090.123, "2026-11-30T02:18:10.123Z"),
        (1796005090, "2026-11-30T02:18:10.000Z"),
        # JS dates hold whole milliseconds: sub-millisecond parts are cut, not rounded.
        (1796005090.1239, "2026-11-30T02:18:10.123Z"),
        (1700000000.999, "2023-11-14T22:13:20.999Z"),
        (951782400.5, "2000-02-29T00:00:00.500Z"),
        # Truncation toward zero, as new Date(-1.5).toISOString() → ...59.999Z.
        (-0.0015, "1969-12-31T23:59:59.999Z"),
    ],
)
def test_iso_utc_formats_like_js_to_iso_string(epoch: float, expected: str) -> None:
    assert iso_utc(epoch) == expected


def test_iso_utc_survives_float_noise_of_millisecond_values() -> None:
    # ms / 1000 stored as a float can sit a hair below the millisecond; it must not lose it.
    for ms in (1796005090123, 1700000000001, 1234567890999, 1):
        assert iso_utc(ms / 1000)[-4:-1] == f"{ms % 1000:03d}"


# --- wire form: absent vs null ----------------------------------------------------------------


def test_absent_sentinel_is_falsy_and_reads_well() -> None:
    assert not ABSENT
    assert repr(ABSENT) == "ABSENT"
    assert StepRecord("s", "success").wire_error_code is ABSENT
    assert StepRecord("s", "success").error_code is None
    assert (StepRecord("s", "error", error_code="E").error_code or "unknown error") == "E"
    assert (TaskRecord(0, "success").error_code or "unknown error") == "unknown error"


def test_minimal_records_omit_every_optional_key() -> None:
    assert StepRecord("create", "success").to_wire() == {"name": "create", "status": "success"}
    assert TaskRecord(0, "success").to_wire() == {"taskIndex": 0, "status": "success"}


def test_implicit_task_step_keeps_error_code_null() -> None:
    # Upstream: {name: 'task', ..., errorCode: record.errorCode ?? null, data: measures?}
    step = StepRecord(
        "task",
        "success",
        started_at="2026-11-30T02:18:10.123Z",
        completed_at="2026-11-30T02:18:10.223Z",
        latency_ms=100,
        error_code=None,
    )
    wire = step.to_wire()
    assert wire == {
        "name": "task",
        "status": "success",
        "startedAt": "2026-11-30T02:18:10.123Z",
        "completedAt": "2026-11-30T02:18:10.223Z",
        "latencyMs": 100,
        "errorCode": None,
    }
    assert json.dumps(wire).endswith('"errorCode": null}')
    assert StepRecord.from_wire(wire) == step
    assert StepRecord.from_wire(wire).error_code is None


def test_success_record_has_no_error_code_and_first_command_ms_may_be_null() -> None:
    record = TaskRecord(3, "success", latency_ms=12.5, first_command_ms=None)
    wire = record.to_wire()
    assert "errorCode" not in wire
    assert wire["firstCommandMs"] is None
    assert TaskRecord.from_wire(wire) == record
    read = TaskRecord.from_wire({"taskIndex": 3, "status": "success"})
    assert read.wire_first_command_ms is ABSENT
    assert read.wire_error_code is ABSENT
    # From Python, "none" reads None whether the wire had no key or null (issue 34).
    assert (read.error_code, read.first_command_ms) == (None, None)
    assert (record.error_code, record.first_command_ms) == (None, None)
    assert read.to_wire() == {"taskIndex": 3, "status": "success"}


def test_wire_key_order_follows_the_upstream_schema() -> None:
    step = StepRecord(
        "exec",
        "error",
        started_at="a",
        completed_at="b",
        latency_ms=1,
        error_code="step_timeout",
        data={"k": 1},
        concurrency=4,
        timeout_ms=5000,
    )
    assert list(step.to_wire()) == [
        "name",
        "status",
        "startedAt",
        "completedAt",
        "latencyMs",
        "errorCode",
        "data",
        "concurrency",
        "timeoutMs",
    ]
    record = TaskRecord(
        0,
        "error",
        started_at="a",
        completed_at="b",
        latency_ms=2,
        first_command_ms=1,
        error_code="TaskError",
        steps=[step],
        data={"phase": "cold"},
    )
    assert list(record.to_wire()) == [
        "taskIndex",
        "status",
        "startedAt",
        "completedAt",
        "latencyMs",
        "firstCommandMs",
        "errorCode",
        "steps",
        "data",
    ]


UPSTREAM_RECORDS: list[dict[str, Any]] = [
    # Runner-built success record with an implicit 'task' step (no framework steps).
    {
        "taskIndex": 0,
        "status": "success",
        "startedAt": "2026-11-30T02:18:10.123Z",
        "completedAt": "2026-11-30T02:18:10.456Z",
        "latencyMs": 333,
        "steps": [
            {
                "name": "task",
                "status": "success",
                "startedAt": "2026-11-30T02:18:10.123Z",
                "completedAt": "2026-11-30T02:18:10.456Z",
                "latencyMs": 333,
                "errorCode": None,
                "data": {"ttiMs": 120.5},
            }
        ],
        "data": {"ttiMs": 120.5, "phase": "cold"},
    },
    # Failed record with a timed-out parallel step.
    {
        "taskIndex": 7,
        "status": "error",
        "startedAt": "2026-11-30T02:18:10.123Z",
        "completedAt": "2026-11-30T02:18:15.130Z",
        "latencyMs": 5007.25,
        "errorCode": "step_timeout",
        "steps": [
            {
                "name": "create",
                "status": "error",
                "startedAt": "2026-11-30T02:18:10.124Z",
                "completedAt": "2026-11-30T02:18:15.129Z",
                "latencyMs": 5005,
                "errorCode": "step_timeout",
                "concurrency": 3,
                "timeoutMs": 5000,
            }
        ],
        "data": {"phase": "warm", "errorMessage": "boom", "nested": {"a": [1, None, "x"]}},
    },
    # Implicit step of a failed record: errorCode copied, data undefined.
    {
        "taskIndex": 1,
        "status": "error",
        "errorCode": "TypeError",
        "steps": [{"name": "task", "status": "error", "errorCode": "TypeError"}],
    },
    # Platform-side shapes: explicit nulls where the schema allows them, empty data.
    {"taskIndex": 2, "status": "success", "firstCommandMs": None, "errorCode": None, "data": {}},
    {"taskIndex": 3, "status": "success", "firstCommandMs": 12, "steps": []},
]


@pytest.mark.parametrize("wire", UPSTREAM_RECORDS)
def test_upstream_dicts_round_trip_exactly(wire: dict[str, Any]) -> None:
    original = copy.deepcopy(wire)
    record = TaskRecord.from_wire(wire)
    assert record.to_wire() == original
    assert json.dumps(record.to_wire()) == json.dumps(original)  # same key order too
    assert TaskRecord.from_wire(record.to_wire()) == record
    assert wire == original  # input untouched


def test_records_do_not_alias_caller_dicts() -> None:
    wire: dict[str, Any] = {"taskIndex": 0, "status": "success", "data": {"x": 1}}
    record = TaskRecord.from_wire(wire)
    wire["data"]["x"] = 2
    assert record.data == {"x": 1}
    out = record.to_wire()
    out["data"]["x"] = 3
    assert record.data == {"x": 1}


def test_steps_and_records_are_stored_as_tuples() -> None:
    step = StepRecord("s", "success")
    record = TaskRecord(0, "success", steps=[step])
    assert record.steps == (step,)
    group = ParticipantRecords("e2b", [record])
    assert group.records == (record,)


def test_task_index_accepts_integral_floats() -> None:
    record = TaskRecord.from_wire({"taskIndex": 3.0, "status": "success"})
    assert record.task_index == 3
    assert type(record.task_index) is int


def test_participant_records_round_trip() -> None:
    wire = {"participant": "e2b", "records": copy.deepcopy(UPSTREAM_RECORDS)}
    group = ParticipantRecords.from_wire(wire)
    assert group.participant == "e2b"
    assert len(group.records) == len(UPSTREAM_RECORDS)
    assert group.to_wire() == wire


# --- from_wire validation ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        ("nope", 'record must be a JSON object (got "nope")'),
        ({"status": "success"}, "record.taskIndex is required"),
        ({"taskIndex": 0}, "record.status is required"),
        ({"taskIndex": True, "status": "success"}, "record.taskIndex must be an integer >= 0"),
        ({"taskIndex": 1.5, "status": "success"}, "record.taskIndex must be an integer >= 0"),
        ({"taskIndex": -1, "status": "success"}, "record.taskIndex must be an integer >= 0"),
        ({"taskIndex": 0, "status": 1}, "record.status must be a string (got 1)"),
        (
            {"taskIndex": 0, "status": "success", "latencyMs": "12"},
            'record.latencyMs must be a finite number (got "12")',
        ),
        (
            {"taskIndex": 0, "status": "success", "latencyMs": float("nan")},
            "record.latencyMs must be a finite number (got NaN)",
        ),
        (
            {"taskIndex": 0, "status": "success", "latencyMs": None},
            "record.latencyMs must be a finite number (got null)",
        ),
        (
            {"taskIndex": 0, "status": "success", "startedAt": 5},
            "record.startedAt must be a string (got 5)",
        ),
        (
            {"taskIndex": 0, "status": "error", "errorCode": 5},
            "record.errorCode must be a string (got 5)",
        ),
        (
            {"taskIndex": 0, "status": "success", "firstCommandMs": False},
            "record.firstCommandMs must be a finite number (got false)",
        ),
        (
            {"taskIndex": 0, "status": "success", "data": [1]},
            "record.data must be a JSON object (got [1])",
        ),
        (
            {"taskIndex": 0, "status": "success", "steps": {}},
            "record.steps must be an array (got {})",
        ),
        (
            {"taskIndex": 0, "status": "success", "steps": [{"name": "a", "status": None}]},
            "record.steps[0].status must be a string (got null)",
        ),
        (
            {"taskIndex": 0, "status": "success", "steps": [{"name": "a", "status": "s", "x": 1}]},
            "record.steps[0] has unknown key(s) 'x'",
        ),
        (
            {
                "taskIndex": 0,
                "status": "success",
                "steps": [{"name": "a", "status": "s", "concurrency": 0}],
            },
            "record.steps[0].concurrency must be an integer >= 1 (got 0)",
        ),
        ({"taskIndex": 0, "status": "success", "extra": 1}, "record has unknown key(s) 'extra'"),
    ],
)
def test_from_wire_rejects_bad_fields_with_clear_messages(wire: Any, message: str) -> None:
    with pytest.raises(ValueError, match="^" + _escape(message)):
        TaskRecord.from_wire(wire)


def _escape(text: str) -> str:
    return re.escape(text)


def test_participant_records_from_wire_names_the_record() -> None:
    with pytest.raises(ValueError, match=r"^participantRecords\.records\[1\]\.taskIndex"):
        ParticipantRecords.from_wire(
            {"participant": "p", "records": [{"taskIndex": 0, "status": "s"}, {"status": "s"}]}
        )
    with pytest.raises(ValueError, match="records must be an array"):
        ParticipantRecords.from_wire({"participant": "p", "records": None})


# --- property: any valid record round-trips ---------------------------------------------------

_json_leaf = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=5)
_json_value = st.recursive(
    _json_leaf | st.floats(allow_nan=False, allow_infinity=False),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=8,
)
_data = st.none() | st.dictionaries(st.text(max_size=6), _json_value, max_size=4)
_number = st.none() | st.integers(0, 10**6) | st.floats(0, 1e6, allow_nan=False)
_nullable_code = st.just(ABSENT) | st.none() | st.text(min_size=1, max_size=8)

_steps = st.builds(
    StepRecord,
    name=st.text(max_size=8),
    status=st.sampled_from(["success", "error"]),
    started_at=st.none() | st.just("2026-11-30T02:18:10.123Z"),
    completed_at=st.none() | st.just("2026-11-30T02:18:10.124Z"),
    latency_ms=_number,
    error_code=_nullable_code,
    data=_data,
    concurrency=st.none() | st.integers(1, 100),
    timeout_ms=_number,
)
_records = st.builds(
    TaskRecord,
    task_index=st.integers(0, 10**6),
    status=st.sampled_from(["success", "error"]),
    started_at=st.none() | st.just("2026-11-30T02:18:10.123Z"),
    completed_at=st.none() | st.just("2026-11-30T02:18:10.124Z"),
    latency_ms=_number,
    first_command_ms=st.just(ABSENT) | _number,
    error_code=_nullable_code,
    steps=st.none() | st.lists(_steps, max_size=3),
    data=_data,
)


@pytest.mark.slow
@given(_records)
def test_any_record_round_trips_through_json(record: TaskRecord) -> None:
    wire = json.loads(json.dumps(record.to_wire()))
    assert TaskRecord.from_wire(wire) == record
    assert TaskRecord.from_wire(wire).to_wire() == wire
