"""The run's reporting mode, said once in the session header.

* **dry run** (``--bench-dry-run``, ``BENCHSDK_NO_INGEST=1``): no platform at all; the glue never
  imports the platform layer (httpx, psutil), so a dry run costs what a local run costs;
* **local only**: no credentials; the platform layer keeps everything in the store;
* **reporting**: the platform layer sends the outbox.

A leaf: the glue (which decides the dry run) and ``platform/`` (which decides the other two)
both say their mode with these lines.
"""

from __future__ import annotations

from typing import Final

__all__ = ["DRY_RUN_LINE", "LOCAL_ONLY_LINE", "pool_ignored_line"]

DRY_RUN_LINE: Final = "Dry run: no platform ingest or reporting."
LOCAL_ONLY_LINE: Final = (
    "Local only: no platform credentials found (set BENCHMARKS_PLATFORM_API_KEY or "
    "BENCHMARKS_PLATFORM_TOKEN, or pass --bench-api-key, to report runs)."
)


def pool_ignored_line(pool: int) -> str:
    """Said once when ``--bench-worker-pool`` meets a mode without the platform."""
    return (
        f"--bench-worker-pool {pool} has no effect without the platform: every iteration runs "
        "in this process."
    )
