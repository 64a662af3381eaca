"""The resubmit role (``--bench-resubmit``): send what earlier sessions left in the store's
outbox; collects nothing and runs nothing."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pytest_benchsdk._plugin.options.settings import BenchOptions
from pytest_benchsdk.platform import (
    RESUBMIT_COMMAND,
    AuthError,
    client_for,
    resolve_auth,
    resubmit,
    resubmit_candidates,
)
from pytest_benchsdk.store import ResultStore, StoreError

__all__ = ["ResubmitPlugin"]


class ResubmitPlugin:
    """Replaces collection and the test loop with one pass over the outbox."""

    def __init__(self, config: pytest.Config, options: BenchOptions, environ: dict[str, str]):
        self.config = config
        self.options = options
        self.environ = environ
        self.ok: bool | None = None

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session: pytest.Session) -> bool:
        return True

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        self.ok = self._resubmit(self._write)
        return True

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.ok is not None:
            session.exitstatus = pytest.ExitCode.OK if self.ok else pytest.ExitCode.TESTS_FAILED

    def _write(self, line: str) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(line)

    def _resubmit(self, write: Callable[[str], None]) -> bool:
        """True when everything is delivered (or there was nothing to send)."""
        path = self.options.store_path
        if path is None or not path.exists():
            write(f"benchsdk: no results store at {path}; nothing to resubmit.")
            return True
        try:
            store = ResultStore(path)
        except StoreError as exc:
            write(f"benchsdk: cannot resubmit: {exc}")
            return False
        for line in store.abandoned_lines():
            write(f"benchsdk: {line}")
        with store:
            pending = resubmit_candidates(store, rejected=self.options.resubmit_rejected)
            if not pending:
                write(f"benchsdk: nothing to resubmit in {path}.")
                return True
            try:
                auth = resolve_auth(
                    base_url=self.options.base_url,
                    api_key=self.options.api_key,
                    org=self.options.org,
                    env=self.environ,
                )
            except AuthError as exc:
                write(f"benchsdk: cannot resubmit: {exc}")
                return False
            write(f"benchsdk: resubmitting {len(pending)} run(s) from {path} ...")
            with client_for(auth, env=self.environ) as client:
                summary = resubmit(
                    store,
                    client,
                    run_ids=pending,
                    timeout=self.options.resubmit_timeout_s,
                    on_message=lambda line: write(f"benchsdk: {line}"),
                    other_platform=self.options.resubmit_other_platform,
                    rejected=self.options.resubmit_rejected,
                    log_level=(self.environ.get("BENCHMARK_LOG_LEVEL") or "info").strip().lower(),
                )
        write(f"benchsdk: resubmit sent {summary.sent} upload(s).")
        for line in summary.lines(str(path)):
            write(f"benchsdk: {line}")
        if summary.unsent:
            write(
                f"benchsdk: still unsent: {summary.unsent_text()}; run `{RESUBMIT_COMMAND}` "
                "again once the problem reported above is fixed."
            )
        if summary.outstanding:
            write(
                f"benchsdk: {summary.outstanding} stored record(s) have not reached the "
                "platform (see above); the resubmit fails until they have."
            )
        return summary.ok
