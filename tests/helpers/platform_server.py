"""A real benchmarks platform on 127.0.0.1 for tests (standard library only).

:class:`LoopbackPlatform` implements the REST endpoints pytest-benchsdk uses (upstream §6.2) with
real state: benchmarks, runs (``runKey`` get-or-create), participants, planned workers (409 when
planned twice; listed with their ``currentAttempt``: id, number, processKind, processKey),
claims with ``attemptId``/``taskRange``, event batches deduplicated by sequence
number, heartbeats, complete/fail, artifacts with presigned upload URLs served by the same
server, run summaries, and the benchmark listing. The OAuth refresh grant
(``/api/auth/oauth2/token``) is there too.

What the platform commands read (``pytest-benchsdk platform …``): runs across benchmarks, the
results overview and a run's results (tasks, timeline, imports), per-iteration rows, the parsed
worker logs of a participant, artifact lists, single artifacts with presigned download URLs
(``/_download/<token>``, the stored bytes with their content type), ``/me`` and
``/organizations`` (an account with organisations and an active one per bearer token). The
device login (RFC 8628): ``POST /api/auth/device/code`` and the device-code grant at the token
endpoint, answering ``authorization_pending`` until :meth:`LoopbackPlatform.approve` (or after
``approve_after`` polls), error codes from a script (:meth:`LoopbackPlatform.device_flow`:
``slow_down``, ``access_denied`` …), ``expired_token`` once the code has expired.

Worker pools (upstream §3.7, §6.2): ``GET …/progress`` aggregates, per participant, the
``concurrency`` samples of the latest heartbeat of each *fresh* worker (running, heard from in
the last :data:`FRESH_S` seconds). A step is ``ready`` once every planned worker of the
participant is fresh and reports the step with ``active >= target``; once ready it stays ready
for the run (a worker that polls a moment later, when the first ones already left the step,
must still pass). ``POST …/close`` ends the run: ``completed`` when no worker is pending or
running, else ``closing`` (with ``closeAfterMs``) or ``closed``.

Every request is recorded (:attr:`LoopbackPlatform.requests`). Faults are injected per route
with :meth:`LoopbackPlatform.fault`: a status (5xx, 429 with ``Retry-After``, 401, 404, 409…),
a delay, a dropped connection, an answer of any size (``huge``: streamed, never held in
memory), a 2xx answer cut off after N bytes (``cut_off``), a slow-loris answer sent a byte at
a time (``trickle``), or a 2xx answer of the wrong shape (``malformed``), for the next N
matching requests or forever. Nothing here touches a real network: the server binds 127.0.0.1
on an ephemeral port.
"""

from __future__ import annotations

import contextlib
import gzip
import itertools
import json
import math
import re
import socket
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

__all__ = ["API_KEY", "FRESH_S", "ORG_SLUG", "Fault", "LoopbackPlatform", "RecordedRequest"]

#: A worker whose last heartbeat is older than this is not counted at a barrier.
FRESH_S = 60.0

ORG_SLUG = "acme"
#: A recognisable fake API key: tests assert it never shows up anywhere.
API_KEY = "bp_test_SECRET_0123456789abcdef"


@dataclass
class RecordedRequest:
    """One request as the server saw it (``path`` is decoded per segment; ``raw_path`` is not)."""

    method: str
    raw_path: str
    path: str
    route: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    status: int | None = None
    #: The query string as sent (``query`` is it parsed and decoded).
    raw_query: str = ""

    @property
    def json(self) -> Any:
        """The body parsed as JSON (``None`` when empty)."""
        return json.loads(self.body) if self.body else None


@dataclass
class Fault:
    """What to do instead of (or before) handling requests of one route.

    ``status`` answers with that status (``body`` as JSON, ``retry_after`` as header);
    ``drop`` closes the connection without answering (before the request is handled);
    ``drop_after`` handles the request (state changes happen) and then closes the connection
    without answering, as when the answer is lost on the way back;
    ``delay`` sleeps before handling (then the fault's status, or the normal answer).
    ``huge`` answers (``status`` or 200) with a JSON body of that many bytes, written in
    chunks; ``declare_length`` says whether its ``Content-Length`` is sent (without it the
    body ends when the connection closes, so only reading it tells its size); ``encoding``
    (``gzip``, ``deflate`` or ``raw-deflate``: deflate without its zlib header, as many
    servers send it) compresses it on the way, with that ``Content-Encoding``.
    ``cut_off`` handles the request (state changes happen), then sends its 2xx answer's first
    ``cut_off`` bytes and closes the connection: with ``declare_length`` the full
    ``Content-Length`` is announced (the body ends early), without it the body ends at the
    close (a short, invalid JSON text).
    ``times`` is how many requests are affected (``None`` = all), after the first ``skip``
    matching requests, which are answered normally.
    ``call`` is called with the recorded request when the fault strikes: after handling with
    ``drop_after`` (the platform acted, the answer is not sent yet), else before handling;
    the kill tests kill the client there.
    ``trickle`` (seconds) is a slow-loris answer: the request is handled (state changes
    happen), then the answer's status line goes out and a header follows one byte every
    ``trickle`` seconds, for ``trickle_for`` seconds (``None``: until the client hangs up or
    the server stops), then the rest of the real answer. No single read ever waits long, so
    only a deadline on the whole answer ends it.
    ``malformed`` handles the request (state changes happen) and answers its 2xx status with
    this JSON in place of the real answer (a list where an object is expected, …).
    """

    route: str
    method: str | None = None
    status: int | None = None
    times: int | None = 1
    retry_after: str | None = None
    delay: float = 0.0
    drop: bool = False
    drop_after: bool = False
    body: Any = None
    huge: int = 0
    encoding: str | None = None
    cut_off: int | None = None
    declare_length: bool = True
    skip: int = 0
    call: Callable[[RecordedRequest], None] | None = None
    trickle: float = 0.0
    trickle_for: float | None = None
    malformed: Any = None
    hits: int = 0
    seen: int = 0


