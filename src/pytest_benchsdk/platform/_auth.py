"""Platform credentials and base URLs, resolved exactly as upstream ``@benchsdk/cli`` does.

Precedence: an explicit API key (``--bench-api-key``/``api_key=``), then
``BENCHMARKS_PLATFORM_TOKEN``, then ``BENCHMARKS_PLATFORM_API_KEY``, then the saved credentials in
``~/.benchsdk/credentials.json``. The platform root is the explicit base URL, else
``~/.benchsdk/config.json``'s ``baseUrl`` (else, for saved credentials, theirs), else
``BENCHMARKS_PLATFORM_URL``, else ``https://platform.computesdk.com``.

A saved OAuth token that expires within five minutes is refreshed with the refresh-token grant
(``POST <root>/api/auth/oauth2/token``) and the credentials file is rewritten (mode 0600).

The device login (RFC 8628, ``pytest-benchsdk platform auth login``) is here too:
:func:`request_device_code` and :func:`poll_device_token` speak upstream's endpoints
(``<root>/api/auth/device/code`` and ``…/oauth2/token``); the files are read and written by
:func:`load_config`, :func:`load_credentials`, :func:`save_credentials` and
:func:`clear_credentials` (``~/.benchsdk`` mode 0700, ``credentials.json`` mode 0600). The poll
takes its ``sleep`` and ``clock`` as arguments so that a test can drive it without waiting.

Secrets never leave this module in text form: :class:`CliAuth`'s ``repr`` hides them and every
error message is fixed text.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import stat
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import attrs
import httpx

from pytest_benchsdk._base.files import write_atomically
from pytest_benchsdk._base.redact import redact_url
from pytest_benchsdk.platform._client import Answer, deadline_of, max_answer_bytes, read_answer
from pytest_benchsdk.platform._errors import (
    AnswerTooLargeError,
    AuthError,
    PlatformConnectionError,
    PlatformUnreachableError,
)

__all__ = [
    "DEFAULT_PLATFORM_URL",
    "DEVICE_GRANT",
    "DEVICE_SCOPE",
    "OAUTH_CLIENT_ID",
    "CliAuth",
    "DeviceFlowError",
    "check_verification_address",
    "clear_credentials",
    "credentials_path",
    "get_api_base_url",
    "get_auth_base_url",
    "get_platform_base_url",
    "load_config",
    "load_credentials",
    "poll_device_token",
    "request_device_code",
    "resolve_auth",
    "save_credentials",
]

DEFAULT_PLATFORM_URL = "https://platform.computesdk.com"
#: The client id upstream's code uses (its CHANGELOG says ``benchsdk-cli``; the code wins).
OAUTH_CLIENT_ID = "benchsdk-runner"
#: What the device login asks for (upstream cli 0.7.0).
DEVICE_SCOPE = "benchmarks:read benchmarks:write billing:read org:read offline_access"
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
#: The device-flow errors that end or steer the poll with the server's own code (RFC 8628 §3.5).
_DEVICE_ERRORS = frozenset(
    {"authorization_pending", "slow_down", "expired_token", "access_denied", "invalid_grant"}
)
_DEVICE_EXPIRED = "Device code expired before authorization completed."
_REFRESH_MARGIN_MS = 5 * 60 * 1000
_REFRESH_TIMEOUT = httpx.Timeout(15.0, connect=5.0)

#: How upstream's messages name the login command, in our words.
LOGIN_COMMAND = "pytest-benchsdk platform auth login"
_NO_CREDENTIALS = (
    "No credentials found. Set BENCHMARKS_PLATFORM_API_KEY or BENCHMARKS_PLATFORM_TOKEN, or run "
    f"`{LOGIN_COMMAND}` for OAuth. Create an API key at https://platform.computesdk.com in your "
    "organization settings (Settings → API keys)."
)
_LEGACY = (
    f"Your saved login uses the retired CLI token format. Run `{LOGIN_COMMAND}` (or "
    "`compute login`) to sign in again."
)
_EXPIRED = f"Your session has expired. Run `{LOGIN_COMMAND}` or set BENCHMARKS_PLATFORM_API_KEY."
_REFRESH_FAILED = (
    f"Failed to refresh your session. Run `{LOGIN_COMMAND}` or set BENCHMARKS_PLATFORM_API_KEY."
)


def get_platform_base_url(base_url: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """The platform root: ``base_url`` ?? ``BENCHMARKS_PLATFORM_URL`` ?? the default."""
    environ = os.environ if env is None else env
    root = base_url or environ.get("BENCHMARKS_PLATFORM_URL") or DEFAULT_PLATFORM_URL
    return root.rstrip("/")


def _root_of(url: str) -> str:
    url = url.rstrip("/")
    return url[: -len("/api/v1")] if url.endswith("/api/v1") else url


def get_api_base_url(root: str) -> str:
    """``<root>/api/v1`` (not doubled when ``root`` already ends with ``/api/v1``)."""
    return _root_of(root) + "/api/v1"


def get_auth_base_url(root: str) -> str:
    """``<root>/api/auth`` (``/api/v1`` removed from ``root`` first)."""
    return _root_of(root) + "/api/auth"


@attrs.frozen
class CliAuth:
    """Resolved credentials (upstream ``CliAuth``). ``repr`` never shows a secret.

    ``source`` says where they came from (``option``, ``env-token``, ``env-api-key``,
    ``saved``); ``warnings`` are messages for the user (e.g. a credentials file readable by
    others). ``token_expires_at``/``refresh_expires_at`` are epoch milliseconds.
    """

    base_url: str
    api_base_url: str
    auth_base_url: str
    source: str
    token: str | None = attrs.field(default=None, repr=False)
    api_key: str | None = attrs.field(default=None, repr=False)
    refresh_token: str | None = attrs.field(default=None, repr=False)
    token_expires_at: int | None = None
    refresh_expires_at: int | None = None
    org_slug: str | None = None
    org_id: str | None = None
    format: str | None = None
    warnings: tuple[str, ...] = ()

    @property
    def secrets(self) -> tuple[str, ...]:
        """Every secret value held (to redact from any text)."""
        return tuple(s for s in (self.token, self.api_key, self.refresh_token) if s)


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise AuthError(f"Cannot read {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except ValueError:
        # Never echo the content: it may hold a token.
        raise AuthError(f"{path} is not valid JSON; fix or delete it.") from None
    if not isinstance(data, dict):
        raise AuthError(f"{path} must hold a JSON object; fix or delete it.")
    return data


def _permission_warning(path: Path) -> str | None:
    if os.name != "posix":
        return None
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return None
    if mode & 0o077:
        return (
            f"{path} is readable by other users (mode {mode:04o}); "
            f"restrict it with: chmod 600 {path}"
        )
    return None


def _write_credentials(path: Path, data: Mapping[str, Any]) -> None:
    directory = path.parent
    if not directory.is_dir():
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    # mkdir's mode is masked by the umask, and a folder made before (by hand, by another tool)
    # may be open to others: the directory holds secrets, so it is 0700 either way.
    if os.name == "posix" and stat.S_IMODE(directory.stat().st_mode) != 0o700:
        with contextlib.suppress(PermissionError):  # not ours: the file itself is still 0600
            os.chmod(directory, 0o700)
    # Undefined fields are left out, as JSON.stringify does. Written whole or not at all: a
    # full disk or a kill mid-write leaves the old login as it was.
    text = json.dumps({k: v for k, v in data.items() if v is not None}, indent=2) + "\n"
    write_atomically(path, text, mode=0o600)


def _directory(home: str | os.PathLike[str] | None) -> Path:
    return (Path(home) if home is not None else Path.home()) / ".benchsdk"


def credentials_path(home: str | os.PathLike[str] | None = None) -> Path:
    """``~/.benchsdk/credentials.json`` (under ``home`` when given)."""
    return _directory(home) / "credentials.json"


def load_config(home: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """``~/.benchsdk/config.json`` (``{baseUrl?, org?, format?}``); ``{}`` when missing."""
    return _read_json(_directory(home) / "config.json") or {}


def load_credentials(home: str | os.PathLike[str] | None = None) -> dict[str, Any] | None:
    """The saved credentials, ``None`` when there are none."""
    return _read_json(credentials_path(home))


def save_credentials(data: Mapping[str, Any], home: str | os.PathLike[str] | None = None) -> Path:
    """Write the credentials (``~/.benchsdk`` created with mode 0700, the file 0600)."""
    path = credentials_path(home)
    _write_credentials(path, data)
    return path


def clear_credentials(home: str | os.PathLike[str] | None = None) -> bool:
    """Remove the saved credentials; ``False`` when there were none."""
    try:
        credentials_path(home).unlink()
    except FileNotFoundError:
        return False
    return True


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


def _is_legacy(creds: Mapping[str, Any]) -> bool:
    has_oauth = bool(creds.get("token") or creds.get("refreshToken"))
    if not has_oauth or creds.get("clientId"):
        return False
    refresh = creds.get("refreshToken")
    return (isinstance(refresh, str) and refresh.startswith("bcs_")) or (
        bool(creds.get("token")) and not creds.get("kind")
    )


def _refresh(
    creds: dict[str, Any],
    *,
    auth_base_url: str,
    now_ms: int,
    transport: httpx.BaseTransport | None,
) -> dict[str, Any]:
    refresh_token = _str(creds.get("refreshToken"))
    refresh_expires = _int(creds.get("refreshExpiresAt"))
    if refresh_token is None or (refresh_expires is not None and now_ms >= refresh_expires):
        raise AuthError(_EXPIRED)
    form = {
        "grant_type": "refresh_token",
        "refresh_token": refresh_token,
        "client_id": _str(creds.get("clientId")) or OAUTH_CLIENT_ID,
    }
    try:
        response = _form_post_answer(auth_base_url + "/oauth2/token", form, transport)
        data = response.json() if response.is_success else None
    except (PlatformConnectionError, ValueError):
        data = None
    access = _str(data.get("access_token")) if isinstance(data, dict) else None
    if data is None or access is None:
        raise AuthError(_REFRESH_FAILED)
    updated = dict(creds)
    updated["token"] = access
    updated["refreshToken"] = _str(data.get("refresh_token")) or refresh_token
    expires_in = _int(data.get("expires_in"))
    if expires_in is not None:
        updated["tokenExpiresAt"] = now_ms + expires_in * 1000
    refresh_in = _int(data.get("refresh_token_expires_in") or data.get("refresh_expires_in"))
    if refresh_in is not None:
        updated["refreshExpiresAt"] = now_ms + refresh_in * 1000
    return updated


def resolve_auth(
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    org: str | None = None,
    env: Mapping[str, str] | None = None,
    home: str | os.PathLike[str] | None = None,
    now_ms: int | None = None,
    transport: httpx.BaseTransport | None = None,
) -> CliAuth:
    """Resolve platform credentials (upstream ``resolveAuth``); raises :class:`AuthError`.

    ``env`` defaults to ``os.environ``, ``home`` to the user's home directory (tests pass a
    temporary one), ``now_ms`` to the current time; ``transport`` is used by the token refresh.
    """
    environ = os.environ if env is None else env
    home_dir = Path(home) if home is not None else Path.home()
    directory = home_dir / ".benchsdk"
    config = _read_json(directory / "config.json") or {}
    config_base = _str(config.get("baseUrl"))
    config_org = _str(config.get("org"))
    fmt = _str(config.get("format"))

    def build(root_hint: str | None, source: str, **fields: Any) -> CliAuth:
        root = get_platform_base_url(root_hint, environ)
        return CliAuth(
            base_url=root,
            api_base_url=get_api_base_url(root),
            auth_base_url=get_auth_base_url(root),
            source=source,
            format=fmt,
            **fields,
        )

    if api_key:
        return build(base_url or config_base, "option", api_key=api_key, org_slug=org or config_org)
    env_token = environ.get("BENCHMARKS_PLATFORM_TOKEN")
    if env_token:
        return build(
            base_url or config_base, "env-token", token=env_token, org_slug=org or config_org
        )
    env_key = environ.get("BENCHMARKS_PLATFORM_API_KEY")
    if env_key:
        return build(
            base_url or config_base, "env-api-key", api_key=env_key, org_slug=org or config_org
        )

    path = directory / "credentials.json"
    creds = _read_json(path)
    if creds is None:
        raise AuthError(_NO_CREDENTIALS)
    if _is_legacy(creds):
        path.unlink(missing_ok=True)
        raise AuthError(_LEGACY)
    root_hint = base_url or config_base or _str(creds.get("baseUrl"))
    token = _str(creds.get("token"))
    saved_key = _str(creds.get("apiKey"))
    if token is None and saved_key is None:
        raise AuthError(_NO_CREDENTIALS)
    expires = _int(creds.get("tokenExpiresAt"))
    now = int(time.time() * 1000) if now_ms is None else now_ms
    if token is not None and expires is not None and now >= expires - _REFRESH_MARGIN_MS:
        root = get_platform_base_url(root_hint, environ)
        creds = _refresh(
            creds, auth_base_url=get_auth_base_url(root), now_ms=now, transport=transport
        )
        _write_credentials(path, creds)
        token = _str(creds.get("token"))
    warning = _permission_warning(path)
    return build(
        root_hint,
        "saved",
        token=token,
        api_key=saved_key,
        refresh_token=_str(creds.get("refreshToken")),
        token_expires_at=_int(creds.get("tokenExpiresAt")),
        refresh_expires_at=_int(creds.get("refreshExpiresAt")),
        org_slug=org or config_org or _str(creds.get("orgSlug")),
        org_id=_str(creds.get("orgId")),
        warnings=(warning,) if warning else (),
    )


# --- device login (RFC 8628) -------------------------------------------------------------------


class DeviceFlowError(Exception):
    """The authorization server refused or ended the device login; ``code`` is its error
    (``expired_token``, ``access_denied``, …, or ``server_error``)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _what(url: str) -> str:
    """How messages name a form POST: ``POST /api/auth/oauth2/token``."""
    return f"POST {urlsplit(url).path or '/'}"


