"""Durable delivery of platform traffic through the results store's outbox.

Every operation of a run's lifecycle (benchmark upsert, run creation, participant registration,
worker plan and claim, event batches, artifacts, complete/fail, run summary) is an outbox entry
written *before* it is sent and marked sent after a 2xx (see :mod:`._run_upload` for the
entries, :mod:`._operations` for the requests). The :class:`Sender` delivers entries in
insertion order; an entry that needs an id produced by an earlier one (the platform run id, the
worker and attempt ids) names that entry as ``depends_on`` and reads the id from the store's
per-run state when it is sent, so the whole lifecycle can be replayed later by
:func:`resubmit`, also when nothing ever reached the platform.

Failures: connection errors, timeouts, 2xx answers cut off on their way, 429 and 5xx are retried
with exponential backoff and jitter (``Retry-After`` honoured); an answer larger than the
client's cap stops delivery for the session (asking again would get it again); after
``RetryPolicy.offline_after_s`` without any success the sender stops for this session
(everything stays in the outbox). 401/403 stop the session's delivery too (fix the credentials,
then resubmit). A 404 is no verdict on the data (the run or worker is unknown to *this*
platform: a wrong URL, another org): the entry stays queued and the run is put aside for the
session. Other 4xx reject the entry with the platform's message; a rejected entry stays in the
store (``ResultStore.outbox_entries(run_id, "rejected")``) and ``--bench-resubmit --bench-
resubmit-rejected`` sends it again.

One process delivers a run at a time: the sender holds the run's *delivery lease* in the store
(:meth:`pytest_benchsdk.store.ResultStore.outbox_lease`), renewed while it runs and given back
at the end; a killed holder frees it at once on the same host, elsewhere after
:data:`LEASE_TTL_S`. Each outbox run also remembers the platform (API base URL and org) it is
reported to; :func:`resubmit` refuses to send a run to another platform unless asked to.

Idempotency: each entry has a unique key and is sent until one attempt succeeds; an event batch
keeps its sequence number, so a batch whose 2xx was lost is answered ``duplicate`` by the
platform instead of being stored twice.
"""

from __future__ import annotations

import os
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence

import attrs

from pytest_benchsdk._base.redact import redact_url
from pytest_benchsdk.platform._client import BenchmarkClient
from pytest_benchsdk.platform._deadline import join_within
from pytest_benchsdk.platform._errors import (
    AnswerTooLargeError,
    BenchmarkApiError,
    MalformedAnswerError,
    PlatformConnectionError,
    PlatformUnreachableError,
    platform_message,
)
from pytest_benchsdk.platform._operations import (
    Blocked,
    Reject,
    claim_tried_key,
    kind_label,
    perform,
)
from pytest_benchsdk.platform._outbox import (
    STATE_RUN,
    OutboxEntryLike,
    OutboxStore,
    worker_state_key,
)
from pytest_benchsdk.platform._recovery import recover_run

__all__ = [
    "LEASE_TTL_S",
    "STATE_DELIVERED",
    "DeliverySummary",
    "OutboxEntryLike",
    "OutboxStore",
    "RetryPolicy",
    "Sender",
    "note_if_delivered",
    "outstanding_lines",
    "resubmit",
    "resubmit_candidates",
]

#: What to run to send what is left; shown whenever something stays undelivered.
RESUBMIT_COMMAND = "pytest --bench-resubmit"
#: How to send rejected uploads again (after fixing what the platform complained about).
RESUBMIT_REJECTED_COMMAND = "pytest --bench-resubmit --bench-resubmit-rejected"
#: The option that lets a resubmit send runs to another platform than the one they were for.
OTHER_PLATFORM_OPTION = "--bench-resubmit-to-other-platform"
#: Seconds a delivery lease lasts without renewal (it is renewed every third of that).
LEASE_TTL_S = 60.0


