"""An async HTTP benchmark against a local server that a fixture starts.

The participants are response sizes; each iteration makes one request with httpx on the
plugin's event loop. Eight iterations run at once, their starts staggered by 5 ms. The
``local_server`` fixture is session-scoped (see conftest.py), so concurrent iterations share it.
Two warm-up iterations per participant run first and are never scored: the first requests of
a process pay for imports and the server's first threads, which is not what the sizes cost.

Run: pytest examples/bench_http.py --bench --bench-dry-run
"""

from __future__ import annotations

import time

import httpx

from pytest_benchsdk import Participant, define_benchmark_config, define_task

config = define_benchmark_config(
    benchmark_slug="local-http",
    benchmark_name="Local HTTP response sizes",
    participants=[Participant("4KiB", size=4 * 1024), Participant("1MiB", size=1024 * 1024)],
    iterations=24,
    warmup=2,
    concurrency=8,
    stagger_delay_ms=5,
    scoring={
        "metrics": [
            {
                "key": "request_ms",
                "unit": "ms",
                "ceiling": 500,
                # p99 of 24 samples is the slowest one: no weight; p95 judges the tail.
                "weights": {"median": 0.6, "p95": 0.4, "p99": 0.0},
            }
        ]
    },
)


@define_task
async def task(participant, local_server, step, measure):
    url = f"{local_server}/bytes/{participant.size}"
    # Plain HTTP on loopback: skipping the TLS setup keeps client creation (~60 ms of CPU
    # for loading CA certificates) out of what is measured alongside the request.
    async with httpx.AsyncClient(verify=False) as client:
        started = time.perf_counter()
        # Pass the awaitable itself: a sync callable with timeout_ms runs on a helper thread.
        response = await step("request", client.get(url), timeout_ms=10_000)
        measure(request_ms=(time.perf_counter() - started) * 1000)
    response.raise_for_status()
    measure(bytes=len(response.content))
