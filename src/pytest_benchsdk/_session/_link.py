"""A session's link to the platform: its runs reported through the store's outbox.

Imported only outside dry runs (a dry run never loads the platform: httpx, psutil). The
platform layer decides between local only (no credentials) and reporting, and says which in
the header.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pytest_benchsdk._base.coordination import StepCoordination
from pytest_benchsdk._base.modes import pool_ignored_line
from pytest_benchsdk._base.runenv import RunEnvironment
from pytest_benchsdk._engine.payload import RecordPayload
from pytest_benchsdk._session._options import SessionOptions
from pytest_benchsdk.platform import DeliverySummary, PlatformUploader, RunUpload
from pytest_benchsdk.results import BenchmarkRun
from pytest_benchsdk.store import ResultStore

__all__ = ["PlatformLink"]

#: How long the header waits for the platform to create a run (to print its dashboard URL).
HEADER_WAIT_S = 5.0
#: How long the session end waits for queued uploads before leaving them to --bench-resubmit.
CLOSE_TIMEOUT_S = 30.0
#: How long a pool worker waits for its claim before running its iterations anyway.
CLAIM_WAIT_S = 30.0


class PlatformLink:
    """Reports a session's runs to the platform through the store's outbox."""

    def __init__(
        self,
        uploader: PlatformUploader,
        store: ResultStore | None,
        environment: RunEnvironment,
        run_key: str | None,
    ) -> None:
        self.uploader = uploader
        self.store = store
        self.environment = environment
        self.run_key = run_key
        self.uploads: dict[str, RunUpload] = {}
        self.delivery: DeliverySummary | None = None
        self.worker_pool: int | None = None
        # (file key, participant) -> why its iterations do not run here (None: they do).
        self._admitted: dict[tuple[str, str], str | None] = {}

    @classmethod
    def open(
        cls,
        options: SessionOptions,
        store: ResultStore | None,
        environ: Mapping[str, str],
        environment: RunEnvironment,
        write: Callable[[str], None],
    ) -> PlatformLink:
        """Resolve the mode and credentials (``write`` shows delivery messages)."""
        uploader = PlatformUploader.open(
            store,
            dry_run=options.dry_run,
            base_url=options.base_url,
            api_key=options.api_key,
            org=options.org,
            env=environ,
            header_wait_s=HEADER_WAIT_S,
            on_message=lambda line: write(f"benchsdk: {line}"),
        )
        link = cls(uploader, store, environment, options.run_args.run_key)
        link.worker_pool = options.run_args.worker_pool
        return link

    @property
    def reporting(self) -> bool:
        return self.uploader.mode == "reporting"

    @property
    def secrets(self) -> tuple[str, ...]:
        """The credentials the platform layer resolved (to redact wherever text is written)."""
        client = self.uploader.client
        return client.secrets if client is not None else ()

    def header_lines(self) -> list[str]:
        """The mode line and credential warnings, once per session."""
        lines = self.uploader.header_lines()
        if self.worker_pool and not self.reporting:
            lines.append(pool_ignored_line(self.worker_pool))
        return lines

    def begin(self, run: BenchmarkRun) -> list[str]:
        """Open the platform run of one benchmark; returns its header lines."""
        if run.local_run_id is None or not run.participants:
            return []
        config = run.config
        benchmark_config: dict[str, Any] = {}
        if config.scoring is not None:
            benchmark_config["scoring"] = config.scoring.to_wire()
        if config.display is not None:
            benchmark_config["display"] = config.display.to_wire()
        upload = self.uploader.begin_benchmark(
            run.local_run_id,
            slug=config.benchmark_slug,
            name=config.benchmark_name,
            participants=[(name, len(run.selected[name])) for name in run.participants],
            total_tasks=run.total_tasks,
            run_config=run.config_snapshot(self.environment),
            benchmark_config=benchmark_config,
            identity_is_ours=run.schedule.identity_is_ours,
            run_key=self.run_key,
            pool=self.worker_pool,
            close_after_ms=run.schedule.resolved.close_after_ms,
            group_by=run.schedule.resolved.group_by,
        )
        self.uploads[run.file_key] = upload
        self._sync_run_ids(run, upload)
        return upload.header_lines()

    def _sync_run_ids(self, run: BenchmarkRun, upload: RunUpload) -> None:
        platform_run_id = upload.platform_run_id
        if platform_run_id and platform_run_id != run.platform_run_id:
            run.platform_run_id = platform_run_id
            run.dashboard_url = upload.dashboard_url
            store = self.store
            if store is not None and run.local_run_id is not None:
                store.set_platform_run(run.local_run_id, platform_run_id, run.dashboard_url)

    def admit(
        self, run: BenchmarkRun, participant: str, write: Callable[[str], None]
    ) -> str | None:
        """Before the participant's first iteration here: queue its worker claim; in a worker
        pool, wait for the claim and say what came of it. Returns why its iterations are
        skipped here (a full pool), or ``None``."""
        upload = self.uploads.get(run.file_key)
        if upload is None or not upload.active:
            return None
        key = (run.file_key, participant)
        if key in self._admitted:
            return self._admitted[key]
        if not upload.pool:
            # Claim now (queued, not awaited) so heartbeats describe the first iteration too.
            upload.participant_started(participant)
            self._admitted[key] = None
            return None
        claim = self.uploader.claim_worker(upload, participant, CLAIM_WAIT_S)
        refused: str | None = None
        if claim.joined:
            write(f"  Worker pool already planned for {participant} — joining it.")
        if claim.state == "claimed" and claim.assignment is not None:
            index = int(claim.assignment.get("workerIndex") or 0)
            count = claim.assignment.get("workerCount")
            span = claim.assignment.get("taskRange") or {}
            start, end = int(span.get("start") or 0), int(span.get("end") or 0)
            write(
                f"  {participant}: pool worker {index + 1}/{count}, task indices {start}–{end - 1}."
            )
        elif claim.state == "refused":
            refused = (
                f"No pending worker to claim for run {upload.platform_run_id} — it may "
                "already be fully claimed."
            )
            write(f"  {refused}")
        elif claim.state == "pending":
            write(
                f"  {participant}: no pool worker claimed yet ({claim.reason}); its iterations "
                "run here and the claim is sent when the platform answers (or by "
                "pytest --bench-resubmit)."
            )
        self._admitted[key] = refused
        return refused

    def coordination(
        self, run: BenchmarkRun, participant: str, concurrency: int
    ) -> StepCoordination | None:
        """The participant's step coordination while reporting (else ``None``)."""
        upload = self.uploads.get(run.file_key)
        if upload is None or not upload.active:
            return None
        return upload.coordination(participant, concurrency)

    def pool_lines(self) -> list[str]:
        """What closing the pooled runs gave (upstream's close line, or why it failed)."""
        lines: list[str] = []
        store = self.store
        for upload in self.uploads.values():
            entry = store.outbox_get(f"{upload.local_run_id}/close") if store else None
            if entry is None or entry.state != "sent" or not isinstance(entry.response, dict):
                continue
            answer = entry.response
            if answer.get("closed"):
                run = answer.get("run") or {}
                out = answer.get("outcome") or {}
                lines.append(
                    f"Closed run {run.get('id')} ({run.get('status')}) — workers "
                    f"{out.get('completedWorkers')}/{out.get('workerCount')} completed, "
                    f"{out.get('pendingWorkers')} pending (missing fires), "
                    f"{out.get('reapedWorkers')} reaped, {out.get('attemptCount')} attempts."
                )
            elif answer.get("error"):
                lines.append(f"Failed to close run {answer.get('runId')}: {answer['error']}")
        return lines

    def record(self, run: BenchmarkRun, payload: RecordPayload) -> None:
        upload = self.uploads.get(run.file_key)
        if upload is None:
            return
        for level, text in payload.log:
            upload.log(payload.participant, text, level)
        upload.record(payload.participant, payload.wire)
        if run.participant_finished(payload.participant):
            upload.participant_finished(payload.participant)

    def finish(self, run: BenchmarkRun) -> None:
        upload = self.uploads.get(run.file_key)
        if upload is not None:
            upload.finish(run.platform_summary)
            self._sync_run_ids(run, upload)

    def close(
        self, *, interrupted: bool = False, timeout_s: float = CLOSE_TIMEOUT_S
    ) -> DeliverySummary:
        """Deliver what is queued for at most ``timeout_s`` seconds and summarise (once).

        ``interrupted`` (the session was interrupted, e.g. Ctrl-C): send nothing more; what is
        unsent stays in the outbox and the summary names the resubmit command. A Ctrl-C while
        waiting for delivery stops it the same way (no traceback).
        """
        if self.delivery is None:
            try:
                self.delivery = self.uploader.close(timeout=timeout_s, interrupted=interrupted)
            except KeyboardInterrupt:
                self.delivery = self.uploader.close(timeout=0, interrupted=True)
        return self.delivery
