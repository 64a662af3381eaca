"""Synchronous httpx client for the benchmarks platform REST API (upstream ``@benchsdk/api``).

One method per endpoint the runner, the worker and ``bench check`` use. Methods
take and return upstream's camelCase JSON; paths are built with ``encodeURIComponent``-compatible
segment encoding; non-2xx answers raise :class:`BenchmarkApiError` with upstream's message.

Differences from upstream, on purpose: every request has an explicit :class:`httpx.Timeout`
(upstream has none), and transport failures (refused connection, timeout, dropped connection) raise
:class:`PlatformConnectionError` whose text never contains the credentials. Every answer is
read as a stream and capped (:func:`read_answer`, :data:`DEFAULT_MAX_ANSWER_BYTES`, env
``BENCHSDK_MAX_ANSWER_MB``): a larger one raises :class:`AnswerTooLargeError` without being
read further, so a hostile or broken platform cannot fill the memory of a session. A 2xx
answer whose body was cut off (it ended early, or is not JSON) raises
:class:`PlatformConnectionError` too: it is a transient fault, not a verdict on what was sent.
Retries live in the delivery layer (:mod:`._delivery`), not here, exactly like upstream keeps
its client retry-free.
"""

from __future__ import annotations

import contextlib
import email.utils
import gzip
import json
import os
import time
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

import httpx

from pytest_benchsdk._base.redact import Redactor, redact_url, without_userinfo
from pytest_benchsdk.platform._deadline import call_within
from pytest_benchsdk.platform._errors import (
    AnswerTooLargeError,
    AuthError,
    BenchmarkApiError,
    DeadlineError,
    MalformedAnswerError,
    PlatformConnectionError,
    PlatformUnreachableError,
    cannot_reach,
)
from pytest_benchsdk.platform._shapes import (
    answer_object,
    describe_json,
    id_of,
    item_list,
    member_list,
    member_object,
)

__all__ = [
    "DEFAULT_API_BASE_URL",
    "DEFAULT_MAX_ANSWER_BYTES",
    "DEFAULT_TIMEOUT",
    "MAX_ANSWER_ENV",
    "MAX_BATCH_RECORDS",
    "MAX_HEARTBEAT_SAMPLES",
    "MAX_RECORD_STEPS",
    "REQUEST_TIMEOUT_ENV",
    "Answer",
    "BenchmarkClient",
    "deadline_of",
    "decode_artifact_body",
    "encode_segment",
    "form_query",
    "max_answer_bytes",
    "read_answer",
    "request_timeout",
]

DEFAULT_API_BASE_URL = "https://platform.computesdk.com/api/v1"
#: Upstream sets no timeout at all; a benchmark session must never hang on the platform.
#: The largest of its values is also each request's whole-answer deadline (see
#: :func:`read_answer`): 30 s for the answer, 10 s of it at most to connect.
DEFAULT_TIMEOUT = httpx.Timeout(30.0, connect=10.0)
#: The environment variable that sets each request's deadline in seconds
#: (``BENCHSDK_PLATFORM_TIMEOUT=90``; the connect timeout stays at most 10 s).
REQUEST_TIMEOUT_ENV = "BENCHSDK_PLATFORM_TIMEOUT"
MAX_BATCH_RECORDS = 5000
MAX_RECORD_STEPS = 100
MAX_HEARTBEAT_SAMPLES = 20
#: The largest answer body (decoded bytes) the client reads. The platform's largest answers
#: (a run's iterations, a worker log) stay well below it; a session that met a 256 MiB answer
#: without a cap grew to over 1 GiB.
DEFAULT_MAX_ANSWER_BYTES = 8 * 1024 * 1024
#: The environment variable that sets the cap, in MiB (``BENCHSDK_MAX_ANSWER_MB=64``).
MAX_ANSWER_ENV = "BENCHSDK_MAX_ANSWER_MB"
_MIB = 1024 * 1024

_MISSING_CREDENTIALS = (
    "A platform API key or OAuth token is required. Set BENCHMARKS_PLATFORM_API_KEY or "
    "BENCHMARKS_PLATFORM_TOKEN in your environment, or pass apiKey/token to "
    "createBenchmarkClient. Create an API key at https://platform.computesdk.com in your "
    "organization settings (Settings → API keys)."
)

JSON = dict[str, Any]


def encode_segment(value: str) -> str:
    """JavaScript ``encodeURIComponent`` for one path segment (``a/b c`` → ``a%2Fb%20c``)."""
    return quote(str(value), safe="-_.!~*'()")


def _query(params: Mapping[str, object | None]) -> str:
    # Upstream adds only defined values; numbers are written as JavaScript would.
    parts = []
    for key, value in params.items():
        if value is None:
            continue
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        parts.append(f"{encode_segment(key)}={encode_segment(text)}")
    return ("?" + "&".join(parts)) if parts else ""


def form_query(params: Mapping[str, object | None]) -> str:
    """``?k=v&…`` as ``URLSearchParams.toString()`` writes it (spaces as ``+``, ``,`` as ``%2C``);
    ``None`` values are left out."""
    parts = []
    for key, value in params.items():
        if value is None:
            continue
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        parts.append(f"{_form_encode(key)}={_form_encode(text)}")
    return ("?" + "&".join(parts)) if parts else ""


