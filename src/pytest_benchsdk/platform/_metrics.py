"""System-metrics samples for the ``system-metrics`` artifact, with psutil.

Each sample has upstream's 22 keys in upstream's order; Linux-only fields are ``None`` elsewhere.
Where a field is specific to Node, a Python stand-in with the same unit is used:

* ``memHeapUsedMb`` — memory traced by :mod:`tracemalloc` when it is tracing, else the private
  resident memory (``rss − shared`` on Linux, ``rss`` elsewhere): what the interpreter itself
  holds. ``memHeapTotalMb`` — the data segment (heap + stacks, psutil ``data`` on Linux, else
  ``vms``). ``memExternalMb`` — resident shared memory (shared libraries, mapped files; psutil
  ``shared`` on Linux, else 0).
* ``eventLoopP50Ms``/``P99Ms``/``MaxMs`` — scheduling lag in milliseconds since the previous
  sample: the values of ``lag_source`` when one is given (the executor feeds its event loop's
  lag), else a built-in probe thread that sleeps 20 ms repeatedly and records how late it wakes
  up (GIL and CPU contention, the closest Python analogue of Node's event-loop delay). 0 when no
  lag was measured yet, as Node's fresh histogram reports. P50 and P99 are nearest-rank
  percentiles of the untrimmed lags, the package's one rule
  (:mod:`pytest_benchsdk._base.percentiles`).

Other fields follow upstream: ``hostCpu*Us`` are ``/proc/stat`` jiffy deltas × 10 000 µs (clock
tick 100 Hz assumed, as upstream), cgroup limits take the minimum over the cgroup's ancestors
(v2, else v1), ``sockstat`` keys are ``<section>_<key>`` with the section lowercased.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pytest_benchsdk._base.clock import iso_utc
from pytest_benchsdk._base.percentiles import nearest_rank

__all__ = ["METRIC_KEYS", "SystemMetricsCollector", "samples_to_ndjson"]

# psutil ships no type information; keep it dynamically typed rather than ignoring imports.
psutil: Any = importlib.import_module("psutil")

METRIC_KEYS = (
    "ts", "uptimeMs", "cpuUserUs", "cpuSystemUs", "memRssMb", "memHeapUsedMb",
    "memHeapTotalMb", "memExternalMb", "eventLoopP50Ms", "eventLoopP99Ms", "eventLoopMaxMs",
    "loadavg1m", "loadavg5m", "loadavg15m", "openFds", "sockstat", "hostMemTotalMb",
    "hostMemAvailableMb", "hostCpuUsedUs", "hostCpuTotalUs", "cgroupMemLimitMb",
    "cgroupCpuLimitCores",
)  # fmt: skip

_MB = 1024 * 1024
_CGROUP_ROOT = Path("/sys/fs/cgroup")
_PROBE_PERIOD_S = 0.02


def _mb(value: float) -> int:
    return math.floor(value / _MB + 0.5)


def _read(path: str | Path) -> str | None:
    try:
        return Path(path).read_text()
    except OSError:
        return None


def _proc_stat_jiffies() -> tuple[int, int] | None:
    text = _read("/proc/stat")
    if not text:
        return None
    fields = text.splitlines()[0].split()
    if not fields or fields[0] != "cpu":
        return None
    values = [int(v) for v in fields[1:]]
    # user nice system idle iowait irq softirq steal (guest time is already in user/nice)
    padded = values + [0] * (8 - len(values))
    used = padded[0] + padded[1] + padded[2] + padded[5] + padded[6] + padded[7]
    total = sum(values[:8])
    return used, total


def _meminfo() -> tuple[int | None, int | None]:
    text = _read("/proc/meminfo")
    if not text:
        return None, None
    found: dict[str, int] = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if parts and name in ("MemTotal", "MemAvailable"):
            found[name] = int(parts[0]) * 1024
    total = found.get("MemTotal")
    available = found.get("MemAvailable")
    return (
        _mb(total) if total is not None else None,
        _mb(available) if available is not None else None,
    )


def _sockstat() -> dict[str, int] | None:
    text = _read("/proc/net/sockstat")
    if not text:
        return None
    out: dict[str, int] = {}
    for line in text.splitlines():
        section, _, rest = line.partition(":")
        parts = rest.split()
        for key, value in zip(parts[::2], parts[1::2], strict=False):
            try:
                out[f"{section.strip().lower()}_{key}"] = int(value)
            except ValueError:
                continue
    return out


def _open_fds() -> int | None:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return None


def _cgroup_dirs() -> tuple[list[Path], list[Path], list[Path]]:
    """(v2 dirs, v1 memory dirs, v1 cpu dirs), each from the process's cgroup up to the root."""
    text = _read("/proc/self/cgroup") or ""
    v2: list[Path] = []
    mem: list[Path] = []
    cpu: list[Path] = []

    def chain(base: Path, rel: str) -> list[Path]:
        dirs = []
        current = base / rel.lstrip("/")
        while True:
            dirs.append(current)
            if current == base or base not in current.parents:
                break
            current = current.parent
        if base not in dirs:
            dirs.append(base)
        return dirs

    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, rel = parts
        names = controllers.split(",")
        if controllers == "" and (_CGROUP_ROOT / "cgroup.controllers").exists():
            v2 = chain(_CGROUP_ROOT, rel)
        if "memory" in names:
            mem = chain(_CGROUP_ROOT / "memory", rel)
        if "cpu" in names:
            cpu = chain(_CGROUP_ROOT / controllers, rel)
            if not cpu[-1].exists():
                cpu = chain(_CGROUP_ROOT / "cpu", rel)
    return v2, mem, cpu


