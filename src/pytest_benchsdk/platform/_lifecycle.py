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

The parts: :class:`PlatformSession` (modes, credentials, run creation, the header) here;
:class:`BenchmarkReport` in :mod:`._report`; heartbeats in :mod:`._heartbeats`; the sender in
:mod:`._delivery`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..records import LOG_LEVELS
from ._auth import resolve_auth
from ._client import BenchmarkClient
from ._connect import client_for
from ._delivery import (
    RESUBMIT_COMMAND,
    DeliverySummary,
    OutboxStore,
    RetryPolicy,
    Sender,
)
from ._errors import AuthError
from ._heartbeats import _Heartbeats
from ._metrics import SystemMetricsCollector
from ._outbox import STATE_RUN
from ._report import BenchmarkReport

__all__ = ["BenchmarkReport", "PlatformSession"]

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
        refused = self._sender.credentials_refused if self._sender is not None else None
        if refused:
            # Not "not reachable yet … sent when it answers": nothing more is sent in this
            # session, and retrying without new credentials cannot help.
            return [
                f"Platform refused the credentials ({refused}); results are kept locally. "
                f"Fix the credentials, then run: {RESUBMIT_COMMAND}"
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
