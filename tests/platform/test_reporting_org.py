"""``--bench-org`` / ini ``bench_org``: the organisation a session reports to reaches the
credentials resolution, so every platform request carries it (upstream ``--org``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.e2e import E2E_BENCH, bench_args, use_platform
from helpers.platform_server import LoopbackPlatform


def _orgs(server: LoopbackPlatform) -> set[str | None]:
    return {r.headers.get("x-org-slug") for r in server.calls() if r.path.startswith("/api/v1")}


@pytest.mark.slow
def test_bench_org_is_sent_with_every_request(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_platform(monkeypatch)
    pytester.makepyfile(bench_x=E2E_BENCH)
    result = pytester.runpytest_inprocess(*bench_args(loopback_platform, "--bench-org", "team-b"))
    assert result.ret == 0
    assert loopback_platform.calls("events")
    assert _orgs(loopback_platform) == {"team-b"}


@pytest.mark.slow
def test_the_ini_option_and_the_command_line_over_config_json(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_platform(monkeypatch)
    config = Path.home() / ".benchsdk"
    config.mkdir()
    (config / "config.json").write_text(json.dumps({"org": "from-config"}))
    pytester.makepyfile(bench_x=E2E_BENCH)
    pytester.makeini("[pytest]\nbench_org = from-ini\n")
    assert pytester.runpytest_inprocess(*bench_args(loopback_platform)).ret == 0
    assert _orgs(loopback_platform) == {"from-ini"}
    loopback_platform.requests.clear()
    result = pytester.runpytest_inprocess(*bench_args(loopback_platform, "--bench-org=cli-org"))
    assert result.ret == 0
    assert _orgs(loopback_platform) == {"cli-org"}
    loopback_platform.requests.clear()
    pytester.makeini("[pytest]\n")
    assert pytester.runpytest_inprocess(*bench_args(loopback_platform)).ret == 0
    assert _orgs(loopback_platform) == {"from-config"}


def test_bench_check_probes_with_the_org(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_platform(monkeypatch)
    pytester.makepyfile(bench_x=E2E_BENCH)
    result = pytester.runpytest_inprocess(
        *bench_args(loopback_platform, "--bench-check", "--bench-org", "team-c")
    )
    assert result.ret == 0
    (probe,) = loopback_platform.calls("list_benchmarks")
    assert probe.headers["x-org-slug"] == "team-c"