def _form_post_answer(
    url: str, form: Mapping[str, str], transport: httpx.BaseTransport | None
) -> Answer:
    """POST a form and read the answer within the client's answer cap and deadline."""
    with httpx.Client(timeout=_REFRESH_TIMEOUT, transport=transport) as http:
        request = http.build_request("POST", url, data=dict(form))
        return read_answer(
            http,
            request,
            what=_what(url),
            limit=max_answer_bytes(),
            deadline_s=deadline_of(_REFRESH_TIMEOUT),
        )


def _form_post(url: str, form: Mapping[str, str], transport: httpx.BaseTransport | None) -> Answer:
    try:
        return _form_post_answer(url, form, transport)
    except (AnswerTooLargeError, PlatformUnreachableError) as exc:
        raise DeviceFlowError("server_error", str(exc)) from None
    except PlatformConnectionError as exc:
        reason = str(exc).removeprefix(f"{_what(url)}: ")
        raise DeviceFlowError("server_error", f"Cannot reach {redact_url(url)}: {reason}") from None


def _error_of(response: Answer) -> tuple[str, str]:
    try:
        body = response.json()
    except ValueError:
        body = None
    body = body if isinstance(body, dict) else {}
    code = _str(body.get("error")) or "server_error"
    description = _str(body.get("error_description")) or (
        f"Request failed: {response.status_code} {response.reason_phrase}".rstrip()
    )
    return code, description