def new_lease_holder() -> str:
    """A delivery-lease holder id: ``<host>|<pid>|<random>`` (the store checks the pid)."""
    return f"{socket.gethostname()}|{os.getpid()}|{uuid.uuid4().hex[:8]}"


def describe_holder(holder: str) -> str:
    """``process 123 on host-a`` for a lease holder id."""
    host, _, rest = holder.partition("|")
    return f"process {rest.partition('|')[0]} on {host}"


@attrs.frozen
class RetryPolicy:
    """Backoff for transient failures.

    The n-th consecutive failure waits ``min(max_delay_s, base_delay_s × 2^n)`` with jitter
    (between half and all of it), or the platform's ``Retry-After`` (at most
    ``max_retry_after_s``). After ``offline_after_s`` seconds without a single success the
    sender gives up for this session.
    """

    base_delay_s: float = 0.5
    max_delay_s: float = 15.0
    max_retry_after_s: float = 60.0
    offline_after_s: float = 60.0

    def delay(self, failures: int, retry_after: float | None) -> float:
        """Seconds to wait after ``failures`` consecutive failures (≥ 1)."""
        if retry_after is not None:
            return min(retry_after, self.max_retry_after_s)
        ceiling = min(self.max_delay_s, self.base_delay_s * 2.0 ** min(failures - 1, 30))
        return ceiling / 2 + random.uniform(0, ceiling / 2)


@attrs.frozen
class DeliverySummary:
    """What happened to the outbox: ``sent`` in this session, ``unsent`` still queued,
    ``rejected`` messages (permanently refused), ``stopped`` why delivery stopped early,
    ``blocked`` entries dropped because an entry they needed did not give them what they need
    (e.g. the batches of a participant whose worker could not be claimed), and
    ``blocked_lines``: one line per such needed entry, naming it, why it is not done, and the
    uploads that wait for it.
    """

    sent: int = 0
    unsent: int = 0
    rejected: tuple[str, ...] = ()
    stopped: str | None = None
    blocked: int = 0
    #: Runs not delivered on purpose, with why (another platform, another process delivering).
    skipped: tuple[str, ...] = ()
    #: Runs put aside because the platform answered 404 for them (kept queued).
    unknown: tuple[str, ...] = ()
    #: Runs that another process was delivering (this one left them alone).
    busy: int = 0
    #: Stored records that have not reached the platform (a resubmit counts them), and one
    #: line per run saying how many and why.
    outstanding: int = 0
    outstanding_lines: tuple[str, ...] = ()
    blocked_lines: tuple[str, ...] = ()
    #: What the ``unsent`` uploads carry, in the units people know: the records in the
    #: batches still queued, and the runs with uploads still queued.
    unsent_records: int = 0
    unsent_runs: int = 0

    @property
    def ok(self) -> bool:
        """Everything that was queued has been delivered (or is being delivered by another
        process right now), nothing queued was dropped, and no stored record is left outside
        the platform."""
        return (
            self.unsent == 0
            and not self.rejected
            and self.blocked == 0
            and len(self.skipped) == self.busy
            and self.outstanding == 0
        )

    def unsent_text(self) -> str:
        """What is not delivered, in records and runs: ``6 record(s) of 1 run (23 queued
        uploads: the run, its participants, record batches, logs, summary)``."""
        runs = max(self.unsent_runs, 1)
        what = f"{runs} run" + ("s" if runs != 1 else "")
        head = f"{self.unsent_records} record(s) of {what}" if self.unsent_records else what
        return (
            f"{head} ({self.unsent} queued upload(s): the run, its participants, record "
            "batches, logs, summary)"
        )

    def lines(self, store_path: str | None = None) -> list[str]:
        """Terminal lines for people (empty when there was nothing to do)."""
        out: list[str] = []
        if self.stopped:
            out.append(f"Platform delivery stopped: {self.stopped}")
        for message in self.rejected:
            out.append(f"Platform rejected: {message}")
        out.extend(self.skipped)
        out.extend(self.unknown)
        if self.rejected:
            out.append(
                "Rejected uploads stay in the local store; once the cause is fixed, send them "
                f"again with: {RESUBMIT_REJECTED_COMMAND}"
            )
        out.extend(self.blocked_lines)
        if self.unsent:
            where = f" in {store_path}" if store_path else " in the local results store"
            out.append(
                f"Not delivered to the platform: {self.unsent_text()}; they are kept{where}. "
                f"Send them later with: {RESUBMIT_COMMAND}"
            )
        out.extend(self.outstanding_lines)
        return out


