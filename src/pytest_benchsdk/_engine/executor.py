"""The implementation behind :mod:`pytest_benchsdk.executor` (its docstring says what it is)."""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures as cf
import contextlib
import contextvars
import threading
import time
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from typing import Any, Literal

import attrs

from pytest_benchsdk._base.clock import CLOCK, Clock
from pytest_benchsdk._base.coordination import StepCoordination
from pytest_benchsdk._config.validate import MAX_STAGGER_DELAY_MS
from pytest_benchsdk._engine.context import (
    IterationOutcome,
    TaskContext,
    run_task,
    run_task_async,
)

__all__ = ["Executor", "ExecutorShutdownError", "GroupMode", "GroupPlan", "IterationSpec"]


# ------------------------------------------------------------------ what runs

GroupMode = Literal["participant", "round"]


@attrs.frozen(eq=False)
class IterationSpec:
    """One scheduled iteration (one pytest item's task run).

    * ``key`` — any hashable identifying the iteration (e.g. ``(participant_name, task_index)``);
      unique within a group; the futures returned by :meth:`Executor.start_group` use it.
    * ``participant`` — the participant object handed to the task; ``participant_name`` its name
      (used in step-timeout messages).
    * ``phase`` — the phase name or None; ``task_index`` — the 0-based schedule index
      (``ctx.task_index``, ``record.task_index``).
    * ``ordinal`` — position of this iteration among its group's *selected* iterations (0-based);
      the participant-mode stagger slot (``t0 + ordinal × stagger``).
    * ``invoke(ctx)`` — calls the user task with the context (returns a value or an awaitable).
      An ``invoke`` with a ``bind(ctx)`` method has that called first, outside the timed
      region, and only the zero-argument function it returns is timed (see
      :func:`~pytest_benchsdk.context.run_task`): where finding the task's arguments takes
      work (the plugin resolves fixtures), that work is not the iteration's latency.
    * ``is_async`` — run on the event loop (True) or on a thread (False).
    * ``args`` — custom CLI flag values (``ctx.args``).
    * ``coordination`` — the participant's step coordination with the platform, if any
      (heartbeat samples, readiness barriers; ``ctx.coordination``).
    """

    key: Hashable
    participant: object
    participant_name: str
    phase: str | None
    task_index: int
    ordinal: int
    invoke: Callable[[TaskContext], object]
    is_async: bool
    args: Mapping[str, str] = attrs.field(factory=dict)
    coordination: StepCoordination | None = None