def _cgroup_limits() -> tuple[int | None, float | None]:
    v2, mem_v1, cpu_v1 = _cgroup_dirs()
    mem_limits: list[int] = []
    cpu_limits: list[float] = []
    for directory in v2:
        memory_max = (_read(directory / "memory.max") or "").strip()
        if memory_max.isdigit():
            mem_limits.append(int(memory_max))
        cpu_max = (_read(directory / "cpu.max") or "").split()
        if len(cpu_max) == 2 and cpu_max[0] != "max":
            try:
                quota, period = float(cpu_max[0]), float(cpu_max[1])
            except ValueError:
                continue
            if quota > 0 and period > 0:
                cpu_limits.append(quota / period)
    if not mem_limits:
        for directory in mem_v1:
            value = (_read(directory / "memory.limit_in_bytes") or "").strip()
            if value.isdigit() and int(value) <= 1e15:
                mem_limits.append(int(value))
    if not cpu_limits:
        for directory in cpu_v1:
            quota_text = (_read(directory / "cpu.cfs_quota_us") or "").strip()
            period_text = (_read(directory / "cpu.cfs_period_us") or "").strip()
            try:
                quota, period = float(quota_text), float(period_text)
            except ValueError:
                continue
            if quota > 0 and period > 0:
                cpu_limits.append(quota / period)
    return (
        _mb(min(mem_limits)) if mem_limits else None,
        round(min(cpu_limits), 3) if cpu_limits else None,
    )


def _round2(value: float) -> float:
    return math.floor(value * 100 + 0.5) / 100


