"""Readiness barriers: wait until every worker of a participant's pool has arrived at a step.

Private to the platform package; :meth:`._run_upload.RunUpload.coordination` gives each
participant's :class:`~pytest_benchsdk._base.coordination.StepCoordination` a :class:`PoolBarrier`.
A wait heartbeats the worker's barrier sample and polls ``GET …/runs/{runId}/progress`` until
the participant's concurrency entry for the step says ``ready`` (upstream's
``waitForStepReady``). Concurrent waits for the same step share one poller (one progress
request per interval, not one per waiting iteration).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Mapping
from typing import Any, Protocol

from pytest_benchsdk.platform._client import BenchmarkClient
from pytest_benchsdk.platform._errors import BenchmarkApiError, PlatformConnectionError

__all__ = ["PoolBarrier", "step_is_ready"]


class _Upload(Protocol):
    """What a barrier reads from its :class:`._run_upload.RunUpload`."""

    @property
    def slug(self) -> str: ...
    def heartbeat_body(self, name: str) -> tuple[str, str, dict[str, Any]] | None: ...


def step_is_ready(progress: Mapping[str, Any], participant: str, step: str) -> bool:
    """Whether the run progress marks ``step`` of ``participant`` as ready."""
    entries = progress.get("participants")
    if not isinstance(entries, list):
        return False
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        name = entry.get("participantSlug", entry.get("slug", entry.get("name")))
        if name != participant:
            continue
        for sample in entry.get("concurrency") or []:
            if isinstance(sample, Mapping) and sample.get("step") == step:
                return sample.get("ready") is True
    return False


class _Wait:
    def __init__(self) -> None:
        self.done = threading.Event()
        self.ready = False


class PoolBarrier:
    """The barrier of one participant's claimed worker (see the module docstring)."""

    def __init__(self, upload: _Upload, participant: str, client: BenchmarkClient) -> None:
        self._upload = upload
        self._participant = participant
        self._client = client
        self._lock = threading.Lock()
        self._waits: dict[str, _Wait] = {}

    def wait(
        self, step: str, sample: dict[str, Any], timeout_s: float | None, poll_interval_s: float
    ) -> bool:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            with self._lock:
                shared = self._waits.get(step)
                leading = shared is None
                if shared is None:
                    shared = self._waits[step] = _Wait()
            if leading:
                ready = False
                try:
                    ready = self._poll(step, sample, deadline, poll_interval_s)
                finally:
                    with self._lock:
                        del self._waits[step]
                    shared.ready = ready
                    shared.done.set()
                return ready
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not shared.done.wait(remaining):
                return False
            if shared.ready:
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
            # The poller gave up at its own, earlier deadline: poll on while ours lasts.

    def _poll(
        self, step: str, sample: dict[str, Any], deadline: float | None, interval_s: float
    ) -> bool:
        while True:
            if self._check(step, sample):
                return True
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                return False
            time.sleep(interval_s if deadline is None else min(interval_s, deadline - now))

    def _check(self, step: str, sample: dict[str, Any]) -> bool:
        """One round: the barrier heartbeat, then the progress. False while the run or the
        worker does not exist yet, or when the platform does not answer (polled again)."""
        target = self._upload.heartbeat_body(self._participant)
        if target is None:
            return False
        run_id, worker_id, body = target
        samples = list(body.get("concurrency") or [])
        if not any(s.get("step") == step for s in samples):
            # A step kept out of the samples (report_concurrency=False) still reports here.
            samples = [sample, *samples][:20]
        body = {**body, "currentStep": step, "concurrency": samples}
        slug = self._upload.slug
        with contextlib.suppress(BenchmarkApiError, PlatformConnectionError, ValueError):
            self._client.heartbeat(slug, run_id, worker_id, body)
        try:
            progress = self._client.get_progress(slug, run_id)
        except (BenchmarkApiError, PlatformConnectionError):
            return False
        return step_is_ready(progress, self._participant, step)
