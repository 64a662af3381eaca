"""The per-benchmark run lifecycle on the platform, as a sequence of outbox entries.

:class:`PlatformSession` is the facade the plugin uses (one per pytest session, controller
only); :meth:`PlatformSession.begin_benchmark` returns a :class:`BenchmarkReport` for one
benchmark (= one local run in the store). The report turns the plugin's events into outbox
entries, chained so that each one is sent after the one it needs:

``benchmark`` → ``run`` (→ ``participant`` per participant with a run key) → per participant
``plan`` → ``claim`` → ``events`` #0, #1, … (the last ``isFinal``) → ``artifact`` log →
``artifact`` system-metrics → ``finish`` (complete or fail); and ``summary`` after ``run``.

Sequence numbers and ``isFinal`` are fixed when a batch is queued, so a replay sends the same
batch. Heartbeats are best-effort telemetry: sent directly (never queued), never fatal.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs

from ._auth import resolve_auth
from ._client import BenchmarkClient
from ._connect import client_for
from ._delivery import (
    RESUBMIT_COMMAND,
    STATE_RUN,
    DeliverySummary,
    OutboxStore,
    RetryPolicy,
    Sender,
    worker_state_key,
)
from ._errors import (
    AuthError,
    BenchmarkApiError,
    PlatformConnectionError,
)
from ._metrics import SystemMetricsCollector, samples_to_ndjson

__all__ = ["LOG_LEVELS", "BenchmarkReport", "PlatformSession"]

LOG_LEVELS = ("debug", "info", "warn", "error")
_DRY_RUN_LINE = "Dry run: no platform ingest or reporting."
_LOCAL_ONLY_LINE = (
    "Local only: no platform credentials found (set BENCHMARKS_PLATFORM_API_KEY or "
    "BENCHMARKS_PLATFORM_TOKEN, or pass --bench-api-key, to report runs)."
)


def _env_int(env: Mapping[str, str], name: str, default: int) -> int:
    # Upstream: missing/empty → default; non-integer or negative → default.
    text = (env.get(name) or "").strip()
    try:
        value = int(text)
    except ValueError:
        return default
    return value if value >= 0 else default


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
        session: PlatformSession,
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


class _Heartbeats:
    """Best-effort heartbeats: every ``interval_s`` per active participant, and soon after
    progress (coalesced, at most one request in flight). Failures are ignored.
    """

    def __init__(self, session: PlatformSession, interval_s: float) -> None:
        self._session = session
        self._interval = interval_s
        self._active: dict[tuple[int, str], tuple[BenchmarkReport, float]] = {}
        self._cond = threading.Condition()
        self._closed = False
        self._thread: threading.Thread | None = None

    def add(self, report: BenchmarkReport, name: str) -> None:
        with self._cond:
            self._active[(id(report), name)] = (report, 0.0)
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(
                    target=self._loop, name="benchsdk-heartbeat", daemon=True
                )
                self._thread.start()
            self._cond.notify_all()

    def discard(self, report: BenchmarkReport, name: str) -> None:
        with self._cond:
            self._active.pop((id(report), name), None)

    def poke(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(5)

    def _is_closed(self) -> bool:
        return self._closed

    def _loop(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(self._is_closed, 0.5)
                if self._closed:
                    return
                now = time.monotonic()
                due = [
                    (key, report, name)
                    for (key, (report, last)) in self._active.items()
                    for name in [key[1]]
                    if now - last >= self._interval
                    or (report._participants[name].heartbeat_due and now - last >= 0.25)
                ]
            if self._session.stopped:
                continue
            for key, report, name in due:
                with self._cond:
                    if key in self._active:
                        self._active[key] = (report, time.monotonic())
                self._send(report, name)

    def _send(self, report: BenchmarkReport, name: str) -> None:
        target = report._heartbeat_body(name)
        if target is None:
            return
        run_id, worker_id, body = target
        client = self._session.client
        if client is None:
            return
        # Telemetry: never fatal; the next heartbeat carries the same counters.
        with contextlib.suppress(BenchmarkApiError, PlatformConnectionError, ValueError):
            client.heartbeat(report.slug, run_id, worker_id, body)


class PlatformSession:
    """Platform reporting for one pytest session (controller process only).

    Modes (:attr:`mode`): ``"dry-run"`` (nothing is sent, no credentials needed),
    ``"local-only"`` (no credentials: results stay in the local store, said once in the
    header — upstream fails instead), ``"reporting"``.
    """

    def __init__(
        self,
        store: OutboxStore,
        *,
        mode: str,
        client: BenchmarkClient | None,
        retry: RetryPolicy | None = None,
        env: Mapping[str, str] | None = None,
        header_wait_s: float = 10.0,
        batch_size: int = 1000,
        flush_interval_s: float = 30.0,
        heartbeat_interval_s: float = 30.0,
        metrics_interval_s: float | None = None,
        lag_source: Callable[[], Iterable[float]] | None = None,
        on_message: Callable[[str], None] | None = None,
        auth_warnings: Sequence[str] = (),
    ) -> None:
        self.store = store
        self.mode = mode
        self.client = client
        self.env: Mapping[str, str] = os.environ if env is None else env
        self.header_wait_s = header_wait_s
        self.batch_size = max(1, min(batch_size, 5000))
        self.flush_interval_s = flush_interval_s
        level = (self.env.get("BENCHMARK_LOG_LEVEL") or "info").strip().lower()
        self.log_level = level if level in LOG_LEVELS else "info"
        self.max_log_lines = _env_int(self.env, "BENCHMARK_LOG_MAX_LINES", 100_000)
        compression = (self.env.get("BENCHMARK_LOG_COMPRESSION") or "").strip().lower()
        self.log_compression = "gzip" if compression == "gzip" else None
        self._auth_warnings = list(auth_warnings)
        self.metrics: SystemMetricsCollector | None = None
        self._sender: Sender | None = None
        self._heartbeats = _Heartbeats(self, heartbeat_interval_s)
        self._reports: list[BenchmarkReport] = []
        if mode == "reporting" and client is not None:
            self._sender = Sender(store, client, retry=retry, run_ids=set(), on_message=on_message)
            self._sender.start()
            if metrics_interval_s is None:
                metrics_interval_s = (
                    _env_int(self.env, "BENCHMARK_METRICS_INTERVAL_MS", 30_000) / 1000
                )
            if metrics_interval_s > 0:
                self.metrics = SystemMetricsCollector(lag_source=lag_source)
                self.metrics.start(metrics_interval_s)

    @classmethod
    def open(
        cls,
        store: OutboxStore,
        *,
        dry_run: bool,
        base_url: str | None = None,
        api_key: str | None = None,
        env: Mapping[str, str] | None = None,
        home: str | os.PathLike[str] | None = None,
        timeout: float = 30.0,
        **options: Any,
    ) -> PlatformSession:
        """Resolve credentials and start reporting; never raises for missing credentials.

        ``dry_run`` → dry-run mode without touching credentials. Credentials that cannot be
        resolved → local-only mode (an :class:`AuthError` other than "No credentials found",
        e.g. an expired session, is shown once in the header). ``options`` go to the
        constructor (``retry``, ``header_wait_s``, ``batch_size``, ``flush_interval_s``,
        ``heartbeat_interval_s``, ``metrics_interval_s``, ``lag_source``, ``on_message``).
        """
        if dry_run:
            return cls(store, mode="dry-run", client=None, env=env, **options)
        try:
            auth = resolve_auth(base_url=base_url, api_key=api_key, env=env, home=home)
        except AuthError as exc:
            session = cls(store, mode="local-only", client=None, env=env, **options)
            if not str(exc).startswith("No credentials found"):
                session._auth_warnings.append(f"Platform credentials unusable: {exc}")
            return session
        client = client_for(auth, timeout=timeout, env=env)
        return cls(
            store, mode="reporting", client=client, env=env, auth_warnings=auth.warnings, **options
        )

    # -- session ----------------------------------------------------------------------------

    @property
    def reporting(self) -> bool:
        """Results are being sent to the platform."""
        return self.mode == "reporting"

    @property
    def stopped(self) -> str | None:
        """Why delivery stopped early in this session, or ``None``."""
        return self._sender.stopped if self._sender is not None else None

    def header_lines(self) -> list[str]:
        """Session-level lines for the terminal header, shown once (mode and warnings)."""
        lines = list(self._auth_warnings)
        if self.mode == "dry-run":
            lines.append(_DRY_RUN_LINE)
        elif self.mode == "local-only":
            lines.append(_LOCAL_ONLY_LINE)
        return lines

    def _wake(self) -> None:
        if self._sender is not None:
            self._sender.wake()

    def begin_benchmark(
        self,
        local_run_id: str,
        *,
        slug: str,
        name: str,
        participants: Sequence[tuple[str, int]],
        total_tasks: int,
        run_config: Mapping[str, Any],
        benchmark_config: Mapping[str, Any] | None = None,
        identity_is_ours: bool = True,
        run_key: str | None = None,
    ) -> BenchmarkReport:
        """Queue benchmark upsert and run creation (or the keyed run and its participants),
        wait up to ``header_wait_s`` for the run to exist, and return the report.

        ``participants``: ``(name, total_tasks)`` of the available participants, declared
        order. ``total_tasks``: the schedule length. ``run_config``: the run-config snapshot
        (with ``trigger``). ``benchmark_config``: ``{scoring?, display?}`` wire form.
        """
        if self.mode != "reporting" or self._sender is None:
            return BenchmarkReport(self, local_run_id, slug, participants, active=False)
        report = BenchmarkReport(self, local_run_id, slug, participants, active=True)
        self._sender.add_run(local_run_id)
        bench_key = report._put(
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
        names = [p for p, _ in participants]
        if run_key:
            body: dict[str, Any] = {"runKey": run_key, "config": dict(run_config)}
        else:
            body = {
                "totalTasks": total_tasks,
                "workerCount": 1,
                "participants": names,
                "config": dict(run_config),
            }
        run_entry = report._put(None, "run", "run", {"body": body}, bench_key)
        if run_key:
            for pname, total in participants:
                report._put(
                    report._part(pname),
                    "participant",
                    f"participant/{pname}",
                    {"participant": pname, "body": {"totalTasks": total}},
                    run_entry,
                )
        self._reports.append(report)
        state = self._sender.wait_for(run_entry, self.header_wait_s)
        report._header = self._run_header(report, state, run_key)
        return report

    def _run_header(
        self, report: BenchmarkReport, state: str | None, run_key: str | None
    ) -> list[str]:
        run = self.store.state_get(report.local_run_id, STATE_RUN)
        if state == "sent" and isinstance(run, dict):
            if run_key:
                first = f'Shared run (key "{run_key}"): {run.get("name")} ({run["id"]})'
            else:
                first = f"Run created: {run.get('name')} ({run['id']})"
            return [first, f"View at: {run.get('dashboardUrl')}"]
        entry = self.store.outbox_get(f"{report.local_run_id}/run")
        if state == "rejected" and entry is not None:
            return [
                f"Platform rejected the run: {entry.last_error}",
                "Results are kept in the local store.",
            ]
        # The run entry waits for the benchmark entry: its error is the reason when it failed.
        bench = self.store.outbox_get(f"{report.local_run_id}/benchmark")
        reason = (
            self.stopped
            or (entry.last_error if entry is not None else None)
            or (bench.last_error if bench is not None else None)
            or "no answer yet"
        )
        return [
            f"Platform not reachable yet ({reason}); results are kept locally and sent "
            f"when it answers, or later with: {RESUBMIT_COMMAND}"
        ]

    def close(self, timeout: float = 30.0) -> DeliverySummary:
        """Finish every open report, deliver what is queued for at most ``timeout`` seconds,
        stop the threads, and summarise (``unsent`` > 0 means: run ``pytest --bench-resubmit``).
        """
        for report in self._reports:
            report.finish(None)
        self._heartbeats.close()
        if self.metrics is not None:
            self.metrics.stop()
        if self._sender is None:
            return DeliverySummary()
        summary = self._sender.close(timeout)
        if self.client is not None:
            self.client.close()
        return summary
