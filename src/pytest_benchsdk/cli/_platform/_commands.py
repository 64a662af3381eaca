"""The platform commands: upstream ``@benchsdk/cli``'s handlers, one function each.

Each handler resolves credentials as upstream does (``--api-key``, ``BENCHMARKS_PLATFORM_TOKEN``,
``BENCHMARKS_PLATFORM_API_KEY``, then the saved login; ``--base-url``/``--org`` over
``~/.benchsdk/config.json``), calls the platform through :class:`BenchmarkClient` and prints
with :func:`._output.print_data`. Errors propagate to :func:`pytest_benchsdk.cli._platform.main`,
which prints them and picks the exit status.
"""

from __future__ import annotations

import datetime
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from pytest_benchsdk._base.files import write_atomically
from pytest_benchsdk._base.redact import without_userinfo
from pytest_benchsdk.cli._platform._argv import GlobalArgs, UsageError, parse_subcommand_options
from pytest_benchsdk.cli._platform._output import js_stringify, print_data
from pytest_benchsdk.platform._auth import (
    OAUTH_CLIENT_ID,
    CliAuth,
    check_verification_address,
    clear_credentials,
    get_api_base_url,
    get_auth_base_url,
    get_platform_base_url,
    load_credentials,
    poll_device_token,
    request_device_code,
    resolve_auth,
    save_credentials,
)
from pytest_benchsdk.platform._client import BenchmarkClient
from pytest_benchsdk.platform._connect import client_for

__all__ = ["PROG", "USAGE", "Invocation", "command_help", "dispatch"]

PROG = "pytest-benchsdk platform"

USAGE = f"""Usage: {PROG} [options] <command>

Commands:
  auth login                         Authenticate with OAuth device flow
  auth logout                        Remove saved credentials
  auth status                        Show current user and active organization
  org list                           List organizations
  org use <slug>                     Set active organization
  benchmarks list [--limit N] [--offset N]
                                     List benchmarks
  runs list [<benchmark-slug>] [--limit N] [--offset N]
                                     List benchmark runs (every visible run without a slug)
  runs show <benchmark-slug> <runId> Show a single run
  results <benchmark-slug> [--run <id>] [--format json|table]
                                     Show benchmark or run results
  iterations <benchmark-slug> --run <id> [--participant <slug>] [--steps <list>]
             [--format json|table]
                                     Show per-iteration step latencies
  artifacts list <benchmark-slug> <runId> [--worker <id>]
                                     List run artifacts
  logs <benchmark-slug> <runId> [--participant <slug>] [--worker <id>] [--max-lines N]
                                     Show the parsed worker logs of a run's participants
  export <benchmark-slug> [--run <id>] [--out <dir>]
                                     Export benchmark or run results to JSON

Options:
  --base-url <url>                   Platform root URL (default: https://platform.computesdk.com)
  --api-key <key>                    Use an API key instead of OAuth
  --org <slug>                       Organization slug for this command
  --format json|table                Output format (also --json for JSON)
  --json                             Output JSON
  --verbose                          Include extra diagnostics on errors
  --version                          Show version
  --help                             Show this help
"""

_HELP = {
    "auth": f"""Usage: {PROG} auth <subcommand>

Subcommands:
  login      Authenticate with OAuth device flow
  logout     Remove saved credentials
  status     Show current user and active organization""",
    "org": f"""Usage: {PROG} org <subcommand>

Subcommands:
  list       List organizations
  use <slug> Set active organization""",
    "benchmarks": f"Usage: {PROG} benchmarks list [--limit N] [--offset N]",
    "runs": f"""Usage: {PROG} runs list [<benchmark-slug>] [--limit N] [--offset N]
       {PROG} runs show <benchmark-slug> <runId>""",
    "results": f"Usage: {PROG} results <benchmark-slug> [--run <id>] [--format json|table]",
    "iterations": (
        f"Usage: {PROG} iterations <benchmark-slug> --run <id> [--participant <slug>] "
        "[--steps <list>] [--format json|table]"
    ),
    "artifacts": f"Usage: {PROG} artifacts list <benchmark-slug> <runId> [--worker <id>]",
    "logs": (
        f"Usage: {PROG} logs <benchmark-slug> <runId> [--participant <slug>] [--worker <id>] "
        "[--max-lines N]"
    ),
    "export": f"Usage: {PROG} export <benchmark-slug> [--run <id>] [--out <dir>]",
}


