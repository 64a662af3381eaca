"""The executor: runs benchmark iterations with upstream's concurrency, stagger and round rules.

pytest runs items one at a time, but a benchmark needs N iterations in flight. The executor owns
one asyncio event loop in a daemon background thread (started lazily) and runs *groups*:

* ``mode="participant"`` — one participant's iterations as a pool of ``concurrency`` workers
  pulling iterations in order, with upstream's **anchored** stagger: ``t0`` is taken when the
  first iteration starts and the iteration with ordinal ``i`` starts no earlier than
  ``t0 + i × stagger_delay_ms`` (a worker that frees up after its slot starts at once).
* ``mode="round"`` — rounds in order; each round runs its participants at most ``concurrency``
  at a time (declared order), with a fixed ``sleep(stagger_delay_ms)`` before rounds 1..R-1.

Async tasks run as coroutines on the loop; sync tasks each run on their own daemon thread (so
``concurrency`` bounds the threads in use, and a thread stuck in user code can be abandoned on
cancellation without blocking interpreter exit).

Typical use from the pytest plugin (main thread)::

    executor = Executor()
    plan = GroupPlan.build(group_id=("e2b",), mode="participant", concurrency=4,
                           stagger_delay_ms=0, iterations=specs)  # "round": specs grouped
    futures = executor.start_group(plan)       # idempotent per group_id
    outcome = futures[item_key].result()       # in each item's call phase
    executor.release(plan.group_id, item_key)  # the item has it: keep nothing of it
    # concurrency == 1: outcome = executor.run_inline(plan, item_key, release=True)
    executor.cancel_all(); executor.shutdown()  # session end / -x / Ctrl-C

Every call is thread-safe. Records carry ISO-UTC timestamps derived from the monotonic clock.
"""

from __future__ import annotations

from pytest_benchsdk._base.public import publish
from pytest_benchsdk._engine.executor import (
    Executor,
    ExecutorShutdownError,
    GroupMode,
    GroupPlan,
    IterationSpec,
)

__all__ = [
    "Executor",
    "ExecutorShutdownError",
    "GroupMode",
    "GroupPlan",
    "IterationSpec",
]

publish(__name__, globals())
