"""Best-effort worker heartbeats for the participants of the running benchmarks.

Private to the platform package; :class:`._lifecycle.PlatformSession` owns one
:class:`_Heartbeats`. Heartbeats are telemetry: sent directly (never through the outbox), and a
failed one is dropped because the next one carries the same counters.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Mapping
from typing import Any, Protocol

from ._client import BenchmarkClient
from ._errors import BenchmarkApiError, PlatformConnectionError

__all__: list[str] = []


# Protocols rather than imports of the report and session classes: they import this module.
class _ParticipantProgress(Protocol):
    @property
    def heartbeat_due(self) -> bool: ...


class _Report(Protocol):
    """What heartbeats read from a :class:`._report.BenchmarkReport`."""

    @property
    def slug(self) -> str: ...
    @property
    def _participants(self) -> Mapping[str, _ParticipantProgress]: ...
    def _heartbeat_body(self, name: str) -> tuple[str, str, dict[str, Any]] | None: ...


class _Session(Protocol):
    """What heartbeats read from a :class:`._lifecycle.PlatformSession`."""

    @property
    def stopped(self) -> str | None: ...
    @property
    def client(self) -> BenchmarkClient | None: ...


class _Heartbeats:
    """Best-effort heartbeats: every ``interval_s`` per active participant, and soon after
    progress (coalesced, at most one request in flight). Failures are ignored.
    """

    def __init__(self, session: _Session, interval_s: float) -> None:
        self._session = session
        self._interval = interval_s
        self._active: dict[tuple[int, str], tuple[_Report, float]] = {}
        self._cond = threading.Condition()
        self._closed = False
        self._thread: threading.Thread | None = None

    def add(self, report: _Report, name: str) -> None:
        with self._cond:
            self._active[(id(report), name)] = (report, 0.0)
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(
                    target=self._loop, name="benchsdk-heartbeat", daemon=True
                )
                self._thread.start()
            self._cond.notify_all()

    def discard(self, report: _Report, name: str) -> None:
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

    def _send(self, report: _Report, name: str) -> None:
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