class SystemMetricsCollector:
    """Collects system-metrics samples (upstream ``createSystemMetricsCollector``).

    :meth:`sample` takes one sample now and returns it (and keeps it); :meth:`start` adds a
    background sampler thread taking one every ``interval_s``; :meth:`stop` stops both threads
    (idempotent). :attr:`samples` holds every sample taken so far, in order.

    ``lag_source``: a callable returning the scheduling-lag samples (ms) measured since its
    previous call; without one, a built-in probe thread measures this process's thread lag.
    """

    def __init__(
        self,
        *,
        lag_source: Callable[[], Iterable[float]] | None = None,
        probe: bool = True,
    ) -> None:
        self._created = time.monotonic()
        self._process = psutil.Process()
        self._cpu0 = self._process.cpu_times()
        self._host0 = _proc_stat_jiffies()
        self._lag_source = lag_source
        self._lock = threading.Lock()
        self._lags: list[float] = []
        self._samples: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._sampler: threading.Thread | None = None
        self._probe: threading.Thread | None = None
        self._cgroup = _cgroup_limits()
        if lag_source is None and probe:
            self._probe = threading.Thread(
                target=self._run_probe, name="benchsdk-lag-probe", daemon=True
            )
            self._probe.start()

    # -- threads ----------------------------------------------------------------------------

    def _run_probe(self) -> None:
        while not self._stop.is_set():
            before = time.monotonic()
            if self._stop.wait(_PROBE_PERIOD_S):
                return
            lag_ms = max(0.0, (time.monotonic() - before - _PROBE_PERIOD_S) * 1000)
            with self._lock:
                self._lags.append(lag_ms)
                if len(self._lags) > 100_000:  # bounded even if nobody samples for hours
                    del self._lags[:50_000]

    def start(self, interval_s: float) -> None:
        """Sample every ``interval_s`` seconds in a daemon thread (no-op if ≤ 0 or started)."""
        if interval_s <= 0 or self._sampler is not None or self._stop.is_set():
            return

        def run() -> None:
            while not self._stop.wait(interval_s):
                self.sample()

        self._sampler = threading.Thread(target=run, name="benchsdk-metrics", daemon=True)
        self._sampler.start()

    def stop(self) -> None:
        """Stop the sampler and the probe (idempotent; samples stay readable)."""
        self._stop.set()
        for thread in (self._sampler, self._probe):
            if thread is not None and thread is not threading.current_thread():
                thread.join(2)

    # -- samples ----------------------------------------------------------------------------

    @property
    def samples(self) -> list[dict[str, Any]]:
        """Every sample taken so far (a copy)."""
        with self._lock:
            return list(self._samples)

    def _drain_lags(self) -> list[float]:
        if self._lag_source is not None:
            try:
                return [float(v) for v in self._lag_source()]
            except Exception:
                return []
        with self._lock:
            lags, self._lags = self._lags, []
        return lags

    def _memory(self) -> tuple[int, int, int, int]:
        info = self._process.memory_info()
        rss = float(info.rss)
        shared = float(getattr(info, "shared", 0) or 0)
        heap_total = float(getattr(info, "data", 0) or info.vms)
        if tracemalloc.is_tracing():
            heap_used = float(tracemalloc.get_traced_memory()[0])
        else:
            heap_used = max(0.0, rss - shared)
        return _mb(rss), _mb(heap_used), _mb(heap_total), _mb(shared)

    def sample(self) -> dict[str, Any]:
        """Take one sample now (22 keys, upstream order) and keep it."""
        cpu = self._process.cpu_times()
        rss, heap_used, heap_total, external = self._memory()
        lags = sorted(self._drain_lags())
        try:
            load1, load5, load15 = os.getloadavg()
        except (OSError, AttributeError):
            load1 = load5 = load15 = 0.0
        host_mem_total, host_mem_available = _meminfo()
        host_now = _proc_stat_jiffies()
        host_used = host_total = None
        if host_now is not None and self._host0 is not None:
            host_used = (host_now[0] - self._host0[0]) * 10_000
            host_total = (host_now[1] - self._host0[1]) * 10_000
        sample: dict[str, Any] = {
            "ts": iso_utc(time.time()),
            "uptimeMs": int((time.monotonic() - self._created) * 1000),
            "cpuUserUs": int((cpu.user - self._cpu0.user) * 1_000_000),
            "cpuSystemUs": int((cpu.system - self._cpu0.system) * 1_000_000),
            "memRssMb": rss,
            "memHeapUsedMb": heap_used,
            "memHeapTotalMb": heap_total,
            "memExternalMb": external,
            "eventLoopP50Ms": _round2(nearest_rank(lags, 50)) if lags else 0,
            "eventLoopP99Ms": _round2(nearest_rank(lags, 99)) if lags else 0,
            "eventLoopMaxMs": _round2(lags[-1]) if lags else 0,
            "loadavg1m": load1,
            "loadavg5m": load5,
            "loadavg15m": load15,
            "openFds": _open_fds(),
            "sockstat": _sockstat(),
            "hostMemTotalMb": host_mem_total,
            "hostMemAvailableMb": host_mem_available,
            "hostCpuUsedUs": host_used,
            "hostCpuTotalUs": host_total,
            "cgroupMemLimitMb": self._cgroup[0],
            "cgroupCpuLimitCores": self._cgroup[1],
        }
        with self._lock:
            self._samples.append(sample)
        return sample


def samples_to_ndjson(samples: Iterable[dict[str, Any]]) -> str:
    """NDJSON body of the ``metrics.jsonl`` artifact (one compact JSON line each, final newline)."""
    lines = [json.dumps(s, separators=(",", ":")) for s in samples]
    return "\n".join(lines) + "\n" if lines else ""
