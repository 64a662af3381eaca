"""Schema of the local results store and its migrations (``PRAGMA user_version``).

Migration *i* takes a file from schema version *i* to *i + 1*; a new, empty file starts at 0.
Migrations are only ever appended, never edited, so every released file can be upgraded.
Private to :mod:`pytest_benchsdk.store`, which re-exports :data:`SCHEMA_VERSION` and describes
the tables.
"""

from __future__ import annotations

import sqlite3

__all__ = ["SCHEMA_VERSION", "SchemaTooNewError", "migrate"]

#: Version of the schema this module writes.
SCHEMA_VERSION = 5


class SchemaTooNewError(Exception):
    """The file was written by a newer pytest-benchsdk (its schema version is higher)."""


_MIGRATION_1 = """
CREATE TABLE runs (
    id              INTEGER PRIMARY KEY,
    run_id          TEXT NOT NULL UNIQUE,
    benchmark_slug  TEXT NOT NULL,
    benchmark_name  TEXT NOT NULL,
    file            TEXT,
    knobs           TEXT NOT NULL,
    participants    TEXT NOT NULL,
    config_snapshot TEXT NOT NULL,
    environment     TEXT NOT NULL,
    dry_run         INTEGER NOT NULL,
    session_id      TEXT,
    status          TEXT NOT NULL DEFAULT 'running',
    started_at      TEXT NOT NULL,
    finished_at     TEXT,
    platform_run_id TEXT,
    dashboard_url   TEXT
);
CREATE INDEX runs_by_slug ON runs (benchmark_slug, id);
CREATE TABLE records (
    run_id      TEXT NOT NULL REFERENCES runs (run_id),
    participant TEXT NOT NULL,
    task_index  INTEGER NOT NULL,
    status      TEXT NOT NULL,
    wire        TEXT NOT NULL,
    received_at TEXT NOT NULL,
    PRIMARY KEY (run_id, participant, task_index)
);
CREATE TABLE log_lines (
    id          INTEGER PRIMARY KEY,
    run_id      TEXT NOT NULL REFERENCES runs (run_id),
    participant TEXT NOT NULL,
    line        TEXT NOT NULL
);
CREATE INDEX log_lines_by_run ON log_lines (run_id, participant, id);
CREATE TABLE scores (
    run_id   TEXT NOT NULL REFERENCES runs (run_id),
    position INTEGER NOT NULL,
    provider TEXT NOT NULL,
    wire     TEXT NOT NULL,
    PRIMARY KEY (run_id, position)
);
CREATE TABLE outbox (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id     TEXT NOT NULL REFERENCES runs (run_id),
    kind       TEXT NOT NULL,
    key        TEXT NOT NULL UNIQUE,
    payload    TEXT NOT NULL,
    depends_on TEXT,
    state      TEXT NOT NULL DEFAULT 'pending'
               CHECK (state IN ('pending', 'failed', 'sent', 'rejected')),
    attempts   INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    response   TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    sent_at    TEXT
);
CREATE INDEX outbox_by_state ON outbox (state, run_id, id);
CREATE TABLE run_state (
    run_id     TEXT NOT NULL REFERENCES runs (run_id),
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (run_id, key)
);
"""

# Version 2: per outbox run, the platform it is reported to (so a resubmit to another platform
# is refused unless asked for) and the delivery lease (one process delivers a run at a time).
_MIGRATION_2 = """
CREATE TABLE outbox_runs (
    run_id        TEXT PRIMARY KEY REFERENCES runs (run_id),
    platform_url  TEXT,
    platform_org  TEXT,
    lease_holder  TEXT,
    lease_expires REAL,
    updated_at    TEXT NOT NULL
);
"""

# Version 3: analyses of a run beside its scores (the baseline comparison, the scores'
# uncertainty, run-hygiene warnings), one JSON document per kind.
_MIGRATION_3 = """
CREATE TABLE run_analyses (
    run_id     TEXT NOT NULL REFERENCES runs (run_id),
    kind       TEXT NOT NULL,
    body       TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (run_id, kind)
);
"""

# Version 4: the run key a run was started with (--bench-run-key), so the shards of one keyed
# run (one CI job per provider) can be found and merged.
_MIGRATION_4 = """
ALTER TABLE runs ADD COLUMN run_key TEXT;
"""

# Version 5: named baselines (--bench-save NAME, pytest-benchsdk baseline set NAME RUN): per
# benchmark, the run a name stands for (CI pins its main branch's run under "main").
_MIGRATION_5 = """
CREATE TABLE baselines (
    name           TEXT NOT NULL,
    benchmark_slug TEXT NOT NULL,
    run_id         TEXT NOT NULL REFERENCES runs (run_id),
    updated_at     TEXT NOT NULL,
    PRIMARY KEY (name, benchmark_slug)
);
"""

# Index i holds the script taking the schema from version i to i + 1. Append, never edit.
_MIGRATIONS: tuple[str, ...] = (
    _MIGRATION_1,
    _MIGRATION_2,
    _MIGRATION_3,
    _MIGRATION_4,
    _MIGRATION_5,
)
assert len(_MIGRATIONS) == SCHEMA_VERSION


def _split_statements(script: str) -> list[str]:
    # executescript() would COMMIT our open transaction; run statements one by one instead so a
    # migration and its user_version bump commit together.
    return [part.strip() for part in script.split(";") if part.strip()]


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the schema of an open connection (autocommit mode) up to :data:`SCHEMA_VERSION`.

    Runs in one ``BEGIN IMMEDIATE`` transaction, so two processes opening a new file at once
    migrate it exactly once. Returns the version found before migrating. Raises
    :class:`SchemaTooNewError` for a file written by a newer pytest-benchsdk.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        found = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if found > SCHEMA_VERSION:
            raise SchemaTooNewError(
                f"results store schema version {found} is newer than this pytest-benchsdk "
                f"understands ({SCHEMA_VERSION}); upgrade pytest-benchsdk or use another store file"
            )
        for version in range(found, SCHEMA_VERSION):
            for statement in _split_statements(_MIGRATIONS[version]):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {version + 1}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return found
