"""Upstream's ``BenchmarkReporter`` (``@benchsdk/worker``) and ``createApiClient``
(``@benchsdk/cli``): one claimed platform worker that a caller reports to by hand, and a client
for the resolved credentials.

The plugin's own sessions report through the durable outbox (:mod:`._uploader`); this is the
direct, in-memory path upstream's programmatic API offers (and :func:`run_worker
<pytest_benchsdk.runner.run_worker>` drives): a batch that fails to send stays queued and is
retried with the same ``sequenceNumber`` by the next :meth:`BenchmarkReporter.flush`.
"""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pytest_benchsdk.platform._auth import CliAuth, resolve_auth
from pytest_benchsdk.platform._client import BenchmarkClient
from pytest_benchsdk.platform._connect import client_for
from pytest_benchsdk.platform._errors import platform_message, redact

__all__ = [
    "DEFAULT_REPORTER_BATCH_SIZE",
    "BenchmarkReporter",
    "claim_benchmark_reporter",
    "create_api_client",
]

#: Records per ``task_results`` batch a reporter sends by default (upstream: 500).
DEFAULT_REPORTER_BATCH_SIZE = 500
_READY_TIMEOUT_MESSAGE = 'Timed out waiting for benchmark step "{step}" to become ready.'


def create_api_client(
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    org: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> tuple[BenchmarkClient, CliAuth]:
    """A platform client for the resolved credentials and the credentials themselves, upstream's
    ``createApiClient(override?)`` → ``{api, auth}`` as ``(client, auth)``. Raises
    :class:`~pytest_benchsdk.platform.AuthError` when there are none (as upstream)."""
    auth = resolve_auth(base_url=base_url, api_key=api_key, org=org, env=env)
    return client_for(auth, timeout=timeout, env=env), auth


def _warn(message: str) -> None:
    print(message, file=sys.stderr)


class BenchmarkReporter:
    """One claimed worker of a platform run (upstream ``BenchmarkReporter``): results queued and
    sent in batches, heartbeats, readiness barriers, artifacts, and the worker's end.

    Make one with :meth:`claim` (or :func:`claim_benchmark_reporter`); ``None`` means no worker
    (no credentials, nothing left to claim, an error: each said on stderr as upstream)."""

    def __init__(
        self,
        client: BenchmarkClient,
        *,
        benchmark_slug: str,
        run_id: str,
        participant_slug: str,
        assignment: Mapping[str, Any],
        batch_size: int = DEFAULT_REPORTER_BATCH_SIZE,
        warn: Callable[[str], None] = _warn,
    ) -> None:
        self.client = client
        self.benchmark_slug = benchmark_slug
        self.run_id = run_id
        self.participant_slug = participant_slug
        self.assignment = dict(assignment)
        self.batch_size = batch_size
        self._warn = warn
        self._pending: list[Mapping[str, Any]] = []
        self._sequence = 0
        self._progress: dict[str, int] = {}
        self.finished = False
        #: Upstream's ``onTelemetryError(error, kind)``: called instead of the warning when a
        #: heartbeat, flush, artifact or finish fails (``kind`` says which).
        self.on_telemetry_error: Callable[[BaseException, str], object] | None = None

    def _telemetry_failed(self, kind: str, exc: BaseException) -> None:
        if self.on_telemetry_error is not None:
            try:
                self.on_telemetry_error(exc, kind)
                return
            except Exception:  # a failing handler must not end the worker: warn instead
                pass
        self._warn(f"[benchsdk] telemetry failure ({kind}): {platform_message(exc)}")

    @classmethod
    def claim(
        cls,
        *,
        benchmark_slug: str,
        run_id: str,
        participant_slug: str,
        base_url: str | None = None,
        api_key: str | None = None,
        org: str | None = None,
        process_kind: str | None = None,
        process_key: str | None = None,
        batch_size: int = DEFAULT_REPORTER_BATCH_SIZE,
        client: BenchmarkClient | None = None,
        env: Mapping[str, str] | None = None,
        warn: Callable[[str], None] = _warn,
    ) -> BenchmarkReporter | None:
        """Claim a worker of ``participant_slug`` in the run (upstream ``BenchmarkReporter.claim``):
        the reporter, or ``None`` with ``[benchsdk] failed to claim worker for <slug>/<p>: <msg>``
        on stderr. ``client``: use this client instead of resolving credentials."""
        secrets: tuple[str | None, ...] = (api_key,)
        try:
            if client is None:
                client, auth = create_api_client(
                    base_url=base_url, api_key=api_key, org=org, env=env
                )
                secrets = auth.secrets
            body: dict[str, Any] = {"processKey": process_key or socket.gethostname()}
            if process_kind is not None:
                body["processKind"] = process_kind
            assignment = client.claim_worker(benchmark_slug, run_id, participant_slug, body)
        except Exception as exc:
            text = redact(platform_message(exc), secrets)
            where = f"{benchmark_slug}/{participant_slug}"
            warn(f"[benchsdk] failed to claim worker for {where}: {text}")
            return None
        if assignment is None:
            return None
        return cls(
            client,
            benchmark_slug=benchmark_slug,
            run_id=run_id,
            participant_slug=participant_slug,
            assignment=assignment,
            batch_size=batch_size,
            warn=warn,
        )

    # -- the assignment ------------------------------------------------------------------------

    @property
    def worker_assignment(self) -> dict[str, Any]:
        return self.assignment

    @property
    def worker_id(self) -> str:
        return str(self.assignment.get("workerId"))

    @property
    def attempt_id(self) -> str:
        return str(self.assignment.get("attemptId"))

    @property
    def task_index_start(self) -> int:
        return int((self.assignment.get("taskRange") or {}).get("start") or 0)

    @property
    def task_count(self) -> int:
        span = self.assignment.get("taskRange") or {}
        if span.get("count") is not None:
            return int(span["count"])
        return max(0, int(span.get("end") or 0) - self.task_index_start)

    # -- results, progress, heartbeats ---------------------------------------------------------

    def set_progress(
        self, *, done: int = 0, in_flight: int = 0, errors: int = 0, total: int | None = None
    ) -> None:
        """The counters the next heartbeat carries (``total`` defaults to the task range)."""
        self._progress = {
            "progressDone": done,
            "progressInFlight": in_flight,
            "progressErrors": errors,
            "progressTotal": self.task_count if total is None else total,
        }

    def record_result(self, record: Mapping[str, Any]) -> None:
        """Queue one record (wire form); a full batch is sent at once."""
        self._pending.append(record)
        if len(self._pending) >= self.batch_size:
            self.flush(False)

    def heartbeat_body(
        self,
        *,
        current_step: str | None = None,
        concurrency: Sequence[Mapping[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """The body of the next heartbeat: the attempt, the progress counters and, when given,
        the current step and the step samples."""
        body: dict[str, Any] = {"attemptId": self.attempt_id, **self._progress}
        if current_step is not None:
            body["currentStep"] = current_step
        if concurrency is not None:
            body["concurrency"] = [dict(sample) for sample in concurrency]
        return body

    def heartbeat(
        self,
        *,
        current_step: str | None = None,
        concurrency: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        """Send a heartbeat with the progress counters; a failure is a telemetry warning."""
        body = self.heartbeat_body(current_step=current_step, concurrency=concurrency)
        try:
            self.client.heartbeat(self.benchmark_slug, self.run_id, self.worker_id, body)
        except Exception as exc:
            self._telemetry_failed("heartbeat", exc)

    def wait_for_step_ready(
        self,
        step: str,
        *,
        timeout_ms: float | None = None,
        poll_interval_ms: float = 1000,
        active: int | None = None,
        target: int | None = None,
    ) -> None:
        """Heartbeat a barrier sample for ``step`` and poll the run's progress until the platform
        marks it ready; ``TimeoutError`` with upstream's message after ``timeout_ms``."""
        from pytest_benchsdk.platform._barrier import step_is_ready

        sample = {"step": step, "active": active or 1, "target": target or active or 1}
        deadline = None if timeout_ms is None else time.monotonic() + timeout_ms / 1000
        while True:
            self.heartbeat(current_step=step, concurrency=[sample])
            progress = self.client.get_progress(self.benchmark_slug, self.run_id)
            if step_is_ready(progress, self.participant_slug, step):
                return
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(_READY_TIMEOUT_MESSAGE.format(step=step))
            time.sleep(poll_interval_ms / 1000)

    def upload_artifact(
        self,
        *,
        kind: str,
        body: bytes | str,
        content_type: str | None = None,
        name: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> dict[str, Any] | None:
        """Upload one artifact of the worker; ``None`` (with a warning) when it fails."""
        try:
            created: dict[str, Any] = self.client.upload_artifact(
                self.benchmark_slug,
                self.run_id,
                self.worker_id,
                attempt_id=self.attempt_id,
                kind=kind,
                body=body,
                content_type=content_type,
                name=name,
                metadata=metadata,
            )
            return created
        except Exception as exc:
            self._telemetry_failed("artifact", exc)
            return None

    @property
    def pending(self) -> int:
        """Records queued and not yet accepted by the platform."""
        return len(self._pending)

    def flush(self, is_final: bool = False) -> bool:
        """Send the queued records in batches (the last one ``isFinal`` when ``is_final``).
        A batch that fails stays queued with its ``sequenceNumber``: returns False."""
        if is_final and not self._pending:
            return True
        while self._pending:
            batch = self._pending[: self.batch_size]
            last = len(batch) == len(self._pending)
            try:
                self.client.submit_task_results(
                    self.benchmark_slug,
                    self.run_id,
                    self.worker_id,
                    {
                        "attemptId": self.attempt_id,
                        "sequenceNumber": self._sequence,
                        "isFinal": bool(is_final and last),
                        "records": [dict(record) for record in batch],
                    },
                )
            except Exception as exc:
                self._telemetry_failed("flush", exc)
                return False
            del self._pending[: len(batch)]
            self._sequence += 1
        return True

    def finish(self, failed: bool = False, error: BaseException | None = None) -> None:
        """Final flush, then ``fail`` (``failed``, or ``Failed to flush task results``) or
        ``complete``; their errors are telemetry warnings, never raised. Once."""
        if self.finished:
            return
        self.finished = True
        flushed = self.flush(True)
        try:
            if failed or error is not None:
                message = str(error) if error is not None else "One or more tasks failed"
                code = type(error).__name__ if error is not None else "Error"
                self.client.fail_worker(
                    self.benchmark_slug, self.run_id, self.worker_id, self.attempt_id, code, message
                )
            elif not flushed or self._pending:
                self.client.fail_worker(
                    self.benchmark_slug,
                    self.run_id,
                    self.worker_id,
                    self.attempt_id,
                    "Error",
                    "Failed to flush task results",
                )
            else:
                self.client.complete_worker(
                    self.benchmark_slug, self.run_id, self.worker_id, self.attempt_id
                )
        except Exception as exc:
            self._telemetry_failed("finish", exc)


def claim_benchmark_reporter(**kwargs: Any) -> BenchmarkReporter | None:
    """Upstream ``claimBenchmarkReporter(cfg)``: :meth:`BenchmarkReporter.claim`."""
    return BenchmarkReporter.claim(**kwargs)
