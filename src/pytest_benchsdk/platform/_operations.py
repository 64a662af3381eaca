"""The operations behind outbox entries: one platform request (or two) per entry kind.

Private to the platform package: :class:`._delivery.Sender` calls :func:`_perform` for each
entry and turns what it raises into retries, rejections or a stop. An operation reads the ids
produced by earlier entries (platform run, worker assignment) from the store's per-run state
and saves the ids it produces there, so a replay by :func:`._delivery.resubmit` needs nothing
else.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from ._client import BenchmarkClient
from ._errors import BenchmarkApiError
from ._outbox import STATE_RUN, OutboxEntryLike, OutboxStore, worker_state_key

__all__ = ["dashboard_url"]


class _Reject(Exception):
    """The entry cannot be delivered, ever (message for people)."""


class _Blocked(_Reject):
    """An entry this one needs was rejected, so this one cannot be sent either."""


def _kind_label(entry: OutboxEntryLike) -> str:
    payload = entry.payload if isinstance(entry.payload, Mapping) else {}
    participant = payload.get("participant")
    label = entry.kind + (f" {participant}" if participant else "")
    if entry.kind == "events":
        label += f" #{payload.get('sequenceNumber')}"
    return label


def _platform_run(store: OutboxStore, entry: OutboxEntryLike) -> dict[str, Any]:
    run = store.state_get(entry.run_id, STATE_RUN)
    if not isinstance(run, dict) or not run.get("id"):
        raise _Blocked(f"{_kind_label(entry)}: not sent because the platform run was never created")
    return run


def _assignment(store: OutboxStore, entry: OutboxEntryLike) -> dict[str, Any]:
    participant = entry.payload["participant"]
    assignment = store.state_get(entry.run_id, worker_state_key(participant))
    if not isinstance(assignment, dict) or not assignment.get("workerId"):
        raise _Blocked(
            f"{_kind_label(entry)}: not sent because no platform worker was claimed for "
            f"{participant}"
        )
    return assignment


def dashboard_url(api_base_url: str, org_slug: str | None, slug: str, run_id: str) -> str:
    """Upstream's dashboard URL: API base without ``/api/v1``, then org/benchmarks/slug/runs/id."""
    root = api_base_url.rstrip("/")
    if root.endswith("/api/v1"):
        root = root[: -len("/api/v1")]
    return f"{root}/{org_slug}/benchmarks/{slug}/runs/{run_id}"


def _perform(store: OutboxStore, client: BenchmarkClient, entry: OutboxEntryLike) -> Any:
    payload: Mapping[str, Any] = entry.payload
    slug: str = payload["slug"]
    kind = entry.kind
    if kind == "benchmark":
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
    if kind == "run":
        data = client.create_run(slug, payload["body"])
        run = data.get("run") or {}
        if not run.get("id"):
            raise _Reject(f"{_kind_label(entry)}: the platform answered without a run id")
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
    run_id = str(_platform_run(store, entry)["id"])
    if kind == "participant":
        return {
            "participant": client.upsert_participant(
                slug, run_id, payload["participant"], payload.get("body") or {}
            )
        }
    if kind == "plan":
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
    if kind == "claim":
        assignment = client.claim_worker(
            slug, run_id, payload["participant"], payload.get("body") or {}
        )
        if assignment is None:
            raise _Reject(
                f"{_kind_label(entry)}: No pending worker to claim for run {run_id} — it may "
                "already be fully claimed."
            )
        store.state_set(entry.run_id, worker_state_key(payload["participant"]), assignment)
        return {"workerId": assignment.get("workerId"), "attemptId": assignment.get("attemptId")}
    if kind == "summary":
        result = client.submit_run_summary(slug, run_id, payload["body"])
        return result if isinstance(result, dict) else {}
    assignment = _assignment(store, entry)
    worker_id = str(assignment["workerId"])
    attempt_id = str(assignment["attemptId"])
    if kind == "events":
        start = int((assignment.get("taskRange") or {}).get("start") or 0)
        records = [
            {**r, "taskIndex": int(r["taskIndex"]) + start} if start else r
            for r in payload["records"]
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
    if kind == "artifact":
        return _upload_artifact(store, client, entry, slug, run_id, worker_id, attempt_id)
    if kind == "finish":
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
    raise _Reject(f"unknown outbox entry kind {kind!r}")


def _upload_artifact(
    store: OutboxStore,
    client: BenchmarkClient,
    entry: OutboxEntryLike,
    slug: str,
    run_id: str,
    worker_id: str,
    attempt_id: str,
) -> Any:
    payload = entry.payload
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
            raise _Reject("Benchmark artifact upload URL is missing.")
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
