"""The controller's link to the platform: its runs reported through the store's outbox.

Imported only outside dry runs. The platform layer decides between local only (no
credentials) and reporting, and says which in the header.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .._runenv import RunEnvironment
from .._runs import BenchmarkRun, RecordPayload
from ..platform import DeliverySummary, PlatformUploader, RunUpload
from ..store import ResultStore
from .options import BenchOptions

__all__ = ["PlatformLink"]

#: How long the header waits for the platform to create a run (to print its dashboard URL).
HEADER_WAIT_S = 5.0
#: How long the session end waits for queued uploads before leaving them to --bench-resubmit.
CLOSE_TIMEOUT_S = 30.0


class PlatformLink:
    """Reports the controller's runs to the platform through the store's outbox."""

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

    @classmethod
    def open(
        cls,
        options: BenchOptions,
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
            env=environ,
            header_wait_s=HEADER_WAIT_S,
            on_message=lambda line: write(f"benchsdk: {line}"),
        )
        return cls(uploader, store, environment, options.run_args.run_key)

    def header_lines(self) -> list[str]:
        """The mode line and credential warnings, once per session."""
        return self.uploader.header_lines()

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

    def record(self, run: BenchmarkRun, payload: RecordPayload) -> None:
        upload = self.uploads.get(run.file_key)
        if upload is None:
            return
        for level, text in payload.log:
            upload.log(payload.participant, text, level)
        upload.record(payload.participant, payload.record)
        if run.participant_finished(payload.participant):
            upload.participant_finished(payload.participant)

    def finish(self, run: BenchmarkRun) -> None:
        upload = self.uploads.get(run.file_key)
        if upload is not None:
            upload.finish(run.summary)
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
