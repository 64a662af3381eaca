"""The device login (RFC 8628, upstream cli 0.7.0) against the loopback platform's auth server,
and the credentials files it writes. The poll's sleep and clock are injected, so the intervals
it waits are asserted without waiting them; every request is real."""

from __future__ import annotations

import errno
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.platform_server import LoopbackPlatform
from pytest_benchsdk import cli
from pytest_benchsdk.platform._auth import (
    DEVICE_SCOPE,
    DeviceFlowError,
    check_verification_address,
    clear_credentials,
    credentials_path,
    load_credentials,
    poll_device_token,
    request_device_code,
    resolve_auth,
    save_credentials,
)


class FakeTime:
    """A clock that moves only when the poll sleeps; records every sleep."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now


def _start(server: LoopbackPlatform) -> dict[str, object]:
    return request_device_code(server.root_url + "/api/auth", resource=server.api_url)


def _poll(server: LoopbackPlatform, code: dict[str, object], fake: FakeTime) -> dict[str, object]:
    return poll_device_token(
        server.root_url + "/api/auth",
        str(code["device_code"]),
        interval_s=float(code["interval"]),  # type: ignore[arg-type]
        expires_in_s=float(code["expires_in"]),  # type: ignore[arg-type]
        resource=server.api_url,
        sleep=fake.sleep,
        clock=fake.clock,
    )


def test_device_code_request_posts_upstreams_form(loopback_platform: LoopbackPlatform) -> None:
    code = _start(loopback_platform)
    (request,) = loopback_platform.calls("device_code")
    assert (request.method, request.raw_path) == ("POST", "/api/auth/device/code")
    assert request.headers["content-type"] == "application/x-www-form-urlencoded"
    assert request.body.decode() == (
        "client_id=benchsdk-runner&resource="
        + loopback_platform.api_url.replace(":", "%3A").replace("/", "%2F")
        + "&scope="
        + DEVICE_SCOPE.replace(" ", "+").replace(":", "%3A")
    )
    assert code["verification_uri_complete"] == (
        f"{loopback_platform.root_url}/device?user_code={code['user_code']}"
    )


def test_poll_waits_the_interval_and_slows_down_by_five_seconds(
    loopback_platform: LoopbackPlatform,
) -> None:
    loopback_platform.device_flow(
        interval=5, approve_after=4, script=("authorization_pending", "slow_down")
    )
    code = _start(loopback_platform)
    fake = FakeTime()
    token = _poll(loopback_platform, code, fake)
    assert str(token["access_token"]).startswith("access-token")
    assert token["refresh_token"]
    # pending → same interval; slow_down → +5 s from then on; approved at the 4th poll.
    assert fake.sleeps == [5.0, 5.0, 10.0, 10.0]
    polls = loopback_platform.calls("oauth_token")
    assert len(polls) == 4
    assert all(p.raw_path == "/api/auth/oauth2/token" for p in polls)
    form = polls[-1].body.decode()
    assert "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Adevice_code" in form
    assert f"device_code={code['device_code']}" in form
    assert "client_id=benchsdk-runner" in form


def test_poll_ends_when_the_code_expires(loopback_platform: LoopbackPlatform) -> None:
    loopback_platform.device_flow(interval=5, expires_in=12)
    code = _start(loopback_platform)
    fake = FakeTime()
    with pytest.raises(DeviceFlowError) as caught:
        _poll(loopback_platform, code, fake)
    assert str(caught.value) == "Device code expired before authorization completed."
    assert caught.value.code == "expired_token"
    assert fake.sleeps == [5.0, 5.0, 5.0]  # polls at 5, 10 and 15 s; 15 ≥ 12 ends it


@pytest.mark.parametrize(
    ("script", "code", "message"),
    [
        (("access_denied",), "access_denied", "scripted access_denied"),
        (("expired_token",), "expired_token", "scripted expired_token"),
        (("unsupported_grant_type",), "server_error", "scripted unsupported_grant_type"),
    ],
)
def test_other_errors_end_the_poll_with_the_servers_words(
    loopback_platform: LoopbackPlatform, script: tuple[str, ...], code: str, message: str
) -> None:
    loopback_platform.device_flow(script=script)
    fake = FakeTime()
    with pytest.raises(DeviceFlowError) as caught:
        _poll(loopback_platform, _start(loopback_platform), fake)
    assert (caught.value.code, str(caught.value)) == (code, message)
    assert len(loopback_platform.calls("oauth_token")) == 1


def test_a_denied_device_ends_the_poll(loopback_platform: LoopbackPlatform) -> None:
    code = _start(loopback_platform)
    loopback_platform.deny(str(code["user_code"]))
    with pytest.raises(DeviceFlowError, match=r"^The user said no$"):
        _poll(loopback_platform, code, FakeTime())


def test_device_code_failures(loopback_platform: LoopbackPlatform) -> None:
    loopback_platform.fault(
        "device_code", status=400, body={"error": "invalid_client", "error_description": "nope"}
    )
    with pytest.raises(DeviceFlowError, match=r"^nope$"):
        _start(loopback_platform)
    loopback_platform.fault("device_code", status=503, body={})
    with pytest.raises(DeviceFlowError, match=r"^Request failed: 503 Service Unavailable$"):
        _start(loopback_platform)
    loopback_platform.fault("device_code", drop=True)
    with pytest.raises(DeviceFlowError, match=r"^Cannot reach http://127\.0\.0\.1:"):
        _start(loopback_platform)


def test_a_dropped_poll_is_an_error_not_a_hang(loopback_platform: LoopbackPlatform) -> None:
    code = _start(loopback_platform)
    loopback_platform.fault("oauth_token", drop=True)
    with pytest.raises(DeviceFlowError, match=r"^Cannot reach"):
        _poll(loopback_platform, code, FakeTime())


def test_credentials_files_have_upstreams_modes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    path = save_credentials({"token": "tok_abcdef", "kind": "oauth", "orgSlug": None}, home)
    assert path == credentials_path(home) == home / ".benchsdk" / "credentials.json"
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    # None fields are left out, as JSON.stringify leaves out undefined ones.
    assert load_credentials(home) == {"token": "tok_abcdef", "kind": "oauth"}
    path.chmod(0o644)
    save_credentials({"token": "tok_2_abcdef"}, home)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert clear_credentials(home) is True
    assert clear_credentials(home) is False
    assert load_credentials(home) is None


def test_a_saved_device_login_is_used_and_refreshed(
    loopback_platform: LoopbackPlatform, tmp_path: Path
) -> None:
    loopback_platform.device_flow(approve_after=1)
    token = _poll(loopback_platform, _start(loopback_platform), FakeTime())
    save_credentials(
        {
            "baseUrl": loopback_platform.root_url,
            "token": token["access_token"],
            "refreshToken": token["refresh_token"],
            "tokenExpiresAt": 0,  # expired: the next resolution refreshes it
            "kind": "oauth",
            "clientId": "benchsdk-runner",
        },
        tmp_path,
    )
    auth = resolve_auth(env={}, home=tmp_path)
    assert auth.source == "saved"
    assert auth.token != token["access_token"]
    assert load_credentials(tmp_path)["token"] == auth.token  # type: ignore[index]


# -- the sign-in address (issue 32, item 9) ----------------------------------------------------


def test_a_sign_in_address_that_is_not_https_is_refused(
    loopback_platform: LoopbackPlatform,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The probe's case: the platform sends the user to ``http://evil.example/device``. The
    login stops before showing the code: the user never signs in on a page in clear."""
    monkeypatch.setenv("HOME", str(tmp_path))
    loopback_platform.device_flow(approve_after=1, verification_uri="http://evil.example/device")
    status = cli.main(["platform", "auth", "login", "--base-url", loopback_platform.root_url])
    captured = capsys.readouterr()
    assert status == 1
    assert captured.out == ""
    assert captured.err == (
        "The platform sent the sign-in address "
        "'http://evil.example/device?user_code=WDJB-0001', which is not https: refused (a "
        "page that travels in clear can be read and changed on its way, and you would sign in "
        "on it). Log in against an https platform URL, or a loopback one for local "
        "development.\n"
    )
    assert loopback_platform.calls("oauth_token") == []
    assert not credentials_path(tmp_path).exists()


