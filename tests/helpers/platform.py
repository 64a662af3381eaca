"""Helpers for platform tests (no fixtures here: see ``platform_fixtures``)."""

from __future__ import annotations

from pytest_benchsdk._runenv import RunEnvironment, Trigger
from pytest_benchsdk.platform import RetryPolicy
from pytest_benchsdk.store import ResultStore

__all__ = ["FAST_RETRY", "new_local_run"]

#: Backoff fast enough for tests; still exponential with jitter.
FAST_RETRY = RetryPolicy(base_delay_s=0.01, max_delay_s=0.05, offline_after_s=1.5)

_ENV = RunEnvironment(
    git_sha=None,
    git_ref=None,
    trigger=Trigger(source="manual"),
    python_version="3.10.0",
    implementation="CPython",
    platform="linux",
    arch="x64",
    machine="x86_64",
    hostname="test-host",
)


def new_local_run(
    store: ResultStore, slug: str = "sandbox-tti", participants: tuple[str, ...] = ("e2b",)
) -> str:
    """A local run in ``store`` (what the plugin creates per benchmark)."""
    return store.begin_run(
        benchmark_slug=slug,
        benchmark_name=slug,
        file=None,
        knobs={},
        participants=participants,
        config_snapshot={},
        environment=_ENV,
        dry_run=False,
    )