def _form_encode(text: str) -> str:
    # The application/x-www-form-urlencoded byte serializer: only *-._ and ASCII alphanumerics
    # stay, a space is "+", every other byte of the UTF-8 text is percent-encoded.
    out = []
    for byte in text.encode("utf-8", "replace"):
        char = chr(byte)
        if (char.isascii() and char.isalnum()) or char in "*-._":
            out.append(char)
        elif char == " ":
            out.append("+")
        else:
            out.append(f"%{byte:02X}")
    return "".join(out)


def is_gzip_content_type(content_type: str | None) -> bool:
    """Upstream's test for a gzipped artifact body (``application/gzip``, ``…x-gzip``, …)."""
    return bool(content_type) and "gzip" in str(content_type).lower()


def decode_artifact_body(
    content: bytes, content_type: str | None, *, decompress: bool, limit: int | None = None
) -> str:
    """An artifact's text: gunzipped when its type says gzip (or ``decompress``), the raw
    bytes when they do not gunzip, decoded as UTF-8 (bad bytes replaced, as TextDecoder).

    ``limit``: the most bytes the gunzipped text may have; a larger one (a few KiB of gzip can
    hold gigabytes) raises :class:`AnswerTooLargeError` without being inflated further."""
    if is_gzip_content_type(content_type) or decompress:
        if limit is not None:
            content = _gunzip_within(content, limit)
        else:
            with contextlib.suppress(OSError, EOFError, zlib.error):
                content = gzip.decompress(content)
    return content.decode("utf-8", "replace")


def _gunzip_within(content: bytes, limit: int) -> bytes:
    """``content`` gunzipped (every member, as :func:`gzip.decompress`), at most ``limit``
    bytes of it; ``content`` itself when it is not gzip."""
    out = bytearray()
    rest = content
    try:
        while rest:
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
            out += inflater.decompress(rest, limit + 1 - len(out))
            if len(out) > limit or inflater.unconsumed_tail:
                raise AnswerTooLargeError(
                    f"the artifact inflates to more than {_size_text(limit)}, the most this "
                    f"client reads ({MAX_ANSWER_ENV}); raise {MAX_ANSWER_ENV} if it is expected",
                    limit=limit,
                )
            if not inflater.eof:
                raise EOFError("a gzip member ends early")
            rest = inflater.unused_data.lstrip(b"\0")
    except (OSError, EOFError, zlib.error):
        return content
    return bytes(out)


def _parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def max_answer_bytes(env: Mapping[str, str] | None = None) -> int:
    """The answer cap in bytes: ``BENCHSDK_MAX_ANSWER_MB`` (a positive number of MiB, ``0.5``
    allowed) else :data:`DEFAULT_MAX_ANSWER_BYTES`. Unset, empty, non-numeric or non-positive
    means the default, as upstream treats its ``BENCHMARK_*`` variables."""
    environ = os.environ if env is None else env
    text = (environ.get(MAX_ANSWER_ENV) or "").strip()
    try:
        megabytes = float(text)
    except ValueError:
        return DEFAULT_MAX_ANSWER_BYTES
    if not megabytes > 0 or megabytes == float("inf"):
        return DEFAULT_MAX_ANSWER_BYTES
    return max(1, int(megabytes * _MIB))


def _size_text(limit: int) -> str:
    return f"{limit / _MIB:g} MiB" if limit >= _MIB // 16 else f"{limit} bytes"


class Answer:
    """An answer read whole (within the cap): status, headers and the decoded body bytes."""

    __slots__ = ("content", "headers", "reason_phrase", "status_code")

    def __init__(
        self, status_code: int, reason_phrase: str, headers: httpx.Headers, content: bytes
    ) -> None:
        self.status_code = status_code
        self.reason_phrase = reason_phrase
        self.headers = headers
        self.content = content

    @property
    def is_success(self) -> bool:
        """A 2xx status."""
        return 200 <= self.status_code < 300

    @property
    def text(self) -> str:
        """The body as UTF-8 text (bad bytes replaced)."""
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        """The body parsed as JSON (``ValueError`` when it is not)."""
        return json.loads(self.content)


_INFLATABLE = ("gzip", "x-gzip", "deflate")


class _Inflater:
    """One ``gzip`` or ``deflate`` content encoding, inflated at most a given size at a time
    (httpx's own decoders inflate each read whole)."""

    def __init__(self, encoding: str) -> None:
        gzipped = encoding in ("gzip", "x-gzip")
        self._zlib = zlib.decompressobj(16 + zlib.MAX_WBITS if gzipped else zlib.MAX_WBITS)
        self._first = encoding == "deflate"

    def inflate(self, data: bytes, room: int) -> bytes:
        """What ``data`` inflates to, at most ``room + 1`` bytes (one more than fits says it
        does not fit)."""
        try:
            out = self._zlib.decompress(data, max(room, 0) + 1)
        except zlib.error as exc:
            if not self._first:
                raise httpx.DecodingError(str(exc)) from None
            # "deflate" as many servers send it: raw, without the zlib header (as httpx does).
            self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
            self._first = False
            return self.inflate(data, room)
        self._first = False
        if self._zlib.unconsumed_tail:
            return out + b"\0"  # more than the room: the caller refuses it
        return out


