"""Finishing the platform lifecycle of runs whose session never finished them (killed).

Private to the platform package; :func:`._delivery.resubmit` calls :func:`recover_run` for each
run the store lists in ``outbox_unfinished_runs`` once it holds the run's delivery lease (so the
session that owns a run is gone, or it would hold the lease).

The store is the source of truth: a session keeps the newest records in memory before it turns
them into ``events`` entries, so a killed session leaves records that no entry carries. For each
participant without a ``finish`` entry this queues, after the participant's last entry, what the
session would have queued: the ``plan`` and ``claim`` when missing, ``events`` batches carrying
exactly the stored records no earlier batch carries (sequence numbers continue after the last
queued batch; the last new batch is ``isFinal``), and a ``finish`` entry: ``complete`` when every
iteration ran and succeeded, else ``fail`` — ``Interrupted`` when iterations are missing (the
session ended before they ran), ``Error`` when all ran and one failed. Nothing already queued is
queued again, so a resubmit delivers every stored record exactly once. What only the dead
session held (the system-metrics samples, the run summary, which needs the scores) is not
recreated; the ``worker.log`` artifact is rebuilt from the stored log lines (at or above
``log_level``) when the session had not queued it. A worker pool's run gets its ``close``
entry (sent only if this process claimed a last worker, as in a session). A participant whose
claim found no pool worker left ran nothing here and is left alone.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Mapping
from typing import Any

from pytest_benchsdk.platform._outbox import OutboxEntryLike, OutboxStore, process_key
from pytest_benchsdk.records import LOG_LEVELS

__all__ = ["INTERRUPTED_CODE", "recover_run"]

#: ``errorCode`` of a worker failed by a resubmit because its session ended mid-way.
INTERRUPTED_CODE = "Interrupted"


_LEVEL = re.compile(r"^\S+ \[task \d+\] \[(\w+)\] ")


def _kept(line: str, log_level: str) -> bool:
    found = _LEVEL.match(line)
    level = found.group(1) if found and found.group(1) in LOG_LEVELS else "info"
    return LOG_LEVELS.index(level) >= LOG_LEVELS.index(log_level)


def _participant_of(entry: OutboxEntryLike) -> str | None:
    payload = entry.payload if isinstance(entry.payload, Mapping) else {}
    name = payload.get("participant")
    return name if isinstance(name, str) else None


def recover_run(
    store: OutboxStore, run_id: str, *, batch_size: int = 1000, log_level: str = "info"
) -> list[str]:
    """Queue the missing end of every unfinished participant of ``run_id``; returns their names.

    Also marks the stored run ``interrupted`` if it is still ``running``.
    """
    if log_level not in LOG_LEVELS:
        log_level = "info"
    entries = list(store.outbox_entries(run_id))
    keys = {entry.key for entry in entries}
    run_key = f"{run_id}/run"
    run_entry = next((e for e in entries if e.key == run_key), None)
    if run_entry is None:
        return []
    slug = run_entry.payload["slug"]
    stored = {
        pr.participant: [dict(r.to_wire()) for r in pr.records]
        for pr in store.participant_records(run_id)
    }
    names = [name for name, records in stored.items() if records]
    for entry in entries:
        name = _participant_of(entry)
        # A claim that found the pool full: nothing ran here for the participant.
        full = entry.state == "sent" and entry.response == {"assignment": None}
        if entry.kind == "claim" and not full and name and name not in names:
            names.append(name)
    recovered: list[str] = []
    for name in names:
        if f"{run_id}/finish/{name}" in keys:
            continue
        own = [e for e in entries if _participant_of(e) == name]
        chain = own[-1].key if own else run_key

        def put(kind: str, suffix: str, payload: dict[str, Any], name: str = name) -> None:
            nonlocal chain
            key = f"{run_id}/{suffix}"
            store.outbox_put(
                run_id,
                kind,
                key,
                {"slug": slug, "participant": name, **payload},
                depends_on=chain,
            )
            chain = key

        plan = next((e for e in own if e.kind == "plan"), None)
        total_raw = plan.payload.get("total") if plan is not None else None
        records = sorted(stored.get(name, []), key=lambda r: int(r["taskIndex"]))
        total = int(total_raw) if isinstance(total_raw, int) else None
        if plan is None:
            put("plan", f"plan/{name}", {"body": {}, "total": total or len(records)})
        if not any(e.kind == "claim" for e in own):
            host = os.environ.get("HOSTNAME") or socket.gethostname() or "local"
            body = {"processKind": "process", "processKey": process_key(host, run_id)}
            put("claim", f"claim/{name}", {"body": body, "total": total or len(records)})
        batches = [e for e in own if e.kind == "events"]
        covered = {int(r["taskIndex"]) for e in batches for r in e.payload["records"]}
        sequence = 1 + max((int(e.payload["sequenceNumber"]) for e in batches), default=-1)
        missing = [r for r in records if int(r["taskIndex"]) not in covered]
        size = max(1, min(batch_size, 5000))
        while missing:
            chunk, missing = missing[:size], missing[size:]
            put(
                "events",
                f"events/{name}/{sequence}",
                {"sequenceNumber": sequence, "isFinal": not missing, "records": chunk},
            )
            sequence += 1
        if not any(e.key == f"{run_id}/artifact/{name}/log" for e in own):
            lines = [line for line in store.log_lines(run_id, name) if _kept(line, log_level)]
            if lines:
                put(
                    "artifact",
                    f"artifact/{name}/log",
                    {
                        "kind": "coordinator.log",
                        "contentType": "text/plain",
                        "name": "worker.log",
                        "body": "\n".join(lines) + "\n",
                        "encoding": "text",
                    },
                )
        done = len(records)
        errors = sum(1 for r in records if r.get("status") != "success")
        complete_run = total is not None and done >= total
        if not complete_run:
            code = INTERRUPTED_CODE
            message = (
                f"The pytest session ended before all tasks finished ({done} of "
                f"{total if total is not None else '?'} ran); --bench-resubmit sent the "
                "stored records"
            )
        else:
            code, message = "Error", "One or more tasks failed"
        put(
            "finish",
            f"finish/{name}",
            {
                "failed": bool(errors or not complete_run),
                "errorCode": code,
                "errorMessage": message,
                "progress": {
                    "progressDone": done,
                    "progressInFlight": 0,
                    "progressErrors": errors,
                    "progressTotal": total if total is not None else done,
                },
            },
        )
        recovered.append(name)
    pooled = any(
        e.kind == "plan" and (e.payload.get("body") or {}).get("workerCount") for e in entries
    )
    if pooled and recovered and f"{run_id}/close" not in keys:
        close: dict[str, Any] = {"slug": slug, "participants": names}
        close_after = ((run_entry.payload.get("body") or {}).get("config") or {}).get(
            "closeAfterMs"
        )
        if close_after is not None:
            close["closeAfterMs"] = close_after
        last = next(e.key for e in reversed(store.outbox_entries(run_id)))
        store.outbox_put(run_id, "close", f"{run_id}/close", close, depends_on=last)
    run = store.get_run(run_id)
    if getattr(run, "status", None) == "running":
        store.finish_run(run_id, "interrupted")
    return recovered
