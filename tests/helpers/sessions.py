"""Helpers for the plugin's pytester tests: bench-file sources and reading what a run left.

Imported as ``from helpers.sessions import ...`` (``tests/`` is on ``sys.path``: the
``pythonpath`` setting in ``pyproject.toml``).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from pytest_benchsdk import ResultStore
from pytest_benchsdk.store import StoredRun

HEADER = (
    "from pytest_benchsdk import (\n"
    "    Participant, Phase, Shape, TaskError, define_benchmark_config, define_on_complete,\n"
    "    define_task,\n"
    ")\n"
)

#: A sync task measuring a deterministic value from the task index.
SIMPLE_TASK = """
@define_task
def task(participant, task_index, measure):
    measure(value=10 + task_index)
"""

SCORING = (
    '{"metrics": [{"key": "value", "unit": "ms", "ceiling": 100, '
    '"weights": {"median": 0.6, "p95": 0.25, "p99": 0.15}}]}'
)


def bench(
    config: str = 'participants=[Participant("p1"), Participant("p2")], iterations=2',
    task: str = SIMPLE_TASK,
    *,
    slug: str = "demo",
    name: str = "Demo",
    prelude: str = "",
) -> str:
    """A bench file's source: ``config`` is the keyword arguments after slug and name."""
    body = textwrap.dedent(config).strip()
    return (
        HEADER
        + textwrap.dedent(prelude)
        + "\nconfig = define_benchmark_config(\n"
        + f"    benchmark_slug={slug!r},\n    benchmark_name={name!r},\n"
        + textwrap.indent(body, "    ")
        + ",\n)\n"
        + textwrap.dedent(task)
    )


def store_path(pytester: pytest.Pytester) -> Path:
    return pytester.path / ".benchmarks" / "benchsdk.sqlite3"


def stored_runs(path: Path) -> list[StoredRun]:
    """Every run in the store, oldest first."""
    with ResultStore(path) as store:
        return list(reversed(store.list_runs(limit=1000)))


def stored_records(path: Path, run_id: str) -> dict[str, list[dict[str, Any]]]:
    """``{participant: [record wire dicts by task index]}`` of one stored run."""
    with ResultStore(path) as store:
        return {
            pr.participant: [r.to_wire() for r in pr.records]
            for pr in store.participant_records(run_id)
        }


def read_json(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def without_cpu(data: Any) -> Any:
    """A record's or step's ``data`` without the ``cpu_ms`` every sync task and step records
    (a timing, which differs from run to run); None when that was all of it."""
    if not isinstance(data, dict) or "cpu_ms" not in data:
        return data
    assert data["cpu_ms"] >= 0
    rest = {k: v for k, v in data.items() if k != "cpu_ms"}
    return rest or None


def without_cpu_times(record: dict[str, Any]) -> dict[str, Any]:
    """A wire record with :func:`without_cpu` applied to its data and its steps' data (a key
    left empty is dropped)."""
    out = dict(record)
    for holder in [out, *(out.get("steps") or [])]:
        if "data" in holder:
            data = without_cpu(holder["data"])
            if data is None:
                del holder["data"]
            else:
                holder["data"] = data
    return out


def stable_record(record: dict[str, Any]) -> dict[str, Any]:
    """A record's wire dict without timestamps, latencies and CPU times (also in its
    steps)."""
    drop = {"startedAt", "completedAt", "latencyMs"}
    out = {k: v for k, v in record.items() if k not in drop}
    if "steps" in out:
        out["steps"] = [{k: v for k, v in s.items() if k not in drop} for s in out["steps"]]
    return without_cpu_times(out)


def assert_usage_error(pytester: pytest.Pytester, args: list[str], message: str) -> None:
    """A dry-run session with ``args`` on a simple bench file stops with a usage error whose
    line matches ``message`` (fnmatch)."""
    pytester.makepyfile(bench_x=bench())
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])


def bench_cli(root: Path, *args: str) -> str:
    """What ``python -m pytest_benchsdk ARGS`` prints, run in ``root`` (it must succeed); the
    CLI runs in this process (:func:`helpers.cli.cli`)."""
    from helpers.cli import cli

    done = cli(*args, cwd=root)
    assert done.returncode == 0, done.stderr
    return done.stdout