# (method, compiled pattern on decoded segments, route name)
_ROUTES: list[tuple[str, str, str]] = [
    ("GET", r"/benchmarks", "list_benchmarks"),
    ("GET", r"/me", "me"),
    ("GET", r"/organizations", "list_organizations"),
    ("POST", r"/organizations", "set_organization"),
    # Before get_benchmark: a GET of /benchmarks/runs is the cross-benchmark run list.
    ("GET", r"/benchmarks/runs", "list_all_runs"),
    ("GET", r"/benchmarks/([^/]+)/results", "benchmark_results"),
    ("GET", r"/benchmarks/([^/]+)/runs/([^/]+)/results", "run_results"),
    ("GET", r"/benchmarks/([^/]+)/runs/([^/]+)/results/tasks", "run_task_results"),
    ("GET", r"/benchmarks/([^/]+)/runs/([^/]+)/results/timeline", "run_timeline"),
    ("GET", r"/benchmarks/([^/]+)/runs/([^/]+)/results/imports", "run_imports"),
    ("GET", r"/benchmarks/([^/]+)/runs/([^/]+)/iterations", "iterations"),
    ("GET", r"/benchmarks/([^/]+)/runs/([^/]+)/artifacts", "run_artifacts"),
    ("GET", r"/benchmarks/([^/]+)/runs/([^/]+)/participants/([^/]+)/logs", "participant_logs"),
    ("GET", r"/benchmarks/([^/]+)/runs/([^/]+)/workers/([^/]+)/artifacts", "worker_artifacts"),
    ("GET", r"/benchmarks/([^/]+)/runs/([^/]+)/workers/([^/]+)/artifacts/([^/]+)", "get_artifact"),
    ("PUT", r"/benchmarks/([^/]+)", "upsert_benchmark"),
    ("GET", r"/benchmarks/([^/]+)", "get_benchmark"),
    ("PATCH", r"/benchmarks/([^/]+)", "update_benchmark"),
    ("POST", r"/benchmarks/([^/]+)/runs", "create_run"),
    ("GET", r"/benchmarks/([^/]+)/runs", "list_runs"),
    ("GET", r"/benchmarks/([^/]+)/runs/([^/]+)", "get_run"),
    ("GET", r"/benchmarks/([^/]+)/runs/([^/]+)/progress", "progress"),
    ("POST", r"/benchmarks/([^/]+)/runs/([^/]+)/close", "close"),
    ("POST", r"/benchmarks/([^/]+)/runs/([^/]+)/summary", "summary"),
    ("GET", r"/benchmarks/([^/]+)/runs/([^/]+)/participants", "list_participants"),
    ("PUT", r"/benchmarks/([^/]+)/runs/([^/]+)/participants/([^/]+)", "upsert_participant"),
    ("GET", r"/benchmarks/([^/]+)/runs/([^/]+)/participants/([^/]+)", "get_participant"),
    ("POST", r"/benchmarks/([^/]+)/runs/([^/]+)/participants/([^/]+)/workers", "plan"),
    ("GET", r"/benchmarks/([^/]+)/runs/([^/]+)/participants/([^/]+)/workers", "list_workers"),
    ("POST", r"/benchmarks/([^/]+)/runs/([^/]+)/participants/([^/]+)/workers/claim", "claim"),
    ("POST", r"/benchmarks/([^/]+)/runs/([^/]+)/workers/([^/]+)/heartbeat", "heartbeat"),
    ("POST", r"/benchmarks/([^/]+)/runs/([^/]+)/workers/([^/]+)/events", "events"),
    ("POST", r"/benchmarks/([^/]+)/runs/([^/]+)/workers/([^/]+)/complete", "complete"),
    ("POST", r"/benchmarks/([^/]+)/runs/([^/]+)/workers/([^/]+)/release", "release"),
    ("POST", r"/benchmarks/([^/]+)/runs/([^/]+)/workers/([^/]+)/fail", "fail"),
    ("POST", r"/benchmarks/([^/]+)/runs/([^/]+)/workers/([^/]+)/artifacts", "create_artifact"),
]
_ACCOUNT_ROUTES = ("me", "list_organizations", "set_organization")
_COMPILED = [(m, re.compile("^" + p + "$"), name) for m, p, name in _ROUTES]


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out and hung up is part of the tests, not a server bug.
        import sys

        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


