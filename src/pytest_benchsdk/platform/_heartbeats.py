"""Best-effort worker heartbeats for the participants of the running benchmarks.

Private to the platform package; :class:`._uploader.PlatformUploader` owns one
:class:`Heartbeats`, and each :class:`._run_upload.RunUpload` adds and discards its started
participants. Heartbeats are telemetry: sent directly (never through the outbox), and a
failed one is dropped because the next one carries the same counters.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any, Protocol

from pytest_benchsdk.platform._client import BenchmarkClient
from pytest_benchsdk.platform._errors import BenchmarkApiError, PlatformConnectionError

__all__ = ["Heartbeats"]


# Protocols rather than imports of the run upload and uploader classes: they import this module.
class _RunUpload(Protocol):
    """What heartbeats read from a :class:`._run_upload.RunUpload`."""

    @property
    def slug(self) -> str: ...
    def heartbeat_due(self, name: str) -> bool: ...
    def heartbeat_bodies(self, name: str) -> list[tuple[str, str, dict[str, Any]]]: ...
    def flush_log_if_due(self, name: str) -> None: ...


class _Uploader(Protocol):
    """What heartbeats read from a :class:`._uploader.PlatformUploader`."""

    @property
    def stopped(self) -> str | None: ...
    @property
    def client(self) -> BenchmarkClient | None: ...


class Heartbeats:
    """Best-effort heartbeats: every ``interval_s`` per active participant, and soon after
    progress (coalesced, at most one request in flight). Failures are ignored.
    """

    def __init__(self, uploader: _Uploader, interval_s: float) -> None:
        self._uploader = uploader
        self._interval = interval_s
        self._active: dict[tuple[int, str], tuple[_RunUpload, float]] = {}
        self._cond = threading.Condition()
        self._closed = False
        self._poked = False
        self._thread: threading.Thread | None = None

    def add(self, upload: _RunUpload, name: str) -> None:
        """Send heartbeats for the participant ``name`` of ``upload`` (it has started)."""
        with self._cond:
            self._active[(id(upload), name)] = (upload, 0.0)
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(
                    target=self._loop, name="benchsdk-heartbeat", daemon=True
                )
                self._thread.start()
            self._cond.notify_all()

    def discard(self, upload: _RunUpload, name: str) -> None:
        """Stop the heartbeats of the participant ``name`` of ``upload`` (it has finished)."""
        with self._cond:
            self._active.pop((id(upload), name), None)

    def poke(self) -> None:
        """A participant made progress or a step started or ended: send its heartbeat now (one
        request at a time; what is asked meanwhile is sent right after)."""
        with self._cond:
            self._poked = True
            self._cond.notify_all()

    def close(self, wait_s: float = 5.0) -> None:
        """Stop the heartbeat thread (waits up to ``wait_s`` for a request in flight)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(wait_s)

    def _is_closed(self) -> bool:
        return self._closed

    def _is_woken(self) -> bool:
        return self._closed or self._poked

    def _loop(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(self._is_woken, 0.5)
                self._poked = False
                if self._closed:
                    return
                now = time.monotonic()
                due = [
                    (key, upload, name)
                    for (key, (upload, last)) in self._active.items()
                    for name in [key[1]]
                    if now - last >= self._interval or upload.heartbeat_due(name)
                ]
                active = [(upload, key[1]) for key, (upload, _) in self._active.items()]
            # The same tick uploads mid-run logs (BENCHMARK_LOG_FLUSH_INTERVAL_MS); queued
            # through the outbox, so it never waits for the network.
            for upload, name in active:
                with contextlib.suppress(Exception):
                    upload.flush_log_if_due(name)
            if self._uploader.stopped:
                continue
            for key, upload, name in due:
                with self._cond:
                    if key in self._active:
                        self._active[key] = (upload, time.monotonic())
                    if self._is_closed():
                        return
                # Telemetry must never kill the thread with a traceback, also when the session
                # closed the store under it after an interrupted close.
                with contextlib.suppress(Exception):
                    self._send(upload, name)

    def _send(self, upload: _RunUpload, name: str) -> None:
        client = self._uploader.client
        if client is None:
            return
        for run_id, worker_id, body in upload.heartbeat_bodies(name):
            # Telemetry: never fatal; the next heartbeat carries the same counters.
            with contextlib.suppress(BenchmarkApiError, PlatformConnectionError, ValueError):
                client.heartbeat(upload.slug, run_id, worker_id, body)
