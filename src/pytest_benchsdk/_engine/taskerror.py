"""``TaskError`` and the error-code rules shared by the step machinery and the record builder.

Both :mod:`pytest_benchsdk.context` (records) and :mod:`pytest_benchsdk._engine.steps` (step
timeouts, step records) need these; keeping them here lets ``context`` import ``steps`` without a
cycle.
The public home of these names is :mod:`pytest_benchsdk.context`: the package facade
(``pytest_benchsdk/__init__.py``) sets their ``__module__`` to it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from pytest_benchsdk._base.js import js_json, py_value, to_json_value
from pytest_benchsdk.records import StepRecord

__all__ = ["TaskError", "error_code_of", "is_task_error"]


class TaskError(Exception):
    """An expected task failure carrying an error code and data into the record.

    ``TaskError(message, *, code=None, data=None, steps=None, step=None, timeout_ms=None)``.
    The record of a task that raises it gets ``status='error'``, ``error_code = code`` (or
    ``'TaskError'`` when ``code`` is None) and ``data = measures ∪ data ∪ {errorMessage} ∪
    {phase}`` (``errorMessage`` is the message, when it is not empty); ``steps`` (pre-measured
    :class:`StepRecord` s or their wire dicts) are appended to the record's steps.
    ``str(err)`` is upstream's ``toString()`` with the data on one line (upstream: JSON with a
    2-space indent, whose continuation lines do not line up)::

        [TaskError (code)] message
          step: <step>
          timeoutMs: <n>
          data: {"key":"value"}
    """

    name: Final = "TaskError"

    def __init__(
        self,
        message: str = "",
        *,
        code: str | None = None,
        data: Mapping[str, Any] | None = None,
        steps: Sequence[StepRecord | Mapping[str, Any]] | None = None,
        step: str | None = None,
        timeout_ms: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message: str = message
        self.code: str | None = code
        self.data: dict[str, Any] | None = dict(data) if data is not None else None
        self.steps: tuple[StepRecord | Mapping[str, Any], ...] | None = (
            tuple(steps) if steps is not None else None
        )
        self.step: str | None = step
        self.timeout_ms: float | None = timeout_ms

    def __str__(self) -> str:
        text = f"[{self.name}{f' ({self.code})' if self.code else ''}] {self.message}"
        if self.step:
            text += f"\n  step: {self.step}"
        if self.timeout_ms is not None:
            text += f"\n  timeoutMs: {py_value(self.timeout_ms)}"
        if self.data:
            text += f"\n  data: {_data_text(self.data)}"
        return text

    def __repr__(self) -> str:
        parts = [repr(self.message)]
        for field in ("code", "data", "steps", "step", "timeout_ms"):
            value = getattr(self, field)
            if value is not None:
                parts.append(f"{field}={value!r}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def __reduce__(self) -> tuple[Any, ...]:
        # Keyword-only arguments are not in ``args``; rebuild explicitly so the error survives
        # pickling (xdist, multiprocessing).
        return (
            _rebuild_task_error,
            (
                type(self),
                self.message,
                self.code,
                self.data,
                self.steps,
                self.step,
                self.timeout_ms,
            ),
        )


def _data_text(data: Mapping[str, Any]) -> str:
    # str() of an error must never raise: data without a JSON form is shown as Python sees it.
    try:
        return js_json(to_json_value(data))
    except (TypeError, ValueError, RecursionError):
        try:
            return repr(data)
        except Exception:
            return f"<{type(data).__name__}>"


def _rebuild_task_error(
    cls: type[TaskError],
    message: str,
    code: str | None,
    data: Mapping[str, Any] | None,
    steps: Sequence[Any] | None,
    step: str | None,
    timeout_ms: float | None,
) -> TaskError:
    return cls(message, code=code, data=data, steps=steps, step=step, timeout_ms=timeout_ms)


def is_task_error(exc: object) -> bool:
    """True for a :class:`TaskError` or any exception whose class is named ``TaskError``.

    Name-based recognition mirrors upstream (``error.name === 'TaskError'``), so a TaskError
    class from another copy of the package (vendored, reloaded) is still recognised.
    """
    return isinstance(exc, TaskError) or (
        isinstance(exc, BaseException) and type(exc).__name__ == "TaskError"
    )


def error_code_of(exc: object) -> str:
    """Upstream ``getErrorCode``: a non-empty string ``code`` attribute, else the class name.

    ``'ERROR'`` for values that are not exceptions.
    """
    if not isinstance(exc, BaseException):
        return "ERROR"
    code = getattr(exc, "code", None)
    if isinstance(code, str) and code:
        return code
    return type(exc).__name__ or "ERROR"
