"""A user hook's result, awaited when the hook was async (``on_score``, ``on_complete`` and the
task may each be a coroutine function)."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

__all__ = ["resolve_awaitable"]


def resolve_awaitable(value: Any) -> Any:
    """Await a coroutine returned by a user hook (``on_score``/``on_complete`` may be async)."""
    if inspect.isawaitable(value):

        async def wait() -> Any:
            return await value

        return asyncio.run(wait())
    return value
