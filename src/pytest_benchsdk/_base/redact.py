"""Secrets and their redaction: what is a secret, and how it is kept out of every text we write.

A leaf: it imports nothing of the package, so the glue, the engine's runs and ``platform/`` all
use this one home.

What is a secret: the value of every environment variable a participant lists in
``required_env_vars`` (:func:`participant_secrets`), and the platform credentials
(:func:`credential_secrets`: ``--bench-api-key``, ``BENCHMARKS_PLATFORM_TOKEN``,
``BENCHMARKS_PLATFORM_API_KEY``, and the token, API key and refresh token saved in
``~/.benchsdk/credentials.json``; the platform layer adds what it resolved, e.g. a refreshed
token). Values shorter than :data:`MIN_SECRET_LENGTH` are not secrets here: replacing ``1`` or
``true`` everywhere would garble every record, and no real key is that short.

A URL's userinfo (``http://user:password@host/…``) is a secret too, whoever typed it:
:func:`redact_url` replaces it with ``***`` in any text, wherever the project stores a URL (the
outbox's platform, the dashboard URL) or prints one (messages, errors, logs).

How: a :class:`Redactor` replaces each secret with :data:`REDACTED` in every form it takes in
text that is already serialised (as is, JSON-escaped with and without ``ensure_ascii``, and
Python's ``repr``/``ascii``, also one level inside another: a JSON string in a repr), so a
secret holding ``"``, ``\\`` or a non-ASCII letter does not slip through a ``data:`` line, a
``--showlocals`` repr or a log line's JSON meta.

While a bench session runs, :class:`LogRedaction` also redacts every :mod:`logging` record as
it is made (a record factory), so no handler (pytest's live log, its captured-log sections, a
``--log-file``, a handler a conftest adds) ever receives a secret.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "CREDENTIAL_ENV_VARS",
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "LogRedaction",
    "Redactor",
    "credential_secrets",
    "participant_secrets",
    "redact",
    "redact_url",
    "without_userinfo",
]

#: What a secret's value is replaced with wherever the plugin writes text.
REDACTED = "***"
#: Values shorter than this are not redacted (see the module's docstring).
MIN_SECRET_LENGTH = 6
#: The environment variables holding platform credentials (upstream's names).
CREDENTIAL_ENV_VARS = ("BENCHMARKS_PLATFORM_TOKEN", "BENCHMARKS_PLATFORM_API_KEY")
#: The fields of ``~/.benchsdk/credentials.json`` (upstream's ``bench auth login``) that hold
#: secrets.
_SAVED_SECRET_FIELDS = ("token", "apiKey", "refreshToken")


def _escapes(text: str) -> list[str]:
    """``text`` as JSON (with and without ``ensure_ascii``), ``repr`` and ``ascii`` write it
    inside their quotes."""
    return [
        json.dumps(text, ensure_ascii=False)[1:-1],
        json.dumps(text)[1:-1],
        repr(text)[1:-1],
        ascii(text)[1:-1],
    ]


def _forms(secret: str) -> list[str]:
    """Every form of ``secret`` in serialised text: as is, escaped once, and escaped twice
    (a JSON string shown in a repr, a repr written into JSON)."""
    once = _escapes(secret)
    return [secret, *once, *(twice for form in once for twice in _escapes(form))]


def _secret_values(values: Iterable[str | None]) -> tuple[str, ...]:
    kept = {v for v in values if isinstance(v, str) and len(v) >= MIN_SECRET_LENGTH}
    # Longest first, so a secret that contains another one is replaced whole.
    return tuple(sorted(kept, key=lambda v: (-len(v), v)))


class Redactor:
    """Replaces a set of secrets, in all their forms, with :data:`REDACTED`.

    Built once per set of secrets (a bench file's, with the credentials) and shared; its repr
    shows how many secrets it holds, never one of them. Falsy when it holds none.
    """

    __slots__ = ("_forms", "secrets")

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        #: The secret values (at least :data:`MIN_SECRET_LENGTH` characters), longest first.
        self.secrets: tuple[str, ...] = _secret_values(secrets)
        forms = {form for secret in self.secrets for form in _forms(secret)}
        self._forms: tuple[str, ...] = tuple(sorted(forms, key=lambda f: (-len(f), f)))

    def __bool__(self) -> bool:
        return bool(self.secrets)

    def __repr__(self) -> str:
        return f"Redactor(<{len(self.secrets)} secret(s)>)"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Redactor) and other.secrets == self.secrets

    def __hash__(self) -> int:
        return hash(self.secrets)

    def union(self, *more: Iterable[str | None]) -> Redactor:
        """A redactor of these secrets and ``more`` (itself when nothing is added)."""
        added = _secret_values(value for group in more for value in group)
        if set(added) <= set(self.secrets):
            return self
        return Redactor((*self.secrets, *added))

    def covers(self, other: Redactor) -> bool:
        """Whether this redactor replaces every secret ``other`` replaces."""
        return set(other.secrets) <= set(self.secrets)

    def found_in(self, texts: Iterable[str]) -> bool:
        """Whether a secret (in any form) occurs in one of ``texts``."""
        forms = self._forms
        return bool(forms) and any(form in text for text in texts for form in forms)

    def text(self, text: str) -> str:
        """``text`` with every secret, in every form, replaced."""
        for form in self._forms:
            if form in text:
                text = text.replace(form, REDACTED)
        return text

    def value(self, value: Any) -> Any:
        """A JSON value with every secret in its strings (keys included) replaced; the value
        itself when no secret occurs in it."""
        if not self._forms or not self.found_in(_strings(value)):
            return value
        return self._value(value)

    def _value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {self.text(str(k)): self._value(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self._value(v) for v in value]
        return value


def _strings(value: Any) -> Iterator[str]:
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


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every secret of ``secrets`` (in every form) replaced by ``***``."""
    return Redactor(secrets).text(text)


def participant_secrets(participants: Iterable[object], *environs: Mapping[str, str]) -> list[str]:
    """The values of every env var the ``participants`` require (``required_env_vars``), from
    each environment that sets one."""
    names: list[str] = []
    for participant in participants:
        required: object = getattr(participant, "required_env_vars", ())
        if isinstance(required, str):  # kept as given when validation reports it
            names.append(required)
        elif isinstance(required, (tuple, list)):
            names.extend(str(name) for name in required)
    return [
        environ[name]
        for name in names
        for environ in environs
        if isinstance(environ.get(name), str)
    ]


def credential_secrets(
    *environs: Mapping[str, str],
    api_key: str | None = None,
    home: str | os.PathLike[str] | None = None,
) -> list[str]:
    """The platform credentials that may be in reach of a task, without resolving them (no
    request, no refresh): ``api_key`` (``--bench-api-key``), the credential environment
    variables of each environment, and the secrets saved in ``~/.benchsdk/credentials.json``."""
    values: list[str] = [api_key] if api_key else []
    for environ in environs:
        values.extend(environ[name] for name in CREDENTIAL_ENV_VARS if environ.get(name))
    try:
        directory = Path(home) if home is not None else Path.home()
        saved = json.loads((directory / ".benchsdk" / "credentials.json").read_text("utf-8"))
    except (OSError, ValueError, RuntimeError):  # RuntimeError: no home directory at all
        saved = None
    if isinstance(saved, dict):
        values.extend(v for k in _SAVED_SECRET_FIELDS if isinstance(v := saved.get(k), str))
    return values


# scheme://userinfo@ : the userinfo runs to the authority's last "@" (as urllib and httpx split
# it), so a password holding an unescaped "@" is replaced whole.
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/?#\s\"'<>]*@")


def redact_url(text: str) -> str:
    """``text`` with the userinfo of every URL in it (``user:password@``) replaced by
    ``***@``: ``http://u:p@host/x`` → ``http://***@host/x``. Works on a bare URL and on a
    message holding URLs; text without ``://`` and ``@`` is returned as it is."""
    if "@" not in text or "://" not in text:
        return text
    return _USERINFO.sub(rf"\g<1>{REDACTED}@", text)


def without_userinfo(url: str) -> str:
    """``url`` with its userinfo removed: ``http://u:p@host/x`` → ``http://host/x``."""
    if "@" not in url:
        return url
    return _USERINFO.sub(r"\g<1>", url, count=1)


class LogRedaction:
    """Redacts every :mod:`logging` record made while installed, whatever handler gets it.

    A record factory rather than a filter on handlers: pytest adds its live-log and capture
    handlers around each test phase, and a conftest or a task may add its own at any time;
    every record of every logger is made by the factory, before any handler sees it. A
    record holding a secret (in its message with its arguments, its exception or its stack)
    gets the redacted text as its message and no arguments, and its traceback text redacted
    (``exc_text``, which formatters use as it is). ``redactor`` is asked at each record, so
    secrets learnt later (a bench file collected, a token refreshed) are covered too.
    """

    def __init__(self, redactor: Callable[[], Redactor]) -> None:
        self._redactor = redactor
        self._previous: Callable[..., logging.LogRecord] | None = None
        self._active = False
        self._last = Redactor()

    def install(self) -> None:
        if self._active:
            return
        previous = logging.getLogRecordFactory()
        self._previous = previous
        self._active = True
        logging.setLogRecordFactory(self._make)

    def uninstall(self) -> None:
        """Stop redacting; the previous factory is put back unless another one was set on top
        of this one since (which then keeps calling this one: it passes records through)."""
        if not self._active:
            return
        self._active = False
        if logging.getLogRecordFactory() == self._make and self._previous is not None:
            logging.setLogRecordFactory(self._previous)

    def _make(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        assert self._previous is not None
        record = self._previous(*args, **kwargs)
        if self._active:
            try:
                redactor = self._last = self._redactor()
            except Exception:  # the files changing on another thread: the last secrets known
                redactor = self._last
            if redactor:
                _redact_record(record, redactor)
        return record


def _redact_record(record: logging.LogRecord, redactor: Redactor) -> None:
    try:
        message = record.getMessage()
    except Exception:  # a bad format: logging reports it when a handler formats the record
        message = None
    if message is not None and redactor.found_in((message,)):
        record.msg, record.args = redactor.text(message), None
    if record.exc_info and not record.exc_text:
        text = _FORMATTER.formatException(record.exc_info)
        if redactor.found_in((text,)):
            record.exc_text = redactor.text(text)
    if record.stack_info and redactor.found_in((record.stack_info,)):
        record.stack_info = redactor.text(record.stack_info)


#: Formats a record's exception as every standard formatter does (``exc_text`` is its cache).
_FORMATTER = logging.Formatter()
