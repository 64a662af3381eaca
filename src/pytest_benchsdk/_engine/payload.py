"""What travels from an iteration to the controller.

A :class:`RecordPayload` is one iteration's record in transit from the process that ran it to
the controller (plain JSON, so it crosses xdist). The controller's runs themselves are
:class:`pytest_benchsdk.results.BenchmarkRun`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from pytest_benchsdk._base.redact import Redactor
from pytest_benchsdk._engine.context import IterationOutcome
from pytest_benchsdk.records import JSONObject, TaskRecord

__all__ = [
    "NO_INGEST_RUN_ID",
    "RecordPayload",
]

#: The run id ``on_complete`` sees when nothing reached the platform (upstream's value).
NO_INGEST_RUN_ID = "no-ingest"


@attrs.frozen
class RecordPayload:
    """One iteration's record on its way from the process that ran it to the controller and
    on to the store and the platform.

    ``wire`` is the record's wire (camelCase JSON) form, made once when the iteration is
    reported and redacted once; everything downstream (the report's JSON, the store, the
    platform's batches) uses it instead of calling ``record.to_wire()`` again. ``record`` is
    the same record as a :class:`TaskRecord` (for the summary's tally and the hooks). Plain
    JSON types only in :meth:`to_json`, so it survives xdist's report serialization.
    """

    file_key: str
    participant: str
    task_index: int
    record: TaskRecord
    wire: JSONObject
    log: tuple[tuple[str, str], ...] = ()
    #: The redactor already applied (``None``: not redacted in this process).
    redacted_by: Redactor | None = attrs.field(default=None, eq=False, repr=False)

    def redacted(self, redactor: Redactor) -> RecordPayload:
        """This payload with every secret of ``redactor`` replaced in its record and log lines
        (itself when none occurs, or when ``redactor`` was applied already)."""
        done = self.redacted_by
        if not redactor or (done is not None and done.covers(redactor)):
            return self
        wire = redactor.value(self.wire)
        record = self.record
        if wire is not self.wire:
            record = TaskRecord.from_wire(wire, warmup=self.task_index < 0)
        log = self.log
        if redactor.found_in(text for _, text in log):
            log = tuple((level, redactor.text(text)) for level, text in log)
        return attrs.evolve(self, record=record, wire=wire, log=log, redacted_by=redactor)

    @classmethod
    def of(
        cls,
        file_key: str,
        participant: str,
        outcome: IterationOutcome,
        redactor: Redactor | None = None,
    ) -> RecordPayload:
        """The payload of a finished iteration (its record's one ``to_wire()``), redacted
        with ``redactor`` when given."""
        record = outcome.record
        payload = cls(
            file_key=file_key,
            participant=participant,
            task_index=record.task_index,
            record=record,
            wire=record.to_wire(),
            log=tuple((line.level or "info", line.format()) for line in outcome.logs),
        )
        return payload if redactor is None else payload.redacted(redactor)

    @classmethod
    def of_record(cls, file_key: str, participant: str, record: TaskRecord) -> RecordPayload:
        """The payload of a record made outside an iteration (a benchmarked test's)."""
        return cls(
            file_key=file_key,
            participant=participant,
            task_index=record.task_index,
            record=record,
            wire=record.to_wire(),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file_key,
            "participant": self.participant,
            "task_index": self.task_index,
            "record": self.wire,
            "log": [list(line) for line in self.log],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RecordPayload:
        task_index = int(data["task_index"])
        wire = dict(data["record"])
        return cls(
            file_key=str(data["file"]),
            participant=str(data["participant"]),
            task_index=task_index,
            record=TaskRecord.from_wire(wire, warmup=task_index < 0),
            wire=wire,
            log=tuple((str(level), str(text)) for level, text in data.get("log", ())),
        )