def test_which_sign_in_addresses_are_shown() -> None:
    platform = "https://platform.example.com"
    for fine in (
        "https://platform.example.com/device?user_code=A",
        "https://login.example.org/device",
        "http://127.0.0.1:8080/device",
        "http://127.9.9.9/device",
        "http://localhost:3000/device",
        "http://[::1]:3000/device",
    ):
        assert check_verification_address(fine, platform) is None, fine
    for refused in (
        "http://evil.example/device",
        "http://localhost.evil.example/device",
        "http://10.0.0.1/device",
        "javascript:alert(1)",
        "ftp://platform.example.com/device",
        "https:///device",
        "",
        "http://[::1/device",
    ):
        with pytest.raises(DeviceFlowError, match="not https: refused") as caught:
            check_verification_address(refused, platform)
        assert caught.value.code == "insecure_verification_uri"
    # Plain http on the very host of the plain-http platform URL the user chose: a warning.
    warning = check_verification_address(
        "http://bench.internal/device", "http://bench.internal:8080"
    )
    assert warning is not None
    assert warning.startswith("Warning: the sign-in address http://bench.internal/device is not")
    with pytest.raises(DeviceFlowError):
        check_verification_address("http://other.internal/device", "http://bench.internal")
    # A password in the address is never repeated.
    with pytest.raises(DeviceFlowError) as caught:
        check_verification_address("http://u:secret-pw@evil.example/d", platform)
    assert "secret-pw" not in str(caught.value)


# -- the credentials file is written whole or not at all (issue 32, item 3) ---------------------

_SAVE_UNDER_A_SIZE_LIMIT = """
import resource, signal, sys
from pytest_benchsdk.platform._auth import save_credentials
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an over-limit write fails with EFBIG instead
resource.setrlimit(resource.RLIMIT_FSIZE, (512, 512))
try:
    save_credentials({"token": "tok_" + "n" * 4000, "kind": "oauth"}, sys.argv[1])
except OSError as exc:
    print("failed", exc.errno)
"""


@pytest.mark.slow
def test_a_credentials_write_that_fails_leaves_the_old_login_and_no_fragment(
    tmp_path: Path,
) -> None:
    path = save_credentials({"token": "tok_old_abcdef", "kind": "oauth"}, tmp_path)
    before = path.read_bytes()
    done = subprocess.run(
        [sys.executable, "-c", _SAVE_UNDER_A_SIZE_LIMIT, str(tmp_path)],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert done.stdout.split() == ["failed", str(errno.EFBIG)], done.stderr
    assert path.read_bytes() == before
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    # No half-written file with half a token beside it.
    assert sorted(p.name for p in path.parent.iterdir()) == ["credentials.json"]


@pytest.mark.slow
def test_a_new_credentials_file_is_never_readable_by_others(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c",
         "import os, sys; os.umask(0); "
         "from pytest_benchsdk.platform._auth import save_credentials; "
         "save_credentials({'token': 'tok_umask_abcdef'}, sys.argv[1])", str(tmp_path)],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(credentials_path(tmp_path).stat().st_mode) == 0o600
