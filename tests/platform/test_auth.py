"""Credential resolution (upstream §6.7 / §9.7) with a temporary HOME and explicit env."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from helpers.platform_server import LoopbackPlatform
from pytest_benchsdk.platform import (
    AuthError,
    get_api_base_url,
    get_platform_base_url,
    resolve_auth,
)
from pytest_benchsdk.platform._auth import get_auth_base_url

NOW_MS = 1_700_000_000_000
HOUR_MS = 3_600_000


def _save(home: Path, name: str, data: dict[str, Any], mode: int = 0o600) -> Path:
    directory = home / ".benchsdk"
    directory.mkdir(exist_ok=True)
    path = directory / name
    path.write_text(json.dumps(data))
    path.chmod(mode)
    return path


def _oauth(**extra: Any) -> dict[str, Any]:
    return {
        "baseUrl": "https://saved.example.com",
        "token": "tok_saved_123456",
        "refreshToken": "rt_saved_123456",
        "tokenExpiresAt": NOW_MS + 10 * HOUR_MS,
        "orgSlug": "saved-org",
        "orgId": "org_1",
        "kind": "oauth",
        "clientId": "benchsdk-runner",
        **extra,
    }


def test_platform_urls() -> None:
    assert get_platform_base_url(None, {}) == "https://platform.computesdk.com"
    assert get_platform_base_url(None, {"BENCHMARKS_PLATFORM_URL": "http://localhost:3000"}) == (
        "http://localhost:3000"
    )
    assert get_platform_base_url("http://x/", {"BENCHMARKS_PLATFORM_URL": "http://y"}) == "http://x"
    assert get_api_base_url("https://p.example.com") == "https://p.example.com/api/v1"
    assert get_api_base_url("https://p.example.com/api/v1") == "https://p.example.com/api/v1"
    assert get_auth_base_url("https://p.example.com/api/v1/") == "https://p.example.com/api/auth"


def test_saved_oauth(tmp_path: Path) -> None:
    _save(tmp_path, "credentials.json", _oauth())
    auth = resolve_auth(env={}, home=tmp_path, now_ms=NOW_MS)
    assert auth.token == "tok_saved_123456"
    assert auth.refresh_token == "rt_saved_123456"
    assert auth.api_key is None
    assert auth.base_url == "https://saved.example.com"
    assert auth.api_base_url == "https://saved.example.com/api/v1"
    assert (auth.org_slug, auth.org_id) == ("saved-org", "org_1")
    assert auth.source == "saved"
    assert auth.warnings == ()
    assert "tok_saved" not in repr(auth)
    assert "rt_saved" not in repr(auth)


def test_env_api_key_and_token(tmp_path: Path) -> None:
    _save(tmp_path, "credentials.json", _oauth())
    auth = resolve_auth(env={"BENCHMARKS_PLATFORM_API_KEY": "bp_env"}, home=tmp_path)
    assert (auth.api_key, auth.token, auth.refresh_token) == ("bp_env", None, None)
    assert auth.base_url == "https://platform.computesdk.com"
    assert (auth.org_slug, auth.org_id) == (None, None)
    env = {"BENCHMARKS_PLATFORM_API_KEY": "bp_env", "BENCHMARKS_PLATFORM_TOKEN": "tok_env"}
    auth = resolve_auth(env=env, home=tmp_path)
    assert (auth.token, auth.api_key) == ("tok_env", None)
    assert auth.source == "env-token"


def test_override_and_config_beat_saved(tmp_path: Path) -> None:
    _save(tmp_path, "credentials.json", _oauth())
    _save(tmp_path, "config.json", {"baseUrl": "https://config.example.com", "org": "cfg-org"})
    auth = resolve_auth(env={}, home=tmp_path, now_ms=NOW_MS)
    assert auth.base_url == "https://config.example.com"
    assert (auth.org_slug, auth.org_id) == ("cfg-org", "org_1")
    auth = resolve_auth(
        base_url="https://override.example.com", org="o", env={}, home=tmp_path, now_ms=NOW_MS
    )
    assert (auth.base_url, auth.org_slug) == ("https://override.example.com", "o")
    # An explicit API key ignores saved credentials entirely.
    auth = resolve_auth(api_key="bp_opt", env={"BENCHMARKS_PLATFORM_TOKEN": "t"}, home=tmp_path)
    assert (auth.api_key, auth.token, auth.org_id) == ("bp_opt", None, None)
    assert auth.base_url == "https://config.example.com"
    # The env URL applies only without an explicit or configured one.
    (tmp_path / ".benchsdk" / "config.json").unlink()
    env = {"BENCHMARKS_PLATFORM_API_KEY": "k", "BENCHMARKS_PLATFORM_URL": "http://env:1/"}
    assert resolve_auth(env=env, home=tmp_path).api_base_url == "http://env:1/api/v1"


def test_no_credentials(tmp_path: Path) -> None:
    with pytest.raises(AuthError, match=r"^No credentials found\. Set BENCHMARKS_PLATFORM_API_KEY"):
        resolve_auth(env={}, home=tmp_path)
    _save(tmp_path, "credentials.json", {"baseUrl": "https://x"})
    with pytest.raises(AuthError, match="No credentials found"):
        resolve_auth(env={}, home=tmp_path)


def test_legacy_credentials_are_deleted(tmp_path: Path) -> None:
    path = _save(tmp_path, "credentials.json", {"token": "t_old", "refreshToken": "bcs_old"})
    with pytest.raises(AuthError, match="retired CLI token format"):
        resolve_auth(env={}, home=tmp_path)
    assert not path.exists()
    _save(tmp_path, "credentials.json", {"token": "t_old"})  # no kind, no clientId
    with pytest.raises(AuthError, match="retired CLI token format"):
        resolve_auth(env={}, home=tmp_path)
    _save(tmp_path, "credentials.json", {"apiKey": "bp_saved", "kind": "api-key"})
    assert resolve_auth(env={}, home=tmp_path).api_key == "bp_saved"


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_world_readable_credentials_warn(tmp_path: Path) -> None:
    path = _save(tmp_path, "credentials.json", _oauth(), mode=0o644)
    auth = resolve_auth(env={}, home=tmp_path, now_ms=NOW_MS)
    (warning,) = auth.warnings
    assert str(path) in warning
    assert "0644" in warning
    assert "chmod 600" in warning
    assert "tok_saved" not in warning


def test_refresh_rewrites_credentials(tmp_path: Path) -> None:
    with LoopbackPlatform() as server:
        server.issue_refresh_token("rt_saved_123456")
        path = _save(
            tmp_path,
            "credentials.json",
            _oauth(baseUrl=server.root_url, tokenExpiresAt=NOW_MS + 60_000),
            mode=0o644,
        )
        auth = resolve_auth(env={}, home=tmp_path, now_ms=NOW_MS)
        (call,) = server.calls("oauth_token")
    assert call.method == "POST"
    assert call.raw_path == "/api/auth/oauth2/token"
    assert call.body.decode().split("&") == [
        "grant_type=refresh_token",
        "refresh_token=rt_saved_123456",
        "client_id=benchsdk-runner",
    ]
    assert auth.token is not None
    assert auth.token.startswith("access-token_")
    assert auth.refresh_token is not None
    assert auth.refresh_token.startswith("rt_")
    assert auth.refresh_token != "rt_saved_123456"
    saved = json.loads(path.read_text())
    assert saved["token"] == auth.token
    assert saved["refreshToken"] == auth.refresh_token
    assert saved["tokenExpiresAt"] == NOW_MS + 3600 * 1000
    assert saved["orgSlug"] == "saved-org"
    if os.name == "posix":
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert auth.warnings == ()


def test_refresh_not_needed_far_from_expiry(tmp_path: Path) -> None:
    _save(tmp_path, "credentials.json", _oauth(baseUrl="http://127.0.0.1:9"))
    assert resolve_auth(env={}, home=tmp_path, now_ms=NOW_MS).token == "tok_saved_123456"


def test_expired_session(tmp_path: Path) -> None:
    _save(tmp_path, "credentials.json", _oauth(tokenExpiresAt=NOW_MS, refreshToken=None))
    expired = r"^Your session has expired\. Run `pytest-benchsdk platform auth login`"
    with pytest.raises(AuthError, match=expired):
        resolve_auth(env={}, home=tmp_path, now_ms=NOW_MS)
    _save(tmp_path, "credentials.json", _oauth(tokenExpiresAt=NOW_MS, refreshExpiresAt=NOW_MS))
    with pytest.raises(AuthError, match="Your session has expired"):
        resolve_auth(env={}, home=tmp_path, now_ms=NOW_MS)


def test_refresh_failure(tmp_path: Path) -> None:
    with LoopbackPlatform() as server:  # the refresh token is unknown: invalid_grant
        _save(tmp_path, "credentials.json", _oauth(baseUrl=server.root_url, tokenExpiresAt=NOW_MS))
        with pytest.raises(AuthError) as info:
            resolve_auth(env={}, home=tmp_path, now_ms=NOW_MS)
    assert str(info.value) == (
        "Failed to refresh your session. Run `pytest-benchsdk platform auth login` or set "
        "BENCHMARKS_PLATFORM_API_KEY."
    )
    assert "rt_saved" not in str(info.value)


def test_invalid_json_never_echoes_content(tmp_path: Path) -> None:
    directory = tmp_path / ".benchsdk"
    directory.mkdir()
    (directory / "credentials.json").write_text('{"token": "tok_secret_abcdef"')
    with pytest.raises(AuthError) as info:
        resolve_auth(env={}, home=tmp_path)
    assert "not valid JSON" in str(info.value)
    assert "tok_secret" not in str(info.value)
