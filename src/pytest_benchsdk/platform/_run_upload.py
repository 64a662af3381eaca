"""One benchmark run's platform uploads: the plugin's events turned into chained outbox entries.

Private to the platform package; :meth:`._uploader.PlatformUploader.begin_benchmark` creates a
:class:`RunUpload` per benchmark (= one local run in the store) and the package re-exports it.
The entries are chained so that each one is sent after the one it needs:

``benchmark`` → ``run`` (→ ``participant`` per participant with a run key) → per participant
``plan`` → ``claim`` → ``events`` #0, #1, … (the last ``isFinal``) → ``artifact`` log →
``artifact`` system-metrics → ``finish`` (complete or fail); and ``summary`` after ``run``.
In a worker pool (``pool``: N workers per participant across processes sharing a run key) the
participant is registered with ``totalTasks`` N × its iterations and ``workerCount`` N, the
plan asks for N workers, and a ``close`` entry ends the chain: it closes the platform run when
this process claimed the last worker of a participant (decided when it is sent, from the
claimed assignments, so a resubmit decides the same).

Sequence numbers and ``isFinal`` are fixed when a batch is queued, so a replay sends the same
batch. Per participant the upload keeps its place in the chain, the records not yet batched,
the progress counters that heartbeats send (:meth:`RunUpload.heartbeat_due`,
:meth:`RunUpload.heartbeat_bodies`) and the ``worker.log`` lines.

With ``BENCHMARK_LOG_FLUSH_INTERVAL_MS`` > 0 (participant mode, as upstream's worker) the lines
logged so far are uploaded as a ``worker.log`` artifact every that many milliseconds
(``artifact/<p>/log/<n>``), and the rest at the end.

Round mode (``group_by="round"``, upstream's ``runGroupedByRound``): each worker is planned
with ``{workerCount: 1, targetConcurrency: <rounds>}`` and claimed with ``processKey`` =
``HOSTNAME`` or ``local``; after each iteration a ``progress`` entry (a heartbeat with exactly
that moment's counters, ``progressInFlight`` 0) follows it on the participant's chain, so the
heartbeats arrive in order and before the worker finishes (there are no others: upstream's
reporter sends no periodic or per-step ones); and when every participant is done one
``system-metrics`` artifact for the whole process (``metadata: {scope: "shared-process",
participants}``) goes through the first participant's worker, before each participant's log
and finish.
"""

from __future__ import annotations

import base64
import gzip
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any, Protocol

import attrs

from pytest_benchsdk._base.coordination import StepCoordination
from pytest_benchsdk.platform._barrier import PoolBarrier
from pytest_benchsdk.platform._client import BenchmarkClient
from pytest_benchsdk.platform._heartbeats import Heartbeats
from pytest_benchsdk.platform._metrics import SystemMetricsCollector, samples_to_ndjson
from pytest_benchsdk.platform._outbox import (
    STATE_RUN,
    OutboxStore,
    implicit_run_key,
    process_key,
    worker_state_key,
)
from pytest_benchsdk.records import LOG_LEVELS

__all__ = ["RunUpload"]

#: Queued records are sent at least this often (seconds), as upstream does.
_FLUSH_INTERVAL_S = 30.0


# A protocol rather than an import of PlatformUploader: _uploader imports this module.
class _Uploader(Protocol):
    """The settings a run upload reads from its :class:`._uploader.PlatformUploader`."""

    @property
    def store(self) -> OutboxStore: ...
    @property
    def env(self) -> Mapping[str, str]: ...
    @property
    def batch_size(self) -> int: ...
    @property
    def log_level(self) -> str: ...
    @property
    def max_log_lines(self) -> int: ...
    @property
    def log_compression(self) -> str | None: ...
    @property
    def log_flush_interval_s(self) -> float: ...
    @property
    def metrics(self) -> SystemMetricsCollector | None: ...
    @property
    def client(self) -> BenchmarkClient | None: ...


def _wire(record: Any) -> dict[str, Any]:
    to_wire = getattr(record, "to_wire", None)
    if callable(to_wire):
        return dict(to_wire())
    return dict(record)


