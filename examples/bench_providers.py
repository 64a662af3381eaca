"""A provider-style benchmark: each participant needs credentials from the environment.

Participants whose ``required_env_vars`` are unset or empty are skipped, with the reason shown
("acme-cloud: missing ACME_API_KEY"). The "local" participant needs nothing, so the file always
runs. Set ACME_API_KEY=anything to include the simulated "acme-cloud" provider.

Run: pytest examples/bench_providers.py --bench --bench-dry-run
"""

from __future__ import annotations

import asyncio
import random

from pytest_benchsdk import (
    Participant,
    TaskError,
    define_benchmark_config,
    define_task,
)


class SimulatedSandboxSDK:
    """Stands in for a cloud SDK: creating a sandbox takes ``base_ms`` plus jitter."""

    def __init__(self, base_ms: float, seed: int) -> None:
        self.base_ms = base_ms
        self._rng = random.Random(seed)

    async def create(self) -> float:
        delay = self.base_ms * (1 + self._rng.random() * 0.5)
        await asyncio.sleep(delay / 1000)
        return delay


config = define_benchmark_config(
    benchmark_slug="sandbox-tti-example",
    benchmark_name="Sandbox time-to-interactive (simulated)",
    participants=[
        Participant("local", sdk=SimulatedSandboxSDK(base_ms=20, seed=1)),
        Participant(
            "acme-cloud",
            required_env_vars=["ACME_API_KEY"],
            sdk=SimulatedSandboxSDK(base_ms=35, seed=2),
        ),
        Participant(
            "globex",
            required_env_vars=["GLOBEX_TOKEN", "GLOBEX_REGION"],
            sdk=SimulatedSandboxSDK(base_ms=50, seed=3),
        ),
    ],
    iterations=6,
    concurrency=3,
    scoring={
        "metrics": [
            {
                "key": "tti_ms",
                "unit": "ms",
                "ceiling": 1000,
                "weights": {"median": 0.6, "p95": 0.25, "p99": 0.15},
            }
        ]
    },
)


@define_task
async def task(participant, step, measure, log):
    tti_ms = await step("create", participant.sdk.create, timeout_ms=2_000)
    if tti_ms <= 0:
        raise TaskError("sandbox reported no start time", code="no_tti", data={"tti": tti_ms})
    measure(tti_ms=tti_ms)
    log("sandbox ready", {"tti_ms": round(tti_ms, 1)})