def _json_object(response: Answer, what: str) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise DeviceFlowError("server_error", f"The {what} answer is not a JSON object.")
    return data


def request_device_code(
    auth_base_url: str,
    *,
    client_id: str = OAUTH_CLIENT_ID,
    resource: str,
    scope: str = DEVICE_SCOPE,
    transport: httpx.BaseTransport | None = None,
) -> dict[str, Any]:
    """``POST <auth>/device/code`` (form ``client_id``, ``resource``, ``scope``) →
    ``{device_code, user_code, verification_uri, verification_uri_complete?, expires_in,
    interval}``; a refusal raises :class:`DeviceFlowError` with the server's description."""
    response = _form_post(
        auth_base_url + "/device/code",
        {"client_id": client_id, "resource": resource, "scope": scope},
        transport,
    )
    if not response.is_success:
        raise DeviceFlowError("server_error", _error_of(response)[1])
    data = _json_object(response, "device code")
    for key in ("device_code", "user_code"):
        if not _str(data.get(key)):
            raise DeviceFlowError("server_error", f"The device code answer has no {key}.")
    return data


def _exchange(
    auth_base_url: str,
    device_code: str,
    client_id: str,
    resource: str,
    transport: httpx.BaseTransport | None,
) -> dict[str, Any]:
    response = _form_post(
        auth_base_url + "/oauth2/token",
        {
            "grant_type": DEVICE_GRANT,
            "device_code": device_code,
            "client_id": client_id,
            "resource": resource,
        },
        transport,
    )
    if not response.is_success:
        code, description = _error_of(response)
        raise DeviceFlowError(code if code in _DEVICE_ERRORS else "server_error", description)
    data = _json_object(response, "token")
    if not _str(data.get("access_token")):
        raise DeviceFlowError("server_error", "The token answer has no access_token.")
    return data


