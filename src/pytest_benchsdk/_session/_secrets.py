"""The secrets of a session's bench files: what is redacted wherever their text is written.

Per bench file: the values of the env vars its participants require, and the platform
credentials (``--bench-api-key``, the credential env vars, the saved login, and what the
platform layer resolved, e.g. a refreshed token), computed once per file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence

from pytest_benchsdk._base.redact import Redactor, credential_secrets, participant_secrets
from pytest_benchsdk._config.models import Participant

__all__ = ["SessionSecrets"]


class SessionSecrets:
    """Each bench file's :class:`~pytest_benchsdk._base.redact.Redactor`. ``participants_of`` gives
    a file's declared participants (None while the file is unknown: its redactor is not kept)."""

    def __init__(
        self,
        environ: Mapping[str, str],
        api_key: str | None,
        participants_of: Callable[[str], Sequence[Participant] | None],
        file_keys: Callable[[], Iterable[str]] = tuple,
    ) -> None:
        self.environ = environ
        self._participants_of = participants_of
        self._file_keys = file_keys
        self._every_file: tuple[frozenset[str], Redactor] | None = None
        self._redactors: dict[str, Redactor] = {}
        self._credentials = Redactor(credential_secrets(environ, os.environ, api_key=api_key))

    def redactor(self, file_key: str) -> Redactor:
        """The secrets of one bench file (computed once per known file)."""
        redactor = self._redactors.get(file_key)
        if redactor is None:
            participants = self._participants_of(file_key)
            redactor = self._credentials.union(
                participant_secrets(participants or (), self.environ, os.environ)
            )
            if participants is not None:
                self._redactors[file_key] = redactor
        return redactor

    def every_file(self) -> Redactor:
        """The secrets of every bench file known now (what a log record, which belongs to no
        one file, is redacted with); recomputed only when the files or the credentials
        change."""
        keys = frozenset(self._file_keys())
        cached = self._every_file
        if cached is not None and cached[0] == keys:
            return cached[1]
        redactor = self._credentials
        for key in sorted(keys):
            redactor = redactor.union(self.redactor(key).secrets)
        self._every_file = (keys, redactor)
        return redactor

    def add(self, values: Iterable[str]) -> None:
        """More secrets for every bench file (what the platform layer resolved)."""
        credentials = self._credentials.union(values)
        if credentials is not self._credentials:
            self._credentials = credentials
            self._redactors.clear()
            self._every_file = None
