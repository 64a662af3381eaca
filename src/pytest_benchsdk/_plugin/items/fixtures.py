"""The fixtures a task may ask for.

A task's parameters are pytest fixtures. For the per-iteration ones
(:data:`~pytest_benchsdk._engine.plans.CONTEXT_FIXTURES`, the one table that maps them onto the
iteration, shared with the programmatic runs)
the runtime passes the iteration's own :class:`~pytest_benchsdk.context.TaskContext` values
straight to the task (so concurrent iterations never share them); the fixture functions below
serve everything else that asks for them (other fixtures, ``request.getfixturevalue``). Any other
fixture, ``request`` included, reaches the task as pytest set it up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_benchsdk._engine.benchfile import BenchIteration

__all__ = [
    "bench",
    "log",
    "measure",
    "participant",
    "phase",
    "step",
    "task_index",
]


def _iteration(request: pytest.FixtureRequest, fixture: str) -> BenchIteration:
    # Imported here: every pytest session registers these fixtures, few ask for one.
    from pytest_benchsdk._engine.benchfile import BenchIteration

    iteration = getattr(request.node, "bench", None)
    if not isinstance(iteration, BenchIteration):
        raise pytest.UsageError(
            f"the '{fixture}' fixture is only available to benchmark tasks "
            "(bench files run with --bench)"
        )
    return iteration


class _LateContext:
    """Stands in for the iteration's context in fixtures that depend on ``step``/``log``...

    The task itself receives the real context objects; this proxy only serves other fixtures
    and forwards to the context once the iteration runs.
    """

    def __init__(self, fixture: str) -> None:
        self._fixture = fixture

    def _target(self) -> Any:
        from pytest_benchsdk._engine.context import current_context
        from pytest_benchsdk._engine.plans import context_value

        ctx = current_context()
        if ctx is None:
            raise RuntimeError(
                f"'{self._fixture}' can only be used while the benchmark iteration runs"
            )
        return context_value(ctx, self._fixture)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._target()(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target(), name)


def _late(request: pytest.FixtureRequest, fixture: str) -> Any:
    _iteration(request, fixture)
    return _LateContext(fixture)


@pytest.fixture
def participant(request: pytest.FixtureRequest) -> Any:
    """The participant this iteration runs for (its extra fields are attributes, e.g. ``.sdk``)."""
    return _iteration(request, "participant").participant


@pytest.fixture
def phase(request: pytest.FixtureRequest) -> str | None:
    """The name of this iteration's phase, or None when the benchmark has no phases."""
    return _iteration(request, "phase").slot.phase


@pytest.fixture
def task_index(request: pytest.FixtureRequest) -> int:
    """This iteration's 0-based index in its participant's schedule."""
    return _iteration(request, "task_index").slot.index


@pytest.fixture
def step(request: pytest.FixtureRequest) -> Any:
    """``step(name, fn=None, *, timeout_ms=None, parallel_invocations=None, capture_output=True)``:
    run ``fn`` as a named, timed step (awaitable in async tasks; without ``fn`` a ``with`` /
    ``async with`` block). A timeout raises ``TaskError(code="step_timeout")``."""
    return _late(request, "step")


@pytest.fixture
def measure(request: pytest.FixtureRequest) -> Any:
    """``measure(**data)`` or ``measure(dict)``: add data to the running step, else to the
    iteration's record (``record.data``), which scoring reads."""
    return _late(request, "measure")


@pytest.fixture
def log(request: pytest.FixtureRequest) -> Any:
    """``log(message, meta=None, level="info")``: a line in the participant's log
    (``<ISO> [task <i>] [<level>] <message>``), kept in the store and uploaded to the platform."""
    return _late(request, "log")


@pytest.fixture
def bench(request: pytest.FixtureRequest) -> Any:
    """The whole task context: ``participant``, ``phase``, ``task_index``, ``step``,
    ``measure``, ``log`` and ``args`` (values of the file's custom flags from ``--bench-arg``)."""
    return _late(request, "bench")
