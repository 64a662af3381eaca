"""The task context: ``step`` / ``measure`` / ``log``, ``TaskError`` and the record builder.

This is upstream's runner task context (``runTaskRecord`` in ``@benchsdk/runner``) re-made for
Python tasks, sync or async:

* ``step(name, fn)`` runs ``fn`` as a named, timed step (with ``timeout_ms`` and
  ``parallel_invocations``), records a :class:`~pytest_benchsdk.records.StepRecord` and returns
  ``fn``'s value. In a coroutine (an async task) it returns an awaitable; on a plain thread (a sync
  task) it runs now and returns the value. ``step(name)`` without ``fn`` is a block:
  ``with step("x"):`` / ``async with step("x"):``.
* ``measure(...)`` shallow-merges numbers/values into the active step's ``data`` or, outside any
  step, into the task's measures (which end up in ``record.data``). The active step is tracked
  with :mod:`contextvars`, so steps running concurrently in one task each get their own measures.
* ``log(message, meta)`` appends a :class:`LogLine` (``<ISO> [task <i>] [<level>] <message>``).
* :func:`run_task` / :func:`run_task_async` run a task function with a fresh context and build
  its :class:`~pytest_benchsdk.records.TaskRecord` with upstream's runner rules, returning
  an :class:`IterationOutcome` that also carries the original exception.

Timings use :data:`pytest_benchsdk._base.clock.CLOCK` (monotonic; ISO timestamps derived from it).
The step machinery lives in :mod:`pytest_benchsdk._engine.steps` and ``TaskError`` in
:mod:`pytest_benchsdk._engine.taskerror` (which ``_steps`` needs too); this module is their public
face.
"""

from __future__ import annotations

from pytest_benchsdk._base.public import publish
from pytest_benchsdk._engine.context import (
    IterationOutcome,
    TaskContext,
    TaskError,
    TaskResult,
    build_record,
    current_context,
    error_code_of,
    is_step_outcome,
    is_task_error,
    run_task,
    run_task_async,
)

__all__ = [
    "IterationOutcome",
    "TaskContext",
    "TaskError",
    "TaskResult",
    "build_record",
    "current_context",
    "error_code_of",
    "is_step_outcome",
    "is_task_error",
    "run_task",
    "run_task_async",
]

publish(__name__, globals())