@attrs.define
class _Participant:
    name: str
    total: int
    chain: str | None = None  # key of the last entry queued for this participant
    started: bool = False
    finished: bool = False
    sequence: int = 0
    buffer: list[dict[str, Any]] = attrs.Factory(list)
    last_flush: float = attrs.Factory(time.monotonic)
    done: int = 0
    errors: int = 0
    in_flight: int = 0
    failed: bool = False
    log: list[str] = attrs.Factory(list)
    log_truncated: bool = False
    metrics_from: int = 0
    heartbeat_due: bool = False
    log_parts: int = 0
    last_log_flush: float = attrs.Factory(time.monotonic)
    # Round mode: (failed, error) of a participant whose log and finish wait for the others.
    deferred: tuple[bool, tuple[str, str] | None] | None = None
    # Why this process runs none of the participant's iterations (no pool worker left).
    refused: str | None = None
    coordination: StepCoordination | None = None


class RunUpload:
    """The platform uploads of one benchmark run. All methods are cheap and never raise for
    platform problems; they queue outbox entries that a background sender delivers.

    In dry run and local-only mode the same object exists and does nothing (``active`` False).
    ``heartbeats`` sends the progress of the started participants; ``wake`` tells the sender
    that entries were queued.
    """

    def __init__(
        self,
        uploader: _Uploader,
        local_run_id: str,
        slug: str,
        participants: Iterable[tuple[str, int]],
        *,
        active: bool,
        heartbeats: Heartbeats,
        wake: Callable[[], None],
        pool: int | None = None,
        close_after_ms: float | None = None,
        group_by: str = "participant",
        rounds: int | None = None,
    ) -> None:
        self._uploader = uploader
        self._heartbeats = heartbeats
        self._wake = wake
        self.local_run_id = local_run_id
        self.slug = slug
        self.active = active
        self._header: list[str] = []
        self._lock = threading.RLock()
        self._participants = {name: _Participant(name, int(total)) for name, total in participants}
        self._run_key: str = f"{local_run_id}/run"
        self._finished = False
        self.pool = pool
        self.close_after_ms = close_after_ms
        self.round_mode = group_by == "round"
        #: Round mode: iterations per participant (upstream's ``schedule.length``).
        self.rounds = rounds
        self._shared_metrics_queued = False
        self._round_baseline_taken = False
        #: Round mode: the rounds whose metrics sample is taken (upstream: one per round).
        self._rounds_sampled = 0
        #: Round mode: the samples upstream's shared collector takes (a baseline, one per
        #: round, a final one), not the process's periodic ones.
        self._round_samples: list[dict[str, Any]] = []

    # -- header -----------------------------------------------------------------------------

    def header_lines(self) -> list[str]:
        """Lines to print in the benchmark's header (run created / shared run / dashboard URL,
        or why nothing reached the platform yet). Empty when not reporting.
        """
        return list(self._header)

    def set_header_lines(self, lines: Iterable[str]) -> None:
        """Set what :meth:`header_lines` returns (the uploader decides it once the run entry is
        sent or the wait for it ends)."""
        self._header = list(lines)

    @property
    def dashboard_url(self) -> str:
        """The run's dashboard URL, or ``""`` while the platform run does not exist."""
        if not self.active:
            return ""
        state = self._uploader.store.state_get(self.local_run_id, STATE_RUN)
        return str(state.get("dashboardUrl") or "") if isinstance(state, dict) else ""

    @property
    def platform_run_id(self) -> str | None:
        """The platform's run id once created."""
        if not self.active:
            return None
        state = self._uploader.store.state_get(self.local_run_id, STATE_RUN)
        return str(state["id"]) if isinstance(state, dict) and state.get("id") else None

    # -- run creation -----------------------------------------------------------------------

    def queue_run_creation(
        self,
        *,
        name: str,
        total_tasks: int,
        run_config: Mapping[str, Any],
        benchmark_config: Mapping[str, Any] | None,
        identity_is_ours: bool,
        run_key: str | None,
    ) -> str:
        """Queue the benchmark upsert and the run creation: the keyed run and one participant
        registration per participant; returns the run entry's key.

        Without ``run_key`` (``--bench-run-key``) the run is keyed by this local run
        (``benchsdk-<local run id>``): creating a keyed run is a get-or-create, so a retry after
        a lost answer gets the same run instead of a second, empty one.
        """
        run_key = run_key or implicit_run_key(self.local_run_id)
        bench_key = self._put(
            None,
            "benchmark",
            "benchmark",
            {
                "name": name,
                "config": dict(benchmark_config or {}),
                "identityIsOurs": identity_is_ours,
            },
            None,
        )
        body: dict[str, Any] = {"runKey": run_key, "config": dict(run_config)}
        run_entry = self._put(None, "run", "run", {"body": body}, bench_key)
        for part in self._participants.values():
            registration: dict[str, Any] = {"totalTasks": part.total}
            if self.pool:
                registration = {"totalTasks": part.total * self.pool, "workerCount": self.pool}
            self._put(
                part,
                "participant",
                f"participant/{part.name}",
                {"participant": part.name, "body": registration},
                run_entry,
            )
        return run_entry

    # -- helpers ----------------------------------------------------------------------------

    def _put(
        self,
        part: _Participant | None,
        kind: str,
        suffix: str,
        payload: dict[str, Any],
        depends_on: str | None,
    ) -> str:
        key = f"{self.local_run_id}/{suffix}"
        self._uploader.store.outbox_put(
            self.local_run_id, kind, key, {"slug": self.slug, **payload}, depends_on=depends_on
        )
        if part is not None:
            part.chain = key
        self._wake()
        return key

    def _part(self, name: str) -> _Participant:
        part = self._participants.get(name)
        if part is None:
            part = self._participants[name] = _Participant(name, 0)
        return part

    def _flush(self, part: _Participant, *, final: bool) -> None:
        if final:
            batch, part.buffer = part.buffer, []
        else:
            # Keep the newest record back so the last batch can always carry isFinal.
            batch, part.buffer = part.buffer[:-1], part.buffer[-1:]
        size = self._uploader.batch_size
        while batch:
            chunk, batch = batch[:size], batch[size:]
            is_final = final and not batch
            seq = part.sequence
            part.sequence += 1
            self._put(
                part,
                "events",
                f"events/{part.name}/{seq}",
                {
                    "participant": part.name,
                    "sequenceNumber": seq,
                    "isFinal": is_final,
                    "records": chunk,
                },
                part.chain,
            )
        part.last_flush = time.monotonic()

    # -- events from the plugin -------------------------------------------------------------

    def participant_started(self, name: str) -> str | None:
        """The participant's first iteration is about to run: plan and claim its worker.
        Returns the claim entry's key (``None`` when not reporting)."""
        if not self.active:
            return None
        claim_key = f"{self.local_run_id}/claim/{name}"
        with self._lock:
            part = self._part(name)
            if part.started:
                return claim_key
            part.started = True
            base = part.chain or self._run_key
            # "total" (not sent): the participant's iteration count, for the claim's heartbeat
            # and for a resubmit that finishes a participant its session never finished.
            plan: dict[str, Any] = {}
            if self.pool:
                plan = {"workerCount": self.pool}
            elif self.round_mode:
                plan = {"workerCount": 1, "targetConcurrency": self.rounds or part.total}
            self._put(
                part,
                "plan",
                f"plan/{name}",
                {"participant": name, "body": plan, "total": part.total},
                base,
            )
            hostname = self._uploader.env.get("HOSTNAME")
            # Upstream's round mode claims with HOSTNAME ?? 'local'; its worker with the host
            # name. The local run follows, so a lost claim answer can be told apart.
            host = hostname or ("local" if self.round_mode else socket.gethostname()) or "local"
            self._put(
                part,
                "claim",
                f"claim/{name}",
                {
                    "participant": name,
                    "body": {
                        "processKind": "process",
                        "processKey": process_key(host, self.local_run_id),
                    },
                    "total": part.total,
                    "pool": bool(self.pool),
                },
                part.chain,
            )
            collector = self._uploader.metrics
            if collector is not None:
                part.metrics_from = len(collector.samples)
                # Round mode: one shared collector, one baseline (upstream's first reporter).
                if not self.round_mode:
                    collector.sample()
                elif not self._round_baseline_taken:
                    self._round_samples.append(collector.sample())
                    self._round_baseline_taken = True
            part.heartbeat_due = True
        self._heartbeats.add(self, name)
        return claim_key

    def refuse(self, name: str, reason: str) -> None:
        """This process runs none of the participant's iterations (its pool had no worker
        left): nothing more is queued for it, and no heartbeats are sent."""
        with self._lock:
            part = self._part(name)
            part.refused = reason
            part.finished = True
        self._heartbeats.discard(self, name)

    def coordination(self, name: str, concurrency: int) -> StepCoordination:
        """The participant's step coordination: heartbeat samples and, when reporting, its
        readiness barrier (one per participant, created on first use)."""
        with self._lock:
            part = self._part(name)
            if part.coordination is None:
                client = self._uploader.client
                barrier = (
                    PoolBarrier(self, name, client) if self.active and client is not None else None
                )
                part.coordination = StepCoordination(
                    concurrency, barrier=barrier, on_change=partial(self._step_changed, part)
                )
            return part.coordination

    def _step_changed(self, part: _Participant) -> None:
        # Upstream heartbeats on every step start and end; the heartbeat thread coalesces.
        if self.active and part.started and not part.finished:
            part.heartbeat_due = True
            self._heartbeats.poke()

    def record(self, name: str, record: Any, *, in_flight: int = 0) -> None:
        """One finished iteration (a ``TaskRecord`` or its wire dict): queued for the platform
        in batches (upstream batch size 1000, flushed at least every 30 s).
        """
        if not self.active:
            return
        with self._lock:
            part = self._part(name)
            if part.refused is not None:
                return
            if not part.started:
                self.participant_started(name)
            wire = _wire(record)
            part.buffer.append(wire)
            part.done += 1
            if wire.get("status") != "success":
                part.errors += 1
                part.failed = True
            part.in_flight = in_flight
            size = self._uploader.batch_size
            overdue = time.monotonic() - part.last_flush >= _FLUSH_INTERVAL_S
            if len(part.buffer) > size or (overdue and len(part.buffer) > 1):
                self._flush(part, final=False)
            if self.round_mode:
                # Upstream: setProgress({done, inFlight: 0, errors, total}) + heartbeat().
                self._put(
                    part,
                    "progress",
                    f"progress/{name}/{part.done}",
                    {
                        "participant": name,
                        "progress": {
                            "progressDone": part.done,
                            "progressInFlight": 0,
                            "progressErrors": part.errors,
                            "progressTotal": part.total or part.done,
                        },
                    },
                    part.chain,
                )
                self._sample_finished_rounds()
            part.heartbeat_due = True
        self._heartbeats.poke()

    def _sample_finished_rounds(self) -> None:
        """Round mode: one metrics sample when a round is over, i.e. every participant this
        process runs has its iteration of that round (upstream samples after each round)."""
        collector = self._uploader.metrics
        if collector is None:
            return
        running = [p for p in self._participants.values() if p.total > 0 and p.refused is None]
        if not running:
            return
        rounds = max(p.total for p in running)
        while self._rounds_sampled < rounds:
            next_round = self._rounds_sampled + 1
            if any(p.done < min(next_round, p.total) for p in running):
                return
            self._round_samples.append(collector.sample())
            self._rounds_sampled = next_round

    def log(self, name: str, line: str, level: str = "info") -> None:
        """One ``log()`` line (already formatted), kept if at or above ``BENCHMARK_LOG_LEVEL``;
        uploaded as the participant's ``worker.log`` artifact when it finishes.
        """
        if not self.active:
            return
        level = level if level in LOG_LEVELS else "info"
        if LOG_LEVELS.index(level) < LOG_LEVELS.index(self._uploader.log_level):
            return
        with self._lock:
            part = self._part(name)
            if len(part.log) >= self._uploader.max_log_lines:
                part.log_truncated = True
                return
            part.log.append(line)

    def participant_finished(self, name: str, failed: bool | None = None) -> None:
        """The participant's iterations are over: final batch, log and metrics artifacts, then
        complete (or fail when ``failed``, default: any record was not ``success``).
        """
        if not self.active:
            return
        with self._lock:
            part = self._part(name)
            if part.finished:
                return
            if not part.started:
                self.participant_started(name)
            part.finished = True
            self._finish_participant(part, part.failed if failed is None else failed)
            if self.round_mode:
                self._release_round_mode()
        self._heartbeats.discard(self, name)

    def _queue_log(self, part: _Participant, *, final: bool) -> None:
        """The lines logged since the last upload as a ``worker.log`` artifact (the last one
        keeps the key ``artifact/<p>/log``; mid-run flushes are ``artifact/<p>/log/<n>``)."""
        if not part.log:
            return
        truncated = final and part.log_truncated
        lines = part.log + (["... (worker log truncated)"] if truncated else [])
        part.log = []
        text = "\n".join(lines) + "\n"
        if self._uploader.log_compression == "gzip":
            body = base64.b64encode(gzip.compress(text.encode())).decode()
            content_type, encoding = "application/gzip", "base64"
        else:
            body, content_type, encoding = text, "text/plain", "text"
        suffix = f"artifact/{part.name}/log" + ("" if final else f"/{part.log_parts}")
        part.log_parts += 0 if final else 1
        part.last_log_flush = time.monotonic()
        self._put(
            part,
            "artifact",
            suffix,
            {
                "participant": part.name,
                "kind": "coordinator.log",
                "contentType": content_type,
                "name": "worker.log",
                "body": body,
                "encoding": encoding,
            },
            part.chain,
        )

    def flush_log_if_due(self, name: str) -> None:
        """Upload the participant's new log lines when ``BENCHMARK_LOG_FLUSH_INTERVAL_MS`` has
        passed since the last upload (participant mode; called by the heartbeat thread)."""
        interval = self._uploader.log_flush_interval_s
        if not self.active or interval <= 0 or self.round_mode:
            return
        with self._lock:
            part = self._participants.get(name)
            if part is None or part.finished or not part.started or not part.log:
                return
            if time.monotonic() - part.last_log_flush >= interval:
                self._queue_log(part, final=False)

    def _finish_participant(
        self, part: _Participant, failed: bool, error: tuple[str, str] | None = None
    ) -> None:
        self._flush(part, final=True)
        if self.round_mode:
            # Upstream uploads the shared metrics, then every participant's log and finish.
            part.deferred = (failed, error)
            return
        self._queue_log(part, final=True)
        collector = self._uploader.metrics
        if collector is not None:
            collector.sample()
            samples = collector.samples[part.metrics_from :]
            self._put(
                part,
                "artifact",
                f"artifact/{part.name}/metrics",
                {
                    "participant": part.name,
                    "kind": "system-metrics",
                    "contentType": "application/x-ndjson",
                    "name": "metrics.jsonl",
                    "body": samples_to_ndjson(samples),
                    "encoding": "text",
                },
                part.chain,
            )
        self._queue_finish(part, failed, error)

    def _release_round_mode(self) -> None:
        """Round mode: once every started participant is done, the process's one metrics
        artifact, then each waiting participant's log and finish (declared order)."""
        started = [p for p in self._participants.values() if p.started and not p.refused]
        if any(not p.finished for p in started):
            return
        collector = self._uploader.metrics
        if collector is not None and started and not self._shared_metrics_queued:
            self._shared_metrics_queued = True
            self._round_samples.append(collector.sample())
            first = started[0]
            samples = self._round_samples
            self._put(
                first,
                "artifact",
                "artifact/shared/metrics",
                {
                    "participant": first.name,
                    "kind": "system-metrics",
                    "contentType": "application/x-ndjson",
                    "name": "metrics.jsonl",
                    "metadata": {
                        "scope": "shared-process",
                        "participants": list(self._participants),
                    },
                    "body": samples_to_ndjson(samples),
                    "encoding": "text",
                },
                first.chain,
            )
        for part in started:
            if part.deferred is not None:
                failed, error = part.deferred
                part.deferred = None
                self._queue_log(part, final=True)
                self._queue_finish(part, failed, error)

    def _queue_finish(
        self, part: _Participant, failed: bool, error: tuple[str, str] | None
    ) -> None:
        code, message = error or ("Error", "One or more tasks failed")
        self._put(
            part,
            "finish",
            f"finish/{part.name}",
            {
                "participant": part.name,
                "failed": bool(failed or error),
                "errorCode": code,
                "errorMessage": message,
                # The final heartbeat's counters, sent before completing or failing.
                "progress": {
                    "progressDone": part.done,
                    "progressInFlight": 0,
                    "progressErrors": part.errors,
                    "progressTotal": part.total or part.done,
                },
            },
            part.chain,
        )

    def finish(self, summary: Mapping[str, Any] | None = None) -> None:
        """The benchmark is over: participants still open are failed (``Interrupted``), and the
        run summary (payload: ``{run, results, scoring?}``) is queued when given.
        """
        if not self.active:
            return
        with self._lock:
            if self._finished:
                return
            self._finished = True
            for part in self._participants.values():
                if part.started and not part.finished:
                    part.finished = True
                    self._finish_participant(
                        part,
                        True,
                        ("Interrupted", "The pytest session ended before all tasks finished"),
                    )
                    self._heartbeats.discard(self, part.name)
            if self.round_mode:
                self._release_round_mode()
            claimed = [p for p in self._participants.values() if p.started and not p.refused]
            if self.pool and claimed:
                # After every finish of this process (the chain of the last participant).
                close: dict[str, Any] = {"participants": [p.name for p in claimed]}
                if self.close_after_ms is not None:
                    close["closeAfterMs"] = self.close_after_ms
                self._put(None, "close", "close", close, claimed[-1].chain)
            if summary is not None:
                self._put(None, "summary", "summary", {"body": dict(summary)}, self._run_key)

    # -- heartbeats -------------------------------------------------------------------------

    def heartbeat_due(self, name: str) -> bool:
        """The participant made progress that no heartbeat has carried yet."""
        part = self._participants.get(name)
        return part is not None and part.heartbeat_due and not self.round_mode

    def heartbeat_bodies(self, name: str) -> list[tuple[str, str, dict[str, Any]]]:
        """What the heartbeat thread sends for the participant now: its current state, or
        nothing while the run or the worker does not exist yet, and nothing in round mode
        (its heartbeats are ``progress`` entries, one per iteration, as upstream's)."""
        if self.round_mode:
            return []
        current = self.heartbeat_body(name)
        return [] if current is None else [current]

    def heartbeat_body(self, name: str) -> tuple[str, str, dict[str, Any]] | None:
        """``(platform run id, worker id, body)`` of the participant's next heartbeat, and its
        progress counts as carried; ``None`` while the run or the worker does not exist yet.
        """
        assignment = self._uploader.store.state_get(self.local_run_id, worker_state_key(name))
        run = self._uploader.store.state_get(self.local_run_id, STATE_RUN)
        if not isinstance(assignment, dict) or not isinstance(run, dict):
            return None
        with self._lock:
            part = self._part(name)
            part.heartbeat_due = False
            body: dict[str, Any] = {
                "attemptId": assignment.get("attemptId"),
                "progressDone": part.done,
                "progressInFlight": part.in_flight,
                "progressErrors": part.errors,
                "progressTotal": part.total
                or int((assignment.get("taskRange") or {}).get("count") or 0),
            }
            coordination = part.coordination
        if coordination is not None:
            samples = coordination.samples()
            if samples:
                body["currentStep"] = samples[0]["step"]
            body["concurrency"] = samples
        return str(run["id"]), str(assignment["workerId"]), body
