"""What the steps of one participant tell the platform while they run, and the readiness barrier.

A leaf: the engine's steps write to a :class:`StepCoordination` (``enter``/``leave`` around
every step, :meth:`StepCoordination.wait_ready` before a ``readiness="poll"`` step), and the
platform layer reads it (heartbeat ``currentStep`` and ``concurrency`` samples, as upstream's
worker does) and provides the :class:`Barrier` that polls the run's progress. Neither imports
the other.

One :class:`StepCoordination` serves one participant of one benchmark in one process (the
claimed platform worker's view of its own steps); it is thread-safe, because steps of sync
tasks run on threads.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from functools import partial
from typing import Any, Final, Protocol

__all__ = ["DEFAULT_READY_POLL_INTERVAL_MS", "MAX_SAMPLES", "Barrier", "StepCoordination"]

#: Upstream's client-side limit of concurrency samples per heartbeat.
MAX_SAMPLES: Final = 20
#: How often a ``readiness="poll"`` step asks whether its step is ready (upstream: 1000 ms).
DEFAULT_READY_POLL_INTERVAL_MS: Final = 1000.0


class Barrier(Protocol):
    """Blocks until every worker of the pool has arrived at a step (the platform says so)."""

    def wait(
        self, step: str, sample: dict[str, Any], timeout_s: float | None, poll_interval_s: float
    ) -> bool:
        """Wait until ``step`` is ready (True) or ``timeout_s`` passed (False). ``sample`` is
        this worker's ``{step, active, target}`` for the barrier heartbeat."""
        ...


class StepCoordination:
    """Active step invocations of one participant in this process, and its barrier.

    ``concurrency``: the target of a step without ``parallel_invocations`` (upstream: the
    worker's concurrency). ``barrier``: the platform's barrier, or ``None`` when there is no
    platform to ask (dry run, local only, xdist workers): a ``readiness="poll"`` step then
    proceeds at once. ``on_change``: called after every step start and end (the heartbeat
    sender coalesces). ``ready_poll_interval_ms``: how often a ``readiness="poll"`` step without
    its own ``ready_poll_interval_ms`` asks the platform (upstream's worker option, 1000 ms).
    """

    def __init__(
        self,
        concurrency: int,
        *,
        barrier: Barrier | None = None,
        on_change: Callable[[], None] | None = None,
        ready_poll_interval_ms: float = DEFAULT_READY_POLL_INTERVAL_MS,
    ) -> None:
        self.concurrency = max(1, int(concurrency))
        self.barrier = barrier
        self.ready_poll_interval_ms = float(ready_poll_interval_ms)
        self._on_change = on_change
        self._lock = threading.Lock()
        # step -> [active invocations, target]; insertion order breaks ties in the samples.
        self._steps: dict[str, list[int]] = {}
        # One barrier wait per (event loop, step) at a time, shared by the async waiters: a
        # thread per waiter would queue on the loop's small default executor.
        self._async_waits: dict[tuple[int, str], asyncio.Future[bool]] = {}

    def target_of(self, parallel_invocations: int | None) -> int:
        """A step's target: its ``parallel_invocations``, else the worker's concurrency."""
        return int(parallel_invocations) if parallel_invocations else self.concurrency

    def enter(self, step: str, target: int, invocations: int = 1) -> None:
        """``invocations`` of ``step`` started (or arrived at its barrier)."""
        with self._lock:
            entry = self._steps.setdefault(step, [0, target])
            entry[0] += invocations
            entry[1] = target
        if self._on_change is not None:
            self._on_change()

    def leave(self, step: str, invocations: int = 1) -> None:
        """``invocations`` of ``step`` ended."""
        with self._lock:
            entry = self._steps.get(step)
            if entry is not None:
                entry[0] = max(0, entry[0] - invocations)
        if self._on_change is not None:
            self._on_change()

    def active(self, step: str) -> int:
        with self._lock:
            entry = self._steps.get(step)
            return entry[0] if entry is not None else 0

    def samples(self) -> list[dict[str, Any]]:
        """Up to :data:`MAX_SAMPLES` ``{step, active, target}`` of the steps with active
        invocations, most active first (unique steps, as the platform requires)."""
        with self._lock:
            active = [(name, a, t) for name, (a, t) in self._steps.items() if a > 0]
        active.sort(key=lambda sample: -sample[1])  # stable: ties keep first-seen order
        return [{"step": n, "active": a, "target": t} for n, a, t in active[:MAX_SAMPLES]]

    def wait_ready(
        self, step: str, target: int, timeout_s: float | None, poll_interval_s: float
    ) -> bool:
        """Block until ``step`` is ready in the whole pool (True) or ``timeout_s`` passed
        (False). Without a barrier: True at once."""
        if self.barrier is None:
            return True
        sample = {"step": step, "active": max(1, self.active(step)), "target": target}
        return self.barrier.wait(step, sample, timeout_s, poll_interval_s)

    async def wait_ready_async(
        self, step: str, target: int, timeout_s: float | None, poll_interval_s: float
    ) -> bool:
        """:meth:`wait_ready` for a coroutine: concurrent waiters of one step on one loop share
        one wait on a helper thread; each stops at its own ``timeout_s``."""
        if self.barrier is None:
            return True
        loop = asyncio.get_running_loop()
        deadline = None if timeout_s is None else loop.time() + timeout_s
        while True:
            key = (id(loop), step)
            shared = self._async_waits.get(key)
            if shared is None:
                remaining = None if deadline is None else max(0.0, deadline - loop.time())
                shared = asyncio.ensure_future(
                    asyncio.to_thread(self.wait_ready, step, target, remaining, poll_interval_s)
                )
                self._async_waits[key] = shared
                shared.add_done_callback(partial(self._forget, key))
            remaining = None if deadline is None else max(0.0, deadline - loop.time())
            try:
                ready = await asyncio.wait_for(asyncio.shield(shared), remaining)
            except asyncio.TimeoutError:
                return False
            if ready:
                return True
            # The shared wait gave up at its own (earlier) deadline: try again while ours lasts.
            if deadline is not None and loop.time() >= deadline:
                return False

    def _forget(self, key: tuple[int, str], done: asyncio.Future[bool]) -> None:
        if self._async_waits.get(key) is done:
            del self._async_waits[key]
