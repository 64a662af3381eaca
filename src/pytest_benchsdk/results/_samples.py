"""A participant's records kept as samples, as they arrive or as the store gives them back.

Private to :mod:`pytest_benchsdk.results`. :class:`ParticipantSamples` is the one reader of
records for everything a summary says about them: counts, the latency, every numeric data key
(the measured metrics, scored or not), the steps, the failures by error code, the phases and
the first start and last end of the iterations. A live session feeds it each record as it
arrives (so the controller keeps no record objects, about 20 bytes a record instead of ~0.5
KiB, and no per-record times: the report draws its timeline from the stored records); the store CLI
and the report feed it the stored records. Either way the same :meth:`ParticipantSamples.add`
reads them, so a summary built live and one built from the store say the same.

A sample follows the scoring rule (:func:`~pytest_benchsdk._analysis.stats.finite_samples`): a
finite number, never a bool, or each finite number of a list (one level). Metrics and the latency
are sampled from passing records (``status == "success"``) only: a failed iteration's timing (a
timeout, say) measures the failure, not the work.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from typing import Final

from pytest_benchsdk._analysis.baseline import per_call_keys_of, record_phase
from pytest_benchsdk._base.numbers import is_finite
from pytest_benchsdk._engine.calibrated import CALLS_KEY
from pytest_benchsdk._engine.rounds import TEST_KEY, round_count
from pytest_benchsdk.records import TaskRecord

__all__ = [
    "MAX_MESSAGES",
    "MAX_MESSAGE_CHARS",
    "ParticipantSamples",
    "iso_time",
    "record_phase",
    "sample_sets",
    "shared_per_call_keys",
    "timeline",
]

#: First messages kept per error code (the rest are counted).
MAX_MESSAGES: Final = 5
#: Characters kept of one error message.
MAX_MESSAGE_CHARS: Final = 300
_NAN: Final = math.nan


def _epoch(text: str | None) -> float:
    """Seconds since the epoch of an ISO time (``2026-12-01T08:00:00.000Z``); NaN if none."""
    if not text:
        return _NAN
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return _NAN


def _earlier(a: str, b: str) -> bool:
    """Whether ISO time ``a`` is before ``b``: as text in the records' own shape (no parse on
    the live path), else as epoch seconds (an unreadable time is never earlier)."""
    # Both in the records' own shape (2026-12-01T08:00:00.000Z), which orders as text; the
    # check inline (three calls a record on the live path).
    if len(a) == 24 == len(b) and a[10] == "T" == b[10] and a[23] == "Z" == b[23]:
        return a < b
    at, bt = _epoch(a), _epoch(b)
    return at < bt or (bt != bt and at == at)


def iso_time(epoch: float) -> str:
    """Epoch seconds as the records write times (``2026-12-01T08:00:00.000Z``)."""
    moment = datetime.fromtimestamp(epoch, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _number(value: object) -> float | None:
    """``value`` as a sample, or None: finite numbers only (:func:`~pytest_benchsdk._base.numbers.
    is_finite`)."""
    return float(value) if is_finite(value) else None  # type: ignore[arg-type]


def _grow(column: array[float], length: int) -> None:
    missing = length - len(column)
    if missing > 0:
        column.extend([_NAN] * missing)


class ParticipantSamples:
    """One participant's records as samples, by task index (a record delivered again replaces
    the earlier one, as in the store)."""

    __slots__ = (
        "_codes",
        "_data",
        "_first_start",
        "_last_end",
        "_latency",
        "_lists",
        "_messages",
        "_ok",
        "_per_call",
        "_phase",
        "_present",
        "_rounds",
        "_step_calibrated",
        "_step_failed",
        "_step_index",
        "_step_latency",
        "_test",
        "_timed_otherwise",
        "count",
        "passed",
    )

    def __init__(self) -> None:
        self._present = bytearray()
        self._ok = bytearray()
        self._latency: array[float] = array("d")
        #: The earliest start and the latest start or end of the records, as they are written.
        self._first_start: str | None = None
        self._last_end: str | None = None
        self._phase: list[str | None] = []
        self._codes: list[str | None] = []
        #: data key -> value per task index (NaN: no sample); list values live in ``_lists``.
        self._data: dict[str, array[float]] = {}
        self._lists: dict[str, dict[int, list[float]]] = {}
        #: step name -> latencies of its successful invocations, and their task indexes.
        self._step_latency: dict[str, array[float]] = {}
        self._step_index: dict[str, array[int]] = {}
        self._step_failed: dict[str, dict[int, int]] = {}
        #: Steps timed in a calibrated loop (their data says how many ``calls``).
        self._step_calibrated: set[str] = set()
        #: The per-call metrics of passing records made of calibrated steps only, and the
        #: passing records (task indexes) that are not (see :meth:`per_call_keys`).
        self._per_call: dict[str, None] = {}
        self._timed_otherwise: set[int] = set()
        self._messages: dict[str, dict[int, str]] = {}
        #: A benchmarked test's ``(rounds, iterations)``, from its passing record.
        self._rounds: tuple[int, int] | None = None
        #: A benchmarked test's identity and extra_info (its passing record's ``test`` and
        #: ``extra_info``), as pytest-benchmark's JSON names the test.
        self._test: tuple[Mapping[str, object], Mapping[str, object]] | None = None
        #: Records received (distinct task indexes), and how many of them passed.
        self.count = 0
        self.passed = 0

    # -- feeding ------------------------------------------------------------------------------

    def has(self, task_index: int) -> bool:
        """Whether the record of iteration ``task_index`` was added."""
        return 0 <= task_index < len(self._present) and bool(self._present[task_index])

    def add(self, record: TaskRecord) -> None:
        index = record.task_index
        if index < 0:
            return  # a warm-up iteration: never a sample
        length = index + 1
        if length > len(self._present):
            missing = length - len(self._present)
            self._present.extend(bytes(missing))
            self._ok.extend(bytes(missing))
            self._latency.extend([_NAN] * missing)
            self._phase.extend([None] * missing)
            self._codes.extend([None] * missing)
        if self._present[index]:
            self._forget(index)
        else:
            self._present[index] = 1
            self.count += 1
        ok = record.status == "success"
        self._ok[index] = ok
        self._phase[index] = record_phase(record)
        started, completed = record.started_at, record.completed_at
        if started:
            if self._first_start is None or _earlier(started, self._first_start):
                self._first_start = started
            if self._last_end is None or _earlier(self._last_end, started):
                self._last_end = started
        if completed and (self._last_end is None or _earlier(self._last_end, completed)):
            self._last_end = completed
        if ok:
            self.passed += 1
            latency = _number(record.latency_ms)
            self._latency[index] = _NAN if latency is None else latency
            if record.data:
                self._add_data(index, record.data)
                self._rounds = round_count(record.data) or self._rounds
                test = record.data.get(TEST_KEY)
                if isinstance(test, Mapping):
                    extra = record.data.get("extra_info")
                    self._test = (test, extra if isinstance(extra, Mapping) else {})
            per_call = per_call_keys_of(record)
            if per_call is None:
                self._timed_otherwise.add(index)
            else:
                self._per_call.update(dict.fromkeys(per_call))
        else:
            code = record.error_code if isinstance(record.error_code, str) else "unknown"
            self._codes[index] = code
            kept = self._messages.setdefault(code, {})
            if len(kept) < MAX_MESSAGES:
                message = (record.data or {}).get("errorMessage")
                if message is not None:
                    text = str(message)
                    if len(text) > MAX_MESSAGE_CHARS:
                        text = text[: MAX_MESSAGE_CHARS - 1] + "…"
                    kept[index] = text
        for step in record.steps or ():
            name = step.name
            if step.status != "success":
                failed = self._step_failed.setdefault(name, {})
                failed[index] = failed.get(index, 0) + 1
                continue
            latencies = self._step_latency.get(name)
            if latencies is None:
                latencies = self._step_latency[name] = array("d")
                self._step_index[name] = array("q")
            value = _number(step.latency_ms)
            if value is not None:
                latencies.append(value)
                self._step_index[name].append(index)
            if step.data and CALLS_KEY in step.data:
                self._step_calibrated.add(name)

    def _add_data(self, index: int, data: Mapping[str, object]) -> None:
        length = index + 1
        for key, value in data.items():
            if isinstance(value, (list, tuple)):
                values = [v for v in map(_number, value) if v is not None]
                if values:
                    self._lists.setdefault(key, {})[index] = values
                    _grow(self._data.setdefault(key, array("d")), length)
                continue
            number = _number(value)
            if number is None:
                continue
            column = self._data.get(key)
            if column is None:
                column = self._data[key] = array("d")
            _grow(column, length)
            column[index] = number

    def _forget(self, index: int) -> None:
        """Undo what an earlier record of ``index`` added (a record delivered again; rare)."""
        if self._ok[index]:
            self.passed -= 1
        self._timed_otherwise.discard(index)
        self._latency[index] = _NAN
        for column in self._data.values():
            if index < len(column):
                column[index] = _NAN
        for lists in self._lists.values():
            lists.pop(index, None)
        code = self._codes[index]
        if code is not None:
            self._messages.get(code, {}).pop(index, None)
            self._codes[index] = None
        for name, indexes in self._step_index.items():
            if index in indexes:
                latencies = self._step_latency[name]
                keep = [i for i, at in enumerate(indexes) if at != index]
                self._step_latency[name] = array("d", (latencies[i] for i in keep))
                self._step_index[name] = array("q", (indexes[i] for i in keep))
        for failed in self._step_failed.values():
            failed.pop(index, None)

    # -- reading ------------------------------------------------------------------------------

    def _indexes(self, phase: str | None) -> Iterator[int]:
        present, phases = self._present, self._phase
        for index in range(len(present)):
            if present[index] and (phase is None or phases[index] == phase):
                yield index

    def counts(self, phase: str | None = None) -> tuple[int, int]:
        """``(records, passing records)``, of one phase or of all."""
        if phase is None:
            return self.count, self.passed
        indexes = list(self._indexes(phase))
        return len(indexes), sum(self._ok[i] for i in indexes)

    def latency(self, phase: str | None = None) -> list[float]:
        """The passing iterations' latencies in run (task index) order."""
        latency = self._latency
        return [latency[i] for i in self._indexes(phase) if latency[i] == latency[i]]

    def metric_keys(self) -> list[str]:
        """The data keys with at least one sample, in first-seen order."""
        return list(self._data)

    def metric(self, key: str, phase: str | None = None) -> list[float]:
        """The samples of data key ``key`` in run order (a list value adds each number)."""
        column = self._data.get(key)
        if column is None:
            return []
        lists = self._lists.get(key, {})
        out: list[float] = []
        for index in self._indexes(phase):
            if index >= len(column):
                continue
            value = column[index]
            if value == value:
                out.append(value)
            elif index in lists:
                out.extend(lists[index])
        return out

    def rounds(self) -> tuple[int, int] | None:
        """A benchmarked test's ``(rounds, iterations per round)`` (None for a bench file's
        participant)."""
        return self._rounds

    def test(self) -> tuple[Mapping[str, object], Mapping[str, object]] | None:
        """A benchmarked test's identity (``fullname``, ``name``, ``group``, ``param``,
        ``params``, ``options``) and ``extra_info``; None for a bench file's participant."""
        return self._test

    def phases(self) -> list[str]:
        """The phases of the records, in the order of their first iteration (task index)."""
        return [p for p in dict.fromkeys(self._phase) if p is not None]

    def step_names(self) -> list[str]:
        names = dict.fromkeys(self._step_latency)
        names.update(dict.fromkeys(self._step_failed))
        return list(names)

    def calibrated_steps(self) -> frozenset[str]:
        """The steps timed in a calibrated loop (``step(name, fn, calls=...)``): their
        latencies are per-call figures of a whole loop, not one clock pair's."""
        return frozenset(self._step_calibrated)

    def per_call_keys(self) -> tuple[str, ...]:
        """The per-call metrics (calibrated steps' names) when every passing record is made of
        calibrated steps only (:func:`~pytest_benchsdk._analysis.baseline.per_call_keys`'s
        rule), else empty."""
        if not self.passed or self._timed_otherwise:
            return ()
        return tuple(self._per_call)

    def step(self, name: str) -> tuple[list[float], int]:
        """A step's successful latencies (run order) and how many invocations failed."""
        return (
            list(self._step_latency.get(name, ())),
            sum(self._step_failed.get(name, {}).values()),
        )

    def failures(self) -> list[tuple[str, int, list[tuple[int, str]]]]:
        """``(error code, failed records, [(task index, first messages)])``, most frequent
        first."""
        counts: dict[str, int] = {}
        for code in self._codes:
            if code is not None:
                counts[code] = counts.get(code, 0) + 1
        ordered = sorted(counts, key=lambda code: (-counts[code], code))
        return [
            (code, counts[code], sorted(self._messages.get(code, {}).items())) for code in ordered
        ]

    def span(self) -> tuple[float, float] | None:
        """The first start and the last end of the iterations (epoch seconds), if known."""
        first, last = _epoch(self._first_start), _epoch(self._last_end)
        if first != first:
            return None
        return first, last if last == last and last >= first else first


