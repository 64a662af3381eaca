"""Deadlines on blocking platform work: the one mechanism.

A socket read has a timeout, but a platform that sends its answer a byte at a time never trips
it. The work is therefore done on a daemon thread and waited for until the deadline; at the
deadline the caller goes on and the thread is abandoned, as at Ctrl-C: a request still in
flight ends on its own (or with the process), its outbox entry stays queued, and nothing is
sent twice (every operation is safe to repeat). The session's delivery wait
(``--bench-upload-timeout``), the resubmit's (``--bench-resubmit-timeout``) and every single
request's (:data:`._client.REQUEST_TIMEOUT_ENV`) end this way.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["call_within", "join_within"]

T = TypeVar("T")


def join_within(thread: threading.Thread, seconds: float) -> bool:
    """Wait for ``thread`` at most ``seconds``; whether it has ended."""
    end = time.monotonic() + max(0.0, seconds)
    while thread.is_alive():
        left = end - time.monotonic()
        if left <= 0:
            return False
        thread.join(left)
    return True


def call_within(
    fn: Callable[[], T],
    seconds: float,
    expired: Callable[[], BaseException],
    *,
    name: str = "benchsdk-deadline",
) -> T:
    """``fn()`` on a daemon thread, waited for at most ``seconds``: its result, or what it
    raised; at the deadline ``expired()`` is raised and the thread abandoned."""
    outcome: list[tuple[bool, object]] = []

    def run() -> None:
        try:
            outcome.append((True, fn()))
        except BaseException as exc:  # handed to the caller, whatever it is
            outcome.append((False, exc))

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    if not join_within(thread, seconds) or not outcome:
        raise expired()
    ok, value = outcome[0]
    if not ok:
        assert isinstance(value, BaseException)
        raise value
    return value  # type: ignore[return-value]
