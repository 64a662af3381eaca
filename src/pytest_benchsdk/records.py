"""Task and step records: the per-iteration results of a benchmark run.

These are upstream's ``TaskResultRecord`` / ``TaskStepRecord``. Python code uses
snake_case attributes; :meth:`to_wire` produces the upstream camelCase JSON object sent to the
platform and kept in the local store, and :meth:`from_wire` reads such an object back, checking
every field's type.

Absent versus null
------------------
Upstream distinguishes a key that is *absent* from one that is present with value ``null``: a
success record has no ``errorCode`` key, while the implicit ``'task'`` step that the runner adds
to a record without steps carries ``errorCode: null``. ``firstCommandMs`` may be ``null`` too.
For the two nullable fields (``error_code`` and ``first_command_ms``) the constructor's default
is the sentinel :data:`ABSENT` (key omitted on the wire) and ``None`` means an explicit JSON
``null``; read from Python, both read ``None`` when there is no value (``wire_error_code`` and
``wire_first_command_ms`` keep the distinction). Every other
optional field uses ``None`` for "absent", because upstream never writes ``null`` there. So
``from_wire(to_wire(r)) == r`` and ``to_wire(from_wire(d)) == d`` hold exactly.
"""

from __future__ import annotations

import enum
import json
import sys
from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal

import attrs

from pytest_benchsdk._base.js import JSONObject, is_js_integer, js_json
from pytest_benchsdk._base.numbers import is_finite

__all__ = [
    "ABSENT",
    "LOG_LEVELS",
    "Absent",
    "JSONObject",
    "LogLevel",
    "LogLine",
    "ParticipantRecords",
    "StepRecord",
    "TaskRecord",
]


class _AbsentType(enum.Enum):
    # An enum member (rather than a bare object()) so that mypy can narrow `x is ABSENT`.
    ABSENT = "ABSENT"

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        # Falsy like None, so `record.error_code or "unknown error"` reads naturally.
        return False


ABSENT: Final = _AbsentType.ABSENT
"""Default of the nullable fields: the key is omitted on the wire (``None`` writes ``null``)."""

Absent = Literal[_AbsentType.ABSENT]
"""Type of :data:`ABSENT`, for annotations such as ``str | None | Absent``."""

# --- from_wire validation helpers -------------------------------------------------------------


def _describe(value: object) -> str:
    # JSON text of the offending value (None is JSON null here, not undefined; NaN stays NaN).
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def _require_object(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"{where} must be a JSON object (got {_describe(value)})")
    return value


def _check_keys(obj: Mapping[str, Any], allowed: frozenset[str], where: str) -> None:
    unknown = [key for key in obj if key not in allowed]
    if unknown:
        names = ", ".join(repr(key) for key in unknown)
        raise ValueError(f"{where} has unknown key(s) {names}")