def read_answer(
    http: httpx.Client,
    request: httpx.Request,
    *,
    what: str,
    limit: int,
    redact: Callable[[str], str] = str,
    deadline_s: float | None = None,
) -> Answer:
    """Send ``request`` and read its answer as a stream, never more than ``limit`` decoded
    bytes of body (:class:`AnswerTooLargeError` beyond: a declared ``Content-Length`` over the
    cap is refused before reading, a body that grows past it is dropped at that point).

    No connection (refused, a host name that does not resolve) raises
    :class:`PlatformUnreachableError` (:func:`cannot_reach`'s words); no answer, or a body
    that ended before its end (cut off), raises :class:`PlatformConnectionError`; ``what``
    (``POST /benchmarks/x/runs``) names the request in messages, which go through ``redact``.
    ``deadline_s``: the whole answer must be read by then (:class:`DeadlineError` else), also
    from a platform that sends it a byte at a time (each read within its own timeout).
    """
    if deadline_s is None:
        return _read_answer(http, request, what=what, limit=limit, redact=redact)

    def expired() -> DeadlineError:
        return DeadlineError(
            redact(
                f"{what}: no complete answer within {deadline_s:g} s (the request's deadline, "
                f"{REQUEST_TIMEOUT_ENV}): the platform at {_origin(request)} answers too "
                "slowly or not at all"
            ),
            deadline_s=deadline_s,
        )

    return call_within(
        lambda: _read_answer(http, request, what=what, limit=limit, redact=redact),
        deadline_s,
        expired,
        name="benchsdk-request",
    )


def _origin(request: httpx.Request) -> str:
    """``scheme://host[:port]`` of the request, without any userinfo."""
    url = request.url
    port = f":{url.port}" if url.port is not None else ""
    return f"{url.scheme}://{url.host}{port}"


def _read_answer(
    http: httpx.Client,
    request: httpx.Request,
    *,
    what: str,
    limit: int,
    redact: Callable[[str], str],
) -> Answer:
    try:
        response = http.send(request, stream=True)
    except httpx.ConnectError as exc:
        raise PlatformUnreachableError(
            redact(cannot_reach(_origin(request), what, _reason(exc)))
        ) from None
    except httpx.HTTPError as exc:
        raise PlatformConnectionError(
            redact(f"{what}: {type(exc).__name__}: {exc}"),
            timeout=isinstance(exc, httpx.TimeoutException),
        ) from None
    too_large = AnswerTooLargeError(
        redact(
            f"{what}: the platform's answer ({response.status_code}) is larger than "
            f"{_size_text(limit)}, the most this client reads ({MAX_ANSWER_ENV}); it was not "
            f"read. Raise {MAX_ANSWER_ENV} if an answer this large is expected"
        ),
        limit=limit,
    )
    body = bytearray()
    try:
        declared = response.headers.get("content-length", "")
        encodings = [
            value.strip().lower()
            for value in response.headers.get_list("content-encoding", split_commas=True)
            if value.strip().lower() not in ("", "identity")
        ]
        if not encodings and declared.strip().isdigit() and int(declared) > limit:
            raise too_large
        inflatable = len(encodings) == 1 and encodings[0] in _INFLATABLE
        inflater = _Inflater(encodings[0]) if inflatable else None
        # httpx would inflate each network read whole (64 KiB of gzip can be 64 MiB): a
        # single gzip or deflate layer is inflated here, never past the cap.
        chunks = response.iter_raw() if inflater is not None else response.iter_bytes()
        for raw in chunks:
            chunk = inflater.inflate(raw, limit - len(body)) if inflater is not None else raw
            if len(body) + len(chunk) > limit:
                raise too_large
            body += chunk
    except httpx.HTTPError as exc:
        raise PlatformConnectionError(
            redact(
                f"{what}: the answer ({response.status_code}) was cut off after {len(body)} "
                f"bytes: {type(exc).__name__}: {exc}"
            ),
            timeout=isinstance(exc, httpx.TimeoutException),
        ) from None
    finally:
        response.close()
    return Answer(response.status_code, response.reason_phrase, response.headers, bytes(body))


def _reason(exc: BaseException) -> str:
    """What the system said (``[Errno 111] Connection refused``), without httpx's wrapping."""
    text = str(exc).strip()
    return text or type(exc).__name__


def _env_max_answer(environ: Mapping[str, str]) -> int:
    return max_answer_bytes(environ)


def request_timeout(env: Mapping[str, str] | None = None) -> httpx.Timeout:
    """Each request's timeout: ``BENCHSDK_PLATFORM_TIMEOUT`` seconds (a positive number; its
    connect part at most 10 s) else :data:`DEFAULT_TIMEOUT`. Unset, empty, non-numeric or
    non-positive means the default."""
    environ = os.environ if env is None else env
    text = (environ.get(REQUEST_TIMEOUT_ENV) or "").strip()
    try:
        seconds = float(text)
    except ValueError:
        return DEFAULT_TIMEOUT
    if not seconds > 0 or seconds == float("inf"):
        return DEFAULT_TIMEOUT
    return httpx.Timeout(seconds, connect=min(seconds, 10.0))


def deadline_of(timeout: httpx.Timeout) -> float | None:
    """The whole-answer deadline of a request with ``timeout``: its largest value."""
    values = [v for v in (timeout.connect, timeout.read, timeout.write, timeout.pool) if v]
    return max(values) if values else None


