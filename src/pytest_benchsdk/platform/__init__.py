"""Platform reporting: httpx client, credentials, system metrics, durable delivery, resubmit.

The plugin uses the facade only:

* :meth:`PlatformUploader.open` once per pytest session (controller),
  :meth:`PlatformUploader.header_lines` for the header, :meth:`PlatformUploader.begin_benchmark`
  per benchmark → :class:`RunUpload` (``participant_started`` / ``record`` / ``log`` /
  ``participant_finished`` / ``finish``; ``coordination`` for step heartbeats and readiness
  barriers), :meth:`PlatformUploader.claim_worker` for a worker pool (→ :class:`WorkerClaim`),
  :meth:`PlatformUploader.close` at the end → :class:`DeliverySummary`.
* :func:`resubmit` for ``--bench-resubmit``; :func:`check_connectivity` for ``--bench-check``.

Everything the platform should receive is written to the results store's outbox before it is
sent; nothing is sent twice. Secrets never reach output, logs, artifacts or the store.
"""

from __future__ import annotations

from ._auth import CliAuth, get_api_base_url, get_platform_base_url, resolve_auth
from ._client import BenchmarkClient, encode_segment
from ._connect import CheckResult, check_connectivity, client_for
from ._delivery import RESUBMIT_COMMAND, DeliverySummary, OutboxStore, RetryPolicy, resubmit
from ._errors import AuthError, BenchmarkApiError, PlatformConnectionError, redact
from ._metrics import METRIC_KEYS, SystemMetricsCollector
from ._run_upload import RunUpload
from ._uploader import PlatformUploader, WorkerClaim

__all__ = [
    "METRIC_KEYS",
    "RESUBMIT_COMMAND",
    "AuthError",
    "BenchmarkApiError",
    "BenchmarkClient",
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
    "client_for",
    "encode_segment",
    "get_api_base_url",
    "get_platform_base_url",
    "redact",
    "resolve_auth",
    "resubmit",
]

# The public classes and functions say they live here (in reprs, tracebacks and docs), not in
# the private modules that define them; constants have no ``__module__``.
for _name in __all__:
    _obj = globals()[_name]
    if callable(_obj):
        _obj.__module__ = __name__
del _name, _obj
