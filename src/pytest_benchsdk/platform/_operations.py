"""The operations behind outbox entries: one platform request (or two) per entry kind.

Private to the platform package: :class:`._delivery.Sender` calls :func:`perform` for each
entry and turns what it raises into retries, rejections (:class:`Reject`, :class:`Blocked`) or
a stop. :data:`OPERATIONS` maps each entry kind to its operation. An operation reads the ids
produced by earlier entries (platform run, worker assignment) from the store's per-run state
and saves the ids it produces there, so a replay by :func:`._delivery.resubmit` needs nothing
else.

Every operation is safe to repeat after a lost answer: batches keep their sequence numbers,
upserts and the keyed run creation are get-or-create, a finished worker answers 409. The claim
is the one that is not: before its first request it notes in the state that a claim may reach
the platform (:func:`claim_tried_key`); a retry then first looks for the worker whose current
attempt carries the claim's ``processKey`` (this run's), and an answer already stored is reused.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from pytest_benchsdk._base.redact import redact_url
from pytest_benchsdk.platform._client import BenchmarkClient
from pytest_benchsdk.platform._errors import (
    BenchmarkApiError,
    PlatformConnectionError,
    platform_message,
)
from pytest_benchsdk.platform._outbox import (
    STATE_RUN,
    OutboxEntryLike,
    OutboxStore,
    worker_state_key,
)

__all__ = [
    "OPERATIONS",
    "Blocked",
    "Operation",
    "Reject",
    "claim_tried_key",
    "dashboard_url",
    "kind_label",
    "perform",
]


class Reject(Exception):
    """The entry cannot be delivered, ever (message for people)."""


class Blocked(Reject):
    """An entry this one needs did not produce what this one needs (it was rejected, or the
    platform answered it without a worker), so this one cannot be sent either.

    ``needs`` names that entry (``claim e2b``), ``why`` says what became of it, for people.
    """

    def __init__(self, entry: OutboxEntryLike, needs: str, why: str) -> None:
        super().__init__(f"{kind_label(entry)}: not sent because it needs {needs}, which {why}")
        self.needs = needs
        self.why = why


def kind_label(entry: OutboxEntryLike) -> str:
    """How messages name an entry: its kind, participant and batch number (``events e2b #3``)."""
    payload = entry.payload if isinstance(entry.payload, Mapping) else {}
    participant = payload.get("participant")
    label = entry.kind + (f" {participant}" if participant else "")
    if entry.kind == "events":
        label += f" #{payload.get('sequenceNumber')}"
    return label


def _fate(store: OutboxStore, key: str) -> tuple[str, str]:
    """How messages name the entry ``key`` and what became of it (it was not what its
    dependants needed)."""
    needed = store.outbox_get(key)
    if needed is None:
        return key.partition("/")[2] or key, "was never queued"
    label = kind_label(needed)
    error = needed.last_error
    if needed.state == "rejected":
        return label, f"was rejected ({error})" if error else "was rejected"
    if needed.state == "sent":
        return label, "was answered without what they need"
    return label, "is not sent yet"


def _platform_run_id(store: OutboxStore, entry: OutboxEntryLike) -> str:
    run = store.state_get(entry.run_id, STATE_RUN)
    if not isinstance(run, dict) or not run.get("id"):
        needs, why = _fate(store, f"{entry.run_id}/run")
        raise Blocked(entry, needs, f"{why}: the platform run was never created")
    return str(run["id"])


def _assignment(store: OutboxStore, entry: OutboxEntryLike) -> dict[str, Any]:
    participant = entry.payload["participant"]
    assignment = store.state_get(entry.run_id, worker_state_key(participant))
    if not isinstance(assignment, dict) or not assignment.get("workerId"):
        key = f"{entry.run_id}/claim/{participant}"
        claim = store.outbox_get(key)
        if claim is not None and claim.state == "sent":
            # A pool with no pending worker left when a resubmit claimed again. Other processes
            # took them all, or this run's first claim did: the platform applied it after the
            # session that sent it had died, and its answer (the attempt id) is lost.
            raise Blocked(
                entry,
                kind_label(claim),
                f"got no worker: the platform's pool had no pending worker left for "
                f"{participant} (other processes took them, or the platform applied this "
                "run's first claim after the session that sent it had died; that worker then "
                "stays running on the platform until the platform gives up on it)",
            )
        needs, why = _fate(store, key)
        raise Blocked(entry, needs, f"{why}: no platform worker was claimed for {participant}")
    return assignment


class _Attempt(NamedTuple):
    """The claimed worker attempt an entry reports for."""

    slug: str
    run_id: str
    assignment: dict[str, Any]
    worker_id: str
    attempt_id: str


def _attempt(store: OutboxStore, entry: OutboxEntryLike) -> _Attempt:
    """The attempt of the entry's participant (``Blocked`` while the run or the claim is
    missing)."""
    run_id = _platform_run_id(store, entry)
    assignment = _assignment(store, entry)
    return _Attempt(
        entry.payload["slug"],
        run_id,
        assignment,
        str(assignment["workerId"]),
        str(assignment["attemptId"]),
    )


def dashboard_url(api_base_url: str, org_slug: str | None, slug: str, run_id: str) -> str:
    """Upstream's dashboard URL: API base without ``/api/v1``, then org/benchmarks/slug/runs/id
    (a URL for people: any ``user:password@`` of the base is replaced by ``***@``)."""
    root = redact_url(api_base_url).rstrip("/")
    if root.endswith("/api/v1"):
        root = root[: -len("/api/v1")]
    return f"{root}/{org_slug}/benchmarks/{slug}/runs/{run_id}"


def _heartbeat(
    client: BenchmarkClient,
    slug: str,
    run_id: str,
    assignment: Mapping[str, Any],
    progress: Mapping[str, Any] | None,
) -> None:
    """One best-effort heartbeat of a claimed worker attempt (telemetry: never fatal)."""
    body: dict[str, Any] = {"attemptId": assignment.get("attemptId")}
    if progress:
        body.update(
            {k: int(v) for k, v in progress.items() if k.startswith("progress") and v is not None}
        )
    with contextlib.suppress(BenchmarkApiError, PlatformConnectionError, ValueError):
        client.heartbeat(slug, run_id, str(assignment["workerId"]), body)


#: One entry's operation: its platform request(s); returns the response kept with the entry.
Operation = Callable[[OutboxStore, BenchmarkClient, OutboxEntryLike], Any]


def _upsert_benchmark(store: OutboxStore, client: BenchmarkClient, entry: OutboxEntryLike) -> Any:
    payload: Mapping[str, Any] = entry.payload
    slug: str = payload["slug"]
    initialize = bool(payload.get("identityIsOurs", True))
    if not initialize:
        try:
            client.get_benchmark(slug)
        except BenchmarkApiError as exc:
            if exc.status != 404:
                raise
            initialize = True
    body: dict[str, Any] = {}
    if initialize:
        body["name"] = payload["name"]
        if payload.get("config"):
            body["config"] = payload["config"]
    return {"benchmark": client.upsert_benchmark(slug, body)}


def _create_run(store: OutboxStore, client: BenchmarkClient, entry: OutboxEntryLike) -> Any:
    payload: Mapping[str, Any] = entry.payload
    slug: str = payload["slug"]
    data = client.create_run(slug, payload["body"])  # its shape is checked: run.id is there
    run = data["run"]
    org = data.get("organizationSlug")
    url = dashboard_url(client.base_url, org, slug, str(run["id"]))
    state = {
        "id": str(run["id"]),
        "name": run.get("name"),
        "organizationSlug": org,
        "dashboardUrl": url,
    }
    store.state_set(entry.run_id, STATE_RUN, state)
    store.set_platform_run(entry.run_id, str(run["id"]), url)
    return {"run": {"id": run["id"], "name": run.get("name")}, "organizationSlug": org}


def _upsert_participant(store: OutboxStore, client: BenchmarkClient, entry: OutboxEntryLike) -> Any:
    payload: Mapping[str, Any] = entry.payload
    slug: str = payload["slug"]
    run_id = _platform_run_id(store, entry)
    return {
        "participant": client.upsert_participant(
            slug, run_id, payload["participant"], payload.get("body") or {}
        )
    }


def _plan_workers(store: OutboxStore, client: BenchmarkClient, entry: OutboxEntryLike) -> Any:
    payload: Mapping[str, Any] = entry.payload
    slug: str = payload["slug"]
    run_id = _platform_run_id(store, entry)
    try:
        return {
            "workers": client.plan_workers(
                slug, run_id, payload["participant"], payload.get("body") or {}
            )
        }
    except BenchmarkApiError as exc:
        # Already planned: by an earlier attempt whose answer was lost, or (run key) by
        # another process; the claim decides whether a worker is left for us.
        if exc.status == 409:
            return {"alreadyPlanned": True}
        raise


def _own_worker(
    client: BenchmarkClient, slug: str, run_id: str, participant: str, process_key: str
) -> dict[str, Any] | None:
    """The assignment of the running worker whose current attempt this process key claimed
    (a claim whose answer was lost), rebuilt from the participant's worker listing; ``None``
    when there is none, or the platform's listing does not say who claimed what."""
    for worker in client.list_workers(slug, run_id, participant):
        attempt = worker.get("currentAttempt") if isinstance(worker, dict) else None
        if (
            not isinstance(attempt, dict)
            or attempt.get("processKey") != process_key
            or worker.get("status") != "running"
            or not worker.get("id")
            or not attempt.get("id")
        ):
            continue
        return {
            "benchmarkSlug": slug,
            "runId": run_id,
            "participantSlug": participant,
            "workerId": worker["id"],
            "workerIndex": worker.get("workerIndex"),
            "workerCount": worker.get("workerCount"),
            "attemptId": attempt["id"],
            "attemptNumber": attempt.get("number"),
            "taskRange": worker.get("taskRange"),
            "targetConcurrency": worker.get("targetConcurrency"),
        }
    return None


def claim_tried_key(participant: str) -> str:
    """State key saying a claim request for the participant may have reached the platform."""
    return f"platform.claim-sent.{participant}"


def _claim_worker(store: OutboxStore, client: BenchmarkClient, entry: OutboxEntryLike) -> Any:
    payload: Mapping[str, Any] = entry.payload
    slug: str = payload["slug"]
    participant: str = payload["participant"]
    run_id = _platform_run_id(store, entry)
    body: Mapping[str, Any] = payload.get("body") or {}
    key = worker_state_key(participant)
    # The claim's answer was stored but the entry not marked sent (killed in between): the
    # worker is ours already; claiming again would find no pending worker.
    assignment = store.state_get(entry.run_id, key)
    recovered = isinstance(assignment, dict) and bool(assignment.get("workerId"))
    if not recovered and store.state_get(entry.run_id, claim_tried_key(participant)):
        # A claim was sent before and its answer never stored (lost on the way back, or the
        # process died): find our worker by the claim's process key before claiming again.
        process_key = body.get("processKey")
        found = None
        if isinstance(process_key, str) and process_key:
            try:
                found = _own_worker(client, slug, run_id, participant, process_key)
            except BenchmarkApiError as exc:
                if exc.transient:
                    raise
                # No listing to learn from (an older platform): claim, as before.
        if found is not None:
            store.state_set(entry.run_id, key, found)
            assignment, recovered = found, True
    if not recovered:
        store.state_set(entry.run_id, claim_tried_key(participant), True)
        assignment = client.claim_worker(slug, run_id, participant, body)
        if assignment is None and payload.get("pool"):
            # A full pool is an answer, not a failure: this process runs none of the iterations.
            return {"assignment": None}
        if assignment is None:
            raise Reject(
                f"{kind_label(entry)}: No pending worker to claim for run {run_id} — it may "
                "already be fully claimed. None of its workers is running for this run's "
                f"process key ({body.get('processKey')})."
            )
        store.state_set(entry.run_id, key, assignment)
    assert isinstance(assignment, dict)
    # Upstream heartbeats at once when a worker starts: progress 0 of the claimed range.
    count = (assignment.get("taskRange") or {}).get("count")
    total = int(count) if isinstance(count, int) else int(payload.get("total") or 0)
    _heartbeat(
        client,
        slug,
        run_id,
        assignment,
        {"progressDone": 0, "progressInFlight": 0, "progressErrors": 0, "progressTotal": total},
    )
    response = {"workerId": assignment.get("workerId"), "attemptId": assignment.get("attemptId")}
    return {**response, "recovered": True} if recovered else response


def _submit_summary(store: OutboxStore, client: BenchmarkClient, entry: OutboxEntryLike) -> Any:
    payload: Mapping[str, Any] = entry.payload
    slug: str = payload["slug"]
    run_id = _platform_run_id(store, entry)
    result = client.submit_run_summary(slug, run_id, payload["body"])
    return result if isinstance(result, dict) else {}


def _submit_events(store: OutboxStore, client: BenchmarkClient, entry: OutboxEntryLike) -> Any:
    payload: Mapping[str, Any] = entry.payload
    slug, run_id, assignment, worker_id, attempt_id = _attempt(store, entry)
    start = int((assignment.get("taskRange") or {}).get("start") or 0)
    records = [
        {**r, "taskIndex": int(r["taskIndex"]) + start} if start else r for r in payload["records"]
    ]
    result = client.submit_task_results(
        slug,
        run_id,
        worker_id,
        {
            "attemptId": attempt_id,
            "sequenceNumber": payload["sequenceNumber"],
            "isFinal": bool(payload["isFinal"]),
            "records": records,
        },
    )
    return result if isinstance(result, dict) else {}


def _send_progress(store: OutboxStore, client: BenchmarkClient, entry: OutboxEntryLike) -> Any:
    """Round mode: the heartbeat after one iteration, with that moment's counters (upstream's
    ``reporter.setProgress`` + ``heartbeat``); telemetry, so a failed one is not retried."""
    payload: Mapping[str, Any] = entry.payload
    slug, run_id, assignment, _, _ = _attempt(store, entry)
    _heartbeat(client, slug, run_id, assignment, payload.get("progress"))
    return {}


def _finish_worker(store: OutboxStore, client: BenchmarkClient, entry: OutboxEntryLike) -> Any:
    payload: Mapping[str, Any] = entry.payload
    slug, run_id, assignment, worker_id, attempt_id = _attempt(store, entry)
    # The final counters before the worker ends (also when the run is replayed by a resubmit).
    _heartbeat(client, slug, run_id, assignment, payload.get("progress"))
    try:
        if payload.get("failed"):
            return client.fail_worker(
                slug,
                run_id,
                worker_id,
                attempt_id,
                payload.get("errorCode") or "Error",
                payload.get("errorMessage") or "One or more tasks failed",
            )
        return client.complete_worker(slug, run_id, worker_id, attempt_id)
    except BenchmarkApiError as exc:
        if exc.status == 409:  # already finished by an attempt whose answer was lost
            return {"alreadyFinished": True}
        raise


#: Close failures that are the platform's verdict, not a transient problem (the rest retry;
#: 401/403 stop delivery like for any entry).
_CLOSE_VERDICTS = frozenset({400, 404, 409, 410, 422})


def _close_run(store: OutboxStore, client: BenchmarkClient, entry: OutboxEntryLike) -> Any:
    """Close the platform run when this process claimed the last worker of a pool (upstream:
    the claimant of ``workerIndex == workerCount - 1``). A refusal is kept as the response
    (``closed: False``): a failed close changes nothing else."""
    payload: Mapping[str, Any] = entry.payload
    slug: str = payload["slug"]
    run_id = _platform_run_id(store, entry)
    last = False
    for participant in payload.get("participants") or []:
        assignment = store.state_get(entry.run_id, worker_state_key(participant))
        if isinstance(assignment, dict):
            index, count = assignment.get("workerIndex"), assignment.get("workerCount")
            last = last or (
                isinstance(index, int) and isinstance(count, int) and index == count - 1
            )
    if not last:
        return {"closed": False, "lastWorker": False}
    body: dict[str, Any] = {}
    if payload.get("closeAfterMs") is not None:
        body["closeAfterMs"] = payload["closeAfterMs"]
    try:
        data = client.close_run(slug, run_id, body)
    except BenchmarkApiError as exc:
        if exc.status not in _CLOSE_VERDICTS:
            raise
        return {
            "closed": False,
            "lastWorker": True,
            "runId": run_id,
            "error": platform_message(exc),
        }
    return {
        "closed": True,
        "lastWorker": True,
        "run": data.get("run") or {"id": run_id},
        "outcome": data.get("outcome") or {},
    }


def _upload_artifact(store: OutboxStore, client: BenchmarkClient, entry: OutboxEntryLike) -> Any:
    payload: Mapping[str, Any] = entry.payload
    slug, run_id, _, worker_id, attempt_id = _attempt(store, entry)
    body = payload["body"]
    content = base64.b64decode(body) if payload.get("encoding") == "base64" else body.encode()
    content_type = payload.get("contentType") or "application/octet-stream"
    # Two steps: create, then PUT to the presigned URL. The created artifact is remembered so a
    # failed PUT is retried against the same artifact instead of creating a second one.
    upload_key = f"upload:{entry.key}"
    created = store.state_get(entry.run_id, upload_key)
    if not isinstance(created, dict) or not created.get("uploadUrl"):
        create: dict[str, Any] = {
            "attemptId": attempt_id,
            "kind": payload["kind"],
            "contentType": content_type,
        }
        if payload.get("name"):
            create["name"] = payload["name"]
        create["metadata"] = {**(payload.get("metadata") or {}), "sizeBytes": len(content)}
        created = client.create_artifact(slug, run_id, worker_id, create)
        if not created.get("uploadUrl"):
            raise Reject("Benchmark artifact upload URL is missing.")
        store.state_set(entry.run_id, upload_key, created)
    try:
        client.upload_presigned(str(created["uploadUrl"]), content, content_type)
    except BenchmarkApiError as exc:
        if exc.status in (403, 404, 410):
            # Expired or unknown presigned URL: create a fresh artifact next time.
            store.state_set(entry.run_id, upload_key, None)
            raise BenchmarkApiError(
                503, exc.body, message=str(exc), method="PUT", path="<upload url>"
            ) from None
        raise
    artifact_id = created.get("artifactId") or (created.get("artifact") or {}).get("id")
    return {"artifactId": artifact_id, "sizeBytes": len(content)}


#: The operation of each outbox entry kind.
OPERATIONS: Mapping[str, Operation] = {
    "benchmark": _upsert_benchmark,
    "run": _create_run,
    "participant": _upsert_participant,
    "plan": _plan_workers,
    "claim": _claim_worker,
    "summary": _submit_summary,
    "events": _submit_events,
    "artifact": _upload_artifact,
    "finish": _finish_worker,
    "close": _close_run,
    "progress": _send_progress,
}


def perform(store: OutboxStore, client: BenchmarkClient, entry: OutboxEntryLike) -> Any:
    """Send one outbox entry: its kind's operation. Raises :class:`Reject` (never deliverable,
    also for an unknown kind), :class:`Blocked` (an entry it needs was rejected), or the
    client's errors (:class:`BenchmarkApiError`, connection errors) for the sender to judge.
    """
    operation = OPERATIONS.get(entry.kind)
    if operation is None:
        raise Reject(f"unknown outbox entry kind {entry.kind!r}")
    return operation(store, client, entry)