class _ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class LoopbackPlatform:
    """The loopback platform. Use as a context manager, or :meth:`start` / :meth:`stop`.

    ``tokens``: bearer values accepted by the API (empty = any non-empty bearer).
    ``lists_attempts``: whether the worker listing shows each worker's ``currentAttempt``.
    """

    def __init__(self, *, tokens: tuple[str, ...] = (), lists_attempts: bool = True) -> None:
        self.tokens = set(tokens)
        #: False: the worker listing does not say who claimed a worker (``currentAttempt``
        #: missing), like a platform that offers no way to find a claim whose answer was lost.
        self.lists_attempts = lists_attempts
        self.lock = threading.RLock()
        self.requests: list[RecordedRequest] = []
        self.faults: list[Fault] = []
        self.benchmarks: dict[str, dict[str, Any]] = {}
        self.runs: dict[str, dict[str, Any]] = {}
        self.run_keys: dict[tuple[str, str], str] = {}
        self.participants: dict[tuple[str, str], dict[str, Any]] = {}
        self.workers: dict[str, dict[str, Any]] = {}
        self.artifacts: dict[str, dict[str, Any]] = {}
        self.summaries: dict[str, list[Any]] = {}
        self.refresh_tokens: dict[str, str] = {}  # refresh token -> client id
        self.user: dict[str, Any] = {
            "id": "user_1",
            "name": "Ada Lovelace",
            "email": "ada@example.com",
        }
        self.organizations: list[dict[str, Any]] = [
            {"id": "org_1", "name": "Acme", "slug": ORG_SLUG}
        ]
        self.active_organization: dict[str, str] = {}  # bearer -> organization id
        #: POST /organizations answers with a fresh access token carrying the org claim.
        self.org_tokens = True
        self.device_codes: dict[str, dict[str, Any]] = {}
        self.device_settings: dict[str, Any] = {
            "interval": 0,
            "expires_in": 900,
            "approve_after": None,
            "script": [],
        }
        self._ids = itertools.count(1)
        self._server = _Server(("127.0.0.1", 0), _make_handler(self))
        self._thread: threading.Thread | None = None
        #: Set by :meth:`stop`: slow-loris answers in progress end.
        self.stopping = threading.Event()

    # -- lifecycle --------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound port."""
        return int(self._server.server_address[1])

    @property
    def root_url(self) -> str:
        """The platform root (what ``BENCHMARKS_PLATFORM_URL`` would hold)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_url(self) -> str:
        """The API base (``<root>/api/v1``)."""
        return self.root_url + "/api/v1"

    def start(self) -> LoopbackPlatform:
        """Serve in a daemon thread."""
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket (also when never started)."""
        self.stopping.set()
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(5)
        self._server.server_close()

    def __enter__(self) -> LoopbackPlatform:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- test helpers -----------------------------------------------------------------------

    def fault(self, route: str, **kwargs: Any) -> Fault:
        """Inject a fault for ``route`` (a route name, ``upload``, ``oauth_token`` or ``*``)."""
        item = Fault(route=route, **kwargs)
        with self.lock:
            self.faults.append(item)
        return item

    def clear_faults(self) -> None:
        """Remove every fault."""
        with self.lock:
            self.faults.clear()

    def calls(self, route: str | None = None) -> list[RecordedRequest]:
        """Recorded requests, optionally of one route."""
        with self.lock:
            return [r for r in self.requests if route is None or r.route == route]

    def events_for(self, worker_id: str) -> dict[int, dict[str, Any]]:
        """Stored event batches of a worker by sequence number."""
        with self.lock:
            return dict(self.workers[worker_id]["events"])

    def records(self, run_id: str | None = None) -> list[tuple[str, dict[str, Any]]]:
        """Every stored record as ``(participant, record)``, in sequence order per worker."""
        out: list[tuple[str, dict[str, Any]]] = []
        with self.lock:
            for worker in self.workers.values():
                if run_id is not None and worker["runId"] != run_id:
                    continue
                for seq in sorted(worker["events"]):
                    out.extend((worker["participant"], r) for r in worker["events"][seq]["records"])
        return out

    def new_id(self, prefix: str) -> str:
        """A fresh id like ``run_3``."""
        return f"{prefix}_{next(self._ids)}"

    def issue_refresh_token(self, refresh_token: str, client_id: str = "benchsdk-runner") -> None:
        """Accept ``refresh_token`` at the OAuth token endpoint."""
        self.refresh_tokens[refresh_token] = client_id

    def device_flow(
        self,
        *,
        interval: float = 0,
        expires_in: float = 900,
        approve_after: int | None = None,
        script: tuple[str, ...] = (),
        verification_uri: str | None = None,
    ) -> None:
        """How the device login answers from now on: the ``interval`` and ``expires_in`` it
        hands out, the poll at which a code approves itself (``None``: only :meth:`approve`),
        error codes answered to a code's first polls (``slow_down``, ``access_denied`` …), and
        the verification address it sends the user to (default: its own ``/device``)."""
        with self.lock:
            self.device_settings = {
                "interval": interval,
                "expires_in": expires_in,
                "approve_after": approve_after,
                "script": list(script),
                "verification_uri": verification_uri,
            }

    def approve(self, user_code: str) -> None:
        """The user approves the device in the browser."""
        with self.lock:
            for code in self.device_codes.values():
                if code["user_code"] == user_code:
                    code["approved"] = True

    def deny(self, user_code: str) -> None:
        """The user denies the device (the next poll answers ``access_denied``)."""
        with self.lock:
            for code in self.device_codes.values():
                if code["user_code"] == user_code:
                    code["denied"] = True

    # -- request handling -------------------------------------------------------------------

    def _take_fault(self, route: str, method: str) -> Fault | None:
        with self.lock:
            for item in self.faults:
                if item.route not in (route, "*"):
                    continue
                if item.method is not None and item.method != method:
                    continue
                if item.times is not None and item.hits >= item.times:
                    continue
                item.seen += 1
                if item.seen <= item.skip:
                    continue
                item.hits += 1
                return item
        return None

    def handle(
        self,
        method: str,
        path: str,
        query: dict[str, list[str]],
        headers: dict[str, str],
        body: Any,
    ) -> tuple[int, Any]:
        """Dispatch one API request (path relative to ``/api/v1``, decoded segments)."""
        auth = headers.get("authorization", "")
        if not auth.startswith("Bearer ") or not auth[7:]:
            raise _ApiError(401, "Missing bearer token")
        if self.tokens and auth[7:] not in self.tokens:
            raise _ApiError(401, "Invalid token")
        route, params = _match(method, path)
        if route is None:
            raise _ApiError(404, f"No route for {method} {path}")
        handler = getattr(self, "_h_" + route)
        with self.lock:
            if route in _ACCOUNT_ROUTES:
                result: tuple[int, Any] = handler(auth[7:], query=query, body=body or {})
            else:
                result = handler(*params, query=query, body=body or {})
            return result

    # account (the bearer decides whose active organisation it is)
    def _h_me(self, bearer: str, *, query: Any, body: Any) -> tuple[int, Any]:
        return 200, {
            "user": self.user,
            "activeOrganizationId": self.active_organization.get(bearer),
            "organizations": self.organizations,
        }

    def _h_list_organizations(self, bearer: str, *, query: Any, body: Any) -> tuple[int, Any]:
        return 200, {"items": self.organizations}

    def _h_set_organization(self, bearer: str, *, query: Any, body: Any) -> tuple[int, Any]:
        org = next((o for o in self.organizations if o["slug"] == body.get("slug")), None)
        if org is None:
            raise _ApiError(404, "Organization not found")
        answer: dict[str, Any] = {"activeOrganizationId": org["id"], "organization": org}
        self.active_organization[bearer] = org["id"]
        if self.org_tokens:
            token = self.new_id("org-access-token")
            self.active_organization[token] = org["id"]
            if self.tokens:
                self.tokens.add(token)
            answer.update({"accessToken": token, "expiresIn": 3600})
        return 200, answer

    # results and iterations, computed from the stored event batches
    def _h_list_all_runs(self, *, query: Any, body: Any) -> tuple[int, Any]:
        only = query.get("benchmarkSlug", [None])[0]
        runs = [
            {**run, "organizationSlug": ORG_SLUG}
            for run in self.runs.values()
            if only is None or run["benchmarkSlug"] == only
        ]
        return 200, {"items": _page(runs, query)}

    def _h_benchmark_results(self, slug: str, *, query: Any, body: Any) -> tuple[int, Any]:
        bench = self._h_get_benchmark(slug, query=query, body=body)[1]["benchmark"]
        items = []
        for run in [r for r in self.runs.values() if r["benchmarkSlug"] == slug]:
            records = self.records(run["id"])
            items.append(
                {
                    "run": run,
                    "analytics": {"status": "ready", "eventBatches": len(records)},
                    "participants": [
                        {**row, "runId": run["id"]} for row in _participant_rows(records)
                    ],
                }
            )
        return 200, {
            "benchmark": {k: bench[k] for k in ("id", "slug", "name")},
            "generatedAt": _now_iso(),
            "analytics": {"status": "ready", "query": "available"},
            "items": _page(items, query),
        }

    def _h_run_results(self, slug: str, run_id: str, *, query: Any, body: Any) -> tuple[int, Any]:
        run = self._run(slug, run_id)
        bench = self.benchmarks[slug]
        records = self.records(run_id)
        steps: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for participant, record in records:
            for step in record.get("steps") or []:
                steps.setdefault((participant, step["name"]), []).append(step)
        return 200, {
            "benchmark": {k: bench[k] for k in ("id", "slug", "name")},
            "run": {k: run.get(k) for k in ("id", "status", "totalTasks", "workerCount")},
            "generatedAt": _now_iso(),
            "overall": _summary([r for _, r in records]),
            "participants": _participant_rows(records),
            "steps": [
                {"participantSlug": participant, "provider": None, "stepName": name}
                | _summary(items, count_key="stepCount")
                for (participant, name), items in steps.items()
            ],
        }

    def _h_run_task_results(
        self, slug: str, run_id: str, *, query: Any, body: Any
    ) -> tuple[int, Any]:
        self._run(slug, run_id)
        size = int(query.get("bucketSize", ["10"])[0])
        limit = int(query.get("failureLimit", ["100"])[0])
        records = self.records(run_id)
        buckets: dict[tuple[str, int], list[dict[str, Any]]] = {}
        for participant, record in records:
            start = int(record["taskIndex"]) // size * size
            buckets.setdefault((participant, start), []).append(record)
        failures = [
            {
                "participantSlug": participant,
                "provider": None,
                "taskIndex": record["taskIndex"],
                "errorCode": record.get("errorCode"),
            }
            for participant, record in records
            if record.get("status") != "success"
        ]
        return 200, {
            "run": {"id": run_id},
            "generatedAt": _now_iso(),
            "bucketSize": size,
            "buckets": [
                {
                    "participantSlug": participant,
                    "provider": None,
                    "bucketStart": start,
                    "bucketEnd": start + size - 1,
                    "taskCount": len(items),
                    "successCount": sum(r.get("status") == "success" for r in items),
                }
                for (participant, start), items in buckets.items()
            ],
            "failures": failures[:limit],
        }

    def _h_run_timeline(self, slug: str, run_id: str, *, query: Any, body: Any) -> tuple[int, Any]:
        self._run(slug, run_id)
        bucket = int(query.get("bucketMs", ["1000"])[0])
        beats = sum(len(w["heartbeats"]) for w in self.workers.values() if w["runId"] == run_id)
        return 200, {
            "run": {"id": run_id},
            "generatedAt": _now_iso(),
            "eventRate": {"bucketMs": bucket, "buckets": []},
            "concurrency": {"firstRecordedAt": None, "heartbeatCount": beats, "points": []},
        }

    def _h_run_imports(self, slug: str, run_id: str, *, query: Any, body: Any) -> tuple[int, Any]:
        self._run(slug, run_id)
        batches = [
            (seq, batch)
            for w in self.workers.values()
            if w["runId"] == run_id
            for seq, batch in sorted(w["events"].items())
        ]
        return 200, {
            "run": {"id": run_id},
            "generatedAt": _now_iso(),
            "summary": {"eventBatches": len(batches), "persisted": len(batches), "queued": 0},
            "items": [
                {
                    "batchType": "task_results",
                    "sequenceNumber": seq,
                    "batchStatus": "persisted",
                    "eventCount": len(batch["records"]),
                }
                for seq, batch in batches
            ],
        }

    def _h_iterations(self, slug: str, run_id: str, *, query: Any, body: Any) -> tuple[int, Any]:
        self._run(slug, run_id)
        kind = query.get("type", [""])[0]
        if kind not in ("tasks", "steps"):
            raise _ApiError(400, "type must be 'tasks' or 'steps'")
        only = query.get("participant", [None])[0]
        wanted = {s for s in query.get("steps", [""])[0].split(",") if s}
        rows: list[dict[str, Any]] = []
        for participant, record in self.records(run_id):
            if only is not None and participant != only:
                continue
            if kind == "tasks":
                rows.append(
                    {"participantSlug": participant, "provider": None, "taskIndex": 0}
                    | _iteration(record)
                )
                continue
            for step in record.get("steps") or []:
                if wanted and step["name"] not in wanted:
                    continue
                rows.append(
                    {"participantSlug": participant, "provider": None, "stepName": step["name"]}
                    | _iteration(step)
                    | {"taskIndex": record["taskIndex"]}
                )
        return 200, {"run": {"id": run_id}, "generatedAt": _now_iso(), kind: rows}

    # artifacts and logs
    def _public_artifact(self, artifact: dict[str, Any]) -> dict[str, Any]:
        worker = self.workers.get(artifact["workerId"]) or {}
        hidden = ("content", "uploadToken", "downloadToken", "uploadContentType")
        return {k: v for k, v in artifact.items() if k not in hidden} | {
            "participantSlug": worker.get("participant")
        }

    def _h_run_artifacts(self, slug: str, run_id: str, *, query: Any, body: Any) -> tuple[int, Any]:
        self._run(slug, run_id)
        items = [self._public_artifact(a) for a in self.artifacts.values() if a["runId"] == run_id]
        return 200, {"items": _page(items, query)}

    def _worker_of(self, slug: str, run_id: str, worker_id: str) -> dict[str, Any]:
        self._run(slug, run_id)
        worker = self.workers.get(worker_id)
        if worker is None or worker["runId"] != run_id:
            raise _ApiError(404, "Worker not found")
        return worker

    def _h_worker_artifacts(
        self, slug: str, run_id: str, worker_id: str, *, query: Any, body: Any
    ) -> tuple[int, Any]:
        worker = self._worker_of(slug, run_id, worker_id)
        items = [self._public_artifact(self.artifacts[i]) for i in worker["artifacts"]]
        return 200, {"items": _page(items, query)}

    def _h_get_artifact(
        self, slug: str, run_id: str, worker_id: str, artifact_id: str, *, query: Any, body: Any
    ) -> tuple[int, Any]:
        worker = self._worker_of(slug, run_id, worker_id)
        if artifact_id not in worker["artifacts"]:
            raise _ApiError(404, "Artifact not found")
        artifact = self.artifacts[artifact_id]
        token = artifact.setdefault("downloadToken", self.new_id("dl"))
        return 200, {
            "artifact": self._public_artifact(artifact),
            "downloadUrl": f"{self.root_url}/_download/{token}",
            "downloadUrlExpiresAt": "2999-01-01T00:00:00.000Z",
        }

    def download(self, token: str) -> tuple[int, bytes, str]:
        """The presigned GET target: ``(status, content, content type)``."""
        with self.lock:
            for artifact in self.artifacts.values():
                if artifact.get("downloadToken") == token and artifact["content"] is not None:
                    return 200, artifact["content"], artifact.get("contentType") or ""
        return 404, b'{"error": "Unknown download"}', "application/json"

    def _h_participant_logs(
        self, slug: str, run_id: str, name: str, *, query: Any, body: Any
    ) -> tuple[int, Any]:
        part = self._participant(slug, run_id, name)
        max_lines = int(query.get("maxLines", ["1000"])[0])
        workers = []
        for worker_id in part.get("workerIds", []):
            worker = self.workers[worker_id]
            logs = [
                self.artifacts[i]
                for i in worker["artifacts"]
                if self.artifacts[i]["kind"] == "coordinator.log"
                and self.artifacts[i]["content"] is not None
            ]
            entry: dict[str, Any] = {
                "workerId": worker_id,
                "workerIndex": worker["workerIndex"],
                "status": worker["status"],
                "artifact": self._public_artifact(logs[-1]) if logs else None,
                "log": None,
            }
            if logs:
                # Mid-run flushes upload the log in parts; the dashboard shows them as one.
                text = "".join(_artifact_text(a) for a in logs)
                lines = [_log_line(n, line) for n, line in enumerate(text.splitlines(), 1)]
                entry["log"] = {
                    "runId": run_id,
                    "provider": name,
                    "lines": lines[-max_lines:] if max_lines > 0 else [],
                    "totalLines": len(lines),
                    "okSampleRate": 1,
                    "artifactId": logs[-1]["id"],
                    "attemptId": worker["attempts"][-1]["id"],
                }
            workers.append(entry)
        return 200, {"participant": part, "workers": workers}

    # benchmarks
    def _h_list_benchmarks(self, *, query: Any, body: Any) -> tuple[int, Any]:
        items = list(self.benchmarks.values())
        limit = int(query.get("limit", ["100"])[0])
        offset = int(query.get("offset", ["0"])[0])
        return 200, {"items": items[offset : offset + limit]}

    def _h_upsert_benchmark(self, slug: str, *, query: Any, body: Any) -> tuple[int, Any]:
        bench = self.benchmarks.setdefault(
            slug, {"id": self.new_id("bm"), "slug": slug, "name": slug, "status": "active"}
        )
        for key in ("name", "status", "config", "defaultRunConfig"):
            if key in body:
                bench[key] = body[key]
        return 200, {"benchmark": bench}

    def _h_get_benchmark(self, slug: str, *, query: Any, body: Any) -> tuple[int, Any]:
        if slug not in self.benchmarks:
            raise _ApiError(404, "Benchmark not found")
        return 200, {"benchmark": self.benchmarks[slug]}

    def _h_update_benchmark(self, slug: str, *, query: Any, body: Any) -> tuple[int, Any]:
        self._h_get_benchmark(slug, query=query, body=body)
        return self._h_upsert_benchmark(slug, query=query, body=body)

    # runs
    def _run(self, slug: str, run_id: str) -> dict[str, Any]:
        run = self.runs.get(run_id)
        if run is None or run["benchmarkSlug"] != slug:
            raise _ApiError(404, "Run not found")
        return run

    def _h_create_run(self, slug: str, *, query: Any, body: Any) -> tuple[int, Any]:
        if slug not in self.benchmarks:
            raise _ApiError(404, "Benchmark not found")
        key = body.get("runKey")
        if key and (slug, key) in self.run_keys:
            run = self.runs[self.run_keys[(slug, key)]]
        else:
            run_id = self.new_id("run")
            run = {
                "id": run_id,
                "name": f"{slug} #{len(self.runs) + 1}",
                "benchmarkSlug": slug,
                "status": "running",
                "runKey": key,
                "config": body.get("config"),
                "totalTasks": body.get("totalTasks"),
                "workerCount": body.get("workerCount"),
            }
            self.runs[run_id] = run
            if key:
                self.run_keys[(slug, key)] = run_id
            for name in body.get("participants") or []:
                self.participants[(run_id, name)] = {
                    "slug": name,
                    "runId": run_id,
                    "status": "pending",
                    "totalTasks": body.get("totalTasks"),
                    "workerCount": body.get("workerCount", 1),
                }
        parts = [p for (rid, _), p in self.participants.items() if rid == run["id"]]
        return 200, {"run": run, "participants": parts, "organizationSlug": ORG_SLUG}

    def _h_list_runs(self, slug: str, *, query: Any, body: Any) -> tuple[int, Any]:
        return 200, {"items": [r for r in self.runs.values() if r["benchmarkSlug"] == slug]}

    def _h_get_run(self, slug: str, run_id: str, *, query: Any, body: Any) -> tuple[int, Any]:
        return 200, {"run": self._run(slug, run_id)}

    def _h_progress(self, slug: str, run_id: str, *, query: Any, body: Any) -> tuple[int, Any]:
        run = self._run(slug, run_id)
        now = time.monotonic()
        participants = []
        for (rid, name), part in self.participants.items():
            if rid != run_id:
                continue
            workers = [self.workers[i] for i in part.get("workerIds", [])]
            steps: dict[str, dict[str, int]] = {}
            for worker in workers:
                last = worker.get("lastHeartbeat")
                if worker["status"] != "running" or last is None or now - last[0] > FRESH_S:
                    continue
                for sample in last[1].get("concurrency") or []:
                    entry = steps.setdefault(
                        str(sample["step"]), {"active": 0, "target": 0, "arrived": 0}
                    )
                    entry["active"] += int(sample.get("active") or 0)
                    entry["target"] += int(sample.get("target") or 0)
                    if int(sample.get("active") or 0) >= int(sample.get("target") or 0):
                        entry["arrived"] += 1
            ready: list[str] = part.setdefault("readySteps", [])
            for step, entry in steps.items():
                if workers and entry["arrived"] >= len(workers) and step not in ready:
                    ready.append(step)
            names = list(dict.fromkeys([*steps, *ready]))
            participants.append(
                {
                    "participantSlug": name,
                    "status": part.get("status"),
                    "totalTasks": part.get("totalTasks"),
                    "workerCount": len(workers),
                    "completedWorkers": sum(w["status"] == "completed" for w in workers),
                    "runningWorkers": sum(w["status"] == "running" for w in workers),
                    "pendingWorkers": sum(w["status"] == "pending" for w in workers),
                    "progressDone": sum(int(w.get("progressDone") or 0) for w in workers),
                    "concurrency": [
                        {
                            "step": step,
                            "active": steps.get(step, {}).get("active", 0),
                            "target": steps.get(step, {}).get("target", 0),
                            "ready": step in ready,
                        }
                        for step in names
                    ],
                }
            )
        return 200, {"runId": run_id, "status": run["status"], "participants": participants}

    def _h_close(self, slug: str, run_id: str, *, query: Any, body: Any) -> tuple[int, Any]:
        run = self._run(slug, run_id)
        workers = [w for w in self.workers.values() if w["runId"] == run_id]
        pending = sum(w["status"] == "pending" for w in workers)
        running = sum(w["status"] == "running" for w in workers)
        if pending == 0 and running == 0:
            run["status"] = "completed"
        else:
            run["status"] = "closing" if body.get("closeAfterMs") else "closed"
        run["endedAt"] = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
        run.setdefault("closeRequests", []).append(dict(body))
        return 200, {
            "run": {"id": run_id, "status": run["status"], "endedAt": run["endedAt"]},
            "outcome": {
                "workerCount": len(workers),
                "completedWorkers": sum(w["status"] == "completed" for w in workers),
                "pendingWorkers": pending,
                "reapedWorkers": 0,
                "attemptCount": sum(len(w["attempts"]) for w in workers),
            },
        }

    def _h_summary(self, slug: str, run_id: str, *, query: Any, body: Any) -> tuple[int, Any]:
        self._run(slug, run_id)
        self.summaries.setdefault(run_id, []).append(body)
        return 200, {"ok": True}

    # participants
    def _h_list_participants(
        self, slug: str, run_id: str, *, query: Any, body: Any
    ) -> tuple[int, Any]:
        self._run(slug, run_id)
        return 200, {"items": [p for (rid, _), p in self.participants.items() if rid == run_id]}

    def _h_upsert_participant(
        self, slug: str, run_id: str, name: str, *, query: Any, body: Any
    ) -> tuple[int, Any]:
        self._run(slug, run_id)
        part = self.participants.setdefault(
            (run_id, name),
            {"slug": name, "runId": run_id, "status": "pending", "workerCount": 1},
        )
        for key in ("label", "provider", "status", "totalTasks", "workerCount", "config"):
            if key in body:
                part[key] = body[key]
        return 200, {"participant": part}

    def _h_get_participant(
        self, slug: str, run_id: str, name: str, *, query: Any, body: Any
    ) -> tuple[int, Any]:
        self._run(slug, run_id)
        if (run_id, name) not in self.participants:
            raise _ApiError(404, "Participant not found")
        return 200, {"participant": self.participants[(run_id, name)]}

    def _participant(self, slug: str, run_id: str, name: str) -> dict[str, Any]:
        self._run(slug, run_id)
        part = self.participants.get((run_id, name))
        if part is None:
            raise _ApiError(404, "Participant not found")
        return part

    def _h_plan(
        self, slug: str, run_id: str, name: str, *, query: Any, body: Any
    ) -> tuple[int, Any]:
        part = self._participant(slug, run_id, name)
        if part.get("workerIds"):
            raise _ApiError(409, "Workers already planned for this participant")
        count = int(body.get("workerCount") or part.get("workerCount") or 1)
        total = int(part.get("totalTasks") or 0)
        per, extra = divmod(total, count)
        start = 0
        ids = []
        for index in range(count):
            size = per + (1 if index < extra else 0)
            worker_id = self.new_id("wk")
            self.workers[worker_id] = {
                "id": worker_id,
                "runId": run_id,
                "benchmarkSlug": slug,
                "participant": name,
                "workerIndex": index,
                "workerCount": count,
                "status": "pending",
                "taskRange": {"start": start, "end": start + size, "count": size},
                "targetConcurrency": int(body.get("targetConcurrency") or 1),
                "attempts": [],
                "events": {},
                "heartbeats": [],
                "artifacts": [],
            }
            ids.append(worker_id)
            start += size
        part["workerIds"] = ids
        return 200, {"items": [self._public_worker(self.workers[i]) for i in ids]}

    def _public_worker(self, worker: dict[str, Any]) -> dict[str, Any]:
        hidden = ("events", "heartbeats", "attempts", "lastHeartbeat")
        public = {k: v for k, v in worker.items() if k not in hidden}
        # The worker's current attempt and who claimed it (upstream's reference names no
        # worker fields; this is the form pytest-benchsdk reads to find a claim whose answer
        # was lost: README, Known limitations).
        attempts = worker["attempts"]
        if not self.lists_attempts:
            return public
        public["currentAttempt"] = (
            {
                "id": attempts[-1]["id"],
                "number": attempts[-1]["number"],
                "processKind": attempts[-1]["processKind"],
                "processKey": attempts[-1]["processKey"],
            }
            if attempts
            else None
        )
        return public

    def _h_list_workers(
        self, slug: str, run_id: str, name: str, *, query: Any, body: Any
    ) -> tuple[int, Any]:
        part = self._participant(slug, run_id, name)
        return 200, {
            "items": [self._public_worker(self.workers[i]) for i in part.get("workerIds", [])]
        }

    def _h_claim(
        self, slug: str, run_id: str, name: str, *, query: Any, body: Any
    ) -> tuple[int, Any]:
        part = self._participant(slug, run_id, name)
        for worker_id in part.get("workerIds", []):
            worker = self.workers[worker_id]
            if worker["status"] != "pending":
                continue
            attempt = {
                "id": self.new_id("att"),
                "number": len(worker["attempts"]) + 1,
                "processKind": body.get("processKind"),
                "processKey": body.get("processKey"),
            }
            worker["attempts"].append(attempt)
            worker["status"] = "running"
            part["status"] = "running"
            return 200, {
                "assignment": {
                    "benchmarkId": self.benchmarks[slug]["id"],
                    "benchmarkSlug": slug,
                    "runId": run_id,
                    "participantId": f"p_{name}",
                    "participantSlug": name,
                    "workerId": worker_id,
                    "workerIndex": worker["workerIndex"],
                    "workerCount": worker["workerCount"],
                    "attemptId": attempt["id"],
                    "attemptNumber": attempt["number"],
                    "taskRange": worker["taskRange"],
                    "targetConcurrency": worker["targetConcurrency"],
                }
            }
        return 200, {"assignment": None}

    def _worker(self, slug: str, run_id: str, worker_id: str, body: Any) -> dict[str, Any]:
        self._run(slug, run_id)
        worker = self.workers.get(worker_id)
        if worker is None or worker["runId"] != run_id:
            raise _ApiError(404, "Worker not found")
        if not worker["attempts"] or body.get("attemptId") != worker["attempts"][-1]["id"]:
            raise _ApiError(409, "attemptId does not match the active attempt")
        return worker

    def _h_heartbeat(
        self, slug: str, run_id: str, worker_id: str, *, query: Any, body: Any
    ) -> tuple[int, Any]:
        worker = self._worker(slug, run_id, worker_id, body)
        samples = body.get("concurrency")
        if samples is not None:
            steps = [sample.get("step") for sample in samples]
            if len(samples) > 20 or len(set(steps)) != len(steps):
                raise _ApiError(400, "concurrency: at most 20 samples with unique steps")
        worker["heartbeats"].append(body)
        worker["lastHeartbeat"] = (time.monotonic(), body)
        for key in ("progressDone", "progressInFlight", "progressErrors", "progressTotal"):
            if key in body:
                worker[key] = body[key]
        return 200, {"worker": self._public_worker(worker), "attempt": worker["attempts"][-1]}

    def _h_events(
        self, slug: str, run_id: str, worker_id: str, *, query: Any, body: Any
    ) -> tuple[int, Any]:
        worker = self._worker(slug, run_id, worker_id, body)
        if body.get("type") != "task_results" or not isinstance(body.get("records"), list):
            raise _ApiError(400, "Expected a task_results batch")
        seq = body.get("sequenceNumber")
        if not isinstance(seq, int):
            raise _ApiError(400, "sequenceNumber is required")
        if seq in worker["events"]:
            return 200, {"accepted": 0, "duplicate": True}
        worker["events"][seq] = body
        return 200, {
            "accepted": len(body["records"]),
            "eventBatchId": self.new_id("eb"),
            "queued": False,
            "duplicate": False,
        }

    def _end(
        self, slug: str, run_id: str, worker_id: str, body: Any, status: str
    ) -> tuple[int, Any]:
        worker = self._worker(slug, run_id, worker_id, body)
        if worker["status"] in ("completed", "failed") and worker["status"] != status:
            raise _ApiError(409, f"Worker already {worker['status']}")
        worker["status"] = status
        if status == "failed":
            worker["error"] = {
                "errorCode": body.get("errorCode"),
                "errorMessage": body.get("errorMessage"),
            }
        return 200, {"worker": self._public_worker(worker), "attempt": worker["attempts"][-1]}

    def _h_complete(
        self, slug: str, run_id: str, worker_id: str, *, query: Any, body: Any
    ) -> tuple[int, Any]:
        return self._end(slug, run_id, worker_id, body, "completed")

    def _h_release(
        self, slug: str, run_id: str, worker_id: str, *, query: Any, body: Any
    ) -> tuple[int, Any]:
        return self._end(slug, run_id, worker_id, body, "pending")

    def _h_fail(
        self, slug: str, run_id: str, worker_id: str, *, query: Any, body: Any
    ) -> tuple[int, Any]:
        return self._end(slug, run_id, worker_id, body, "failed")

    def _h_create_artifact(
        self, slug: str, run_id: str, worker_id: str, *, query: Any, body: Any
    ) -> tuple[int, Any]:
        worker = self._worker(slug, run_id, worker_id, body)
        if not body.get("kind"):
            raise _ApiError(400, "kind is required")
        artifact_id = self.new_id("art")
        token = self.new_id("upl")
        artifact = {
            "id": artifact_id,
            "workerId": worker_id,
            "runId": run_id,
            "kind": body["kind"],
            "contentType": body.get("contentType"),
            "name": body.get("name"),
            "metadata": body.get("metadata"),
            "uploadToken": token,
            "content": None,
        }
        self.artifacts[artifact_id] = artifact
        worker["artifacts"].append(artifact_id)
        return 200, {
            "artifact": {k: v for k, v in artifact.items() if k not in ("content", "uploadToken")},
            "artifactId": artifact_id,
            "uploadUrl": f"{self.root_url}/_upload/{token}",
            "uploadUrlExpiresAt": "2999-01-01T00:00:00.000Z",
            "objectKey": f"artifacts/{artifact_id}",
        }

    def uploaded_artifacts(self, run_id: str | None = None) -> list[dict[str, Any]]:
        """Artifacts whose content was uploaded."""
        with self.lock:
            return [
                a
                for a in self.artifacts.values()
                if a["content"] is not None and (run_id is None or a["runId"] == run_id)
            ]

    def upload(self, token: str, headers: dict[str, str], body: bytes) -> tuple[int, Any]:
        """The presigned PUT target."""
        if "authorization" in headers:
            return 400, {"error": "Presigned uploads must not carry an Authorization header"}
        with self.lock:
            for artifact in self.artifacts.values():
                if artifact["uploadToken"] == token:
                    artifact["content"] = body
                    artifact["uploadContentType"] = headers.get("content-type")
                    return 200, None
        return 404, {"error": "Unknown upload"}

    def device_code(self, form: dict[str, list[str]]) -> tuple[int, Any]:
        """``POST /api/auth/device/code`` (RFC 8628 §3.1)."""
        client_id = form.get("client_id", [""])[0]
        if not client_id:
            return 400, {"error": "invalid_client", "error_description": "client_id is required"}
        with self.lock:
            settings = dict(self.device_settings)
            device = self.new_id("dc")
            user_code = f"WDJB-{len(self.device_codes) + 1:04d}"
            self.device_codes[device] = {
                "user_code": user_code,
                "client_id": client_id,
                "resource": form.get("resource", [""])[0],
                "scope": form.get("scope", [""])[0],
                "issued": time.monotonic(),
                "expires_in": settings["expires_in"],
                "approve_after": settings["approve_after"],
                "script": list(settings["script"]),
                "polls": 0,
                "approved": False,
                "denied": False,
            }
        page = settings.get("verification_uri") or f"{self.root_url}/device"
        return 200, {
            "device_code": device,
            "user_code": user_code,
            "verification_uri": page,
            "verification_uri_complete": f"{page}?user_code={user_code}",
            "expires_in": settings["expires_in"],
            "interval": settings["interval"],
        }

    def _device_token(self, form: dict[str, list[str]]) -> tuple[int, Any]:
        code = self.device_codes.get(form.get("device_code", [""])[0])
        if code is None or code["client_id"] != form.get("client_id", [""])[0]:
            return 400, {"error": "invalid_grant", "error_description": "Unknown device code"}
        code["polls"] += 1
        if time.monotonic() - code["issued"] > code["expires_in"]:
            return 400, {"error": "expired_token", "error_description": "The code has expired"}
        if code["script"]:
            error = code["script"].pop(0)
            return 400, {"error": error, "error_description": f"scripted {error}"}
        if code["denied"]:
            return 400, {"error": "access_denied", "error_description": "The user said no"}
        after = code["approve_after"]
        if not code["approved"] and not (after is not None and code["polls"] >= after):
            return 400, {
                "error": "authorization_pending",
                "error_description": "Waiting for the user",
            }
        del self.device_codes[form["device_code"][0]]
        return 200, self._issue_tokens(code["client_id"], scope=code["scope"])

    def _issue_tokens(self, client_id: str, scope: str | None = None) -> dict[str, Any]:
        new_refresh = self.new_id("rt")
        self.refresh_tokens[new_refresh] = client_id
        access = self.new_id("access-token")
        if self.tokens:
            self.tokens.add(access)
        answer: dict[str, Any] = {
            "access_token": access,
            "refresh_token": new_refresh,
            "expires_in": 3600,
            "token_type": "Bearer",
        }
        if scope:
            answer["scope"] = scope
        return answer

    def oauth_token(self, form: dict[str, list[str]]) -> tuple[int, Any]:
        """``POST /api/auth/oauth2/token``: the refresh grant and the device-code grant."""
        grant = form.get("grant_type", [""])[0]
        if grant == "urn:ietf:params:oauth:grant-type:device_code":
            with self.lock:
                return self._device_token(form)
        refresh = form.get("refresh_token", [""])[0]
        client_id = form.get("client_id", [""])[0]
        with self.lock:
            if grant != "refresh_token" or self.refresh_tokens.get(refresh) != client_id:
                return 400, {"error": "invalid_grant"}
            del self.refresh_tokens[refresh]
            new_refresh = self.new_id("rt")
            self.refresh_tokens[new_refresh] = client_id
            access = self.new_id("access-token")
            if self.tokens:
                self.tokens.add(access)
        return 200, {
            "access_token": access,
            "refresh_token": new_refresh,
            "expires_in": 3600,
            "token_type": "Bearer",
        }


