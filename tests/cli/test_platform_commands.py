"""``pytest-benchsdk platform …`` (upstream ``bench``'s platform commands) against the loopback
platform, through ``cli.main`` and in real subprocesses: the requests each command sends, what
it prints (upstream's JSON, Node's ``console.table``, ``No results.``, the logs layout,
``Exported to``), its error messages and exit statuses."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers.platform import seed_run
from helpers.platform_server import API_KEY, LoopbackPlatform
from pytest_benchsdk import cli
from pytest_benchsdk.platform import BenchmarkClient

SLUG = "sandbox-tti"
LOG_LINES = (
    "2026-01-02T03:04:05.678Z [task 0] [info] create",
    "2026-01-02T03:04:06.001Z [task 1] [error] exec",
    "  error: boom",
)


@pytest.fixture
def platform(
    loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> LoopbackPlatform:
    """The loopback platform, reached through the environment as a CI job would."""
    monkeypatch.setenv("BENCHMARKS_PLATFORM_URL", loopback_platform.root_url)
    monkeypatch.setenv("BENCHMARKS_PLATFORM_API_KEY", API_KEY)
    return loopback_platform


@pytest.fixture
def seeded(platform: LoopbackPlatform) -> tuple[str, dict[str, dict[str, object]]]:
    with BenchmarkClient(base_url=platform.api_url, api_key=API_KEY, timeout=5) as client:
        found = seed_run(client, log_lines=LOG_LINES)
    platform.requests.clear()
    return found


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = cli.main(["platform", *argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def _json(value: Any) -> str:
    # What JSON.stringify(value, null, 2) writes for plain strings and integers.
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


# --- output ----------------------------------------------------------------------------------


def test_org_list_prints_nodes_console_table(
    platform: LoopbackPlatform, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = run(capsys, "org", "list")
    assert (status, err) == (0, "")
    assert out == (
        "┌─────────┬─────────┬────────┬────────┐\n"
        "│ (index) │ id      │ name   │ slug   │\n"
        "├─────────┼─────────┼────────┼────────┤\n"
        "│ 0       │ 'org_1' │ 'Acme' │ 'acme' │\n"
        "└─────────┴─────────┴────────┴────────┘\n"
    )
    (request,) = platform.calls()
    assert (request.method, request.raw_path) == ("GET", "/api/v1/organizations")


def test_auth_status_says_who_and_which_org_without_a_secret(
    platform: LoopbackPlatform, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = run(capsys, "auth", "status")
    assert status == 0
    assert out == (
        "┌────────────────────┬──────────┬──────────┬────────────────┬───────────────────┬────────┐\n"
        "│ (index)            │ 0        │ id       │ name           │ email             │ Values │\n"  # noqa: E501
        "├────────────────────┼──────────┼──────────┼────────────────┼───────────────────┼────────┤\n"
        "│ user               │          │ 'user_1' │ 'Ada Lovelace' │ 'ada@example.com' │        │\n"  # noqa: E501
        "│ activeOrganization │          │          │                │                   │ null   │\n"  # noqa: E501
        "│ organizations      │ [Object] │          │                │                   │        │\n"  # noqa: E501
        "└────────────────────┴──────────┴──────────┴────────────────┴───────────────────┴────────┘\n"
    )
    platform.active_organization[API_KEY] = "org_1"
    status, out, _ = run(capsys, "auth", "status", "--json")
    assert json.loads(out) == {
        "user": platform.user,
        "activeOrganization": platform.organizations[0],
        "organizations": platform.organizations,
    }
    assert API_KEY not in out


@pytest.mark.slow
def test_benchmarks_list_json_limit_offset_and_no_results(
    platform: LoopbackPlatform, capsys: pytest.CaptureFixture[str], seeded: Any
) -> None:
    status, out, _ = run(capsys, "benchmarks", "list", "--limit", "5", "--offset=0", "--json")
    assert status == 0
    assert out == _json(list(platform.benchmarks.values()))
    (request,) = platform.calls("list_benchmarks")
    assert request.raw_query == "limit=5&offset=0"
    # An empty page: JSON keeps the empty list, a table says so.
    assert run(capsys, "benchmarks", "list", "--offset", "0x10", "--json")[1] == "[]\n"
    assert platform.calls("list_benchmarks")[-1].raw_query == "offset=16"
    assert run(capsys, "benchmarks", "list", "--offset", "5")[1] == "No results.\n"


@pytest.mark.slow
def test_runs_list_with_and_without_a_slug_and_runs_show(
    platform: LoopbackPlatform, capsys: pytest.CaptureFixture[str], seeded: Any
) -> None:
    run_id, _ = seeded
    status, out, _ = run(capsys, "runs", "list", SLUG, "--limit", "3", "--format", "json")
    assert status == 0
    assert [r["id"] for r in json.loads(out)] == [run_id]
    assert platform.calls("list_runs")[-1].raw_query == "limit=3"
    status, out, _ = run(capsys, "--json", "runs", "list")
    assert [(r["id"], r["organizationSlug"]) for r in json.loads(out)] == [(run_id, "acme")]
    assert platform.calls("list_all_runs")[-1].raw_path == "/api/v1/benchmarks/runs"
    status, out, _ = run(capsys, "runs", "show", SLUG, run_id, "--json")
    assert json.loads(out) == platform.runs[run_id]
    assert run(capsys, "runs", "list", "nothing-here")[1] == "No results.\n"


@pytest.mark.slow
def test_results_of_a_benchmark_and_of_a_run(
    platform: LoopbackPlatform, capsys: pytest.CaptureFixture[str], seeded: Any
) -> None:
    run_id, _ = seeded
    status, out, _ = run(capsys, "results", SLUG, "--json")
    assert status == 0
    assert [i["run"]["id"] for i in json.loads(out)["items"]] == [run_id]
    assert platform.calls("benchmark_results")[-1].raw_query == ""
    status, out, _ = run(capsys, "results", SLUG, "--run", run_id, "--json")
    data = json.loads(out)
    assert data["overall"]["taskCount"] == 4
    # JavaScript writes a whole number without ".0" (the platform's 105.0 average).
    assert '"avg": 105' in out
    assert platform.calls("run_results")[-1].raw_path == (
        f"/api/v1/benchmarks/{SLUG}/runs/{run_id}/results"
    )


@pytest.mark.slow
def test_iterations_rows_query_and_missing_run(
    platform: LoopbackPlatform, capsys: pytest.CaptureFixture[str], seeded: Any
) -> None:
    run_id, _ = seeded
    status, out, _ = run(
        capsys,
        "iterations",
        SLUG,
        "--run",
        run_id,
        "--participant",
        "e2b",
        "--steps",
        " create , ",
        "--json",
    )
    assert status == 0
    assert json.loads(out) == [
        {
            "participantSlug": "e2b",
            "taskIndex": index,
            "stepName": "create",
            "status": "success",
            "latencyMs": 60,
            "startedAt": None,
            "completedAt": None,
            "sandboxId": f"sb-{index}",
        }
        for index in (0, 1)
    ]
    assert platform.calls("iterations")[-1].raw_query == ("type=steps&participant=e2b&steps=create")
    status, out, err = run(capsys, "iterations", SLUG)
    assert (status, out) == (1, "")
    assert err == (
        "Usage: pytest-benchsdk platform iterations <benchmark-slug> --run <id> "
        "[--participant <slug>] [--steps <list>]\n"
    )


@pytest.mark.slow
def test_artifacts_list_of_a_run_and_of_a_worker(
    platform: LoopbackPlatform, capsys: pytest.CaptureFixture[str], seeded: Any
) -> None:
    run_id, assignments = seeded
    status, out, _ = run(capsys, "artifacts", "list", SLUG, run_id, "--json")
    assert status == 0
    assert [(a["participantSlug"], a["name"]) for a in json.loads(out)] == [
        ("e2b", "worker.log"),
        ("e2b", "metrics.jsonl"),
        ("modal", "worker.log"),
        ("modal", "metrics.jsonl"),
    ]
    worker = str(assignments["modal"]["workerId"])
    status, out, _ = run(capsys, "artifacts", "list", SLUG, run_id, "--worker", worker, "--json")
    assert {a["workerId"] for a in json.loads(out)} == {worker}
    assert platform.calls("worker_artifacts")[-1].raw_path.endswith(f"/workers/{worker}/artifacts")


@pytest.mark.slow
def test_logs_layout(
    platform: LoopbackPlatform, capsys: pytest.CaptureFixture[str], seeded: Any
) -> None:
    run_id, assignments = seeded
    e2b, modal = (str(assignments[p]["workerId"]) for p in ("e2b", "modal"))
    status, out, _ = run(capsys, "logs", SLUG, run_id, "--max-lines", "2")
    assert status == 0
    assert out == (
        f"== e2b worker 0 ({e2b}) ==\n"
        "  ... 1 earlier lines truncated\n"
        "03:04:06.001 error [task 1] exec\n"
        "             info    error: boom\n"
        f"== modal worker 0 ({modal}) ==\n"
        "  ... 1 earlier lines truncated\n"
        "03:04:06.001 error [task 1] exec\n"
        "             info    error: boom\n"
    )
    assert [c.raw_query for c in platform.calls("participant_logs")] == ["maxLines=2"] * 2
    status, out, _ = run(capsys, "logs", SLUG, run_id, "--participant", "modal", "--worker", modal)
    assert out.splitlines()[:2] == [
        f"== modal worker 0 ({modal}) ==",
        "03:04:05.678 info  [task 0] create",
    ]
    assert platform.calls("participant_logs")[-1].raw_query == ""
    status, out, _ = run(capsys, "logs", SLUG, run_id, "--participant", "e2b", "--json")
    assert json.loads(out)["workers"][0]["log"]["totalLines"] == 3


def test_logs_of_a_worker_without_a_log_artifact(
    platform: LoopbackPlatform, capsys: pytest.CaptureFixture[str]
) -> None:
    with BenchmarkClient(base_url=platform.api_url, api_key=API_KEY) as client:
        run_id, assignments = seed_run(client, participants=("e2b",))
    _, out, _ = run(capsys, "logs", SLUG, run_id)
    assert out == f"== e2b worker 0 ({assignments['e2b']['workerId']}) ==\n  (no log artifact)\n"


@pytest.mark.slow
def test_export_writes_upstreams_files(
    platform: LoopbackPlatform,
    capsys: pytest.CaptureFixture[str],
    seeded: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run_id, _ = seeded
    monkeypatch.chdir(tmp_path)
    status, out, _ = run(capsys, "export", SLUG, "--run", run_id, "--out", "./exports/")
    assert (status, out) == (0, f"Exported to exports/{SLUG}-{run_id}.json\n")
    text = (tmp_path / "exports" / f"{SLUG}-{run_id}.json").read_text()
    payload = json.loads(text)
    assert list(payload) == ["benchmarkSlug", "runId", "run", "results"]
    assert payload["run"] == platform.runs[run_id]
    assert payload["results"]["overall"]["taskCount"] == 4
    assert not text.endswith("\n")  # writeFile(JSON.stringify(…)), no newline
    status, out, _ = run(capsys, "export", SLUG)
    assert out == f"Exported to {SLUG}.json\n"
    assert json.loads((tmp_path / f"{SLUG}.json").read_text())["benchmark"]["slug"] == SLUG


# --- errors and help -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("runs", "list", SLUG, "--bogus"), "Unknown option: --bogus"),
        (("runs", "list", SLUG, "--limit"), "Option --limit requires a value"),
        (("results", SLUG, "--limit", "ten"), "Option --limit must be a number"),
        (("logs", SLUG, "r", "--max-lines=1e"), "Option --max-lines must be a number"),
        (("--base-url",), "Option --base-url requires a value"),
        (
            ("results",),
            "Benchmark slug required: pytest-benchsdk platform results <benchmark-slug>",
        ),
        (
            ("runs", "show", SLUG),
            "Usage: pytest-benchsdk platform runs show <benchmark-slug> <runId>",
        ),
        (("org", "use"), "Organization slug required: pytest-benchsdk platform org use <slug>"),
    ],
)
def test_usage_errors_exit_1_with_upstreams_messages(
    platform: LoopbackPlatform,
    capsys: pytest.CaptureFixture[str],
    argv: tuple[str, ...],
    message: str,
) -> None:
    status, out, err = run(capsys, *argv)
    assert (status, out, err) == (1, "", message + "\n")
    assert platform.calls() == []


def test_an_unknown_command_prints_the_usage_and_exits_1(
    platform: LoopbackPlatform, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = run(capsys, "nope")
    assert status == 1
    assert err.startswith("Usage: pytest-benchsdk platform [options] <command>\n")
    assert run(capsys, "auth", "whoami")[0] == 1


def test_help_version_and_no_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys)
    assert status == 0
    assert out.startswith("Usage: pytest-benchsdk platform [options] <command>\n\nCommands:\n")
    assert "  logs <benchmark-slug> <runId>" in out
    assert run(capsys, "--help") == (0, out, "")
    assert run(capsys, "logs", "--help")[1] == (
        "Usage: pytest-benchsdk platform logs <benchmark-slug> <runId> [--participant <slug>] "
        "[--worker <id>] [--max-lines N]\n"
    )
    status, out, _ = run(capsys, "--version")
    assert status == 0
    assert out.strip().split(".")[0].isdigit()


def test_api_errors_print_the_body_and_exit_1(
    platform: LoopbackPlatform, capsys: pytest.CaptureFixture[str]
) -> None:
    platform.fault("list_benchmarks", status=503, body={"error": "maintenance"})
    status, out, err = run(capsys, "benchmarks", "list")
    assert (status, out) == (1, "")
    assert err == (
        "API error: Benchmark API request failed: 503 Service Unavailable\n"
        '{"error": "maintenance"}\n'
    )
    status, _, err = run(capsys, "runs", "show", SLUG, "missing")
    assert status == 1
    assert err.startswith("API error: Benchmark API request failed: 404 Not Found\n")


def test_an_auth_error_exits_2(
    loopback_platform: LoopbackPlatform, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = run(capsys, "--base-url", loopback_platform.root_url, "benchmarks", "list")
    assert (status, out) == (2, "")
    assert err.startswith("No credentials found. Set BENCHMARKS_PLATFORM_API_KEY")
    assert loopback_platform.calls() == []


def test_a_refused_connection_exits_1_without_the_key(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = LoopbackPlatform()
    root = server.root_url
    server.stop()  # nothing listens there any more
    monkeypatch.setenv("BENCHMARKS_PLATFORM_API_KEY", API_KEY)
    status, out, err = run(capsys, "--base-url", root, "benchmarks", "list")
    assert (status, out) == (1, "")
    assert err.startswith(f"Cannot reach {root} (GET /benchmarks): [Errno 111] Connection refused;")
    assert API_KEY not in err


def test_global_options_base_url_api_key_and_org(
    loopback_platform: LoopbackPlatform, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, _ = run(
        capsys,
        "benchmarks",
        "--org=other",
        "list",
        "--api-key",
        API_KEY,
        "--base-url",
        loopback_platform.root_url,
    )
    assert status == 0
    (request,) = loopback_platform.calls()
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.headers["x-org-slug"] == "other"


def test_config_json_supplies_base_url_org_and_format(
    loopback_platform: LoopbackPlatform,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    directory = Path.home() / ".benchsdk"
    directory.mkdir()
    (directory / "config.json").write_text(
        json.dumps({"baseUrl": loopback_platform.root_url, "org": "cfg-org", "format": "json"})
    )
    monkeypatch.setenv("BENCHMARKS_PLATFORM_API_KEY", API_KEY)
    status, out, _ = run(capsys, "org", "list")
    assert status == 0
    assert json.loads(out) == loopback_platform.organizations
    run(capsys, "benchmarks", "list")
    assert loopback_platform.calls("list_benchmarks")[-1].headers["x-org-slug"] == "cfg-org"
    # --format table (or any other value) wins over the file.
    assert run(capsys, "benchmarks", "list", "--format", "table")[1] == "No results.\n"


# --- org use, login, logout (saved credentials) ---------------------------------------------


def test_org_use_saves_the_org_and_the_new_token(
    loopback_platform: LoopbackPlatform, capsys: pytest.CaptureFixture[str]
) -> None:
    loopback_platform.tokens.add("tok_saved_abcdef")
    directory = Path.home() / ".benchsdk"
    directory.mkdir()
    (directory / "credentials.json").write_text(
        json.dumps(
            {
                "baseUrl": loopback_platform.root_url,
                "token": "tok_saved_abcdef",
                "refreshToken": "rt_saved_abcdef",
                "tokenExpiresAt": 32503680000000,
                "kind": "oauth",
                "clientId": "benchsdk-runner",
            }
        )
    )
    (directory / "credentials.json").chmod(0o600)
    status, out, err = run(capsys, "org", "use", "acme")
    assert (status, out, err) == (0, "Active organization set to acme (org_1)\n", "")
    (request,) = loopback_platform.calls()
    assert request.json == {"slug": "acme"}
    saved = json.loads((directory / "credentials.json").read_text())
    assert saved["orgSlug"] == "acme"
    assert saved["orgId"] == "org_1"
    assert saved["token"].startswith("org-access-token")
    assert saved["refreshToken"] == "rt_saved_abcdef"
    assert saved["clientId"] == "benchsdk-runner"
    status, _, err = run(capsys, "org", "use", "nope")
    assert status == 1
    assert err.startswith("API error: Set active organization failed: 404 Not Found\n")


def _subprocess_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCHMARKS_PLATFORM")}
    env["HOME"] = str(home)
    return env


def _bench(home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_benchsdk", "platform", *argv],
        capture_output=True,
        text=True,
        env=_subprocess_env(home),
        timeout=120,
        check=False,
    )


@pytest.mark.slow
def test_device_login_status_and_logout_as_a_user_runs_them(
    loopback_platform: LoopbackPlatform, tmp_path: Path
) -> None:
    loopback_platform.tokens.clear()  # any bearer the device login hands out is good
    loopback_platform.device_flow(interval=0, approve_after=2)
    root = loopback_platform.root_url
    login = _bench(tmp_path, "auth", "login", "--base-url", root)
    assert login.returncode == 0, login.stderr
    lines = login.stdout.splitlines()
    assert lines == [
        "To sign in, visit:",
        f"{root}/device?user_code=WDJB-0001",
        "User code: WDJB-0001",
        "Authenticated.",
        "Set active organization to acme",
    ]
    polls = loopback_platform.calls("oauth_token")
    assert len(polls) == 2
    path = tmp_path / ".benchsdk" / "credentials.json"
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    saved = json.loads(path.read_text())
    assert set(saved) == {
        "baseUrl",
        "token",
        "refreshToken",
        "tokenExpiresAt",
        "kind",
        "clientId",
        "orgSlug",
        "orgId",
    }
    assert (saved["baseUrl"], saved["kind"], saved["clientId"]) == (
        root,
        "oauth",
        "benchsdk-runner",
    )
    assert (saved["orgSlug"], saved["orgId"]) == ("acme", "org_1")
    # The organisation was activated with the fresh token, which was then replaced by the one
    # carrying the organisation claim.
    (use,) = loopback_platform.calls("set_organization")
    assert use.headers["authorization"].startswith("Bearer access-token")
    assert saved["token"].startswith("org-access-token")
    assert saved["token"] not in login.stdout + login.stderr

    status = _bench(tmp_path, "auth", "status", "--json")
    assert status.returncode == 0, status.stderr
    answer = json.loads(status.stdout)
    assert answer["activeOrganization"] == {"id": "org_1", "name": "Acme", "slug": "acme"}
    assert answer["user"]["email"] == "ada@example.com"
    assert saved["token"] not in status.stdout

    logout = _bench(tmp_path, "auth", "logout")
    assert (logout.returncode, logout.stdout) == (0, "Logged out.\n")
    assert not path.exists()
    after = _bench(tmp_path, "--base-url", root, "auth", "status")
    assert after.returncode == 2
    assert after.stderr.startswith("No credentials found.")


def test_login_with_several_organisations_activates_none(
    loopback_platform: LoopbackPlatform, tmp_path: Path
) -> None:
    loopback_platform.tokens.clear()
    loopback_platform.organizations.append({"id": "org_2", "name": "Beta", "slug": "beta"})
    loopback_platform.device_flow(approve_after=1)
    login = _bench(tmp_path, "auth", "login", "--base-url", loopback_platform.root_url)
    assert login.returncode == 0, login.stderr
    assert login.stdout.splitlines()[-1] == "Authenticated."
    saved = json.loads((tmp_path / ".benchsdk" / "credentials.json").read_text())
    assert "orgSlug" not in saved
    assert loopback_platform.calls("set_organization") == []


def test_a_denied_login_exits_1_and_saves_nothing(
    loopback_platform: LoopbackPlatform, tmp_path: Path
) -> None:
    loopback_platform.device_flow(script=("access_denied",))
    login = _bench(tmp_path, "auth", "login", "--base-url", loopback_platform.root_url)
    assert login.returncode == 1
    assert login.stderr == "scripted access_denied\n"
    assert "User code: WDJB-0001" in login.stdout
    assert not (tmp_path / ".benchsdk" / "credentials.json").exists()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node to compare with")
def test_tables_match_nodes_console_table(
    platform: LoopbackPlatform, capsys: pytest.CaptureFixture[str], seeded: Any, tmp_path: Path
) -> None:
    # Every table command, against Node's own console.table of the same data.
    run_id, _ = seeded
    commands = [
        ("benchmarks", "list"),
        ("runs", "list"),
        ("runs", "show", SLUG, run_id),
        ("results", SLUG),
        ("results", SLUG, "--run", run_id),
        ("iterations", SLUG, "--run", run_id),
        ("artifacts", "list", SLUG, run_id),
        ("org", "list"),
        ("auth", "status"),
    ]
    for argv in commands:
        _, as_json, _ = run(capsys, *argv, "--json")
        _, table, _ = run(capsys, *argv)
        script = tmp_path / "table.js"
        script.write_text(
            "const data = JSON.parse(require('fs').readFileSync(0, 'utf8'));\n"
            "if (data === null || (typeof data === 'object' && Object.keys(data).length === 0))"
            " console.log('No results.'); else console.table(data);\n"
        )
        node = subprocess.run(
            ["node", str(script)], input=as_json, capture_output=True, text=True, check=True
        )
        assert table == node.stdout, argv
