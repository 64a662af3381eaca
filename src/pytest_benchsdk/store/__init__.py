"""Local results store: every run, record, log line and score in one SQLite file, plus an outbox.

The controller writes each record the moment it arrives, and every write commits before the call
returns, so a crash (even ``SIGKILL``) right after :meth:`ResultStore.add_record` loses nothing;
a session's store (``group_records=True``) journals each record instead and commits them in
groups, and the next writable open commits what a killed session's journal still holds.
Platform traffic goes through the *outbox*: a durable queue of payloads the platform layer writes
before it sends them and marks sent after a 2xx, so what fails can be resubmitted later. Outbox
and per-run state writes are synced to disk (``synchronous = FULL`` for their commits), record
writes are not (``NORMAL``): a power cut can drop only records no batch was queued for yet.

A file that is not a results store (an SQLite database of another application) is refused
before anything is written to it. A damaged store (SQLite finds it malformed: SQLite's
``quick_check`` when it is opened, or the first statement that meets the damage) raises
:class:`StoreCorruptError` and is never written to again; :func:`check_store` runs SQLite's
``integrity_check`` on one, :func:`recover_store` copies what can be read of it into a new
file. A run still ``running`` whose process is gone (killed) is marked ``interrupted`` by the
next writable open (``runs.session_id`` names the process; :attr:`ResultStore.abandoned`).
``ResultStore(path, read_only=True)`` reads a store without writing anything, also when the
file or its directory cannot be written.

Concurrency: one :class:`ResultStore` may be used from several threads (pytest's main thread and
the platform sender thread) — a lock serialises them. Several processes may share one file
(sequential or simultaneous pytest runs): SQLite's WAL journal and a busy timeout serialise
writers. WAL needs a local file system (not NFS/SMB).

What is stored: run metadata (benchmark slug/name, file, resolved knobs, participants, config
snapshot, :class:`~pytest_benchsdk._base.runenv.RunEnvironment`), records and scores as their wire
(upstream camelCase) JSON, log lines, outbox payloads/responses and small per-run state values.
The store never redacts: callers must never pass secrets (API keys, tokens, Authorization
headers) in any argument, including outbox payloads, error texts and state values.

Schema (``PRAGMA user_version`` = :data:`SCHEMA_VERSION`):

* ``runs(id, run_id UNIQUE, benchmark_slug, benchmark_name, file, knobs, participants,
  config_snapshot, environment, dry_run, session_id, status, started_at, finished_at,
  platform_run_id, dashboard_url, run_key)`` — JSON columns hold compact JSON text; ``run_key``
  (schema 4) is the ``--bench-run-key`` the run was started with.
* ``records(run_id, participant, task_index, status, wire, received_at)``, primary key
  ``(run_id, participant, task_index)``.
* ``log_lines(id, run_id, participant, line)``.
* ``scores(run_id, position, provider, wire)``, primary key ``(run_id, position)``.
* ``outbox(id, run_id, kind, key UNIQUE, payload, depends_on, state, attempts, last_error,
  response, created_at, updated_at, sent_at)``; ``state`` is one of :data:`OUTBOX_STATES`.
* ``run_state(run_id, key, value, updated_at)``, primary key ``(run_id, key)``.
* ``outbox_runs(run_id PRIMARY KEY, platform_url, platform_org, lease_holder, lease_expires,
  updated_at)`` (schema 2): the platform a run's outbox goes to, and the delivery lease (one
  process delivers a run at a time; :meth:`ResultStore.outbox_lease`).
* ``run_analyses(run_id, kind, body, updated_at)``, primary key ``(run_id, kind)`` (schema 3):
  analyses kept beside the scores (the baseline comparison, the scores' uncertainty, run
  warnings), one JSON document per kind (:meth:`ResultStore.save_analysis`).
* ``baselines(name, benchmark_slug, run_id, updated_at)``, primary key ``(name,
  benchmark_slug)`` (schema 5): named baselines (``--bench-save NAME``), the run a name stands
  for among one benchmark's runs (:meth:`ResultStore.set_baseline`).

Code: :mod:`._connection` opens the file and runs the transactions (and defines the errors),
:mod:`._schema` creates and migrates the tables, :mod:`._results` holds :class:`ResultStore` with
its queries, :mod:`._outbox` the outbox's (which :class:`ResultStore` inherits), :mod:`._journal`
keeps the grouped records' journal and replays orphaned ones, :mod:`._owner` tells whether a run's
process is gone, :mod:`._health` checks and salvages a damaged file.
Only the names in ``__all__`` here are public.
"""

from pytest_benchsdk._base.public import publish
from pytest_benchsdk.store._connection import (
    StoreCorruptError,
    StoreError,
    StoreReadOnlyError,
    UnknownRunError,
)
from pytest_benchsdk.store._health import StoreCheck, StoreRecovery, check_store, recover_store
from pytest_benchsdk.store._outbox import OUTBOX_STATES, OutboxEntry, OutboxTarget
from pytest_benchsdk.store._results import RUN_STATUSES, NamedBaseline, ResultStore, StoredRun
from pytest_benchsdk.store._schema import SCHEMA_VERSION

__all__ = [
    "OUTBOX_STATES",
    "RUN_STATUSES",
    "SCHEMA_VERSION",
    "NamedBaseline",
    "OutboxEntry",
    "OutboxTarget",
    "ResultStore",
    "StoreCheck",
    "StoreCorruptError",
    "StoreError",
    "StoreReadOnlyError",
    "StoreRecovery",
    "StoredRun",
    "UnknownRunError",
    "check_store",
    "recover_store",
]

# Name this package as the home of what it re-exports (reprs, tracebacks, pickles, docs).
publish(__name__, globals())
