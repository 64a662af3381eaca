"""Connecting to the platform: a client for resolved credentials, and ``--bench-check``'s probe."""

from __future__ import annotations

import os
from collections.abc import Mapping

import attrs

from pytest_benchsdk.platform._auth import CliAuth, resolve_auth
from pytest_benchsdk.platform._client import BenchmarkClient
from pytest_benchsdk.platform._errors import (
    AuthError,
    BenchmarkApiError,
    PlatformConnectionError,
    platform_message,
    redact,
)

__all__ = ["CheckResult", "check_connectivity", "client_for"]


@attrs.frozen
class CheckResult:
    """``--bench-check``'s platform part: upstream's ``apiOk`` and ``envOk`` plus warnings."""

    api_ok: bool
    env_ok: bool
    warnings: tuple[str, ...] = ()


def check_connectivity(
    *,
    dry_run: bool,
    base_url: str | None = None,
    api_key: str | None = None,
    org: str | None = None,
    env: Mapping[str, str] | None = None,
    home: str | os.PathLike[str] | None = None,
    timeout: float = 15.0,
) -> CheckResult:
    """Upstream ``bench check``'s platform checks: resolve credentials and list one benchmark.

    Dry run: both OK without any request. Warnings are upstream's
    (``[benchsdk] API connectivity check failed: <msg>``,
    ``[benchsdk] BENCHMARKS_PLATFORM_API_KEY or BENCHMARKS_PLATFORM_TOKEN is not set``).
    """
    if dry_run:
        return CheckResult(True, True)
    warnings: list[str] = []
    auth: CliAuth | None = None
    api_ok = False
    secrets: tuple[str | None, ...] = (api_key,)
    try:
        auth = resolve_auth(base_url=base_url, api_key=api_key, org=org, env=env, home=home)
        warnings.extend(auth.warnings)
        secrets = auth.secrets
        with client_for(auth, timeout=timeout, env=env) as client:
            client.list_benchmarks(limit=1)
        api_ok = True
    except (AuthError, BenchmarkApiError, PlatformConnectionError) as exc:
        warnings.append(
            f"[benchsdk] API connectivity check failed: {redact(platform_message(exc), secrets)}"
        )
    if auth is None:
        warnings.append(
            "[benchsdk] BENCHMARKS_PLATFORM_API_KEY or BENCHMARKS_PLATFORM_TOKEN is not set"
        )
    return CheckResult(api_ok, auth is not None, tuple(warnings))


def client_for(
    auth: CliAuth, *, timeout: float | None = None, env: Mapping[str, str] | None = None
) -> BenchmarkClient:
    """A :class:`BenchmarkClient` for resolved credentials (e.g. for :func:`resubmit`);
    ``timeout`` defaults to ``BENCHSDK_PLATFORM_TIMEOUT`` of ``env``, else 30 s."""
    return BenchmarkClient(
        base_url=auth.api_base_url,
        api_key=auth.api_key,
        token=auth.token,
        org_slug=auth.org_slug,
        org_id=auth.org_id,
        timeout=timeout,
        env=env,
    )