def command_help(command: str | None) -> str:
    """``<command> --help``: the command's usage, else the full usage."""
    return _HELP.get(command or "", USAGE)


@attrs.define
class Invocation:
    """One invocation: its global options, the environment, the home directory of
    ``~/.benchsdk`` and where output goes. ``sleep`` and ``clock`` drive the device-login poll
    (tests pass their own)."""

    args: GlobalArgs
    config: Mapping[str, Any]
    env: Mapping[str, str]
    home: str | os.PathLike[str] | None
    out: Callable[[str], None]
    err: Callable[[str], None]
    sleep: Callable[[float], object] = time.sleep
    clock: Callable[[], float] = time.monotonic

    @property
    def base_url(self) -> str | None:
        configured = self.config.get("baseUrl")
        return self.args.text("base-url") or (configured if isinstance(configured, str) else None)

    @property
    def org(self) -> str | None:
        configured = self.config.get("org")
        return self.args.text("org") or (configured if isinstance(configured, str) else None)

    @property
    def json_output(self) -> bool:
        # --json, --format json, else config.json's "format" (upstream documents it as the
        # default; its code forgot to read it).
        fmt = self.args.text("format")
        if fmt is None and not self.args.flag("json"):
            configured = self.config.get("format")
            fmt = configured if isinstance(configured, str) else None
        return self.args.flag("json") or fmt == "json"

    def resolve(self) -> CliAuth:
        auth = resolve_auth(
            base_url=self.base_url,
            api_key=self.args.text("api-key"),
            org=self.org,
            env=self.env,
            home=self.home,
        )
        for warning in auth.warnings:
            self.err(warning)
        return auth

    def client(self) -> tuple[BenchmarkClient, CliAuth]:
        """Upstream ``createApiClient``: ``(api, auth)``."""
        auth = self.resolve()
        return client_for(auth, env=self.env), auth

    def print(self, data: Any) -> None:
        print_data(data, json_output=self.json_output, write=self.out)


def _now_ms() -> int:
    return int(time.time() * 1000)


# --- auth and org --------------------------------------------------------------------------------


def auth_login(invocation: Invocation) -> None:
    """Device login (RFC 8628): show the URL and code, poll, save, pick the only organisation."""
    root = get_platform_base_url(invocation.base_url, invocation.env)
    auth_base, resource = get_auth_base_url(root), get_api_base_url(root)
    code = request_device_code(auth_base, resource=resource)
    address = str(code.get("verification_uri_complete") or code.get("verification_uri") or "")
    warning = check_verification_address(address, root)
    if warning:
        invocation.err(warning)
    invocation.out("To sign in, visit:")
    invocation.out(address)
    invocation.out(f"User code: {code['user_code']}")
    interval = code.get("interval")
    expires_in = code.get("expires_in")
    token = poll_device_token(
        auth_base,
        str(code["device_code"]),
        interval_s=float(interval) if isinstance(interval, (int, float)) else 5.0,
        expires_in_s=float(expires_in) if isinstance(expires_in, (int, float)) else 900.0,
        resource=resource,
        sleep=invocation.sleep,
        clock=invocation.clock,
    )
    now = _now_ms()
    credentials: dict[str, Any] = {
        # Its user:password@ (if any) is never sent; kept out of the file too.
        "baseUrl": without_userinfo(root),
        "token": token["access_token"],
        "refreshToken": token.get("refresh_token"),
        "tokenExpiresAt": _expiry(now, token.get("expires_in")),
        "kind": "oauth",
        "clientId": OAUTH_CLIENT_ID,
    }
    refresh_in = token.get("refresh_expires_in") or token.get("refresh_token_expires_in")
    if refresh_in is not None:
        credentials["refreshExpiresAt"] = _expiry(now, refresh_in)
    save_credentials(credentials, invocation.home)
    invocation.out("Authenticated.")
    try:
        _select_only_organization(invocation, credentials)
    except Exception as exc:  # best-effort, as upstream
        if invocation.args.flag("verbose"):
            invocation.err(f"Organization auto-select failed: {exc}")


