"""One clock for every timing the runtime takes.

Latencies come from a monotonic high-resolution counter (``time.perf_counter``); wall-clock
timestamps are *derived* from it: the wall time is read once when the clock is made (the anchor)
and every later timestamp is ``anchor + (monotonic now - monotonic at anchor)``. So a record's
``completed_at - started_at`` always equals its measured ``latency_ms`` (within a millisecond:
the timestamps are whole milliseconds, the latency keeps nanoseconds), even when NTP steps the
system clock during a run, and timestamps never go backwards.

Latencies are milliseconds (upstream's wire unit) with six decimals: the nanosecond, the
resolution ``time.perf_counter`` has on the platforms we run on, so a 150 ns step records
``0.00015`` and not the ``0.001`` a microsecond rounding would make of it. (A calibrated step,
``step(name, fn, calls=N)``, records the time *per call* of its loop: there
``completed_at - started_at`` is the loop, ``calls × latency_ms``, its ``data["loop_ms"]``.)

Timestamps are rendered like JavaScript's ``Date.prototype.toISOString()``:
``YYYY-MM-DDTHH:MM:SS.mmmZ`` (UTC, milliseconds truncated like a JS ``Date``).
"""

from __future__ import annotations

import datetime as _dt
import time
from collections.abc import Callable

__all__ = ["CLOCK", "Clock", "iso_utc"]

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_last_prefix: tuple[int, str] = (-1, "")


def iso_utc(epoch_seconds: float) -> str:
    """Format seconds since the Unix epoch as ``2024-01-02T03:04:05.678Z`` (JS ``toISOString``).

    JavaScript ``Date`` values are whole milliseconds (truncated toward zero); the value is first
    rounded to the microsecond so float noise does not lose a millisecond.
    """
    micros = round(epoch_seconds * 1_000_000)
    millis = micros // 1000 if micros >= 0 else -((-micros) // 1000)
    seconds, ms = divmod(millis, 1000)
    if seconds < 0:  # gmtime is not portable before the epoch
        moment = _EPOCH + _dt.timedelta(milliseconds=millis)
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms:03d}Z"
    # Several timestamps are formatted per record, mostly within the same second: cache the
    # "YYYY-MM-DDTHH:MM:SS." prefix of the last second seen (a tuple swap is thread-safe).
    global _last_prefix
    cached_seconds, prefix = _last_prefix
    if cached_seconds != seconds:
        t = time.gmtime(seconds)
        prefix = (
            f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T"
            f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}."
        )
        _last_prefix = (seconds, prefix)
    return f"{prefix}{ms:03d}Z"


class Clock:
    """A monotonic clock with an ISO-UTC view anchored to the wall clock once.

    ``monotonic()`` returns seconds (float) from an arbitrary origin; differences are durations.
    ``wall(t)`` / ``iso(t)`` turn such a reading into epoch seconds / an ISO string.
    The sources are injectable for tests.
    """

    __slots__ = ("_mono_anchor", "_wall_anchor", "monotonic")

    #: Seconds on the monotonic counter (only differences are meaningful). The source itself
    #: (``time.perf_counter`` by default), not a method wrapping it: a reading is what timed
    #: regions start and end with, so it costs one C call and nothing more.
    monotonic: Callable[[], float]

    def __init__(
        self,
        monotonic: Callable[[], float] = time.perf_counter,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.monotonic = monotonic
        # Read both sources back to back so the anchor pair is as tight as possible.
        self._mono_anchor = monotonic()
        self._wall_anchor = wall()

    def wall(self, mono: float | None = None) -> float:
        """Epoch seconds of the monotonic reading ``mono`` (now when omitted)."""
        if mono is None:
            mono = self.monotonic()
        return self._wall_anchor + (mono - self._mono_anchor)

    def iso(self, mono: float | None = None) -> str:
        """ISO-8601 UTC timestamp (JS ``toISOString`` format) of ``mono`` (now when omitted)."""
        return iso_utc(self.wall(mono))

    @staticmethod
    def elapsed_ms(start: float, end: float) -> float:
        """Milliseconds between two monotonic readings, rounded to the nanosecond (six
        decimals: finer digits are float noise of the subtraction, not time)."""
        return round((end - start) * 1000.0, 6)


#: The process-wide clock used by default by the task context and the executor.
CLOCK = Clock()
