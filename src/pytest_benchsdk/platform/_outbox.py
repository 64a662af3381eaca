"""What the platform layer needs from the results store, and the per-run state keys it uses.

Private to the platform package (:mod:`._delivery` re-exports :class:`OutboxEntryLike` and
:class:`OutboxStore`); shared by the sender, the operations it performs and the lifecycle, so
that none of them imports another just for these.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

__all__ = ["STATE_RUN", "OutboxEntryLike", "OutboxStore", "worker_state_key"]


class OutboxEntryLike(Protocol):
    """The fields of :class:`pytest_benchsdk.store.OutboxEntry` the sender reads."""

    @property
    def id(self) -> int: ...
    @property
    def run_id(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def key(self) -> str: ...
    @property
    def payload(self) -> Any: ...
    @property
    def depends_on(self) -> str | None: ...
    @property
    def state(self) -> str: ...
    @property
    def last_error(self) -> str | None: ...


class OutboxStore(Protocol):
    """The part of :class:`pytest_benchsdk.store.ResultStore` the platform layer uses."""

    def outbox_put(
        self, run_id: str, kind: str, key: str, payload: Any, *, depends_on: str | None = None
    ) -> int: ...
    def outbox_get(self, key: str) -> OutboxEntryLike | None: ...
    def outbox_pending(
        self, run_id: str | None = None, *, ready_only: bool = False
    ) -> Sequence[OutboxEntryLike]: ...
    def outbox_mark_sent(self, entry_id: int, response: Any = None) -> None: ...
    def outbox_mark_failed(self, entry_id: int, error: str, *, permanent: bool = False) -> None: ...
    def outbox_counts(self, run_id: str | None = None) -> dict[str, int]: ...
    def outbox_runs_with_pending(self) -> list[str]: ...
    def state_get(self, run_id: str, key: str, default: Any = None) -> Any: ...
    def state_set(self, run_id: str, key: str, value: Any) -> None: ...
    def set_platform_run(
        self, run_id: str, platform_run_id: str, dashboard_url: str | None
    ) -> None: ...


#: State key holding the platform run (id, name, organization slug, dashboard URL).
STATE_RUN = "platform.run"


def worker_state_key(participant: str) -> str:
    """State key holding a participant's claimed worker assignment."""
    return f"platform.worker.{participant}"
