"""Glue between the controller's runs and the platform layer (imported only when needed).

The platform package pulls in httpx and psutil; a dry run never imports this module, which
keeps ``pytest --bench --bench-dry-run`` as light as plain pytest.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._session import BenchmarkRun, BenchSession, RecordPayload
from .platform import (
    RESUBMIT_COMMAND,
    AuthError,
    CheckResult,
    DeliverySummary,
    PlatformUploader,
    RunUpload,
    check_connectivity,
    client_for,
    resolve_auth,
    resubmit,
)

__all__ = ["PlatformBridge", "check_platform", "resubmit_outbox"]

#: How long the header waits for the platform to create a run (to print its dashboard URL).
HEADER_WAIT_S = 5.0
#: How long the session end waits for queued uploads before leaving them to --bench-resubmit.
CLOSE_TIMEOUT_S = 30.0


class PlatformBridge:
    """Reports the controller's runs to the platform through the store's outbox."""

    def __init__(self, state: BenchSession, write: Callable[[str], None]) -> None:
        store = state.open_store()
        assert store is not None, "platform reporting needs a store for its outbox"
        self.state = state
        self.uploader = PlatformUploader.open(
            store,
            dry_run=state.options.dry_run,
            base_url=state.options.base_url,
            api_key=state.options.api_key,
            env=state.environ,
            header_wait_s=HEADER_WAIT_S,
            on_message=lambda line: write(f"benchsdk: {line}"),
        )
        self.uploads: dict[str, RunUpload] = {}
        self.delivery: DeliverySummary | None = None

    def header_lines(self) -> list[str]:
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
            run_config=run.config_snapshot(self.state.environment),
            benchmark_config=benchmark_config,
            identity_is_ours=run.plan.identity_is_ours,
            run_key=self.state.options.run_args.run_key,
        )
        self.uploads[run.file_key] = upload
        self._sync_run_ids(run, upload)
        return upload.header_lines()

    def _sync_run_ids(self, run: BenchmarkRun, upload: RunUpload) -> None:
        platform_run_id = upload.platform_run_id
        if platform_run_id and platform_run_id != run.platform_run_id:
            run.platform_run_id = platform_run_id
            run.dashboard_url = upload.dashboard_url
            store = self.state.store
            if store is not None and run.local_run_id is not None:
                store.set_platform_run(run.local_run_id, platform_run_id, run.dashboard_url)

    def record(self, run: BenchmarkRun, payload: RecordPayload) -> None:
        upload = self.uploads.get(run.file_key)
        if upload is None:
            return
        for level, text in payload.log:
            upload.log(payload.participant, text, level)
        upload.record(payload.participant, payload.record)
        if len(run.records.get(payload.participant, {})) >= len(
            run.selected.get(payload.participant, ())
        ):
            upload.participant_finished(payload.participant)

    def finish(self, run: BenchmarkRun) -> None:
        upload = self.uploads.get(run.file_key)
        if upload is not None:
            upload.finish(run.summary)
            self._sync_run_ids(run, upload)

    def close(self) -> DeliverySummary:
        if self.delivery is None:
            self.delivery = self.uploader.close(timeout=CLOSE_TIMEOUT_S)
        return self.delivery


def check_platform(state: BenchSession) -> tuple[bool, bool, list[str]]:
    """``--bench-check``'s platform probe: upstream's ``apiOk`` / ``envOk`` and warnings."""
    result: CheckResult = check_connectivity(
        dry_run=state.options.dry_run,
        base_url=state.options.base_url,
        api_key=state.options.api_key,
        env=state.environ,
    )
    return result.api_ok, result.env_ok, list(result.warnings)


def resubmit_outbox(state: BenchSession, write: Callable[[str], None]) -> bool:
    """``--bench-resubmit``: send what earlier sessions left in the outbox. True when all of
    it is delivered (or there was nothing to send)."""
    path = state.options.store_path
    if path is None or not path.exists():
        write(f"benchsdk: no results store at {path}; nothing to resubmit.")
        return True
    store = state.open_store()
    assert store is not None
    pending = store.outbox_runs_with_pending()
    if not pending:
        write(f"benchsdk: nothing to resubmit in {path}.")
        return True
    try:
        auth = resolve_auth(
            base_url=state.options.base_url, api_key=state.options.api_key, env=state.environ
        )
    except AuthError as exc:
        write(f"benchsdk: cannot resubmit: {exc}")
        return False
    write(f"benchsdk: resubmitting {len(pending)} run(s) from {path} ...")
    with client_for(auth, env=state.environ) as client:
        summary = resubmit(store, client, on_message=lambda line: write(f"benchsdk: {line}"))
    write(f"benchsdk: resubmit sent {summary.sent} upload(s).")
    for line in summary.lines(str(path)):
        write(f"benchsdk: {line}")
    if summary.unsent:
        write(
            f"benchsdk: {summary.unsent} upload(s) are still unsent; run `{RESUBMIT_COMMAND}` "
            "again once the problem reported above is fixed."
        )
    return summary.ok
