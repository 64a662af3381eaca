"""What travels from an iteration to the controller, and the helpers every role shares.

A :class:`RecordPayload` is one iteration's record in transit from the process that ran it to
the controller (plain JSON, so it crosses xdist). :func:`scoring_spec_of` is the one place that
turns a config's ``on_score`` or declarative ``scoring`` into a
:class:`~pytest_benchsdk.scoring.ScoringSpec`: scoring a run, the threshold items and
``--bench-check`` all use it. The controller's runs themselves are
:class:`pytest_benchsdk.results.BenchmarkRun`.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from .config import BenchmarkConfig
from .context import IterationOutcome
from .records import TaskRecord
from .scoring import (
    ScoringSpec,
    ScoringSpecError,
    higher_is_better,
    lower_is_better,
    scoring_config_to_spec,
    validate_scoring_spec,
)

__all__ = [
    "MIN_SECRET_LENGTH",
    "NO_INGEST_RUN_ID",
    "REDACTED",
    "RecordPayload",
    "participant_secrets",
    "record_phase",
    "redact_text",
    "redact_value",
    "resolve_awaitable",
    "scoring_problem",
    "scoring_spec_of",
]

#: What a secret's value is replaced with wherever the plugin writes text.
REDACTED = "***"
#: Values shorter than this are not redacted: replacing "1" or "true" everywhere would
#: garble every record and say nothing about the secret anyway.
MIN_SECRET_LENGTH = 6


def participant_secrets(config: BenchmarkConfig, *environs: Mapping[str, str]) -> tuple[str, ...]:
    """The values of every env var a participant of *config* requires (from the first
    environment that sets it, and every other one too), at least :data:`MIN_SECRET_LENGTH`
    characters long, longest first (so a secret containing another is replaced whole)."""
    names: list[str] = []
    for participant in config.participants:
        required: object = participant.required_env_vars
        if isinstance(required, str):  # kept as given when validation reports it
            names.append(required)
        elif isinstance(required, (tuple, list)):
            names.extend(str(name) for name in required)
    values = {
        environ[name]
        for name in names
        for environ in environs
        if isinstance(environ.get(name), str) and len(environ[name]) >= MIN_SECRET_LENGTH
    }
    return tuple(sorted(values, key=lambda v: (-len(v), v)))


def redact_text(text: str, secrets: Sequence[str]) -> str:
    """*text* with every secret replaced by :data:`REDACTED`."""
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def redact_value(value: Any, secrets: Sequence[str]) -> Any:
    """A JSON value with every secret in its strings (keys included) redacted."""
    if not secrets:
        return value
    if isinstance(value, str):
        return redact_text(value, secrets)
    if isinstance(value, Mapping):
        return {redact_text(str(k), secrets): redact_value(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value(v, secrets) for v in value]
    return value


def _contains_secret(texts: Iterable[str], secrets: Sequence[str]) -> bool:
    return any(secret in text for text in texts for secret in secrets)


#: The run id ``on_complete`` sees when nothing reached the platform (upstream's value).
NO_INGEST_RUN_ID = "no-ingest"


def resolve_awaitable(value: Any) -> Any:
    """Await a coroutine returned by a user hook (``on_score``/``on_complete`` may be async)."""
    if inspect.isawaitable(value):

        async def wait() -> Any:
            return await value

        return asyncio.run(wait())
    return value


def scoring_spec_of(config: BenchmarkConfig) -> ScoringSpec | None:
    """The config's scoring spec: ``on_score``'s, else the declarative ``scoring`` (with the
    display units), else None. Raises :class:`ScoringSpecError` for a bad ``on_score``."""
    if config.on_score is not None:
        _check_on_score_signature(config.on_score)
        spec = resolve_awaitable(config.on_score(lower_is_better, higher_is_better))
        if not isinstance(spec, ScoringSpec):
            raise ScoringSpecError(
                f"on_score must return a ScoringSpec (got {type(spec).__name__})"
            )
        return spec
    if config.scoring is not None:
        return scoring_config_to_spec(config.scoring, config.dimensions, config.display)
    return None


def _check_on_score_signature(on_score: Any) -> None:
    """``on_score`` is called as ``on_score(lower_is_better, higher_is_better)``: say so
    instead of a bare ``TypeError`` when it cannot take those two arguments."""
    try:
        signature = inspect.signature(on_score)
    except (TypeError, ValueError):
        return  # a builtin or C callable: let the call itself tell
    try:
        signature.bind(lower_is_better, higher_is_better)
    except TypeError as exc:
        raise ScoringSpecError(
            f"on_score is called as on_score(lower_is_better, higher_is_better) and must "
            f"return a ScoringSpec; {getattr(on_score, '__name__', 'it')}{signature} "
            f"cannot take those two arguments ({exc})"
        ) from None


def scoring_problem(config: BenchmarkConfig) -> str | None:
    """What is wrong with the config's scoring, if anything (upstream's check validates
    ``on_score``'s spec too)."""
    try:
        spec = scoring_spec_of(config)
        if spec is not None:
            validate_scoring_spec(spec)
    except Exception as exc:
        return str(exc)
    return None


def _strings(value: Any) -> Iterable[str]:
    """Every string in a JSON value, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


@attrs.frozen
class RecordPayload:
    """What a call report carries from the process that ran an iteration to the controller.

    Plain JSON types only, so it survives xdist's report serialization.
    """

    file_key: str
    participant: str
    task_index: int
    record: TaskRecord
    log: tuple[tuple[str, str], ...] = ()

    def redacted(self, secrets: Sequence[str]) -> RecordPayload:
        """This payload with every secret in its record and log lines replaced by
        :data:`REDACTED` (itself when none occurs)."""
        if not secrets:
            return self
        wire = self.record.to_wire()
        record = self.record
        if _contains_secret(_strings(wire), secrets):
            record = TaskRecord.from_wire(redact_value(wire, secrets), warmup=self.task_index < 0)
        log = self.log
        if _contains_secret((text for _, text in log), secrets):
            log = tuple((level, redact_text(text, secrets)) for level, text in log)
        if record is self.record and log is self.log:
            return self
        return attrs.evolve(self, record=record, log=log)

    @classmethod
    def of(cls, file_key: str, participant: str, outcome: IterationOutcome) -> RecordPayload:
        return cls(
            file_key=file_key,
            participant=participant,
            task_index=outcome.record.task_index,
            record=outcome.record,
            log=tuple((line.level or "info", line.format()) for line in outcome.logs),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file_key,
            "participant": self.participant,
            "task_index": self.task_index,
            "record": self.record.to_wire(),
            "log": [list(line) for line in self.log],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RecordPayload:
        return cls(
            file_key=str(data["file"]),
            participant=str(data["participant"]),
            task_index=int(data["task_index"]),
            record=TaskRecord.from_wire(data["record"], warmup=int(data["task_index"]) < 0),
            log=tuple((str(level), str(text)) for level, text in data.get("log", ())),
        )


def record_phase(record: TaskRecord) -> str | None:
    """The record's phase (``data["phase"]``, set by the plugin; None without phases)."""
    data = record.data
    phase = data.get("phase") if isinstance(data, Mapping) else None
    return phase if isinstance(phase, str) else None
