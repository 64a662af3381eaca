"""What an A/B side's iteration writes (its stdout, its stderr, its log records), caught in the
side's process and handed to the controller, which replays it into the item's own capture.

A side process has no pytest of its own around an iteration: without this, its log records
went to :mod:`logging`'s last-resort handler and its ``stderr`` straight to the terminal, past
pytest's capture and past the redaction (issue 48, item 3). :class:`SideCapture` catches the
three of them around one iteration, at the level pytest's own capture does (``sys.stdout`` and
``sys.stderr``, file descriptors 1 and 2, a handler on the root logger), with every secret the
side knows redacted already; :func:`log_record` rebuilds a caught record in the controller,
where pytest's log capture (``Captured log call``, the live log, ``--log-file``) gets it like
any other.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping
from typing import Any, Final

from pytest_benchsdk._base.redact import Redactor

__all__ = ["SideCapture", "SideOutput", "log_record"]

#: The attributes of a log record that cross the channel (plain values; ``msg`` is the
#: formatted message, ``args`` none).
_RECORD_FIELDS: Final = (
    "name",
    "levelno",
    "levelname",
    "pathname",
    "filename",
    "module",
    "lineno",
    "funcName",
    "created",
    "msecs",
    "relativeCreated",
    "thread",
    "threadName",
    "process",
    "processName",
    "taskName",
)

#: What one iteration wrote: ``{"stdout": text, "stderr": text, "logs": [record fields]}``.
SideOutput = dict[str, Any]

#: At most this much of a stream is kept per iteration (a chatty task must not flood the
#: channel): the rest is cut, and the cut said.
MAX_TEXT: Final = 1 << 20


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.NOTSET)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


_FORMATTER: Final = logging.Formatter()


class SideCapture:
    """Catches what the iterations of a side process write (see the module), each secret of
    ``redactor`` replaced."""

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor

    @contextlib.contextmanager
    def iteration(self) -> Iterator[SideOutput]:
        """Around one iteration: the dict it yields holds what the iteration wrote once the
        block ends."""
        output: SideOutput = {"stdout": "", "stderr": "", "logs": []}
        handler = _Collect()
        root = logging.getLogger()
        texts = {"stdout": io.StringIO(), "stderr": io.StringIO()}
        with contextlib.ExitStack() as stack:
            files = {
                name: stack.enter_context(_fd_captured(fd))
                for name, fd in (("stdout", 1), ("stderr", 2))
            }
            stack.enter_context(contextlib.redirect_stdout(texts["stdout"]))
            stack.enter_context(contextlib.redirect_stderr(texts["stderr"]))
            root.addHandler(handler)
            try:
                yield output
            finally:
                root.removeHandler(handler)
        for name, text in texts.items():
            output[name] = self._text(text.getvalue() + files[name].read())
        output["logs"] = [self._record(record) for record in handler.records]

    def _text(self, text: str) -> str:
        if len(text) > MAX_TEXT:
            text = text[:MAX_TEXT] + f"\n[... {len(text) - MAX_TEXT} more characters cut]\n"
        return self.redactor.text(text) if self.redactor else text

    def _record(self, record: logging.LogRecord) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        for name in _RECORD_FIELDS:
            value = getattr(record, name, None)
            if value is None or isinstance(value, (str, int, float, bool)):
                fields[name] = value
        try:
            message = record.getMessage()
        except Exception as exc:  # a bad format: said, as logging would
            message = f"{record.msg!r} (its arguments do not fit: {exc})"
        exc_text = record.exc_text
        if record.exc_info and not exc_text:
            exc_text = _FORMATTER.formatException(record.exc_info)
        fields["msg"] = self._text(message)
        fields["exc_text"] = self._text(exc_text) if exc_text else None
        fields["stack_info"] = self._text(record.stack_info) if record.stack_info else None
        return fields


class _FdText:
    def __init__(self) -> None:
        self.text = ""

    def read(self) -> str:
        return self.text


@contextlib.contextmanager
def _fd_captured(fd: int) -> Iterator[_FdText]:
    """File descriptor ``fd`` into a temporary file while the block runs (what a subprocess
    or C code writes there); its text once the block ends."""
    for stream in (sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(Exception):
            if stream is not None:
                stream.flush()
    with tempfile.TemporaryFile(mode="w+b") as file:
        saved = os.dup(fd)
        caught = _FdText()
        os.dup2(file.fileno(), fd)
        try:
            yield caught
        finally:
            for stream in (sys.__stdout__, sys.__stderr__):
                with contextlib.suppress(Exception):
                    if stream is not None:
                        stream.flush()
            os.dup2(saved, fd)
            os.close(saved)
            file.seek(0)
            caught.text = file.read(MAX_TEXT + 1).decode("utf-8", "replace")


def log_record(fields: Mapping[str, Any], prefix: str = "") -> logging.LogRecord:
    """A caught record (:meth:`SideCapture.iteration`'s ``logs``), rebuilt for this process's
    handlers; ``prefix`` goes before its message (which side it came from)."""
    record = logging.makeLogRecord({k: v for k, v in fields.items() if k != "msg"})
    record.msg = prefix + str(fields.get("msg", ""))
    record.args = None
    return record