def _required(obj: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in obj:
        raise ValueError(f"{where}.{key} is required")
    return obj[key]


def _string(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{where} must be a string (got {_describe(value)})")
    return value


def _number(value: object, where: str) -> float:
    # bool is an int subclass but never a JSON number.
    if is_finite(value):
        return value  # type: ignore[return-value]
    raise ValueError(f"{where} must be a finite number (got {_describe(value)})")


def _integer(value: object, where: str, minimum: int) -> int:
    # 3.0 is accepted (JSON has one number type) and stored as 3.
    if is_js_integer(value) and isinstance(value, (int, float)) and value >= minimum:
        return int(value)
    raise ValueError(f"{where} must be an integer >= {minimum} (got {_describe(value)})")


def _json_object(value: object, where: str) -> JSONObject:
    obj = _require_object(value, where)
    for key in obj:
        if not isinstance(key, str):
            raise ValueError(f"{where} keys must be strings (got {_describe(key)})")
    # A shallow copy: the record must not alias the caller's (mutable) dict.
    return dict(obj)


def _steps_converter(value: Iterable[StepRecord] | None) -> tuple[StepRecord, ...] | None:
    return None if value is None else tuple(value)


# --- records ----------------------------------------------------------------------------------

_STEP_KEYS: Final = frozenset(
    {
        "name",
        "status",
        "startedAt",
        "completedAt",
        "latencyMs",
        "errorCode",
        "data",
        "concurrency",
        "timeoutMs",
    }
)

_TASK_KEYS: Final = frozenset(
    {
        "taskIndex",
        "status",
        "startedAt",
        "completedAt",
        "latencyMs",
        "firstCommandMs",
        "errorCode",
        "steps",
        "data",
    }
)


@attrs.frozen
class StepRecord:
    """One named, timed step of a task (upstream ``TaskStepRecord``).

    ``error_code`` reads the step's error code, ``None`` when it has none. Given to the
    constructor, it defaults to :data:`ABSENT` (no ``errorCode`` key on the wire); ``None``
    writes ``errorCode: null`` as upstream's implicit ``'task'`` step does
    (:attr:`wire_error_code` tells the two apart). The other optional fields are omitted from
    the wire form when ``None``. ``concurrency`` is the requested number of parallel
    invocations; ``timeout_ms`` the step's timeout.
    """

    name: str
    status: str
    started_at: str | None = None
    completed_at: str | None = None
    latency_ms: float | None = None
    _error_code: str | Absent | None = attrs.field(default=ABSENT, alias="error_code")
    data: JSONObject | None = None
    concurrency: int | None = None
    timeout_ms: float | None = None

    @property
    def error_code(self) -> str | None:
        """The step's error code; ``None`` when it has none (no key or ``null`` on the wire)."""
        return None if self._error_code is ABSENT else self._error_code

    @property
    def wire_error_code(self) -> str | Absent | None:
        """``errorCode`` as the wire carries it: :data:`ABSENT` (no key), ``None`` (``null``)
        or the code."""
        return self._error_code

    def to_wire(self) -> JSONObject:
        """The upstream camelCase JSON object; absent fields are omitted."""
        wire: JSONObject = {"name": self.name, "status": self.status}
        if self.started_at is not None:
            wire["startedAt"] = self.started_at
        if self.completed_at is not None:
            wire["completedAt"] = self.completed_at
        if self.latency_ms is not None:
            wire["latencyMs"] = self.latency_ms
        if self._error_code is not ABSENT:
            wire["errorCode"] = self._error_code
        if self.data is not None:
            wire["data"] = dict(self.data)
        if self.concurrency is not None:
            wire["concurrency"] = self.concurrency
        if self.timeout_ms is not None:
            wire["timeoutMs"] = self.timeout_ms
        return wire

    @classmethod
    def from_wire(cls, wire: Mapping[str, Any], *, where: str = "step") -> StepRecord:
        """Read a wire object back; raises ``ValueError`` naming the offending field.

        ``warmup``: the record of a warm-up iteration, whose ``taskIndex`` is negative.
        """
        obj = _require_object(wire, where)
        _check_keys(obj, _STEP_KEYS, where)
        error_code: str | Absent | None = ABSENT
        if "errorCode" in obj:
            raw = obj["errorCode"]
            error_code = None if raw is None else _string(raw, f"{where}.errorCode")
        return cls(
            name=_string(_required(obj, "name", where), f"{where}.name"),
            status=_string(_required(obj, "status", where), f"{where}.status"),
            started_at=_opt_string(obj, "startedAt", where),
            completed_at=_opt_string(obj, "completedAt", where),
            latency_ms=_opt_number(obj, "latencyMs", where),
            error_code=error_code,
            data=None if "data" not in obj else _json_object(obj["data"], f"{where}.data"),
            concurrency=(
                None
                if "concurrency" not in obj
                else _integer(obj["concurrency"], f"{where}.concurrency", 1)
            ),
            timeout_ms=_opt_number(obj, "timeoutMs", where),
        )


@attrs.frozen
class TaskRecord:
    """The result of one task iteration (upstream ``TaskResultRecord``).

    ``task_index`` is the 0-based schedule index; ``status`` is ``'success'`` or ``'error'``.
    ``error_code`` and ``first_command_ms`` read ``None`` when the record has none (a success
    record has no error code). Given to the constructor, they default to :data:`ABSENT` (key
    omitted; upstream never sets ``firstCommandMs`` and omits ``errorCode`` on success
    records); ``None`` writes ``null`` (:attr:`wire_error_code` and
    :attr:`wire_first_command_ms` tell the two apart). ``steps`` and ``data`` are omitted from
    the wire form when ``None``.
    """

    task_index: int
    status: str
    started_at: str | None = None
    completed_at: str | None = None
    latency_ms: float | None = None
    _first_command_ms: float | Absent | None = attrs.field(default=ABSENT, alias="first_command_ms")
    _error_code: str | Absent | None = attrs.field(default=ABSENT, alias="error_code")
    steps: tuple[StepRecord, ...] | None = attrs.field(default=None, converter=_steps_converter)
    data: JSONObject | None = None

    @property
    def error_code(self) -> str | None:
        """The record's error code; ``None`` when it has none (no key or ``null`` on the
        wire)."""
        return None if self._error_code is ABSENT else self._error_code

    @property
    def wire_error_code(self) -> str | Absent | None:
        """``errorCode`` as the wire carries it: :data:`ABSENT` (no key), ``None`` (``null``)
        or the code."""
        return self._error_code

    @property
    def first_command_ms(self) -> float | None:
        """``firstCommandMs``; ``None`` when the record has none (upstream never sets it)."""
        return None if self._first_command_ms is ABSENT else self._first_command_ms

    @property
    def wire_first_command_ms(self) -> float | Absent | None:
        """``firstCommandMs`` as the wire carries it: :data:`ABSENT` (no key), ``None``
        (``null``) or the number."""
        return self._first_command_ms

    def to_wire(self) -> JSONObject:
        """The upstream camelCase JSON object; absent fields are omitted."""
        wire: JSONObject = {"taskIndex": self.task_index, "status": self.status}
        if self.started_at is not None:
            wire["startedAt"] = self.started_at
        if self.completed_at is not None:
            wire["completedAt"] = self.completed_at
        if self.latency_ms is not None:
            wire["latencyMs"] = self.latency_ms
        if self._first_command_ms is not ABSENT:
            wire["firstCommandMs"] = self._first_command_ms
        if self._error_code is not ABSENT:
            wire["errorCode"] = self._error_code
        if self.steps is not None:
            wire["steps"] = [step.to_wire() for step in self.steps]
        if self.data is not None:
            wire["data"] = dict(self.data)
        return wire

    @classmethod
    def from_wire(
        cls, wire: Mapping[str, Any], *, where: str = "record", warmup: bool = False
    ) -> TaskRecord:
        """Read a wire object back; raises ``ValueError`` naming the offending field.

        ``warmup``: the record of a warm-up iteration, whose ``taskIndex`` is negative.
        """
        obj = _require_object(wire, where)
        _check_keys(obj, _TASK_KEYS, where)
        first_command_ms: float | Absent | None = ABSENT
        if "firstCommandMs" in obj:
            raw = obj["firstCommandMs"]
            first_command_ms = None if raw is None else _number(raw, f"{where}.firstCommandMs")
        error_code: str | Absent | None = ABSENT
        if "errorCode" in obj:
            raw = obj["errorCode"]
            error_code = None if raw is None else _string(raw, f"{where}.errorCode")
        steps: list[StepRecord] | None = None
        if "steps" in obj:
            raw_steps = obj["steps"]
            if not isinstance(raw_steps, list):
                raise ValueError(f"{where}.steps must be an array (got {_describe(raw_steps)})")
            steps = [
                StepRecord.from_wire(step, where=f"{where}.steps[{i}]")
                for i, step in enumerate(raw_steps)
            ]
        return cls(
            # A warm-up record's index is negative (it never goes on the wire).
            task_index=_integer(
                _required(obj, "taskIndex", where),
                f"{where}.taskIndex",
                -sys.maxsize if warmup else 0,
            ),
            status=_string(_required(obj, "status", where), f"{where}.status"),
            started_at=_opt_string(obj, "startedAt", where),
            completed_at=_opt_string(obj, "completedAt", where),
            latency_ms=_opt_number(obj, "latencyMs", where),
            first_command_ms=first_command_ms,
            error_code=error_code,
            steps=steps,
            data=None if "data" not in obj else _json_object(obj["data"], f"{where}.data"),
        )


def _opt_string(obj: Mapping[str, Any], key: str, where: str) -> str | None:
    return None if key not in obj else _string(obj[key], f"{where}.{key}")


def _opt_number(obj: Mapping[str, Any], key: str, where: str) -> float | None:
    return None if key not in obj else _number(obj[key], f"{where}.{key}")


def _records_converter(value: Iterable[TaskRecord]) -> tuple[TaskRecord, ...]:
    return tuple(value)


@attrs.frozen
class ParticipantRecords:
    """All records of one participant, in completion order (upstream ``ParticipantRecords``)."""

    participant: str
    records: tuple[TaskRecord, ...] = attrs.field(converter=_records_converter)

    def to_wire(self) -> JSONObject:
        """``{participant, records: [...]}`` with each record in wire form."""
        return {
            "participant": self.participant,
            "records": [record.to_wire() for record in self.records],
        }

    @classmethod
    def from_wire(
        cls, wire: Mapping[str, Any], *, where: str = "participantRecords"
    ) -> ParticipantRecords:
        """Read a wire object back; raises ``ValueError`` naming the offending field.

        ``warmup``: the record of a warm-up iteration, whose ``taskIndex`` is negative.
        """
        obj = _require_object(wire, where)
        _check_keys(obj, frozenset({"participant", "records"}), where)
        participant = _string(_required(obj, "participant", where), f"{where}.participant")
        raw_records = _required(obj, "records", where)
        if not isinstance(raw_records, list):
            raise ValueError(f"{where}.records must be an array (got {_describe(raw_records)})")
        return cls(
            participant=participant,
            records=[
                TaskRecord.from_wire(record, where=f"{where}.records[{i}]")
                for i, record in enumerate(raw_records)
            ],
        )


# --- log lines ---------------------------------------------------------------------------------

LogLevel = Literal["debug", "info", "warn", "error"]
#: Log levels in increasing severity (upstream ``LOG_LEVEL_ORDER``).
LOG_LEVELS: Final[tuple[str, ...]] = ("debug", "info", "warn", "error")


@attrs.frozen
class LogLine:
    """One line of a task's log.

    ``level`` None writes no level (upstream's step output capture lines; ours carry ``info``
    for stdout, ``warn`` for stderr, ``error`` for a captured error). ``format()`` gives
    ``<ISO> [task <i>] [<level>] <message>`` + `` <JSON meta>`` when ``meta`` has keys.
    """

    timestamp: str
    task_index: int
    level: str | None
    message: str
    meta: Mapping[str, Any] | None = None

    def format(self) -> str:
        """The line as upstream writes it to the worker log."""
        level = f" [{self.level}]" if self.level is not None else ""
        suffix = f" {js_json(dict(self.meta))}" if self.meta else ""
        return f"{self.timestamp} [task {self.task_index}]{level} {self.message}{suffix}"

    def __str__(self) -> str:
        return self.format()