def _expiry(now_ms: int, seconds: Any) -> int | None:
    return now_ms + int(float(seconds) * 1000) if isinstance(seconds, (int, float)) else None


def _select_only_organization(invocation: Invocation, credentials: dict[str, Any]) -> None:
    # The fresh login's token, not BENCHMARKS_PLATFORM_TOKEN/API_KEY from the environment:
    # those must never end up in the credentials file.
    with BenchmarkClient(
        base_url=get_api_base_url(credentials["baseUrl"]),
        token=credentials["token"],
        env={},
    ) as client:
        me = client.get_me()
        organizations = [o for o in me.get("organizations") or [] if isinstance(o, dict)]
        if me.get("activeOrganizationId") or len(organizations) != 1:
            return
        org = organizations[0]
        answer = client.set_active_organization(str(org.get("slug")))
    updated = {**(load_credentials(invocation.home) or {}), **credentials}
    if answer.get("accessToken"):
        updated["token"] = answer["accessToken"]
        updated["tokenExpiresAt"] = _expiry(_now_ms(), answer.get("expiresIn") or 3600)
    updated.update({"orgSlug": org.get("slug"), "orgId": org.get("id"), "kind": "oauth"})
    save_credentials(updated, invocation.home)
    invocation.out(f"Set active organization to {org.get('slug')}")


def auth_logout(invocation: Invocation) -> None:
    clear_credentials(invocation.home)
    invocation.out("Logged out.")


def auth_status(invocation: Invocation) -> None:
    client, _ = invocation.client()
    with client:
        me = client.get_me()
    organizations = me.get("organizations") or []
    active = next(
        (
            o
            for o in organizations
            if isinstance(o, dict) and o.get("id") == me.get("activeOrganizationId")
        ),
        None,
    )
    invocation.print(
        {"user": me.get("user"), "activeOrganization": active, "organizations": organizations}
    )


def org_list(invocation: Invocation) -> None:
    client, _ = invocation.client()
    with client:
        invocation.print(client.list_organizations())


def org_use(invocation: Invocation, slug: str) -> None:
    credentials = load_credentials(invocation.home) or {}
    client, auth = invocation.client()
    with client:
        answer = client.set_active_organization(slug)
    org = answer.get("organization")
    if not isinstance(org, dict):
        raise UsageError(f"Could not set active organization to {slug}")
    token, expires = auth.token, auth.token_expires_at
    if answer.get("accessToken"):
        token = str(answer["accessToken"])
        expires = _expiry(_now_ms(), answer.get("expiresIn") or 3600)
    save_credentials(
        {
            **credentials,
            "baseUrl": without_userinfo(auth.base_url),
            "token": token,
            "refreshToken": auth.refresh_token,
            "tokenExpiresAt": expires,
            "refreshExpiresAt": auth.refresh_expires_at,
            "orgSlug": org.get("slug"),
            "orgId": org.get("id"),
            "kind": "oauth",
        },
        invocation.home,
    )
    invocation.out(f"Active organization set to {org.get('slug')} ({org.get('id')})")


# --- benchmarks, runs, results -------------------------------------------------------------------


def _number(options: Mapping[str, Any], key: str) -> int | float | None:
    value = options.get(key)
    return value if isinstance(value, (int, float)) else None


def _text(options: Mapping[str, Any], key: str) -> str | None:
    value = options.get(key)
    return value if isinstance(value, str) else None


def benchmarks_list(invocation: Invocation, options: Mapping[str, Any]) -> None:
    client, _ = invocation.client()
    with client:
        invocation.print(
            client.list_benchmarks(
                limit=_number(options, "limit"), offset=_number(options, "offset")
            )
        )


def runs_list(invocation: Invocation, slug: str | None, options: Mapping[str, Any]) -> None:
    limit, offset = _number(options, "limit"), _number(options, "offset")
    client, _ = invocation.client()
    with client:
        if slug:
            invocation.print(client.list_runs(slug, limit=limit, offset=offset))
        else:
            invocation.print(client.list_all_runs(limit=limit, offset=offset))