class _Stop(Exception):
    """Delivery must stop for this session (auth refused, or the platform is unreachable)."""


class Sender:
    """Delivers outbox entries; runs in a background thread (:meth:`start`) or inline
    (:meth:`drain`).

    ``run_ids``: the local runs this sender owns (``None`` = every run with pending entries,
    as :func:`resubmit` does). ``on_message``: called with lines for people (rejections, stops).
    """

    def __init__(
        self,
        store: OutboxStore,
        client: BenchmarkClient,
        *,
        retry: RetryPolicy | None = None,
        run_ids: set[str] | None = None,
        on_message: Callable[[str], None] | None = None,
        holder: str | None = None,
        deadline_option: str = "--bench-upload-timeout",
    ) -> None:
        self.store = store
        self.client = client
        self.retry = retry or RetryPolicy()
        self.run_ids = run_ids
        self.holder = holder or new_lease_holder()
        self._on_message = on_message
        self._parked: dict[str, str] = {}  # run id -> why (a 404: unknown to this platform)
        self._abandoned = False
        self._renewed = time.monotonic()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closing = False
        self._deadline: float | None = None
        self._sent = 0
        self._rejected: list[str] = []
        self._blocked = 0
        # (needed entry, why it is not done) -> the labels of the uploads waiting for it
        self._blocked_by: dict[tuple[str, str], list[str]] = {}
        self._stopped: str | None = None
        self._credentials_refused: str | None = None
        self._failures = 0
        self._failing_since: float | None = None
        self._retry_after: float | None = None
        #: The option that sets :meth:`close`'s deadline, as messages name it.
        self.deadline_option = deadline_option

    # -- public -----------------------------------------------------------------------------

    @property
    def stopped(self) -> str | None:
        """Why delivery stopped for this session, or ``None``."""
        return self._stopped

    @property
    def credentials_refused(self) -> str | None:
        """The platform's answer when it refused the credentials (401/403), or ``None``.

        Delivery has then stopped for this session; unlike an unreachable platform, it will
        not resume on its own.
        """
        return self._credentials_refused

    def add_run(self, run_id: str) -> None:
        """Own ``run_id`` too (the uploader adds each benchmark's local run) and take its
        delivery lease (a new run's lease is free)."""
        self.store.outbox_lease(run_id, self.holder, LEASE_TTL_S)
        with self._cond:
            if self.run_ids is not None:
                self.run_ids.add(run_id)
            self._cond.notify_all()

    def _renew_leases(self, force: bool = False) -> None:
        if not force and time.monotonic() - self._renewed < LEASE_TTL_S / 3:
            return
        self._renewed = time.monotonic()
        for run_id in self._owned():
            self.store.outbox_lease(run_id, self.holder, LEASE_TTL_S)

    def release_leases(self) -> None:
        """Give back the delivery leases of the owned runs."""
        for run_id in self._owned():
            self.store.outbox_release(run_id, self.holder)

    def _owned(self) -> list[str]:
        with self._cond:  # add_run() may add one from another thread
            return sorted(self.run_ids or ())

    def wake(self) -> None:
        """New entries were queued."""
        with self._cond:
            self._cond.notify_all()

    def start(self) -> None:
        """Deliver in a daemon thread until :meth:`close`."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="benchsdk-outbox", daemon=True)
            self._thread.start()

    def wait_for(self, key: str, timeout: float) -> str | None:
        """Wait until the entry ``key`` is sent or rejected, delivery stops, or ``timeout``
        passes; returns the entry's state (``None`` if unknown).
        """
        end = time.monotonic() + timeout
        with self._cond:
            while True:
                entry = self.store.outbox_get(key)
                state = entry.state if entry is not None else None
                if state in ("sent", "rejected") or self._stopped:
                    return state
                if entry is not None and entry.run_id in self._parked:
                    return state
                remaining = end - time.monotonic()
                if remaining <= 0:
                    return state
                self._cond.wait(min(remaining, 0.2))

    def close(self, timeout: float) -> DeliverySummary:
        """Deliver what is queued for at most ``timeout`` seconds, stop, and summarise."""
        if self._thread is not None:
            with self._cond:
                self._closing = True
                self._deadline = time.monotonic() + max(0.0, timeout)
                self._cond.notify_all()
            # The wait is the user's bound (--bench-upload-timeout, --bench-resubmit-timeout): a
            # request still in flight when it runs out is abandoned like at Ctrl-C; its entry
            # stays queued.
            if not join_within(self._thread, max(0.0, timeout) + 1.0):
                return self.abandon(
                    f"the delivery deadline ({timeout:g} s, {self.deadline_option}) passed with "
                    "a request in flight; it was abandoned and what is unsent stays queued",
                    wait_s=0.0,
                )
        else:
            self.drain(timeout)
        self.release_leases()
        return self.summary()

    def abandon(self, reason: str, wait_s: float = 0.5) -> DeliverySummary:
        """Stop delivering at once (Ctrl-C): whatever is unsent stays in the outbox. Waits at
        most ``wait_s`` for the thread; a request in flight is left to finish or fail on its
        own (its entry is retried by the next resubmit; nothing is sent twice)."""
        with self._cond:
            self._abandoned = True
            self._closing = True
            self._deadline = time.monotonic()
            if not self._stopped:
                self._stopped = reason
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(max(0.0, wait_s))
        try:
            self.release_leases()
            return self.summary()
        except Exception:  # the store is busy with the thread's last write: say what we know
            return DeliverySummary(sent=self._sent, stopped=self._stopped)

    def drain(self, timeout: float) -> DeliverySummary:
        """Deliver inline until nothing is left, delivery stops, or ``timeout`` passes."""
        self._closing = True
        self._deadline = time.monotonic() + max(0.0, timeout)
        self._loop()
        return self.summary()

    def summary(self) -> DeliverySummary:
        """The current :class:`DeliverySummary` of the owned runs."""
        unsent = unsent_records = unsent_runs = 0
        runs = (
            self.run_ids if self.run_ids is not None else set(self.store.outbox_runs_with_pending())
        )
        for run_id in sorted(runs):
            counts = self.store.outbox_counts(run_id)
            queued = counts.get("pending", 0) + counts.get("failed", 0)
            if queued:
                unsent += queued
                unsent_runs += 1
                unsent_records += sum(
                    len(entry.payload.get("records") or ())
                    for entry in self.store.outbox_entries(run_id)
                    if entry.kind == "events"
                    and entry.state in ("pending", "failed")
                    and isinstance(entry.payload, dict)
                )
        return DeliverySummary(
            sent=self._sent,
            unsent=unsent,
            unsent_records=unsent_records,
            unsent_runs=unsent_runs,
            rejected=tuple(self._rejected),
            stopped=self._stopped,
            blocked=self._blocked,
            unknown=tuple(self._parked.values()),
            blocked_lines=tuple(self._blocked_lines()),
        )

    def _blocked_lines(self) -> list[str]:
        lines = []
        for (needs, why), labels in self._blocked_by.items():
            shown = ", ".join(labels[:5]) + (
                f" and {len(labels) - 5} more" if len(labels) > 5 else ""
            )
            lines.append(
                f"{len(labels)} dependent platform upload(s) were not sent ({shown}): they "
                f"need {needs}, which {why}. They stay in the local store; once the cause is "
                f"fixed, send them again with: {RESUBMIT_REJECTED_COMMAND}"
            )
        return lines

    # -- loop -------------------------------------------------------------------------------

    def _runs(self) -> list[str]:
        if self.run_ids is None:
            return self.store.outbox_runs_with_pending()
        return sorted(self.run_ids)

    def _next_entry(self) -> OutboxEntryLike | None:
        """The oldest entry whose dependency is sent or rejected (rejected: it decides itself)."""
        best: OutboxEntryLike | None = None
        for run_id in self._runs():
            if run_id in self._parked:
                continue
            for entry in self.store.outbox_pending(run_id):
                if entry.depends_on is not None:
                    dep = self.store.outbox_get(entry.depends_on)
                    if dep is None or dep.state not in ("sent", "rejected"):
                        continue
                if best is None or entry.id < best.id:
                    best = entry
                break  # entries are in id order; dependants of later ones come later
        return best

    def _time_left(self) -> float | None:
        return None if self._deadline is None else self._deadline - time.monotonic()

    def _pause(self, seconds: float) -> bool:
        """Back off ``seconds``; False (without waiting) when that would pass the deadline."""
        until = time.monotonic() + seconds
        if self._deadline is not None and until > self._deadline:
            return False
        while True:
            remaining = until - time.monotonic()
            if remaining <= 0:
                return True
            with self._cond:
                # close() only shortens the deadline; it never cuts a backoff short.
                self._cond.wait(remaining)
            if self._deadline is not None and until > self._deadline:
                return False

    def _run(self) -> None:
        # The thread must never die with a traceback (pytest turns that into a warning, and
        # the session would wait for nothing): any unexpected error stops delivery instead.
        try:
            self._loop()
        except Exception as exc:
            if self._abandoned:  # the session is ending without us (Ctrl-C): stay quiet
                return
            self._stopped = self.client.redact(f"internal error: {type(exc).__name__}: {exc}")
            self._emit(f"Platform delivery stopped: {self._stopped}")
            with self._cond:
                self._cond.notify_all()

    def _loop(self) -> None:
        while True:
            if self._stopped or self._abandoned:
                return
            self._renew_leases()
            left = self._time_left()
            if left is not None and left <= 0:
                return
            # Read before looking: entries queued before close() are then visible to the look,
            # so finding none means none is left (close() right after the look: look again).
            with self._cond:
                closing = self._closing
            entry = self._next_entry()
            if entry is None:
                if closing:
                    return
                with self._cond:
                    if not self._closing:
                        self._cond.wait(0.2)
                continue
            try:
                self._attempt(entry)
            except _Stop as stop:
                if self._is_abandoned():
                    return
                self._stopped = str(stop)
                self._emit(f"Platform delivery stopped: {stop}")
            finally:
                with self._cond:
                    self._cond.notify_all()
            backoff = self.retry.delay(self._failures, self._retry_after) if self._failures else 0
            if backoff and not self._stopped and not self._pause(backoff):
                return

    def _is_abandoned(self) -> bool:
        return self._abandoned

    def _emit(self, line: str) -> None:
        if self._on_message is not None:
            self._on_message(line)

    def _attempt(self, entry: OutboxEntryLike) -> None:
        self._retry_after = None
        try:
            response = perform(self.store, self.client, entry)
        except Blocked as exc:
            self.store.outbox_mark_failed(entry.id, str(exc), permanent=True)
            self._blocked += 1
            self._blocked_by.setdefault((exc.needs, exc.why), []).append(kind_label(entry))
            return
        except Reject as exc:
            self._reject(entry, str(exc))
            return
        except BenchmarkApiError as exc:
            message = f"{kind_label(entry)}: {platform_message(exc)}"
            if exc.transient:
                self._transient(entry, message, exc.retry_after)
            elif exc.status == 404:
                self._unknown(entry, message)
            elif exc.status in (401, 403):
                self.store.outbox_mark_failed(entry.id, message)
                self._credentials_refused = message
                raise _Stop(
                    f"the platform refused the credentials ({message}). Fix them, then run "
                    f"{RESUBMIT_COMMAND}"
                ) from None
            else:
                self._reject(entry, message)
            return
        except (AnswerTooLargeError, MalformedAnswerError, PlatformUnreachableError) as exc:
            # Definite answers: asking again at once gets the same (a refused connection, a
            # host that does not resolve, an answer too large or of the wrong shape). Stop,
            # keep the entry queued for a resubmit (once the platform is up or fixed).
            message = f"{kind_label(entry)}: {exc}"
            self.store.outbox_mark_failed(entry.id, message)
            self._failures = 0
            raise _Stop(
                f"{message}; the uploads stay queued, send them with {RESUBMIT_COMMAND}"
            ) from None
        except PlatformConnectionError as exc:
            self._transient(entry, f"{kind_label(entry)}: {exc}", None)
            return
        except (ValueError, KeyError, TypeError) as exc:
            self._reject(entry, f"{kind_label(entry)}: {self.client.redact(str(exc))}")
            return
        self.store.outbox_mark_sent(entry.id, response)
        self._sent += 1
        self._failures = 0
        self._failing_since = None

    def _unknown(self, entry: OutboxEntryLike, message: str) -> None:
        """A 404: this platform does not know the run, worker or benchmark (a wrong URL, or
        another org). Not a verdict on the data: the entry stays queued and the run is put
        aside for the rest of this delivery."""
        self.store.outbox_mark_failed(entry.id, message)
        note = (
            f"Platform at {redact_url(self.client.base_url)} answered 404 ({message}); the run's "
            "uploads stay queued. Is this the platform the run was reported to? Send them with "
            f"{RESUBMIT_COMMAND} --bench-base-url <the right platform URL>"
        )
        self._parked[entry.run_id] = note
        self._emit(note)
        self._failures = 0
        self._failing_since = None

    def _reject(self, entry: OutboxEntryLike, message: str) -> None:
        self.store.outbox_mark_failed(entry.id, message, permanent=True)
        self._rejected.append(message)
        self._emit(f"Platform rejected: {message}")
        # A rejection is an answer: the platform is reachable.
        self._failures = 0
        self._failing_since = None

    def _transient(self, entry: OutboxEntryLike, message: str, retry_after: float | None) -> None:
        self.store.outbox_mark_failed(entry.id, message)
        self._failures += 1
        self._retry_after = retry_after
        now = time.monotonic()
        if self._failing_since is None:
            self._failing_since = now
        elif now - self._failing_since >= self.retry.offline_after_s:
            raise _Stop(
                f"the platform has not answered successfully for "
                f"{self.retry.offline_after_s:g}s (last error: {message})"
            )


def _why_undelivered(store: OutboxStore, run_id: str, participant: str) -> str:
    """Why a participant's stored records are not on the platform: the first of its entries
    (or the run's) that was rejected, else the first still queued."""
    waiting: OutboxEntryLike | None = None
    for entry in store.outbox_entries(run_id):
        payload = entry.payload if isinstance(entry.payload, dict) else {}
        if payload.get("participant") not in (None, participant) or entry.state == "sent":
            continue
        if entry.state == "rejected":
            return f"rejected: {entry.last_error or kind_label(entry)}"
        if waiting is None:
            waiting = entry
    if waiting is not None:
        last = f" (last error: {waiting.last_error})" if waiting.last_error else ""
        return f"not sent yet: {kind_label(waiting)} is still queued{last}"
    return "no queued upload carries them (stored after the participant's last batch)"


def outstanding_lines(
    store: OutboxStore, undelivered: Mapping[str, Mapping[str, Sequence[int]]]
) -> tuple[int, list[str]]:
    """How many stored records have not reached the platform (``undelivered``: per run, what
    :meth:`~pytest_benchsdk.store.ResultStore.undelivered_records` found), and one line per
    run with the count per participant and why."""
    total = 0
    lines: list[str] = []
    for run_id, missing in undelivered.items():
        if not missing:
            continue
        count = sum(len(indexes) for indexes in missing.values())
        total += count
        why = "; ".join(
            f"{name}: {len(indexes)} ({_why_undelivered(store, run_id, name)})"
            for name, indexes in missing.items()
        )
        rejected = "rejected:" in why
        hint = (
            f"once the cause is fixed, send them with: {RESUBMIT_REJECTED_COMMAND}"
            if rejected
            else f"send them with: {RESUBMIT_COMMAND}"
        )
        lines.append(
            f"Run {run_id}: {count} stored record(s) have not reached the platform — {why}; "
            f"they stay in the local store; {hint}"
        )
    return total, lines


def _same_platform(stored: str | None, current: str | None) -> bool:
    # URLs are compared without their userinfo (stored without it since issue 32, 5).
    return (
        stored is None
        or current is None
        or redact_url(stored).rstrip("/") == redact_url(current).rstrip("/")
    )


def _retarget(store: OutboxStore, run_id: str) -> None:
    """Make a run deliverable to another platform: forget the old platform's ids and put every
    entry back to pending, so the whole lifecycle is replayed there in order."""
    for key in store.state_items(run_id):
        if key in (STATE_RUN, STATE_DELIVERED) or key.startswith(
            (worker_state_key(""), claim_tried_key(""), "upload:")
        ):
            store.state_set(run_id, key, None)
    store.outbox_reset(run_id, ("sent", "failed", "rejected"))


def resubmit(
    store: OutboxStore,
    client: BenchmarkClient,
    *,
    timeout: float = 300.0,
    retry: RetryPolicy | None = None,
    run_ids: Sequence[str] | None = None,
    on_message: Callable[[str], None] | None = None,
    other_platform: bool = False,
    rejected: bool = False,
    log_level: str = "info",
) -> DeliverySummary:
    """Send everything still queued in ``store`` (every run, or ``run_ids``), within
    ``timeout`` seconds (``--bench-resubmit-timeout``).

    The delivery runs on the sender's thread, as in a session, and ends at the deadline also
    with a request in flight (abandoned; its upload stays queued, nothing is sent twice); an
    unexpected error stops it with a message instead of escaping.

    Replays whatever part of each run's lifecycle never reached the platform, in order; entries
    already sent are never sent again. A run whose session ended without finishing it (killed)
    first gets the rest of its lifecycle from the stored records (:mod:`._recovery`).

    Only runs whose delivery lease this call gets are sent (another process delivering a run
    → skipped, said in ``skipped``). A run recorded for another platform (URL or org) than
    ``client``'s is refused unless ``other_platform``: then its whole lifecycle is replayed
    there. ``rejected``: entries the platform rejected before are sent again. ``log_level``:
    the lowest level of the log lines in a recovered participant's ``worker.log``.
    """
    if run_ids is not None:
        candidates = list(dict.fromkeys(run_ids))
    else:
        candidates = resubmit_candidates(store, rejected=rejected)
    holder = new_lease_holder()
    owned: set[str] = set()
    skipped: list[str] = []
    busy = 0
    current_org = client.org_slug or client.org_id
    unfinished = set(store.outbox_unfinished_runs())
    for run_id in candidates:
        other = store.outbox_lease(run_id, holder, LEASE_TTL_S)
        if other is not None:
            busy += 1
            skipped.append(
                f"Run {run_id}: {describe_holder(other)} is delivering it right now; left to "
                "that process."
            )
            continue
        target = store.outbox_target(run_id)
        stored_url = target.url if target is not None else None
        stored_org = target.org if target is not None else None
        if not (
            _same_platform(stored_url, client.base_url) and _same_platform(stored_org, current_org)
        ):
            if not other_platform:
                where = redact_url(str(stored_url)) + (f" (org {stored_org})" if stored_org else "")
                here = redact_url(client.base_url) + (
                    f" (org {current_org})" if current_org else ""
                )
                skipped.append(
                    f"Run {run_id} was reported to {where}, not {here}: not sent. Pass "
                    f"--bench-base-url for that platform, or {OTHER_PLATFORM_OPTION} to send "
                    "the whole run to this one."
                )
                store.outbox_release(run_id, holder)
                continue
            _retarget(store, run_id)
        store.outbox_set_target(run_id, redact_url(client.base_url), current_org)
        if rejected:
            store.outbox_reset(run_id, ("rejected",))
        if run_id in unfinished:
            recover_run(store, run_id, log_level=log_level)
        # Holding the lease, no session is delivering the run: one still "running" was left so
        # by a session that died (after its participants finished, say).
        if getattr(store.get_run(run_id), "status", None) == "running":
            store.finish_run(run_id, "interrupted")
        owned.add(run_id)
    sender = Sender(
        store,
        client,
        retry=retry,
        run_ids=owned,
        on_message=on_message,
        holder=holder,
        deadline_option="--bench-resubmit-timeout",
    )
    try:
        if owned:
            sender.start()
            try:
                summary = sender.close(timeout)
            except KeyboardInterrupt:
                sender.abandon(
                    "interrupted: delivery stopped at once; everything unsent stays queued"
                )
                raise
        else:
            summary = DeliverySummary()
        undelivered = {run_id: store.undelivered_records(run_id) for run_id in sorted(owned)}
        count, lines = outstanding_lines(store, undelivered)
        for run_id, missing in undelivered.items():
            if not missing:
                note_if_delivered(store, run_id, checked=True)
    finally:
        sender.release_leases()
    return attrs.evolve(
        summary,
        skipped=tuple(skipped),
        busy=busy,
        outstanding=count,
        outstanding_lines=tuple(lines),
    )


#: Per-run state: how many stored records were last found all on the platform (so a resubmit
#: need not compare a delivered run's records with its batches again).
STATE_DELIVERED = "platform.delivered-records"


def note_if_delivered(store: OutboxStore, run_id: str, *, checked: bool = False) -> bool:
    """Remember that every stored record of the run is on the platform, when it is and no
    upload is still queued (``checked``: the records were just compared); returns whether it
    is."""
    counts = store.outbox_counts(run_id)
    if counts.get("pending", 0) or counts.get("failed", 0):
        return False
    if not checked and store.undelivered_records(run_id):
        return False
    store.state_set(run_id, STATE_DELIVERED, store.get_run(run_id).record_count)
    return True


def _maybe_undelivered(store: OutboxStore, run_id: str) -> bool:
    run = store.get_run(run_id)
    if store.state_get(run_id, STATE_DELIVERED) == run.record_count:
        return False
    return bool(store.undelivered_records(run_id))


def resubmit_candidates(store: OutboxStore, *, rejected: bool = False) -> list[str]:
    """The runs a resubmit looks at: with uploads still queued, with participants their
    session never finished (killed), with stored records not on the platform, still
    ``running`` (their session may have died), and (with ``rejected``) with uploads the
    platform rejected. Oldest first within each kind."""
    reported = store.outbox_reported_runs()
    return list(
        dict.fromkeys(
            [
                *store.outbox_runs_with_pending(),
                *store.outbox_unfinished_runs(),
                *(store.outbox_runs_with_rejected() if rejected else ()),
                *(run_id for run_id in reported if _maybe_undelivered(store, run_id)),
                *(run_id for run_id in reported if store.get_run(run_id).status == "running"),
            ]
        )
    )
