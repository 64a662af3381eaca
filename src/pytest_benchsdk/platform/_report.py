"""One benchmark's platform report: the plugin's events turned into chained outbox entries.

Private to the platform package; :class:`._lifecycle.PlatformSession` creates a
:class:`BenchmarkReport` per benchmark and :mod:`._lifecycle` re-exports it. Per participant the
report keeps its place in the chain, the records not yet batched, the progress counters that
heartbeats send and the ``worker.log`` lines.
"""

from __future__ import annotations

import base64
import gzip
import socket
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import attrs

from ..records import LOG_LEVELS
from ._heartbeats import _Heartbeats
from ._metrics import SystemMetricsCollector, samples_to_ndjson
from ._outbox import STATE_RUN, OutboxStore, worker_state_key

__all__ = ["BenchmarkReport"]


# A protocol rather than an import of PlatformSession: _lifecycle imports this module.
class _Session(Protocol):
    """What a report reads from its :class:`._lifecycle.PlatformSession`."""

    @property
    def store(self) -> OutboxStore: ...
    @property
    def env(self) -> Mapping[str, str]: ...
    @property
    def batch_size(self) -> int: ...
    @property
    def flush_interval_s(self) -> float: ...
    @property
    def log_level(self) -> str: ...
    @property
    def max_log_lines(self) -> int: ...
    @property
    def log_compression(self) -> str | None: ...
    @property
    def metrics(self) -> SystemMetricsCollector | None: ...
    @property
    def _heartbeats(self) -> _Heartbeats: ...
    def _wake(self) -> None: ...


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


class BenchmarkReport:
    """Platform reporting of one benchmark run. All methods are cheap and never raise for
    platform problems; they queue outbox entries that a background sender delivers.

    In dry run and local-only mode the same object exists and does nothing (``active`` False).
    """

    def __init__(
        self,
        session: _Session,
        local_run_id: str,
        slug: str,
        participants: Iterable[tuple[str, int]],
        *,
        active: bool,
        header: list[str] | None = None,
    ) -> None:
        self._session = session
        self.local_run_id = local_run_id
        self.slug = slug
        self.active = active
        self._header = header or []
        self._lock = threading.RLock()
        self._participants = {name: _Participant(name, int(total)) for name, total in participants}
        self._run_key: str = f"{local_run_id}/run"
        self._finished = False

    # -- header -----------------------------------------------------------------------------

    def header_lines(self) -> list[str]:
        """Lines to print in the benchmark's header (run created / shared run / dashboard URL,
        or why nothing reached the platform yet). Empty when not reporting.
        """
        return list(self._header)

    @property
    def dashboard_url(self) -> str:
        """The run's dashboard URL, or ``""`` while the platform run does not exist."""
        if not self.active:
            return ""
        state = self._session.store.state_get(self.local_run_id, STATE_RUN)
        return str(state.get("dashboardUrl") or "") if isinstance(state, dict) else ""

    @property
    def platform_run_id(self) -> str | None:
        """The platform's run id once created."""
        if not self.active:
            return None
        state = self._session.store.state_get(self.local_run_id, STATE_RUN)
        return str(state["id"]) if isinstance(state, dict) and state.get("id") else None

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
        self._session.store.outbox_put(
            self.local_run_id, kind, key, {"slug": self.slug, **payload}, depends_on=depends_on
        )
        if part is not None:
            part.chain = key
        self._session._wake()
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
        size = self._session.batch_size
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

    def participant_started(self, name: str) -> None:
        """The participant's first iteration is about to run: plan and claim its worker."""
        if not self.active:
            return
        with self._lock:
            part = self._part(name)
            if part.started:
                return
            part.started = True
            base = part.chain or self._run_key
            self._put(part, "plan", f"plan/{name}", {"participant": name, "body": {}}, base)
            process_key = self._session.env.get("HOSTNAME") or socket.gethostname() or "local"
            self._put(
                part,
                "claim",
                f"claim/{name}",
                {
                    "participant": name,
                    "body": {"processKind": "process", "processKey": process_key},
                },
                part.chain,
            )
            collector = self._session.metrics
            if collector is not None:
                part.metrics_from = len(collector.samples)
                collector.sample()
            part.heartbeat_due = True
        self._session._heartbeats.add(self, name)

    def record(self, name: str, record: Any, *, in_flight: int = 0) -> None:
        """One finished iteration (a ``TaskRecord`` or its wire dict): queued for the platform
        in batches (upstream batch size 1000, flushed at least every 30 s).
        """
        if not self.active:
            return
        with self._lock:
            part = self._part(name)
            if not part.started:
                self.participant_started(name)
            wire = _wire(record)
            part.buffer.append(wire)
            part.done += 1
            if wire.get("status") != "success":
                part.errors += 1
                part.failed = True
            part.in_flight = in_flight
            size = self._session.batch_size
            overdue = time.monotonic() - part.last_flush >= self._session.flush_interval_s
            if len(part.buffer) > size or (overdue and len(part.buffer) > 1):
                self._flush(part, final=False)
            part.heartbeat_due = True
        self._session._heartbeats.poke()

    def log(self, name: str, line: str, level: str = "info") -> None:
        """One ``log()`` line (already formatted), kept if at or above ``BENCHMARK_LOG_LEVEL``;
        uploaded as the participant's ``worker.log`` artifact when it finishes.
        """
        if not self.active:
            return
        level = level if level in LOG_LEVELS else "info"
        if LOG_LEVELS.index(level) < LOG_LEVELS.index(self._session.log_level):
            return
        with self._lock:
            part = self._part(name)
            if len(part.log) >= self._session.max_log_lines:
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
        self._session._heartbeats.discard(self, name)

    def _finish_participant(
        self, part: _Participant, failed: bool, error: tuple[str, str] | None = None
    ) -> None:
        self._flush(part, final=True)
        if part.log:
            lines = part.log + (["... (worker log truncated)"] if part.log_truncated else [])
            text = "\n".join(lines) + "\n"
            if self._session.log_compression == "gzip":
                body = base64.b64encode(gzip.compress(text.encode())).decode()
                content_type, encoding = "application/gzip", "base64"
            else:
                body, content_type, encoding = text, "text/plain", "text"
            self._put(
                part,
                "artifact",
                f"artifact/{part.name}/log",
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
        collector = self._session.metrics
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
            },
            part.chain,
        )

    def finish(self, summary: Mapping[str, Any] | None = None) -> None:
        """The benchmark is over: participants still open are failed (``Interrupted``), and the
        run summary (§6.6 payload: ``{run, results, scoring?}``) is queued when given.
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
                    self._session._heartbeats.discard(self, part.name)
            if summary is not None:
                self._put(None, "summary", "summary", {"body": dict(summary)}, self._run_key)

    # -- heartbeats -------------------------------------------------------------------------

    def _heartbeat_body(self, name: str) -> tuple[str, str, dict[str, Any]] | None:
        assignment = self._session.store.state_get(self.local_run_id, worker_state_key(name))
        run = self._session.store.state_get(self.local_run_id, STATE_RUN)
        if not isinstance(assignment, dict) or not isinstance(run, dict):
            return None
        with self._lock:
            part = self._part(name)
            part.heartbeat_due = False
            body = {
                "attemptId": assignment.get("attemptId"),
                "progressDone": part.done,
                "progressInFlight": part.in_flight,
                "progressErrors": part.errors,
                "progressTotal": part.total
                or int((assignment.get("taskRange") or {}).get("count") or 0),
            }
        return str(run["id"]), str(assignment["workerId"]), body