def runs_show(invocation: Invocation, slug: str, run_id: str) -> None:
    client, _ = invocation.client()
    with client:
        invocation.print(client.get_run(slug, run_id))


def results(invocation: Invocation, slug: str, options: Mapping[str, Any]) -> None:
    run_id = _text(options, "run")
    client, _ = invocation.client()
    with client:
        data = (
            client.get_run_results(slug, run_id) if run_id else client.get_benchmark_results(slug)
        )
    invocation.print(data)


def iterations(invocation: Invocation, slug: str, options: Mapping[str, Any]) -> None:
    run_id = _text(options, "run")
    if not run_id:
        raise UsageError(
            f"Usage: {PROG} iterations <benchmark-slug> --run <id> [--participant <slug>] "
            "[--steps <list>]"
        )
    raw_steps = _text(options, "steps")
    steps = [s.strip() for s in raw_steps.split(",") if s.strip()] if raw_steps else None
    client, _ = invocation.client()
    with client:
        data = client.get_run_step_iterations(
            slug, run_id, participant=_text(options, "participant"), steps=steps
        )
    rows = data.get("steps") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise UsageError("The platform's iterations answer has no list of steps.")
    formatted = []
    for row in rows:
        row = row if isinstance(row, dict) else {}
        data = row.get("data")
        extra: dict[str, Any] = data if isinstance(data, dict) else {}
        formatted.append(
            {
                **{
                    key: row.get(key)
                    for key in (
                        "participantSlug",
                        "taskIndex",
                        "stepName",
                        "status",
                        "latencyMs",
                        "startedAt",
                        "completedAt",
                    )
                },
                **extra,
            }
        )
    invocation.print(formatted)


def artifacts_list(
    invocation: Invocation, slug: str, run_id: str, options: Mapping[str, Any]
) -> None:
    worker = _text(options, "worker")
    client, _ = invocation.client()
    with client:
        if worker:
            invocation.print(client.list_worker_artifacts(slug, run_id, worker))
        else:
            invocation.print(client.list_run_artifacts(slug, run_id))


# --- logs ----------------------------------------------------------------------------------------


def _clock_time(ts: Any) -> str | None:
    """``HH:MM:SS.mmm`` (UTC) of an ISO timestamp or epoch milliseconds."""
    try:
        if isinstance(ts, (int, float)) and not isinstance(ts, bool):
            moment = datetime.datetime.fromtimestamp(ts / 1000, datetime.timezone.utc)
        elif isinstance(ts, str) and ts:
            moment = datetime.datetime.fromisoformat(ts.replace("Z", "+00:00"))
            if moment.tzinfo is not None:
                moment = moment.astimezone(datetime.timezone.utc)
        else:
            return None
    except (ValueError, OverflowError, OSError):
        return None
    return moment.strftime("%H:%M:%S.") + f"{moment.microsecond // 1000:03d}"


def log_lines(participant: str, answer: Mapping[str, Any], worker: str | None) -> list[str]:
    """The text of one participant's logs answer: per worker ``== <p> worker <i> (<id>) ==``,
    ``  (no log artifact)`` or ``  ... N earlier lines truncated`` and the lines
    ``HH:MM:SS.mmm <level> <message>``."""
    out: list[str] = []
    for entry in answer.get("workers") or []:
        if not isinstance(entry, dict) or (worker and entry.get("workerId") != worker):
            continue
        out.append(
            f"== {participant} worker {entry.get('workerIndex')} ({entry.get('workerId')}) =="
        )
        log = entry.get("log")
        if not isinstance(log, dict):
            out.append("  (no log artifact)")
            continue
        lines = [line for line in log.get("lines") or [] if isinstance(line, dict)]
        total = log.get("totalLines")
        if isinstance(total, int) and total > len(lines):
            out.append(f"  ... {total - len(lines)} earlier lines truncated")
        for line in lines:
            when = _clock_time(line.get("ts")) or " " * 12
            level = str(line.get("level") or "")
            out.append(f"{when} {level:<5} {line.get('msg', '')}")
    return out


