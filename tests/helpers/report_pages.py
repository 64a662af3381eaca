"""Reading an HTML report (``pytest_benchsdk.report``) back: its figures' JSON, the plotly.js it
carries, every string it hands to plotly; and a store of many runs written directly, for the
history chart.

Imported as ``from helpers.report_pages import ...``.
"""

from __future__ import annotations

import base64
import gzip
import json
import random
import re
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from pytest_benchsdk.records import StepRecord, TaskRecord
from pytest_benchsdk.store import ResultStore

_FIGURE = re.compile(
    r'<figure class="chart" data-chart="(?P<key>[^"]+)" data-traces="(?P<traces>\d+)">'
    r'.*?<script type="application/json" id="(?P<id>[^"]+)-data">(?P<json>.*?)</script>',
    re.S,
)


def figures(text: str) -> dict[str, dict[str, Any]]:
    """Each chart's plotly figure (``{"data": [...], "layout": {...}}``) by its key."""
    return {m["key"]: json.loads(m["json"]) for m in _FIGURE.finditer(text)}


def figure_list(text: str) -> list[tuple[str, int, dict[str, Any]]]:
    """``(key, data-traces, figure)`` of every chart, in page order."""
    return [(m["key"], int(m["traces"]), json.loads(m["json"])) for m in _FIGURE.finditer(text)]


def strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value (keys excluded)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def plotly_source(text: str) -> str:
    """The plotly.js the page carries (gzip + base64 in a data block), unpacked."""
    match = re.search(
        r'<script type="application/octet-stream" id="plotly-js" '
        r'data-encoding="gzip\+base64">([A-Za-z0-9+/=\s]+)</script>',
        text,
    )
    assert match is not None, "no packed plotly.js in the page"
    return gzip.decompress(base64.b64decode(match.group(1))).decode("utf-8")


def without_plotly(text: str) -> str:
    """The page without its packed plotly.js block."""
    return re.sub(r'<script type="application/octet-stream" id="plotly-js".*?</script>', "", text)


def write_runs(
    path: Path,
    *,
    runs: int,
    participants: Sequence[str] = ("alpha", "beta"),
    samples: int = 20,
    slug: str = "history",
    environment: Any = None,
) -> list[str]:
    """A store with ``runs`` runs of one benchmark (one a day, oldest first; a latency, two
    steps and a ``value`` per record), written with the store's own API as a session would;
    returns their ids, oldest first."""
    from pytest_benchsdk._base.runenv import collect_run_environment

    env = environment or collect_run_environment({}, path.parent)
    start = datetime(2026, 11, 1, 8, 0, tzinfo=timezone.utc)
    ids = []
    with ResultStore(path) as store:
        for day in range(runs):
            rng = random.Random(day)
            run_id = store.begin_run(
                benchmark_slug=slug,
                benchmark_name="History",
                file="bench_history.py",
                knobs={"iterations": samples, "concurrency": 1},
                participants=list(participants),
                config_snapshot={},
                environment=env,
                dry_run=True,
            )
            wires = []
            for index, name in enumerate(participants):
                for i in range(samples):
                    at = start + timedelta(days=day, seconds=i)
                    latency = (index + 1) * 10 * rng.lognormvariate(0, 0.1)
                    iso = at.strftime("%Y-%m-%dT%H:%M:%S.000Z")
                    record = TaskRecord(
                        task_index=i,
                        status="success",
                        started_at=iso,
                        completed_at=iso,
                        latency_ms=latency,
                        steps=[
                            StepRecord("create", "success", latency_ms=latency / 3),
                            StepRecord("exec", "success", latency_ms=latency / 2),
                        ],
                        data={"value": latency * 2},
                    )
                    wires.append((name, record.to_wire()))
            store.replace_records(run_id, wires, {})
            store.finish_run(run_id, "passed")
            ids.append(run_id)
    return ids