def timeline(records: Sequence[TaskRecord]) -> list[tuple[int, float, float, bool]]:
    """``(task index, start, end, passed)`` of each measured record with a start time (epoch
    seconds; an end before the start, or none, is the start), a re-delivered task index's
    last record only, in task index order."""
    latest = {record.task_index: record for record in records if record.task_index >= 0}
    out = []
    for index in sorted(latest):
        record = latest[index]
        start, end = _epoch(record.started_at), _epoch(record.completed_at)
        if start == start:
            out.append(
                (
                    index,
                    start,
                    end if end == end and end >= start else start,
                    record.status == "success",
                )
            )
    return out


def shared_per_call_keys(samples: Iterable[ParticipantSamples]) -> tuple[str, ...]:
    """The per-call metrics a benchmark is judged on by default (when it scores nothing):
    every participant that passed an iteration made its passing iterations of calibrated
    steps only (:meth:`ParticipantSamples.per_call_keys`); the steps' names, first-seen
    order. Empty otherwise: the latency is judged."""
    keys: dict[str, None] = {}
    for kept in samples:
        if not kept.passed:
            continue
        found = kept.per_call_keys()
        if not found:
            return ()
        keys.update(dict.fromkeys(found))
    return tuple(keys)


def sample_sets(records: Sequence[TaskRecord]) -> ParticipantSamples:
    """The samples of a participant's records."""
    samples = ParticipantSamples()
    for record in records:
        samples.add(record)
    return samples