def logs(invocation: Invocation, slug: str, run_id: str, options: Mapping[str, Any]) -> None:
    participant = _text(options, "participant")
    worker = _text(options, "worker")
    max_lines = _number(options, "max-lines")
    client, _ = invocation.client()
    with client:
        if participant:
            names = [participant]
        else:
            names = [
                str(p.get("slug"))
                for p in client.list_participants(slug, run_id)
                if isinstance(p, dict) and p.get("slug")
            ]
        answers = [
            (name, client.get_participant_logs(slug, run_id, name, max_lines=max_lines))
            for name in names
        ]
    if invocation.json_output:
        invocation.out(js_stringify(answers[0][1] if participant else [a for _, a in answers]))
        return
    lines = [line for name, answer in answers for line in log_lines(name, answer, worker)]
    invocation.out("\n".join(lines) if lines else "No results.")


# --- export --------------------------------------------------------------------------------------


def export(invocation: Invocation, slug: str, options: Mapping[str, Any]) -> None:
    run_id = _text(options, "run")
    out_dir = _text(options, "out") or "."
    client, _ = invocation.client()
    with client:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        if run_id:
            payload: Any = {
                "benchmarkSlug": slug,
                "runId": run_id,
                "run": client.get_run(slug, run_id),
                "results": client.get_run_results(slug, run_id),
            }
            name = f"{slug}-{run_id}.json"
        else:
            payload = client.get_benchmark_results(slug)
            name = f"{slug}.json"
    # Node's path.join normalises ("./x" is "x", "a/../b" is "b").
    path = os.path.normpath(os.path.join(out_dir, name))
    write_atomically(Path(path), js_stringify(payload))
    invocation.out(f"Exported to {path}")


# --- dispatch ------------------------------------------------------------------------------------


def dispatch(invocation: Invocation, positionals: Sequence[str]) -> None:
    """Run the command named by the positionals (upstream's ``switch``); a wrong command line
    raises :class:`UsageError` with the usage text."""
    command, *rest = positionals
    if command == "auth":
        sub = rest[0] if rest else None
        handlers = {"login": auth_login, "logout": auth_logout, "status": auth_status}
        if sub not in handlers:
            raise UsageError(USAGE)
        handlers[sub](invocation)
    elif command == "org":
        sub = rest[0] if rest else None
        _, positional = parse_subcommand_options(rest[1:])
        if sub == "list":
            org_list(invocation)
        elif sub == "use":
            if not positional:
                raise UsageError(f"Organization slug required: {PROG} org use <slug>")
            org_use(invocation, positional[0])
        else:
            raise UsageError(USAGE)
    elif command == "benchmarks":
        sub = rest[0] if rest else None
        options, _ = parse_subcommand_options(rest[1:])
        if sub != "list":
            raise UsageError(USAGE)
        benchmarks_list(invocation, options)
    elif command == "runs":
        options, positional = parse_subcommand_options(rest)
        sub, slug, run_id = [*positional, None, None, None][:3]
        if sub == "list":
            runs_list(invocation, slug, options)
        elif sub == "show":
            if not slug or not run_id:
                raise UsageError(f"Usage: {PROG} runs show <benchmark-slug> <runId>")
            runs_show(invocation, slug, run_id)
        else:
            raise UsageError(USAGE)
    elif command in ("results", "iterations", "export"):
        options, positional = parse_subcommand_options(rest)
        if not positional:
            raise UsageError(f"Benchmark slug required: {PROG} {command} <benchmark-slug>")
        {"results": results, "iterations": iterations, "export": export}[command](
            invocation, positional[0], options
        )
    elif command == "artifacts":
        sub = rest[0] if rest else None
        options, positional = parse_subcommand_options(rest[1:])
        if sub != "list":
            raise UsageError(USAGE)
        if len(positional) < 2:
            raise UsageError(f"Usage: {PROG} artifacts list <benchmark-slug> <runId>")
        artifacts_list(invocation, positional[0], positional[1], options)
    elif command == "logs":
        options, positional = parse_subcommand_options(rest)
        if len(positional) < 2:
            raise UsageError(f"Usage: {PROG} logs <benchmark-slug> <runId>")
        logs(invocation, positional[0], positional[1], options)
    else:
        raise UsageError(USAGE)
