"""Platform reporting: httpx client, credentials, system metrics, durable delivery, resubmit.

The plugin uses the facade only:

* :meth:`PlatformUploader.open` once per pytest session (controller),
  :meth:`PlatformUploader.header_lines` for the header, :meth:`PlatformUploader.begin_benchmark`
  per benchmark → :class:`RunUpload` (``participant_started`` / ``record`` / ``log`` /
  ``participant_finished`` / ``finish``; ``coordination`` for step heartbeats and readiness
  barriers), :meth:`PlatformUploader.claim_worker` for a worker pool (→ :class:`WorkerClaim`),
  :meth:`PlatformUploader.close` at the end → :class:`DeliverySummary`.
* :func:`resubmit` for ``--bench-resubmit`` (:func:`resubmit_candidates`: the runs it looks
  at); :func:`check_connectivity` for ``--bench-check``.

Everything the platform should receive is written to the results store's outbox before it is
sent; nothing is sent twice. Secrets never reach output, logs, artifacts or the store.
"""

from __future__ import annotations

from pytest_benchsdk._base.public import publish
from pytest_benchsdk.platform._auth import (
    CliAuth,
    get_api_base_url,
    get_platform_base_url,
    resolve_auth,
)
from pytest_benchsdk.platform._client import BenchmarkClient, encode_segment
from pytest_benchsdk.platform._connect import CheckResult, check_connectivity, client_for
from pytest_benchsdk.platform._delivery import (
    RESUBMIT_COMMAND,
    DeliverySummary,
    OutboxStore,
    RetryPolicy,
    resubmit,
    resubmit_candidates,
)
from pytest_benchsdk.platform._errors import (
    AuthError,
    BenchmarkApiError,
    PlatformConnectionError,
    redact,
)
from pytest_benchsdk.platform._metrics import METRIC_KEYS, SystemMetricsCollector
from pytest_benchsdk.platform._reporter import (
    BenchmarkReporter,
    claim_benchmark_reporter,
    create_api_client,
)
from pytest_benchsdk.platform._run_upload import RunUpload
from pytest_benchsdk.platform._uploader import PlatformUploader, WorkerClaim

__all__ = [
    "METRIC_KEYS",
    "RESUBMIT_COMMAND",
    "AuthError",
    "BenchmarkApiError",
    "BenchmarkClient",
    "BenchmarkReporter",
    "CheckResult",
    "CliAuth",
    "DeliverySummary",
    "OutboxStore",
    "PlatformConnectionError",
    "PlatformUploader",
    "RetryPolicy",
    "RunUpload",
    "SystemMetricsCollector",
    "WorkerClaim",
    "check_connectivity",
    "claim_benchmark_reporter",
    "client_for",
    "create_api_client",
    "encode_segment",
    "get_api_base_url",
    "get_platform_base_url",
    "redact",
    "resolve_auth",
    "resubmit",
    "resubmit_candidates",
]

# Name this package as the home of what it re-exports (reprs, tracebacks, pickles, docs).
publish(__name__, globals())