#: ``generatedAt`` of the read endpoints: fixed, so that two reads of the same data are equal.
GENERATED_AT = "2026-01-02T03:05:00.000Z"


def _now_iso() -> str:
    return GENERATED_AT


def _page(items: list[Any], query: dict[str, list[str]]) -> list[Any]:
    offset = int(query.get("offset", ["0"])[0])
    limit = int(query.get("limit", ["100"])[0])
    return items[offset : offset + limit]


def _nearest_rank(values: list[float], p: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(p / 100 * len(ordered)) - 1))]


def _summary(items: list[dict[str, Any]], count_key: str = "taskCount") -> dict[str, Any]:
    """The platform's result summary of records (or steps): counts, success rate, latency."""
    latencies = [
        float(i["latencyMs"]) for i in items if isinstance(i.get("latencyMs"), int | float)
    ]
    success = sum(i.get("status") == "success" for i in items)
    errors = sum(i.get("status") == "error" for i in items)
    started = [i["startedAt"] for i in items if i.get("startedAt")]
    completed = [i["completedAt"] for i in items if i.get("completedAt")]
    return {
        count_key: len(items),
        "successCount": success,
        "errorCount": errors,
        "otherCount": len(items) - success - errors,
        "latencyCount": len(latencies),
        "successRate": success / len(items) if items else 0,
        "latencyMs": {
            "min": min(latencies) if latencies else None,
            "avg": sum(latencies) / len(latencies) if latencies else None,
            "p50": _nearest_rank(latencies, 50),
            "p95": _nearest_rank(latencies, 95),
            "p99": _nearest_rank(latencies, 99),
            "max": max(latencies) if latencies else None,
        },
        **(
            {
                "firstStartedAt": min(started, default=None),
                "lastCompletedAt": max(completed, default=None),
            }
            if count_key == "taskCount"
            else {}
        ),
    }