def _iterations_converter(value: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(item if isinstance(item, IterationSpec) else tuple(item) for item in value)


@attrs.frozen(eq=False)
class GroupPlan:
    """A set of iterations run as one pool.

    ``iterations``: participant mode — the group's specs in schedule order; round mode — a
    sequence of rounds, each a sequence of specs in declared participant order.
    ``concurrency`` (>= 1) bounds iterations in flight (within a round in round mode);
    ``stagger_delay_ms`` (>= 0) is the ramp slot (participant) or the pause between rounds.
    """

    group_id: Hashable
    mode: GroupMode
    concurrency: int
    stagger_delay_ms: float
    iterations: tuple[IterationSpec | tuple[IterationSpec, ...], ...] = attrs.field(
        converter=_iterations_converter
    )

    def __attrs_post_init__(self) -> None:
        if self.mode not in ("participant", "round"):
            raise ValueError(f"GroupPlan.mode must be 'participant' or 'round' (got {self.mode!r})")
        if not isinstance(self.concurrency, int) or self.concurrency < 1:
            raise ValueError(
                f"GroupPlan.concurrency must be an integer >= 1 (got {self.concurrency!r})"
            )
        if not 0 <= self.stagger_delay_ms <= MAX_STAGGER_DELAY_MS:
            raise ValueError(
                f"GroupPlan.stagger_delay_ms must be a number from 0 to "
                f"{MAX_STAGGER_DELAY_MS:,} (one hour; got {self.stagger_delay_ms!r})"
            )
        for item in self.iterations:
            if self.mode == "participant" and not isinstance(item, IterationSpec):
                raise TypeError("participant-mode GroupPlan.iterations must be IterationSpecs")
            if self.mode == "round" and (
                isinstance(item, IterationSpec)
                or not all(isinstance(s, IterationSpec) for s in item)
            ):
                raise TypeError("round-mode GroupPlan.iterations must be rounds (lists of specs)")
        keys = [spec.key for _, spec in self.indexed_specs()]
        if len(set(keys)) != len(keys):
            raise ValueError("GroupPlan iteration keys must be unique")

    @classmethod
    def build(
        cls,
        *,
        group_id: Hashable,
        mode: str,
        concurrency: int,
        stagger_delay_ms: float,
        iterations: Sequence[IterationSpec] | Sequence[Sequence[IterationSpec]],
    ) -> GroupPlan:
        """Build a plan from a group's specs: the one place that groups specs into rounds.

        Like the constructor, but in round mode ``iterations`` may also be a *flat* sequence of
        specs (what a scheduler naturally has for ``group_by="round"``): they are grouped into
        rounds by ``task_index`` (ascending), keeping the given order (declared participant
        order) within each round. ``mode`` is ``"participant"`` or ``"round"`` (anything else:
        ``ValueError``); a sequence of rounds, or participant-mode specs, pass through as is::

            plan = GroupPlan.build(group_id=gid, mode=resolved.group_by,
                                   concurrency=resolved.concurrency,
                                   stagger_delay_ms=resolved.stagger_delay_ms,
                                   iterations=specs)  # flat, in schedule order
        """
        items = list(iterations)
        if mode == "round" and items and all(isinstance(i, IterationSpec) for i in items):
            rounds: dict[int, list[IterationSpec]] = {}
            for spec in items:
                assert isinstance(spec, IterationSpec)
                rounds.setdefault(spec.task_index, []).append(spec)
            items = [tuple(rounds[index]) for index in sorted(rounds)]
        if mode not in ("participant", "round"):
            raise ValueError(f"GroupPlan.mode must be 'participant' or 'round' (got {mode!r})")
        return cls(
            group_id=group_id,
            mode="round" if mode == "round" else "participant",
            concurrency=concurrency,
            stagger_delay_ms=stagger_delay_ms,
            iterations=items,
        )

    @property
    def rounds(self) -> tuple[tuple[IterationSpec, ...], ...]:
        """The rounds (round mode); participant mode: one round holding every spec."""
        if self.mode == "round":
            return tuple(r for r in self.iterations if isinstance(r, tuple))
        return (tuple(s for s in self.iterations if isinstance(s, IterationSpec)),)

    def indexed_specs(self) -> Iterator[tuple[int, IterationSpec]]:
        """Every spec in run order with its round index (0 in participant mode)."""
        for round_index, specs in enumerate(self.rounds):
            for spec in specs:
                yield round_index, spec


class ExecutorShutdownError(RuntimeError):
    """Raised when work is submitted to an executor that has been shut down."""


@attrs.define(eq=False)
class _Group:
    """A group's run state. ``futures`` are made on demand (all of them when the group is
    started; one per iteration run inline) and dropped by :meth:`Executor.release`, so a group
    run inline holds no future per finished iteration (20,000 iterations would otherwise keep
    20,000 futures, their conditions and outcomes until the session ends)."""

    plan: GroupPlan
    specs: dict[Hashable, tuple[int, IterationSpec]]
    futures: dict[Hashable, cf.Future[IterationOutcome]] = attrs.Factory(dict)
    #: Iterations that started (or ran) and are not released yet. A released one has left
    #: ``specs`` too: nothing is kept per finished iteration (a set of every key cost ~100
    #: bytes an iteration for the whole session).
    claimed: set[Hashable] = attrs.Factory(set)
    launched: bool = False
    cancelled: bool = False
    runner: cf.Future[None] | None = None
    t0: float | None = None
    last_round: int | None = None

    def future(self, key: Hashable) -> cf.Future[IterationOutcome]:
        """The iteration's future, made now if needed (cancelled at once after
        :meth:`Executor.cancel_all`). Call under the executor's lock."""
        future = self.futures.get(key)
        if future is None:
            if key in self.claimed or key not in self.specs:
                raise KeyError(f"iteration {key!r} was released: its outcome is not kept")
            future = self.futures[key] = cf.Future()
            if self.cancelled:
                future.cancel()
        return future


def _planned(plan: GroupPlan, key: Hashable) -> bool:
    """Whether ``key`` is one of the plan's iterations (an error path's question: a scan)."""
    return any(spec.key == key for _, spec in plan.indexed_specs())


def _settle(
    future: cf.Future[IterationOutcome],
    outcome: IterationOutcome | None = None,
    error: BaseException | None = None,
) -> None:
    # A future cancelled by cancel_all() (or by its waiter) stays cancelled.
    try:
        if outcome is not None:
            future.set_result(outcome)
        else:
            future.set_exception(error)
    except cf.InvalidStateError:
        pass


class Executor:
    """Runs iteration groups on a background event loop (see the module docstring)."""

    def __init__(
        self,
        *,
        clock: Clock = CLOCK,
    ) -> None:
        self.clock = clock
        self._lock = threading.RLock()
        self._groups: dict[Hashable, _Group] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        self._task_threads: dict[threading.Thread, IterationSpec] = {}
        self._inline_futures: set[cf.Future[IterationOutcome]] = set()
        # Non-daemon threads a task left running, with the iteration during which they started.
        self._spawned: dict[threading.Thread, IterationSpec] = {}
        self._closed = False
        #: Set by :meth:`stop_starting` (a Ctrl-C): no iteration starts from then on.
        self.stopping = False
        self.abandoned_threads: tuple[threading.Thread, ...] = ()

    # ------------------------------------------------------------------ loop management

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The background event loop (started on first use)."""
        return self._ensure_loop()

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._closed:
                raise ExecutorShutdownError("the benchmark executor has been shut down")
            if self._loop is not None:
                return self._loop
            loop = asyncio.new_event_loop()
            ready = threading.Event()
            thread = threading.Thread(
                target=self._loop_main, args=(loop, ready), name="benchsdk-loop", daemon=True
            )
            thread.start()
            ready.wait()
            self._loop, self._loop_thread = loop, thread
            atexit.register(self.shutdown, 1.0)
            return loop

    @staticmethod
    def _loop_main(loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(ready.set)
        try:
            while True:
                try:
                    loop.run_forever()
                    break
                except (KeyboardInterrupt, SystemExit):
                    # asyncio re-raises these out of the loop when a task of benchmark code
                    # (a step's own task) raises one; that task's awaiter already has it, and
                    # every other iteration on the loop goes on.
                    continue
        finally:
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                loop.close()

    # ------------------------------------------------------------------ groups

    def _group(self, plan: GroupPlan) -> _Group:
        with self._lock:
            group = self._groups.get(plan.group_id)
            if group is None:
                specs = {spec.key: (r, spec) for r, spec in plan.indexed_specs()}
                group = _Group(plan=plan, specs=specs)
                self._groups[plan.group_id] = group
            return group

    def futures(self, group_id: Hashable) -> Mapping[Hashable, cf.Future[IterationOutcome]]:
        """The futures of a known group (empty mapping for an unknown one): every iteration's
        once the group is started, else those run inline; none of released iterations."""
        with self._lock:
            group = self._groups.get(group_id)
            return dict(group.futures) if group is not None else {}

    def release(self, group_id: Hashable, key: Hashable) -> None:
        """Forget iteration ``key``: its caller has the outcome. What the executor keeps per
        finished iteration is then only its key (so it never runs again; the plan still holds
        the spec); a later :meth:`run_inline` of it raises ``KeyError``. A no-op for an
        unknown group."""
        with self._lock:
            group = self._groups.get(group_id)
            if group is not None:
                group.futures.pop(key, None)
                group.specs.pop(key, None)
                group.claimed.discard(key)

    def start_group(self, plan: GroupPlan) -> Mapping[Hashable, cf.Future[IterationOutcome]]:
        """Start running every iteration of ``plan`` in the background (idempotent per
        ``plan.group_id``; later calls return the same futures). Iterations already run with
        :meth:`run_inline` are skipped. Each future resolves to an
        :class:`~pytest_benchsdk.context.IterationOutcome` (the task's own exceptions are in
        ``outcome.error``; the future raises only for ``BaseException`` s such as pytest's
        skip, and ends cancelled after :meth:`cancel_all`)."""
        group = self._group(plan)
        loop = self._ensure_loop()
        with self._lock:
            if not group.launched:
                group.launched = True
                for key in group.specs:
                    if key not in group.claimed:  # claimed ones have theirs, or were released
                        group.future(key)
                group.runner = asyncio.run_coroutine_threadsafe(self._run_group(group), loop)
            return dict(group.futures)

    def run_inline(
        self, plan: GroupPlan, key: Hashable, *, release: bool = False
    ) -> IterationOutcome:
        """Run the iteration ``key`` of ``plan`` now, blocking the caller (for concurrency 1).

        The group's stagger / round pause applies relative to the iterations run before it
        (participant mode: not before ``t0 + ordinal × stagger``; round mode: a pause before the
        first iteration of each new round). A sync task runs on the calling thread (so
        function-scoped fixtures and debuggers work); an async one on the loop. If the group
        was started with :meth:`start_group` (or the iteration already ran) this just waits for
        its result. Raises ``concurrent.futures.CancelledError`` after :meth:`cancel_all`.

        ``release=True`` also :meth:`release` s the iteration: the caller keeps the outcome and
        the executor makes no future for it (what the plugin does, once per iteration).
        """
        group = self._group(plan)
        with self._lock:
            entry = group.specs.get(key)
            if entry is None:
                if _planned(group.plan, key):
                    raise KeyError(f"iteration {key!r} was released: its outcome is not kept")
                raise KeyError(key)
            round_index, spec = entry
            wait_only = group.launched or key in group.claimed
            # A future only where another caller may ask for the outcome.
            future = group.future(key) if wait_only or not release else None
            if not wait_only:
                group.claimed.add(key)
        if future is not None and wait_only:
            outcome = future.result()
            if release:
                self.release(plan.group_id, key)
            return outcome
        if plan.mode == "participant":
            target = self._ramp_target(group, spec)
            while target is not None and (delay := target - self.clock.monotonic()) > 0:
                time.sleep(delay)
        else:
            pause = self._round_pause(group, round_index)
            if pause > 0:
                time.sleep(pause)

        def cancelled() -> bool:
            return group.cancelled if future is None else future.cancelled()

        if cancelled() or self.stopping:
            raise cf.CancelledError()
        loop = self._ensure_loop()
        before = set(threading.enumerate())
        try:
            if spec.is_async:
                # Register under the lock so a concurrent cancel_all() either sees this run or
                # has already cancelled the iteration (checked right here).
                with self._lock:
                    inner = asyncio.run_coroutine_threadsafe(
                        self._run_async(spec, loop, plan.concurrency == 1), loop
                    )
                    self._inline_futures.add(inner)
                    if cancelled():
                        inner.cancel()
                try:
                    outcome = inner.result()
                except BaseException:
                    inner.cancel()
                    raise
                finally:
                    with self._lock:
                        self._inline_futures.discard(inner)
            else:
                ctx = self._context(spec, loop, plan.concurrency == 1)
                outcome = run_task(ctx, spec.invoke)  # in a context of its own
        except (KeyboardInterrupt, cf.CancelledError, asyncio.CancelledError):
            if future is not None:
                future.cancel()
            raise
        except BaseException as exc:
            if future is not None:
                _settle(future, error=exc)
            raise
        finally:
            self._note_spawned(spec, before)
            if release:
                self.release(plan.group_id, key)
        if future is not None:
            _settle(future, outcome)
        if cancelled():
            raise cf.CancelledError()
        return outcome

    def _ramp_target(self, group: _Group, spec: IterationSpec) -> float | None:
        """Participant mode: the monotonic time ``spec`` may start at (None: no stagger).

        The ramp origin ``t0`` is taken when the group's first iteration starts (anchored:
        slot ``i`` is ``t0 + i × stagger``, never accumulated from the previous start)."""
        stagger_s = group.plan.stagger_delay_ms / 1000.0
        if stagger_s <= 0:
            return None
        with self._lock:
            if group.t0 is None:
                group.t0 = self.clock.monotonic()
            return group.t0 + spec.ordinal * stagger_s

    def _round_pause(self, group: _Group, round_index: int) -> float:
        """Round mode: seconds to pause before an iteration of ``round_index`` starts — the
        fixed stagger once when a later round begins, else 0."""
        stagger_s = group.plan.stagger_delay_ms / 1000.0
        with self._lock:
            previous = group.last_round
            if previous is not None and round_index <= previous:
                return 0.0
            group.last_round = round_index
            return stagger_s if previous is not None and stagger_s > 0 else 0.0

    def _claim(self, group: _Group, spec: IterationSpec) -> bool:
        if self.stopping:
            return False
        with self._lock:
            if spec.key in group.claimed or spec.key not in group.specs:  # running, released
                return False
            if group.future(spec.key).done():
                return False
            group.claimed.add(spec.key)
            return True

    async def _run_group(self, group: _Group) -> None:
        plan = group.plan
        loop = asyncio.get_running_loop()
        try:
            if plan.mode == "participant":
                await self._run_pool(group, group.plan.rounds[0], 0, loop)
            else:
                for round_index, specs in enumerate(plan.rounds):
                    if any(s.key in group.specs and s.key not in group.claimed for s in specs):
                        await self._run_pool(group, specs, round_index, loop)
        except asyncio.CancelledError:
            with self._lock:
                futures = list(group.futures.values())
            for future in futures:
                future.cancel()
            raise

    async def _run_pool(
        self,
        group: _Group,
        specs: Sequence[IterationSpec],
        round_index: int,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        pending = iter(specs)
        participant_mode = group.plan.mode == "participant"
        if not participant_mode:
            pause = self._round_pause(group, round_index)
            if pause > 0:
                await asyncio.sleep(pause)

        workers = min(group.plan.concurrency, len(specs))
        alone = group.plan.concurrency == 1

        async def worker() -> None:
            for spec in pending:  # shared iterator: workers pull the next iteration in order
                if not self._claim(group, spec):
                    continue
                target = self._ramp_target(group, spec) if participant_mode else None
                if target is not None:
                    await self._sleep_until(target)
                # Made by _claim. Read without the lock: the loop must not wait for it while
                # finishing task threads hold it (that cost up to 20% of the sync makespan).
                future = group.futures.get(spec.key)
                if future is None or future.cancelled():  # None: released meanwhile
                    continue
                try:
                    outcome = await self._run_async(spec, loop, alone)
                except asyncio.CancelledError:
                    future.cancel()
                    raise
                except BaseException as exc:
                    if self.stopping:  # it was in flight when the session stopped
                        future.cancel()
                    _settle(future, error=exc)
                    continue
                if self.stopping:
                    # In flight when the session stopped (Ctrl-C): what it ended with may be
                    # the stop's doing (a terminal's Ctrl-C also stops the servers and the
                    # subprocesses it uses), so it is neither kept nor scored.
                    future.cancel()
                _settle(future, outcome)

        await asyncio.gather(*(worker() for _ in range(workers)))

    async def _sleep_until(self, target: float) -> None:
        # asyncio timers may wake up to ~1 ms late (epoll has millisecond resolution): sleep
        # to just before the target, then yield until it passes, so ramp starts are precise.
        while True:
            remaining = target - self.clock.monotonic()
            if remaining <= 0:
                return
            # The final <= 1.5 ms is a cooperative spin (sleep(0) yields to other tasks).
            await asyncio.sleep(remaining - 0.0015 if remaining > 0.002 else 0)

    # ------------------------------------------------------------------ one iteration

    def _context(
        self, spec: IterationSpec, loop: asyncio.AbstractEventLoop, alone: bool
    ) -> TaskContext:
        """The iteration's context. ``alone``: its participant runs one iteration at a time,
        so an async task's process CPU time is the iteration's own."""
        return TaskContext(
            participant=spec.participant,
            participant_name=spec.participant_name,
            task_index=spec.task_index,
            phase=spec.phase,
            args=spec.args,
            is_async=spec.is_async,
            clock=self.clock,
            loop=loop,
            coordination=spec.coordination,
            process_cpu_time=spec.is_async and alone,
            alone=alone,
        )

    async def _run_async(
        self, spec: IterationSpec, loop: asyncio.AbstractEventLoop, alone: bool
    ) -> IterationOutcome:
        ctx = self._context(spec, loop, alone)
        if spec.is_async:
            return await run_task_async(ctx, spec.invoke)
        return await self._run_on_thread(ctx, spec, loop)

    async def _run_on_thread(
        self, ctx: TaskContext, spec: IterationSpec, loop: asyncio.AbstractEventLoop
    ) -> IterationOutcome:
        result: asyncio.Future[IterationOutcome] = loop.create_future()

        def deliver(outcome: IterationOutcome | None, error: BaseException | None) -> None:
            if result.done():
                return  # cancelled meanwhile: the thread's work is dropped
            if error is not None:
                result.set_exception(error)
            else:
                assert outcome is not None
                result.set_result(outcome)

        def body() -> None:
            outcome: IterationOutcome | None = None
            error: BaseException | None = None
            before = set(threading.enumerate())
            try:
                if not result.cancelled():
                    outcome = run_task(ctx, spec.invoke)
            except BaseException as exc:  # handed to the loop
                error = exc
            finally:
                self._note_spawned(spec, before)
                with self._lock:
                    self._task_threads.pop(threading.current_thread(), None)
            # RuntimeError: the loop is closed; the iteration was abandoned at shutdown.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(deliver, outcome, error)

        thread = threading.Thread(
            target=contextvars.Context().run,
            args=(body,),
            name=f"benchsdk-task-{spec.participant_name}-{spec.task_index}",
            daemon=True,
        )
        with self._lock:
            self._task_threads[thread] = spec
        thread.start()
        return await result

    def _note_spawned(self, spec: IterationSpec, before: set[threading.Thread]) -> None:
        """Remember the non-daemon threads that appeared while ``spec`` ran and still run (with
        concurrency > 1 another iteration running at the same time may have started them)."""
        spawned = [
            t for t in threading.enumerate() if t not in before and not t.daemon and t.is_alive()
        ]
        if spawned:
            with self._lock:
                self._spawned = {t: s for t, s in self._spawned.items() if t.is_alive()}
                for thread in spawned:
                    if thread not in self._task_threads:
                        self._spawned.setdefault(thread, spec)

    # ------------------------------------------------------------------ stopping

    def stop_starting(self) -> None:
        """Start no iteration from now on (a Ctrl-C: the session stops); those running go on
        until :meth:`cancel_all`, and what they end with is dropped (their futures end
        cancelled). Safe in a signal handler: it only sets a flag, which the pool's workers
        read before each iteration."""
        self.stopping = True

    def cancel_all(self) -> None:
        """Cancel every pending and running iteration of every group.

        Their futures end cancelled; running async tasks receive ``CancelledError``; running
        sync tasks' threads are abandoned (a thread cannot be killed; it finishes on its own
        and its result is dropped). Idempotent; the executor stays usable for new groups.
        """
        with self._lock:
            groups = list(self._groups.values())
            inline = list(self._inline_futures)
            futures: list[cf.Future[IterationOutcome]] = []
            for group in groups:
                # Iterations whose future is made later start cancelled too.
                group.cancelled = True
                futures.extend(group.futures.values())
        for group in groups:
            if group.runner is not None:
                group.runner.cancel()
        for future in futures:
            future.cancel()
        for future in inline:
            future.cancel()

    def shutdown(self, timeout: float = 5.0, *, thread_grace: float = 0.5) -> list[str]:
        """Cancel everything, stop the loop (async tasks get up to ``timeout`` seconds to
        unwind) and give the threads still running user code ``thread_grace`` seconds to end.

        Returns what was abandoned, one line each: sync iterations still running on their
        (daemon) threads, and non-daemon threads that tasks started and left running (kept in
        :attr:`abandoned_threads`: the interpreter would wait for those at exit). Leaves no
        asyncio task running. Idempotent (later calls return ``[]``); safe at interpreter exit.
        """
        with self._lock:
            if self._closed:
                return []
            self.cancel_all()
            self._closed = True
            loop, thread = self._loop, self._loop_thread
        atexit.unregister(self.shutdown)
        deadline = time.monotonic() + max(0.0, timeout)
        if loop is not None and thread is not None:
            if threading.current_thread() is thread:
                loop.stop()  # called from a callback on the loop: stop after this iteration
                return []
            if thread.is_alive() and not loop.is_closed():
                drain = _drain(loop, timeout)
                try:
                    drained = asyncio.run_coroutine_threadsafe(drain, loop)
                except RuntimeError:  # the loop closed meanwhile
                    drain.close()  # never started: no "never awaited" warning
                else:
                    with contextlib.suppress(cf.TimeoutError, cf.CancelledError, RuntimeError):
                        drained.result(max(0.0, deadline - time.monotonic()) + 0.5)
            with contextlib.suppress(RuntimeError):  # already closed
                loop.call_soon_threadsafe(loop.stop)
            thread.join(max(0.0, deadline - time.monotonic()))
        grace_end = time.monotonic() + max(0.0, min(thread_grace, timeout))
        with self._lock:
            task_threads = dict(self._task_threads)
            spawned = dict(self._spawned)
        for waited in [*task_threads, *spawned]:
            waited.join(max(0.0, grace_end - time.monotonic()))
        abandoned: list[str] = []
        for task_thread, spec in task_threads.items():
            if task_thread.is_alive():
                abandoned.append(
                    f"iteration {_iteration_name(spec)}: its sync task was still running "
                    f"(thread {task_thread.name!r}); its result is dropped"
                )
        leaked = [t for t in spawned if t.is_alive()]
        for leaked_thread in leaked:
            abandoned.append(
                f"thread {leaked_thread.name!r} (non-daemon), started during iteration "
                f"{_iteration_name(spawned[leaked_thread])}, was still running"
            )
        self.abandoned_threads = tuple(leaked)
        return abandoned

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()


def _iteration_name(spec: IterationSpec) -> str:
    phase = f" ({spec.phase})" if spec.phase else ""
    return f"{spec.participant_name} #{spec.task_index}{phase}"


async def _drain(loop: asyncio.AbstractEventLoop, timeout: float) -> None:
    """Cancel every other task on ``loop`` and wait (bounded) for them to finish."""
    current = asyncio.current_task()
    tasks = [t for t in asyncio.all_tasks(loop) if t is not current]
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=timeout)
    for task in tasks:
        if task.done() and not task.cancelled():
            task.exception()  # retrieved: no "exception was never retrieved" noise
