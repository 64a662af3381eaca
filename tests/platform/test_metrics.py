"""System-metrics samples: upstream's 22 keys, nullable Linux fields, sampler thread, stop."""

from __future__ import annotations

import json
import sys
import time

from pytest_benchsdk.platform import METRIC_KEYS, SystemMetricsCollector
from pytest_benchsdk.platform._metrics import samples_to_ndjson

UPSTREAM_KEYS = [
    "ts", "uptimeMs", "cpuUserUs", "cpuSystemUs", "memRssMb", "memHeapUsedMb",
    "memHeapTotalMb", "memExternalMb", "eventLoopP50Ms", "eventLoopP99Ms", "eventLoopMaxMs",
    "loadavg1m", "loadavg5m", "loadavg15m", "openFds", "sockstat", "hostMemTotalMb",
    "hostMemAvailableMb", "hostCpuUsedUs", "hostCpuTotalUs", "cgroupMemLimitMb",
    "cgroupCpuLimitCores",
]  # fmt: skip


def test_exactly_the_22_keys_and_types() -> None:
    collector = SystemMetricsCollector(probe=False)
    try:
        first = collector.sample()
        second = collector.sample()
    finally:
        collector.stop()
    assert len(METRIC_KEYS) == 22
    assert list(first) == UPSTREAM_KEYS == list(METRIC_KEYS)
    assert list(second) == UPSTREAM_KEYS
    assert first["ts"].endswith("Z")
    assert second["uptimeMs"] >= first["uptimeMs"] >= 0
    for key in ("cpuUserUs", "cpuSystemUs", "memRssMb", "memHeapUsedMb", "memHeapTotalMb"):
        assert isinstance(first[key], int), key
    assert first["memRssMb"] > 0
    for key in ("loadavg1m", "loadavg5m", "loadavg15m", "eventLoopP50Ms", "eventLoopMaxMs"):
        assert isinstance(first[key], (int, float)), key
    nullable = ("openFds", "sockstat", "hostMemTotalMb", "hostMemAvailableMb", "hostCpuUsedUs",
                "hostCpuTotalUs", "cgroupMemLimitMb", "cgroupCpuLimitCores")  # fmt: skip
    for key in nullable:
        assert first[key] is None or isinstance(first[key], (int, float, dict)), key
    if sys.platform.startswith("linux"):
        assert isinstance(first["openFds"], int)
        assert isinstance(first["hostMemTotalMb"], int)
        assert isinstance(first["sockstat"], dict)
        assert all(isinstance(v, int) for v in first["sockstat"].values())
    json.dumps(first)  # JSON-serialisable


def test_lag_source_feeds_event_loop_fields() -> None:
    batches = [[1.0, 2.0, 3.0, 50.0], []]
    collector = SystemMetricsCollector(lag_source=lambda: batches.pop(0))
    first = collector.sample()
    second = collector.sample()
    collector.stop()
    assert (first["eventLoopP50Ms"], first["eventLoopP99Ms"], first["eventLoopMaxMs"]) == (
        2.0, 50.0, 50.0,
    )  # fmt: skip
    assert (second["eventLoopP50Ms"], second["eventLoopMaxMs"]) == (0, 0)


def test_sampler_thread_and_idempotent_stop() -> None:
    collector = SystemMetricsCollector()
    collector.start(0.02)
    deadline = time.monotonic() + 10
    while len(collector.samples) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    collector.stop()
    collector.stop()
    count = len(collector.samples)
    assert count >= 2
    time.sleep(0.06)
    assert len(collector.samples) == count
    collector.start(0.01)  # no-op after stop
    time.sleep(0.03)
    assert len(collector.samples) == count
    body = samples_to_ndjson(collector.samples)
    lines = body.splitlines()
    assert body.endswith("\n")
    assert len(lines) == count
    assert "loadavg1m" in lines[0]
    assert "memRssMb" in lines[0]


def test_probe_measures_lag() -> None:
    collector = SystemMetricsCollector()
    time.sleep(0.1)
    sample = collector.sample()
    collector.stop()
    assert sample["eventLoopMaxMs"] >= sample["eventLoopP50Ms"] >= 0