def _participant_rows(records: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    by_participant: dict[str, list[dict[str, Any]]] = {}
    for participant, record in records:
        by_participant.setdefault(participant, []).append(record)
    return [
        {"participantSlug": name, "provider": None} | _summary(items)
        for name, items in by_participant.items()
    ]


def _iteration(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "taskIndex": item.get("taskIndex"),
        "status": item.get("status"),
        "latencyMs": item.get("latencyMs"),
        "startedAt": item.get("startedAt"),
        "completedAt": item.get("completedAt"),
        "data": item.get("data") or {},
    }


def _artifact_text(artifact: dict[str, Any]) -> str:
    content: bytes = artifact["content"]
    if "gzip" in str(artifact.get("contentType") or ""):
        content = gzip.decompress(content)
    return content.decode("utf-8", "replace")


_LOG_LINE = re.compile(r"^(\d{4}-\d\d-\d\dT\S+) (\[task \d+\] )?\[(debug|info|warn|error)\] (.*)$")


def _log_line(n: int, line: str) -> dict[str, Any]:
    """One worker-log line as the platform parses it: ``<ISO> [task i] [level] message`` gives
    its time, level and message; any other line (a step's ``  error: …``) is a bare message."""
    found = _LOG_LINE.match(line)
    if found is None:
        return {"n": n, "ts": None, "level": "info", "msg": line}
    message = (found.group(2) or "") + found.group(4)
    return {"n": n, "ts": found.group(1), "level": found.group(3), "msg": message}


def _match(method: str, path: str) -> tuple[str | None, tuple[str, ...]]:
    segments = [unquote(s) for s in path.strip("/").split("/")] if path.strip("/") else []
    # Match on the raw segments joined with a separator that cannot occur inside one.
    raw = "".join("/" + s.replace("/", "\x00") for s in segments)
    for m, pattern, name in _COMPILED:
        if m != method:
            continue
        found = pattern.match(raw)
        if found:
            return name, tuple(g.replace("\x00", "/") for g in found.groups())
    return None, ()


def _route_of(method: str, path: str) -> str:
    if path.startswith("/_upload/"):
        return "upload"
    if path.startswith("/_download/"):
        return "download"
    if path == "/api/auth/oauth2/token":
        return "oauth_token"
    if path == "/api/auth/device/code":
        return "device_code"
    if path.startswith("/api/v1"):
        return _match(method, path[len("/api/v1") :])[0] or "unknown"
    return "unknown"


def _make_handler(platform: LoopbackPlatform) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _serve(self) -> None:
            split = urlsplit(self.path)
            raw_path = split.path
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            route = _route_of(self.command, raw_path)
            decoded = "/".join(unquote(s) for s in raw_path.split("/"))
            rec = RecordedRequest(
                self.command,
                raw_path,
                decoded,
                route,
                parse_qs(split.query),
                headers,
                body,
                raw_query=split.query,
            )
            with platform.lock:
                platform.requests.append(rec)
            fault = platform._take_fault(route, self.command)
            if fault is not None:
                if fault.delay:
                    time.sleep(fault.delay)
                if fault.drop_after:
                    rec.status, _ = self._dispatch(rec)
                if fault.call is not None:
                    fault.call(rec)
                if fault.drop or fault.drop_after:
                    rec.status = -1 if fault.drop else rec.status
                    self.close_connection = True
                    with contextlib.suppress(OSError):
                        self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if fault.huge:
                    self._huge(
                        rec, fault.status or 200, fault.huge, fault.declare_length, fault.encoding
                    )
                    return
                if fault.trickle:
                    status, payload = self._dispatch(rec)
                    self._trickle(rec, status, payload, fault.trickle, fault.trickle_for)
                    return
                if fault.malformed is not None:
                    status, payload = self._dispatch(rec)
                    ok = 200 <= status < 300
                    self._reply(rec, status, fault.malformed if ok else payload)
                    return
                if fault.cut_off is not None:
                    status, payload = self._dispatch(rec)
                    self._cut_off(rec, status, payload, fault.cut_off, fault.declare_length)
                    return
                if fault.status is not None:
                    extra = {"Retry-After": fault.retry_after} if fault.retry_after else {}
                    payload = (
                        fault.body
                        if fault.body is not None
                        else {"error": f"injected {fault.status}"}
                    )
                    self._reply(rec, fault.status, payload, extra)
                    return
            if rec.route == "download":
                status, content, content_type = platform.download(
                    rec.raw_path[len("/_download/") :]
                )
                rec.status = status
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)
                return
            status, payload = self._dispatch(rec)
            self._reply(rec, status, payload)

        def _dispatch(self, rec: RecordedRequest) -> tuple[int, Any]:
            if rec.route == "upload":
                return platform.upload(rec.raw_path[len("/_upload/") :], rec.headers, rec.body)
            if rec.route == "oauth_token":
                return platform.oauth_token(parse_qs(rec.body.decode()))
            if rec.route == "device_code":
                return platform.device_code(parse_qs(rec.body.decode()))
            if not rec.raw_path.startswith("/api/v1"):
                return 404, {"error": "Not found"}
            try:
                data = json.loads(rec.body) if rec.body else None
            except ValueError:
                return 400, {"error": "Invalid JSON"}
            try:
                return platform.handle(
                    rec.method, rec.raw_path[len("/api/v1") :], rec.query, rec.headers, data
                )
            except _ApiError as exc:
                return exc.status, {"error": str(exc)}

        def _reply(
            self,
            rec: RecordedRequest,
            status: int,
            payload: Any,
            extra: dict[str, str] | None = None,
        ) -> None:
            rec.status = status
            data = b"" if payload is None else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (extra or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        def _huge(
            self,
            rec: RecordedRequest,
            status: int,
            size: int,
            declare: bool,
            encoding: str | None,
        ) -> None:
            # A JSON object {"x": "aaaa…"} of exactly ``size`` bytes, written 64 KiB at a time
            # (compressed on the way with an ``encoding``: then no Content-Length).
            rec.status = status
            self.close_connection = True
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            if declare and encoding is None:
                self.send_header("Content-Length", str(size))
            if encoding is not None:
                self.send_header("Content-Encoding", encoding.removeprefix("raw-"))
            self.send_header("Connection", "close")
            self.end_headers()
            wbits = {"gzip": 31, "deflate": 15, "raw-deflate": -15}.get(encoding or "", 0)
            squeeze = zlib.compressobj(9, zlib.DEFLATED, wbits) if wbits else None

            def write(data: bytes) -> None:
                self.wfile.write(squeeze.compress(data) if squeeze is not None else data)

            head, tail = b'{"x": "', b'"}'
            block = b"a" * 65536
            left = size - len(head) - len(tail)
            with contextlib.suppress(OSError):  # the client stops reading: broken pipe
                write(head)
                while left > 0:
                    write(block[: min(left, len(block))])
                    left -= len(block)
                write(tail)
                if squeeze is not None:
                    self.wfile.write(squeeze.flush())
                self.wfile.flush()

        def _cut_off(
            self, rec: RecordedRequest, status: int, payload: Any, keep: int, declare: bool
        ) -> None:
            rec.status = status
            data = b"" if payload is None else json.dumps(payload).encode()
            self.close_connection = True
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            if declare:
                self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            with contextlib.suppress(OSError):
                self.wfile.write(data[:keep])
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)

        def _trickle(
            self,
            rec: RecordedRequest,
            status: int,
            payload: Any,
            interval: float,
            duration: float | None,
        ) -> None:
            rec.status = status
            data = b"" if payload is None else json.dumps(payload).encode()
            self.close_connection = True
            head = (
                f"HTTP/1.1 {status} {self.responses.get(status, ('',))[0]}\r\n"
                "Content-Type: application/json\r\n"
                f"Content-Length: {len(data)}\r\n"
                "Connection: close\r\n"
                "X-Slow-Loris: "
            ).encode()
            end = None if duration is None else time.monotonic() + duration
            try:
                self.wfile.write(head)
                while not platform.stopping.is_set() and (end is None or time.monotonic() < end):
                    self.wfile.write(b"a")
                    self.wfile.flush()
                    platform.stopping.wait(interval)
                if not platform.stopping.is_set():
                    self.wfile.write(b"\r\n\r\n" + data)
                    self.wfile.flush()
            except OSError:  # the client gave up and hung up
                pass

        do_GET = do_PUT = do_POST = do_PATCH = do_DELETE = _serve

    return Handler


def iter_lines(data: bytes) -> Iterator[str]:
    """Non-empty lines of an uploaded text artifact."""
    yield from (line for line in data.decode().splitlines() if line)


__all__ += ["iter_lines"]