class BenchmarkClient:
    """The platform REST client (upstream ``createBenchmarkClient``), synchronous, over httpx.

    ``base_url`` is the API base (``…/api/v1``); trailing slashes are trimmed. The bearer is
    ``token`` > ``api_key`` > env ``BENCHMARKS_PLATFORM_TOKEN`` > env
    ``BENCHMARKS_PLATFORM_API_KEY``; none raises :class:`AuthError` with upstream's message.
    ``transport`` lets tests and embedders plug an httpx transport. ``max_answer_bytes`` caps
    every answer's body (default: ``BENCHSDK_MAX_ANSWER_MB`` of ``env``, else 8 MiB). The client
    is thread-safe (httpx.Client is) and should be closed with :meth:`close` or used as a
    context manager.
    """

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        token: str | None = None,
        org_slug: str | None = None,
        org_id: str | None = None,
        timeout: httpx.Timeout | float | None = None,
        transport: httpx.BaseTransport | None = None,
        env: Mapping[str, str] | None = None,
        max_answer_bytes: int | None = None,
    ) -> None:
        environ = os.environ if env is None else env
        bearer = (
            token
            or api_key
            or environ.get("BENCHMARKS_PLATFORM_TOKEN")
            or environ.get("BENCHMARKS_PLATFORM_API_KEY")
        )
        if not bearer:
            raise AuthError(_MISSING_CREDENTIALS)
        # A user:password@ in the URL would make httpx send it as Basic auth in place of the
        # bearer (a sure 401), and it would end up in every message and stored URL: dropped.
        self.base_url = without_userinfo(base_url or DEFAULT_API_BASE_URL).rstrip("/")
        self.org_slug = org_slug
        self.org_id = org_id
        self._bearer = bearer
        self._redactor = Redactor((bearer,))
        #: The most bytes of one answer's body this client reads (see :func:`read_answer`).
        self.max_answer_bytes = (
            max_answer_bytes if max_answer_bytes is not None else _env_max_answer(environ)
        )
        if timeout is None:
            self.timeout = request_timeout(environ)
        elif isinstance(timeout, httpx.Timeout):
            self.timeout = timeout
        else:
            self.timeout = httpx.Timeout(timeout)
        #: Seconds each request may take in all, answer included (``None``: no deadline).
        self.deadline_s = deadline_of(self.timeout)
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {bearer}"}
        if org_slug:
            headers["X-Org-Slug"] = org_slug
        elif org_id:
            headers["X-Organization-Id"] = org_id
        # Redirects are not followed: they could carry the bearer to another host.
        self._http = httpx.Client(
            headers=headers, timeout=self.timeout, transport=transport, follow_redirects=False
        )
        # The presigned upload must never see the Authorization header: separate client.
        self._upload = httpx.Client(timeout=self.timeout, transport=transport)

    # -- plumbing ---------------------------------------------------------------------------

    @property
    def secrets(self) -> tuple[str, ...]:
        """The values that must never appear in output (for :func:`redact`)."""
        return (self._bearer,)

    def redact(self, text: str) -> str:
        """``text`` with the credentials (in every escaped form) and the userinfo of every URL
        (``user:password@``) replaced by ``***``."""
        return redact_url(self._redactor.text(text))

    def close(self) -> None:
        """Close the underlying connections."""
        self._http.close()
        self._upload.close()

    def __enter__(self) -> BenchmarkClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"BenchmarkClient(base_url={redact_url(self.base_url)!r})"

    def path(self, *segments: str) -> str:
        """``/seg/seg…`` with every segment ``encodeURIComponent``-encoded."""
        return "".join("/" + encode_segment(s) for s in segments)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        timeout: httpx.Timeout | None = None,
    ) -> Any:
        """Send one API request; returns the parsed JSON (``{}`` for an empty body).

        Raises :class:`BenchmarkApiError` on a non-2xx answer and
        :class:`PlatformConnectionError` when no answer arrived.
        """
        url = self.base_url + path
        content = None if body is None else json.dumps(body, ensure_ascii=False).encode()
        request = self._http.build_request(
            method, url, content=content, timeout=timeout or self.timeout
        )
        answer = self._read(request, f"{method} {path}")
        if not answer.is_success:
            raise BenchmarkApiError(
                answer.status_code,
                self.redact(answer.text),
                status_text=answer.reason_phrase,
                method=method,
                path=path,
                retry_after=_parse_retry_after(answer.headers.get("retry-after")),
            )
        return self._parsed(answer, method, path)

    def _read(
        self, request: httpx.Request, what: str, *, http: httpx.Client | None = None
    ) -> Answer:
        return read_answer(
            http or self._http,
            request,
            what=what,
            limit=self.max_answer_bytes,
            redact=self.redact,
            deadline_s=self.deadline_s,
        )

    def _object(self, method: str, path: str, body: Any = None) -> JSON:
        """:meth:`request`, its answer checked to be a JSON object."""
        return answer_object(self.request(method, path, body), f"{method} {path}", self.redact)

    def _member(self, method: str, path: str, key: str, body: Any = None) -> JSON | None:
        """The object ``key`` of the answer (``None`` when absent), shapes checked."""
        what = f"{method} {path}"
        return member_object(self._object(method, path, body), key, what, redact=self.redact)

    def _list(self, method: str, path: str, *legacy: str) -> list[Any]:
        """Upstream's ``items ?? <legacy> ?? []`` of the answer, shapes checked."""
        data = self.request(method, path)
        return item_list(data, f"{method} {path}", *legacy, redact=self.redact)

    def _parsed(self, answer: Answer, method: str, path: str) -> Any:
        """A 2xx answer's JSON (``{}`` when empty). A body that is not JSON was cut off on its
        way (a proxy, a dropped connection without a length) far more often than the platform
        meant it: a transient fault, asked again, never a verdict on what was sent."""
        if not answer.content:
            return {}
        try:
            return answer.json()
        except ValueError:
            raise PlatformConnectionError(
                self.redact(
                    f"{method} {path}: Benchmark API returned invalid JSON "
                    f"({answer.status_code}, {len(answer.content)} bytes): the answer was cut "
                    "off or is not JSON"
                )
            ) from None

    def _run(self, slug: str, run_id: str, *rest: str) -> str:
        return self.path("benchmarks", slug, "runs", run_id, *rest)

    def _worker(self, slug: str, run_id: str, worker_id: str, *rest: str) -> str:
        return self._run(slug, run_id, "workers", worker_id, *rest)

    # -- benchmarks -------------------------------------------------------------------------

    def upsert_benchmark(self, slug: str, body: Mapping[str, Any] | None = None) -> Any:
        """``PUT /benchmarks/{slug}`` ``{name?, status?, config?, defaultRunConfig?}``."""
        return self._member("PUT", self.path("benchmarks", slug), "benchmark", dict(body or {}))

    def get_benchmark(self, slug: str) -> Any:
        """``GET /benchmarks/{slug}`` → benchmark (404 raises :class:`BenchmarkApiError`)."""
        return self._member("GET", self.path("benchmarks", slug), "benchmark")

    def update_benchmark(self, slug: str, body: Mapping[str, Any]) -> Any:
        """``PATCH /benchmarks/{slug}`` → benchmark."""
        return self._member("PATCH", self.path("benchmarks", slug), "benchmark", dict(body))

    def list_benchmarks(
        self, *, limit: int | float | None = None, offset: int | float | None = None
    ) -> list[Any]:
        """``GET /benchmarks?limit&offset`` → ``items ?? benchmarks ?? []`` (used by the check)."""
        return self._list(
            "GET", "/benchmarks" + _query({"limit": limit, "offset": offset}), "benchmarks"
        )

    # -- account (upstream @benchsdk/cli's getMe / listOrganizations / setActiveOrganization) --

    def _account_request(self, method: str, path: str, body: Any, failure: str) -> Any:
        # Upstream's CLI calls these with only the Authorization header (no org headers), and
        # names the call in its error message.
        headers = {"Authorization": f"Bearer {self._bearer}"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        content = None if body is None else json.dumps(body, ensure_ascii=False).encode()
        request = self._http.build_request(method, self.base_url + path, content=content)
        for name in ("X-Org-Slug", "X-Organization-Id", "Content-Type"):
            request.headers.pop(name, None)
        request.headers.update(headers)
        answer = self._read(request, f"{method} {path}")
        if not answer.is_success:
            raise BenchmarkApiError(
                answer.status_code,
                self.redact(answer.text),
                message=f"{failure}: {answer.status_code} {answer.reason_phrase}".rstrip(),
                status_text=answer.reason_phrase,
                method=method,
                path=path,
            )
        return self._parsed(answer, method, path)

    def get_me(self) -> JSON:
        """``GET /me`` → ``{user, activeOrganizationId, organizations}``."""
        data = self._account_request("GET", "/me", None, "Me request failed")
        return answer_object(data, "GET /me", self.redact)

    def list_organizations(self) -> list[Any]:
        """``GET /organizations`` → ``items`` (``[]`` when absent)."""
        data = self._account_request("GET", "/organizations", None, "Organizations request failed")
        return item_list(data, "GET /organizations", redact=self.redact)

    def set_active_organization(self, slug: str) -> JSON:
        """``POST /organizations`` ``{slug}`` → ``{activeOrganizationId, organization,
        accessToken?, expiresIn?}`` (a new access token carries the organisation claim)."""
        data = self._account_request(
            "POST", "/organizations", {"slug": slug}, "Set active organization failed"
        )
        return answer_object(data, "POST /organizations", self.redact)

    # -- runs -------------------------------------------------------------------------------

    def create_run(self, slug: str, body: Mapping[str, Any]) -> JSON:
        """``POST /benchmarks/{slug}/runs`` → ``{run, participants, organizationSlug}``.

        With ``runKey`` in the body the platform gets-or-creates the keyed run.
        """
        path = self.path("benchmarks", slug, "runs")
        what = f"POST {path}"
        data = self._object("POST", path, dict(body))
        run = member_object(data, "run", what, required=True, redact=self.redact)
        assert run is not None
        id_of(run, "id", what, where="run.id", redact=self.redact)
        org = data.get("organizationSlug")
        if org is not None and not isinstance(org, str):
            raise MalformedAnswerError(
                self.redact(
                    f'{what}: malformed answer: its "organizationSlug" is '
                    f"{describe_json(org)} where a string is expected; nothing was taken from it"
                )
            )
        return data

    def list_runs(
        self, slug: str, *, limit: int | float | None = None, offset: int | float | None = None
    ) -> Any:
        """``GET /benchmarks/{slug}/runs`` → ``items`` (no legacy fallback, as upstream)."""
        path = self.path("benchmarks", slug, "runs") + _query({"limit": limit, "offset": offset})
        return member_list(self._object("GET", path), "items", f"GET {path}", redact=self.redact)

    def get_run(self, slug: str, run_id: str) -> Any:
        """``GET /benchmarks/{slug}/runs/{runId}`` → run."""
        return self._member("GET", self._run(slug, run_id), "run")

    def list_all_runs(
        self,
        *,
        limit: int | float | None = None,
        offset: int | float | None = None,
        benchmark_slug: str | None = None,
    ) -> Any:
        """``GET /benchmarks/runs?limit&offset&benchmarkSlug`` → ``items``: every run the caller
        can read, across benchmarks (own and subscribed)."""
        query = _query({"limit": limit, "offset": offset, "benchmarkSlug": benchmark_slug})
        path = "/benchmarks/runs" + query
        return member_list(self._object("GET", path), "items", f"GET {path}", redact=self.redact)

    # -- results ----------------------------------------------------------------------------

    def get_benchmark_results(
        self, slug: str, *, limit: int | float | None = None, offset: int | float | None = None
    ) -> Any:
        """``GET /benchmarks/{slug}/results?limit&offset`` → the results overview."""
        query = _query({"limit": limit, "offset": offset})
        return self.request("GET", self.path("benchmarks", slug, "results") + query)

    def get_run_results(self, slug: str, run_id: str) -> Any:
        """``GET …/runs/{runId}/results`` → ``{benchmark, run, generatedAt, overall,
        participants, steps}``."""
        return self.request("GET", self._run(slug, run_id, "results"))

    def get_run_task_results(
        self,
        slug: str,
        run_id: str,
        *,
        bucket_size: int | float | None = None,
        failure_limit: int | float | None = None,
    ) -> Any:
        """``GET …/runs/{runId}/results/tasks?bucketSize&failureLimit``."""
        query = _query({"bucketSize": bucket_size, "failureLimit": failure_limit})
        return self.request("GET", self._run(slug, run_id, "results", "tasks") + query)

    def get_run_timeline(
        self, slug: str, run_id: str, *, bucket_ms: int | float | None = None
    ) -> Any:
        """``GET …/runs/{runId}/results/timeline?bucketMs``."""
        query = _query({"bucketMs": bucket_ms})
        return self.request("GET", self._run(slug, run_id, "results", "timeline") + query)

    def get_run_imports(self, slug: str, run_id: str) -> Any:
        """``GET …/runs/{runId}/results/imports``."""
        return self.request("GET", self._run(slug, run_id, "results", "imports"))

    def _iterations(
        self,
        kind: str,
        slug: str,
        run_id: str,
        participant: str | None,
        steps: Sequence[str] | None,
    ) -> tuple[str, Any]:
        query = form_query(
            {
                "type": kind,
                "participant": participant or None,
                "steps": ",".join(steps or ()) or None,
            }
        )
        path = self._run(slug, run_id, "iterations") + query
        return path, self.request("GET", path)

    def get_run_task_iterations(
        self,
        slug: str,
        run_id: str,
        *,
        participant: str | None = None,
        steps: Sequence[str] | None = None,
    ) -> Any:
        """``GET …/runs/{runId}/iterations?type=tasks[&participant][&steps]`` → ``{run,
        generatedAt, tasks}``."""
        return self._iterations("tasks", slug, run_id, participant, steps)[1]

    def get_run_step_iterations(
        self,
        slug: str,
        run_id: str,
        *,
        participant: str | None = None,
        steps: Sequence[str] | None = None,
    ) -> Any:
        """``GET …/runs/{runId}/iterations?type=steps[&participant][&steps=a,b]`` → ``{run,
        generatedAt, steps}``."""
        path, data = self._iterations("steps", slug, run_id, participant, steps)
        member_list(
            answer_object(data, f"GET {path}", self.redact),
            "steps",
            f"GET {path}",
            required=True,
            redact=self.redact,
        )
        return data

    def get_progress(self, slug: str, run_id: str) -> JSON:
        """``GET …/runs/{runId}/progress`` → ``RunProgress`` (per participant: worker counts
        and ``concurrency`` entries ``{step, active, target, ready}``)."""
        return self._object("GET", self._run(slug, run_id, "progress"))

    def close_run(self, slug: str, run_id: str, body: Mapping[str, Any] | None = None) -> JSON:
        """``POST …/runs/{runId}/close`` ``{closeAfterMs?}`` → ``{run, outcome}``."""
        return self._object("POST", self._run(slug, run_id, "close"), dict(body or {}))

    def submit_run_summary(self, slug: str, run_id: str, body: Mapping[str, Any]) -> Any:
        """``POST …/runs/{runId}/summary`` with the run summary (response ignored upstream)."""
        return self.request("POST", self._run(slug, run_id, "summary"), dict(body))

    # -- participants and workers -----------------------------------------------------------

    def upsert_participant(
        self, slug: str, run_id: str, participant: str, body: Mapping[str, Any] | None = None
    ) -> Any:
        """``PUT …/participants/{p}`` (default body ``{}``) → participant."""
        return self._member(
            "PUT",
            self._run(slug, run_id, "participants", participant),
            "participant",
            dict(body or {}),
        )

    def list_participants(self, slug: str, run_id: str) -> list[Any]:
        """``GET …/participants`` → ``items ?? participants ?? []``."""
        return self._list("GET", self._run(slug, run_id, "participants"), "participants")

    def get_participant_logs(
        self,
        slug: str,
        run_id: str,
        participant: str,
        *,
        max_lines: int | float | None = None,
    ) -> Any:
        """``GET …/participants/{p}/logs?maxLines`` → ``{participant, workers: [{workerId,
        workerIndex, status, artifact, log: {lines: [{n, ts, level, msg}], totalLines, …} |
        null}]}`` (the parsed worker logs, as the dashboard shows them)."""
        return self._object(
            "GET",
            self._run(slug, run_id, "participants", participant, "logs")
            + _query({"maxLines": max_lines}),
        )

    def plan_workers(
        self, slug: str, run_id: str, participant: str, body: Mapping[str, Any] | None = None
    ) -> list[Any]:
        """``POST …/participants/{p}/workers`` → planned workers (409 = already planned)."""
        path = self._run(slug, run_id, "participants", participant, "workers")
        data = self.request("POST", path, dict(body or {}))
        return item_list(data, f"POST {path}", "workers", redact=self.redact)

    def list_workers(self, slug: str, run_id: str, participant: str) -> list[Any]:
        """``GET …/participants/{p}/workers`` → ``items ?? workers ?? []``."""
        return self._list(
            "GET", self._run(slug, run_id, "participants", participant, "workers"), "workers"
        )

    def claim_worker(
        self, slug: str, run_id: str, participant: str, body: Mapping[str, Any] | None = None
    ) -> JSON | None:
        """``POST …/participants/{p}/workers/claim`` ``{processKind?, processKey?}`` → assignment.

        ``None`` when no pending worker is left to claim.
        """
        path = self._run(slug, run_id, "participants", participant, "workers", "claim")
        what = f"POST {path}"
        assignment = self._member("POST", path, "assignment", dict(body or {}))
        if assignment is not None:
            id_of(assignment, "workerId", what, where="assignment.workerId", redact=self.redact)
            id_of(assignment, "attemptId", what, where="assignment.attemptId", redact=self.redact)
        return assignment

    def heartbeat(self, slug: str, run_id: str, worker_id: str, body: Mapping[str, Any]) -> Any:
        """``POST …/workers/{w}/heartbeat``; a null ``currentStep`` is omitted as upstream does.

        ``concurrency`` is limited to 20 samples with unique ``step`` values (upstream messages).
        """
        payload = {k: v for k, v in body.items() if not (k == "currentStep" and v is None)}
        samples = payload.get("concurrency")
        if samples is not None:
            if len(samples) > MAX_HEARTBEAT_SAMPLES:
                raise ValueError("Benchmark heartbeat concurrency is limited to 20 samples.")
            steps = [s.get("step") for s in samples]
            if len(set(steps)) != len(steps):
                raise ValueError(
                    "Benchmark heartbeat concurrency step values must be unique per heartbeat."
                )
        return self.request("POST", self._worker(slug, run_id, worker_id, "heartbeat"), payload)

    def complete_worker(self, slug: str, run_id: str, worker_id: str, attempt_id: str) -> Any:
        """``POST …/workers/{w}/complete`` ``{attemptId}``."""
        return self.request(
            "POST", self._worker(slug, run_id, worker_id, "complete"), {"attemptId": attempt_id}
        )

    def release_worker(self, slug: str, run_id: str, worker_id: str, attempt_id: str) -> Any:
        """``POST …/workers/{w}/release`` ``{attemptId}``."""
        return self.request(
            "POST", self._worker(slug, run_id, worker_id, "release"), {"attemptId": attempt_id}
        )

    def fail_worker(
        self,
        slug: str,
        run_id: str,
        worker_id: str,
        attempt_id: str,
        error_code: str,
        error_message: str,
    ) -> Any:
        """``POST …/workers/{w}/fail`` ``{attemptId, errorCode, errorMessage}``."""
        body = {"attemptId": attempt_id, "errorCode": error_code, "errorMessage": error_message}
        return self.request("POST", self._worker(slug, run_id, worker_id, "fail"), body)

    def submit_task_results(
        self, slug: str, run_id: str, worker_id: str, body: Mapping[str, Any]
    ) -> Any:
        """``POST …/workers/{w}/events`` ``{type: 'task_results', attemptId, sequenceNumber,
        isFinal, records}``; empty ``records`` sends nothing and returns ``{}`` (upstream).
        """
        records: Sequence[Mapping[str, Any]] = body.get("records") or []
        if not records:
            return {}
        check_records(records)
        payload = {"type": "task_results", **body}
        return self.request("POST", self._worker(slug, run_id, worker_id, "events"), payload)

    # -- artifacts --------------------------------------------------------------------------

    def create_artifact(
        self, slug: str, run_id: str, worker_id: str, body: Mapping[str, Any]
    ) -> JSON:
        """``POST …/workers/{w}/artifacts`` ``{attemptId, kind, contentType?, name?, metadata?}``
        → ``{artifact?, artifactId?, uploadUrl?, uploadUrlExpiresAt?, objectKey?}``.
        """
        path = self._worker(slug, run_id, worker_id, "artifacts")
        data = self._object("POST", path, dict(body))
        id_of(data, "uploadUrl", f"POST {path}", where="uploadUrl", redact=self.redact)
        return data

    def list_run_artifacts(
        self,
        slug: str,
        run_id: str,
        *,
        limit: int | float | None = None,
        offset: int | float | None = None,
    ) -> list[Any]:
        """``GET …/runs/{runId}/artifacts?limit&offset`` → ``items ?? artifacts ?? []``."""
        query = _query({"limit": limit, "offset": offset})
        return self._list("GET", self._run(slug, run_id, "artifacts") + query, "artifacts")

    def list_worker_artifacts(
        self,
        slug: str,
        run_id: str,
        worker_id: str,
        *,
        limit: int | float | None = None,
        offset: int | float | None = None,
    ) -> list[Any]:
        """``GET …/workers/{w}/artifacts?limit&offset`` → ``items ?? artifacts ?? []``."""
        query = _query({"limit": limit, "offset": offset})
        return self._list(
            "GET", self._worker(slug, run_id, worker_id, "artifacts") + query, "artifacts"
        )

    def get_worker_artifact(self, slug: str, run_id: str, worker_id: str, artifact_id: str) -> JSON:
        """``GET …/workers/{w}/artifacts/{id}`` → ``{artifact, downloadUrl,
        downloadUrlExpiresAt?}``."""
        return self._object("GET", self._worker(slug, run_id, worker_id, "artifacts", artifact_id))

    def download_artifact(
        self, url: str, *, content_type: str | None = None, decompress: bool = False
    ) -> str:
        """The text behind a presigned download URL (``GET`` without the Authorization header),
        gunzipped when the content type (given, else the response's) says gzip."""
        answer = self._read(
            self._upload.build_request("GET", url), "GET <download url>", http=self._upload
        )
        if not answer.is_success:
            raise BenchmarkApiError(
                answer.status_code,
                self.redact(answer.text),
                message=f"Artifact download failed with {answer.status_code}",
                status_text=answer.reason_phrase,
                method="GET",
                path="<download url>",
            )
        declared = content_type or answer.headers.get("content-type")
        try:
            return decode_artifact_body(
                answer.content, declared, decompress=decompress, limit=self.max_answer_bytes
            )
        except AnswerTooLargeError as exc:
            raise AnswerTooLargeError(f"GET <download url>: {exc}", limit=exc.limit) from None

    def download_worker_artifact(
        self, slug: str, run_id: str, worker_id: str, artifact_id: str
    ) -> str:
        """An artifact's text: its download URL looked up, then fetched (and gunzipped)."""
        found = self.get_worker_artifact(slug, run_id, worker_id, artifact_id)
        artifact = found.get("artifact")
        content_type = artifact.get("contentType") if isinstance(artifact, dict) else None
        url = found.get("downloadUrl")
        if not url:
            raise BenchmarkApiError(0, "", message="Benchmark artifact download URL is missing.")
        return self.download_artifact(str(url), content_type=content_type or None)

    def upload_presigned(self, url: str, content: bytes, content_type: str) -> None:
        """``PUT <uploadUrl>`` with the raw body and no Authorization header."""
        request = self._upload.build_request(
            "PUT", url, content=content, headers={"Content-Type": content_type}
        )
        answer = self._read(request, "PUT <upload url>", http=self._upload)
        if not answer.is_success:
            raise BenchmarkApiError(
                answer.status_code,
                self.redact(answer.text),
                message=f"Benchmark artifact upload failed with {answer.status_code}",
                status_text=answer.reason_phrase,
                method="PUT",
                path="<upload url>",
                retry_after=_parse_retry_after(answer.headers.get("retry-after")),
            )

    def upload_artifact(
        self,
        slug: str,
        run_id: str,
        worker_id: str,
        *,
        attempt_id: str,
        kind: str,
        body: bytes | str,
        content_type: str | None = None,
        name: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> JSON:
        """Upstream ``uploadWorkerArtifact``: create (adding ``metadata.sizeBytes``) then PUT."""
        content = body.encode() if isinstance(body, str) else bytes(body)
        create: JSON = {"attemptId": attempt_id, "kind": kind}
        if content_type is not None:
            create["contentType"] = content_type
        if name is not None:
            create["name"] = name
        create["metadata"] = {**(metadata or {}), "sizeBytes": len(content)}
        created = self.create_artifact(slug, run_id, worker_id, create)
        url = created.get("uploadUrl")
        if not url:
            raise BenchmarkApiError(0, "", message="Benchmark artifact upload URL is missing.")
        self.upload_presigned(str(url), content, content_type or "application/octet-stream")
        return created


def check_records(records: Iterable[Mapping[str, Any]]) -> None:
    """Upstream's client-side limits on a task-result batch (raises ``ValueError``)."""
    records = list(records)
    if len(records) > MAX_BATCH_RECORDS:
        raise ValueError("Benchmark task result batches are limited to 5000 records.")
    for record in records:
        if len(record.get("steps") or ()) > MAX_RECORD_STEPS:
            raise ValueError("Benchmark task result records are limited to 100 steps.")
