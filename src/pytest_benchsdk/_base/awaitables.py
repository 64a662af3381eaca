"""Awaitables the engine meets: a user hook's result, awaited when the hook was async
(``on_score``, ``on_complete`` and the task may each be a coroutine function); an awaitable
given up at a deadline (a step's ``timeout_ms``); whether a callable returns one at once."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["await_with_timeout", "is_coroutine_callable", "resolve_awaitable"]


def resolve_awaitable(value: Any) -> Any:
    """Await a coroutine returned by a user hook (``on_score``/``on_complete`` may be async)."""
    if inspect.isawaitable(value):

        async def wait() -> Any:
            return await value

        return asyncio.run(wait())
    return value


def is_coroutine_callable(fn: object) -> bool:
    """``fn`` is a coroutine function (also behind ``functools.partial``) or an object whose
    ``__call__`` is one: a call returns an awaitable at once."""
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(type(fn), "__call__", None)  # noqa: B004 - the class's method
    return call is not None and inspect.iscoroutinefunction(call)


def _consume_result(task: asyncio.Future[Any]) -> None:
    # Mark an abandoned task's exception as retrieved so asyncio does not warn about it.
    if not task.cancelled():
        task.exception()


async def await_with_timeout(
    awaitable: Awaitable[Any], timeout_s: float, on_timeout: Callable[[], BaseException]
) -> Any:
    """Await ``awaitable``; at the deadline cancel it, let it unwind, raise ``on_timeout()``."""
    task = asyncio.ensure_future(awaitable)
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout_s)
    except asyncio.CancelledError:
        task.cancel()
        task.add_done_callback(_consume_result)
        raise
    if task in done:
        return task.result()
    task.cancel()
    task.add_done_callback(_consume_result)
    # Wait for the work to acknowledge the cancellation (its finally blocks run) before the
    # step reports, like ``asyncio.wait_for``.
    await asyncio.wait({task})
    raise on_timeout()