def _is_loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_verification_address(address: str, platform_url: str) -> str | None:
    """Judge the address the device login sends the user to (where they sign in and enter the
    code). ``https``, or ``http`` on a loopback host (local development): fine, ``None``. Plain
    ``http`` on the very host of an ``http`` platform URL the user chose: a warning (returned)
    — they chose plain http for that host already. Anything else (plain ``http`` elsewhere,
    any other scheme) is refused with :class:`DeviceFlowError`: a page that travels in clear
    can be read and changed on its way, and the user would sign in on it."""
    shown = redact_url(address)
    try:
        split, platform = urlsplit(address), urlsplit(platform_url)
        host, platform_host = (split.hostname or ""), (platform.hostname or "")
    except ValueError:  # an unparseable address (a bad IPv6 literal …): refused below
        split = platform = urlsplit("")
        host = platform_host = ""
    scheme = split.scheme.lower()
    if host and scheme == "https":
        return None
    if host and scheme == "http" and _is_loopback(host):
        return None
    if host and scheme == "http" and platform.scheme.lower() == "http" and platform_host == host:
        return (
            f"Warning: the sign-in address {shown} is not https, like the platform URL you "
            "gave: what you type there can be read on its way. Sign in only on a network you "
            "trust."
        )
    raise DeviceFlowError(
        "insecure_verification_uri",
        f"The platform sent the sign-in address {shown!r}, which is not https: refused (a "
        "page that travels in clear can be read and changed on its way, and you would sign "
        "in on it). Log in against an https platform URL, or a loopback one for local "
        "development.",
    )


def poll_device_token(
    auth_base_url: str,
    device_code: str,
    *,
    interval_s: float,
    expires_in_s: float,
    resource: str,
    client_id: str = OAUTH_CLIENT_ID,
    sleep: Callable[[float], object] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    transport: httpx.BaseTransport | None = None,
) -> dict[str, Any]:
    """Poll ``<auth>/oauth2/token`` with the device-code grant until the user approves.

    As upstream: wait ``interval_s`` before each poll; ``authorization_pending`` polls again,
    ``slow_down`` adds 5 s to the interval, any other error raises :class:`DeviceFlowError`;
    when ``expires_in_s`` has passed, ``Device code expired before authorization completed.``
    Returns the token answer (``access_token``, ``refresh_token``, ``expires_in`` …).
    """
    start = clock()
    interval = max(0.0, float(interval_s))
    while clock() - start < expires_in_s:
        sleep(interval)
        try:
            return _exchange(auth_base_url, device_code, client_id, resource, transport)
        except DeviceFlowError as exc:
            if exc.code == "authorization_pending":
                continue
            if exc.code == "slow_down":
                interval += 5.0
                continue
            raise
    raise DeviceFlowError("expired_token", _DEVICE_EXPIRED)
