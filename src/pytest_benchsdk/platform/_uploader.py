"""The platform uploader of one pytest session: modes, credentials, sender, heartbeats, header.

:class:`PlatformUploader` is the facade the plugin uses (one per pytest session, controller
only); :meth:`PlatformUploader.begin_benchmark` returns a :class:`._run_upload.RunUpload` for one
benchmark (= one local run in the store), which turns the plugin's events into chained outbox
entries (the chain is described in :mod:`._run_upload`). Heartbeats are best-effort telemetry
(:mod:`._heartbeats`): sent directly (never queued), never fatal. The sender is in
:mod:`._delivery`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from pytest_benchsdk._base.modes import DRY_RUN_LINE, LOCAL_ONLY_LINE
from pytest_benchsdk._base.redact import redact_url
from pytest_benchsdk.platform._auth import resolve_auth
from pytest_benchsdk.platform._client import BenchmarkClient
from pytest_benchsdk.platform._connect import client_for
from pytest_benchsdk.platform._delivery import (
    RESUBMIT_COMMAND,
    DeliverySummary,
    OutboxStore,
    RetryPolicy,
    Sender,
    note_if_delivered,
)
from pytest_benchsdk.platform._errors import AuthError
from pytest_benchsdk.platform._heartbeats import Heartbeats
from pytest_benchsdk.platform._metrics import SystemMetricsCollector
from pytest_benchsdk.platform._outbox import STATE_RUN, worker_state_key
from pytest_benchsdk.platform._run_upload import RunUpload
from pytest_benchsdk.records import LOG_LEVELS

__all__ = ["PlatformUploader", "WorkerClaim"]


@attrs.frozen
class WorkerClaim:
    """What claiming a participant's worker gave: ``state`` is ``claimed`` (``assignment``
    holds it), ``refused`` (no worker left; ``reason``), ``pending`` (no answer in time: the
    claim stays queued) or ``local`` (not reporting). ``joined``: the pool was planned by
    another process."""

    state: str
    assignment: Mapping[str, Any] | None = None
    reason: str | None = None
    joined: bool = False


def _env_int(env: Mapping[str, str], name: str, default: int) -> int:
    # Upstream: missing/empty → default; non-integer or negative → default.
    text = (env.get(name) or "").strip()
    try:
        value = int(text)
    except ValueError:
        return default
    return value if value >= 0 else default


class PlatformUploader:
    """Uploads one pytest session's benchmark runs to the platform (controller process only).

    Modes (:attr:`mode`): ``"dry-run"`` (nothing is sent, no credentials needed),
    ``"local-only"`` (no credentials: results stay in the local store, said once in the
    header — upstream fails instead), ``"reporting"``.
    """

    def __init__(
        self,
        store: OutboxStore | None,
        *,
        mode: str,
        client: BenchmarkClient | None,
        retry: RetryPolicy | None = None,
        env: Mapping[str, str] | None = None,
        header_wait_s: float = 10.0,
        batch_size: int = 1000,
        heartbeat_interval_s: float = 30.0,
        metrics_interval_s: float | None = None,
        on_message: Callable[[str], None] | None = None,
        auth_warnings: Sequence[str] = (),
    ) -> None:
        if store is None and mode != "dry-run":
            raise ValueError(f"{mode} mode needs the results store (its outbox)")
        self._store = store
        self.mode = mode
        self.client = client
        self.env: Mapping[str, str] = os.environ if env is None else env
        self.header_wait_s = header_wait_s
        self.batch_size = max(1, min(batch_size, 5000))
        level = (self.env.get("BENCHMARK_LOG_LEVEL") or "info").strip().lower()
        self.log_level = level if level in LOG_LEVELS else "info"
        self.max_log_lines = _env_int(self.env, "BENCHMARK_LOG_MAX_LINES", 100_000)
        compression = (self.env.get("BENCHMARK_LOG_COMPRESSION") or "").strip().lower()
        self.log_compression = "gzip" if compression == "gzip" else None
        #: Upstream's worker uploads the log every this many seconds while it runs (0: only
        #: at the end).
        self.log_flush_interval_s = _env_int(self.env, "BENCHMARK_LOG_FLUSH_INTERVAL_MS", 0) / 1000
        self._auth_warnings = list(auth_warnings)
        self.metrics: SystemMetricsCollector | None = None
        self._sender: Sender | None = None
        self._heartbeats = Heartbeats(self, heartbeat_interval_s)
        self._uploads: list[RunUpload] = []
        if mode == "reporting" and client is not None:
            self._sender = Sender(
                self.store, client, retry=retry, run_ids=set(), on_message=on_message
            )
            self._sender.start()
            if metrics_interval_s is None:
                metrics_interval_s = (
                    _env_int(self.env, "BENCHMARK_METRICS_INTERVAL_MS", 30_000) / 1000
                )
            if metrics_interval_s > 0:
                self.metrics = SystemMetricsCollector()
                self.metrics.start(metrics_interval_s)

    @property
    def store(self) -> OutboxStore:
        """The outbox (the results store); a dry run may have none and never needs it."""
        if self._store is None:
            raise RuntimeError("a dry run has no outbox")
        return self._store

    @classmethod
    def open(
        cls,
        store: OutboxStore | None,
        *,
        dry_run: bool,
        base_url: str | None = None,
        api_key: str | None = None,
        org: str | None = None,
        env: Mapping[str, str] | None = None,
        home: str | os.PathLike[str] | None = None,
        timeout: float | None = None,
        **options: Any,
    ) -> PlatformUploader:
        """Resolve credentials and start reporting; never raises for missing credentials.

        ``dry_run`` → dry-run mode without touching credentials (``store`` may be None: a dry
        run with ``--bench-no-store`` writes nothing). Credentials that cannot be
        resolved → local-only mode (an :class:`AuthError` other than "No credentials found",
        e.g. an expired session, is shown once in the header). ``options`` go to the
        constructor (``retry``, ``header_wait_s``, ``batch_size``, ``heartbeat_interval_s``,
        ``metrics_interval_s``, ``on_message``).
        """
        if dry_run:
            return cls(store, mode="dry-run", client=None, env=env, **options)
        try:
            auth = resolve_auth(base_url=base_url, api_key=api_key, org=org, env=env, home=home)
        except AuthError as exc:
            uploader = cls(store, mode="local-only", client=None, env=env, **options)
            if not str(exc).startswith("No credentials found"):
                uploader._auth_warnings.append(f"Platform credentials unusable: {exc}")
            return uploader
        client = client_for(auth, timeout=timeout, env=env)
        return cls(
            store, mode="reporting", client=client, env=env, auth_warnings=auth.warnings, **options
        )

    # -- state and header -------------------------------------------------------------------

    @property
    def stopped(self) -> str | None:
        """Why delivery stopped early in this session, or ``None``."""
        return self._sender.stopped if self._sender is not None else None

    def header_lines(self) -> list[str]:
        """Session-level lines for the terminal header, shown once (mode and warnings)."""
        lines = list(self._auth_warnings)
        if self.mode == "dry-run":
            lines.append(DRY_RUN_LINE)
        elif self.mode == "local-only":
            lines.append(LOCAL_ONLY_LINE)
        return lines

    def _wake(self) -> None:
        """Tell the sender that entries were queued (handed to each :class:`RunUpload`)."""
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
        pool: int | None = None,
        close_after_ms: float | None = None,
        group_by: str = "participant",
    ) -> RunUpload:
        """Queue benchmark upsert and run creation (or the keyed run and its participants),
        wait up to ``header_wait_s`` for the run to exist, and return the run's uploads.

        ``participants``: ``(name, total_tasks)`` of the available participants, declared
        order. ``total_tasks``: the schedule length. ``run_config``: the run-config snapshot
        (with ``trigger``). ``benchmark_config``: ``{scoring?, display?}`` wire form.
        ``pool``: the worker pool size of ``--bench-worker-pool`` (with ``run_key``);
        ``close_after_ms``: sent when this process closes the pooled run. ``group_by``:
        ``"round"`` reports as upstream's round mode (see :mod:`._run_upload`).
        """
        sender = self._sender if self.mode == "reporting" else None
        upload = RunUpload(
            self,
            local_run_id,
            slug,
            participants,
            active=sender is not None,
            heartbeats=self._heartbeats,
            wake=self._wake,
            pool=pool if run_key else None,
            close_after_ms=close_after_ms,
            group_by=group_by,
            rounds=total_tasks,
        )
        if sender is None:
            return upload
        client = sender.client
        org = client.org_slug or client.org_id
        self.store.outbox_set_target(local_run_id, redact_url(client.base_url), org)
        sender.add_run(local_run_id)
        run_entry = upload.queue_run_creation(
            name=name,
            total_tasks=total_tasks,
            run_config=run_config,
            benchmark_config=benchmark_config,
            identity_is_ours=identity_is_ours,
            run_key=run_key,
        )
        self._uploads.append(upload)
        state = sender.wait_for(run_entry, self.header_wait_s)
        upload.set_header_lines(self._run_header(upload, state, run_key))
        return upload

    def claim_worker(self, upload: RunUpload, name: str, timeout: float) -> WorkerClaim:
        """Plan and claim the participant's worker now and wait up to ``timeout`` seconds for
        the answer (a pooled run must know before its iterations run whether a worker is left).
        """
        key = upload.participant_started(name)
        if key is None or self._sender is None:
            return WorkerClaim("local")
        state = self._sender.wait_for(key, timeout)
        plan = self.store.outbox_get(f"{upload.local_run_id}/plan/{name}")
        joined = (
            plan is not None
            and isinstance(plan.response, dict)
            and bool(plan.response.get("alreadyPlanned"))
        )
        entry = self.store.outbox_get(key)
        if state == "sent" and entry is not None and entry.response == {"assignment": None}:
            reason = "no pending worker left in the pool"
            upload.refuse(name, reason)
            return WorkerClaim("refused", reason=reason, joined=joined)
        if state == "sent":
            assignment = self.store.state_get(upload.local_run_id, worker_state_key(name))
            return WorkerClaim("claimed", assignment, joined=joined)
        reason = (entry.last_error if entry is not None else None) or self.stopped or "no answer"
        if state == "rejected":
            upload.refuse(name, reason)
            return WorkerClaim("refused", reason=reason, joined=joined)
        return WorkerClaim("pending", reason=reason, joined=joined)

    def _run_header(self, upload: RunUpload, state: str | None, run_key: str | None) -> list[str]:
        run = self.store.state_get(upload.local_run_id, STATE_RUN)
        if state == "sent" and isinstance(run, dict):
            if run_key:
                first = f'Shared run (key "{run_key}"): {run.get("name")} ({run["id"]})'
            else:
                first = f"Run created: {run.get('name')} ({run['id']})"
            return [first, f"View at: {run.get('dashboardUrl')}"]
        entry = self.store.outbox_get(f"{upload.local_run_id}/run")
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
        if self.stopped:
            # Not "sent when it answers": nothing more is sent in this session.
            # The reason was said when it stopped (the line above); not said twice here.
            return [
                "Platform delivery stopped (see above); results are kept locally. Send them "
                f"later with: {RESUBMIT_COMMAND}"
            ]
        # The run entry waits for the benchmark entry: its error is the reason when it failed.
        bench = self.store.outbox_get(f"{upload.local_run_id}/benchmark")
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

    def close(self, timeout: float = 30.0, *, interrupted: bool = False) -> DeliverySummary:
        """Finish every open run upload, deliver what is queued for at most ``timeout`` seconds,
        stop the threads, and summarise (``unsent`` > 0 means: run ``pytest --bench-resubmit``).

        ``interrupted`` (Ctrl-C): queue the ends of the open uploads but send nothing more;
        everything unsent stays in the outbox. A ``KeyboardInterrupt`` while waiting for
        delivery does the same instead of escaping.
        """
        if interrupted:
            return self._abandon()
        try:
            for upload in self._uploads:
                upload.finish(None)
            self._heartbeats.close()
            if self.metrics is not None:
                self.metrics.stop()
            if self._sender is None:
                return DeliverySummary()
            summary = self._sender.close(timeout)
        except KeyboardInterrupt:
            return self._abandon()
        if self.client is not None:
            self.client.close()
        if summary.ok:
            for upload in self._uploads:
                # So a later --bench-resubmit need not compare this run's records again.
                with contextlib.suppress(Exception):
                    note_if_delivered(self.store, upload.local_run_id)
        return summary

    def _abandon(self) -> DeliverySummary:
        for upload in self._uploads:
            upload.finish(None)
        self._heartbeats.close(wait_s=0.2)
        if self.metrics is not None:
            self.metrics.stop()
        if self._sender is None:
            return DeliverySummary()
        return self._sender.abandon(
            "interrupted: delivery stopped at once; everything unsent stays in the outbox"
        )
