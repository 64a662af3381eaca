"""Functions the store tests run in other processes (``multiprocessing``'s spawn start method
imports them by module name, so they live in an importable module, not in a test module)."""

from __future__ import annotations

from typing import Any

from pytest_benchsdk._base.runenv import RunEnvironment, Trigger
from pytest_benchsdk.records import TaskRecord
from pytest_benchsdk.store import ResultStore

#: The run environment the store tests record.
ENV = RunEnvironment(
    git_sha="0123abcd",
    git_ref="main",
    trigger=Trigger("schedule", "schedule"),
    python_version="3.11.7",
    implementation="CPython",
    platform="linux",
    arch="x64",
    machine="x86_64",
    hostname="ci-box",
)


def begin_run(store: ResultStore, slug: str, participants: tuple[str, ...] = ("p",)) -> str:
    """A dry run of benchmark ``slug`` begun in ``store`` with :data:`ENV`: its id."""
    return store.begin_run(
        benchmark_slug=slug,
        benchmark_name=slug.title(),
        file=None,
        knobs={},
        participants=list(participants),
        config_snapshot={},
        environment=ENV,
        dry_run=True,
    )


def concurrent_writer(path: str, name: str, count: int, barrier: Any) -> None:
    barrier.wait()
    with ResultStore(path) as store:
        own = store.begin_run(
            benchmark_slug=f"slug-{name}",
            benchmark_name=name,
            file=None,
            knobs={},
            participants=[name],
            config_snapshot={},
            environment=ENV,
            dry_run=True,
        )
        shared = store.list_runs(benchmark_slug="shared")[0].run_id
        for i in range(count):
            store.add_record(own, name, TaskRecord(task_index=i, status="success"))
            store.add_record(shared, name, TaskRecord(task_index=i, status="success"))
            store.outbox_put(shared, "record", f"{name}-{i}", {"i": i})
            store.state_increment(shared, "seq")


def open_fresh(path: str, barrier: Any) -> None:
    barrier.wait()
    with ResultStore(path) as store:
        store.begin_run(
            benchmark_slug="s",
            benchmark_name="S",
            file=None,
            knobs={},
            participants=[],
            config_snapshot={},
            environment=ENV,
            dry_run=False,
        )


def journal_then_wait(path: str, count: int, journalled: Any, release: Any) -> None:
    """Open ``path`` grouping records, add ``count`` records (with a log line each) inside one
    group, say so, and wait (to be SIGKILLed) without committing them."""
    from pytest_benchsdk.store import _journal

    _journal.GROUP_SECONDS = 3600.0  # one group for the whole test: no commit by time
    with ResultStore(path, group_records=True) as store:
        run_id = begin_run(store, "journal")
        for i in range(count):
            store.add_record(run_id, "p", TaskRecord(task_index=i, status="success"), [f"line {i}"])
        journalled.set()
        release.wait(120)
