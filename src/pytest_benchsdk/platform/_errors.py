"""Exceptions of the platform layer.

Messages follow upstream (``@benchsdk/api`` / ``@benchsdk/cli``) so users searching for an error
find the same text; no message ever carries the API key or token (they are redacted with
:func:`pytest_benchsdk._base.redact.redact`, the one home of redaction, re-exported here).
"""

from __future__ import annotations

import json

from pytest_benchsdk._base.redact import redact

__all__ = [
    "AnswerTooLargeError",
    "AuthError",
    "BenchmarkApiError",
    "DeadlineError",
    "MalformedAnswerError",
    "PlatformConnectionError",
    "PlatformUnreachableError",
    "cannot_reach",
    "platform_message",
    "redact",
]

#: What to check when the platform cannot be reached (said after every ``Cannot reach <url>``).
UNREACHABLE_HINT = (
    "check the platform URL (--base-url / --bench-base-url, BENCHMARKS_PLATFORM_URL) and that "
    "this machine can reach it"
)


class AuthError(Exception):
    """Platform credentials are missing, expired or unusable (upstream ``AuthError``)."""


class PlatformConnectionError(Exception):
    """No usable HTTP answer arrived: refused or dropped connection, DNS failure, timeout, or
    a 2xx answer whose body was cut off (it ended early, or is not the JSON it should be).

    Always transient for the delivery layer. The message is already redacted.
    """

    def __init__(self, message: str, *, timeout: bool = False) -> None:
        super().__init__(message)
        self.timeout = timeout


class AnswerTooLargeError(PlatformConnectionError):
    """The platform's answer is larger than the client's cap (``BENCHSDK_MAX_ANSWER_MB``); it
    was not read past the cap. Asking again would get the same answer, so the delivery layer
    stops for the session instead of retrying (the uploads stay queued)."""

    def __init__(self, message: str, *, limit: int) -> None:
        super().__init__(message)
        self.limit = limit


class PlatformUnreachableError(PlatformConnectionError):
    """No connection could be made: refused, the host name does not resolve, no route. A
    definite answer, unlike a timeout: asking again at once gets the same, so the delivery
    layer stops for the session at the first one (everything stays queued) instead of
    retrying until its deadline. The message is :func:`cannot_reach`'s."""


class DeadlineError(PlatformConnectionError):
    """The whole answer did not arrive within the request's deadline (a platform that answers
    a byte at a time never trips a per-read timeout). Transient: asked again later."""

    def __init__(self, message: str, *, deadline_s: float) -> None:
        super().__init__(message, timeout=True)
        self.deadline_s = deadline_s


class MalformedAnswerError(PlatformConnectionError):
    """A 2xx answer whose JSON is not the shape the call reads (a list where an object is
    expected, a run without an id …). Asking again would most likely get the same answer, so
    the delivery layer stops for the session (the uploads stay queued for a resubmit) instead
    of retrying or rejecting what was sent: the data is not at fault."""


def cannot_reach(url: str, what: str, reason: str) -> str:
    """The one wording of an unreachable platform: ``Cannot reach <url> (<what>): <reason>;
    <hint>`` (``url`` already free of secrets)."""
    where = f" ({what})" if what else ""
    return f"Cannot reach {url}{where}: {reason}; {UNREACHABLE_HINT}"


class BenchmarkApiError(Exception):
    """The platform answered with a non-2xx status (upstream ``BenchmarkApiError``).

    ``status`` and ``body`` (the raw, redacted response text) as upstream; the message is
    ``Benchmark API request failed: <status> <statusText>``. ``retry_after`` holds the parsed
    ``Retry-After`` header in seconds, ``method``/``path`` say which call failed.
    """

    def __init__(
        self,
        status: int,
        body: str = "",
        *,
        message: str | None = None,
        status_text: str = "",
        method: str | None = None,
        path: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        if message is None:
            message = f"Benchmark API request failed: {status} {status_text}".rstrip()
        super().__init__(message)
        self.status = status
        self.body = body
        self.status_text = status_text
        self.method = method
        self.path = path
        self.retry_after = retry_after

    @property
    def message(self) -> str:
        """The exception message (``str(self)``)."""
        return str(self)

    @property
    def transient(self) -> bool:
        """429 and 5xx may succeed later; every other status will not."""
        return self.status == 429 or self.status >= 500


def platform_message(error: BaseException, *, limit: int = 500) -> str:
    """A one-line description of ``error`` including what the platform said, for people.

    For a :class:`BenchmarkApiError` the body's ``error``/``message`` field (or the raw body) is
    appended: ``PUT /benchmarks/x: Benchmark API request failed: 400 Bad Request — name is
    required``.
    """
    text = str(error) or type(error).__name__
    if isinstance(error, BenchmarkApiError):
        where = f"{error.method} {error.path}: " if error.method and error.path else ""
        detail = _body_detail(error.body)
        text = f"{where}{text}" + (f" — {detail}" if detail else "")
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _body_detail(body: str) -> str:
    if not body:
        return ""
    try:
        data = json.loads(body)
    except ValueError:
        return body.strip()
    if isinstance(data, dict):
        for key in ("message", "error", "detail"):
            value = data.get(key)
            if isinstance(value, str) and value:
                return value
            if isinstance(value, dict) and isinstance(value.get("message"), str):
                return str(value["message"])
    return body.strip()
