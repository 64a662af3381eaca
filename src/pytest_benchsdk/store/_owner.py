"""Which process owns a stored run, and whether that process is gone.

Private to :mod:`pytest_benchsdk.store`. :meth:`ResultStore.begin_run` records the process
that begins a run in the run's ``session_id`` column as ``host|pid|start|boot|pidns``: the
host name, the process id, the process's start time (clock ticks since boot, from
``/proc/<pid>/stat``), the kernel's boot id and the process's PID namespace (the last three on
Linux only, empty elsewhere). A later writable open of the store marks a run still
``running`` whose owner is gone as ``interrupted`` (:func:`owner_gone`).

The check errs on the side of "alive": a run is only ever marked when its owner is certainly
gone, so a live session's run (in another process, another container sharing the file, or on
another host) is never touched. A process id alone could be reused by an unrelated process
later, which the start time tells apart; a different boot id on the same host means the host
restarted since; a different PID namespace (another container) or another host cannot be
checked from here and counts as alive.
"""

from __future__ import annotations

import functools
import os
import socket
import sys
from pathlib import Path

__all__ = ["current_owner", "owner_gone"]

_PROC = Path("/proc")


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return ""


def _stat(pid: int) -> tuple[str, str] | None:
    """``(state, start ticks)`` of a process from ``/proc/<pid>/stat``, or None (no such
    process, or no ``/proc``)."""
    text = _read(_PROC / str(pid) / "stat")
    # The command name (field 2) is in parentheses and may hold spaces or parentheses itself.
    fields = text.rpartition(")")[2].split()
    if len(fields) < 20:
        return None
    return fields[0], fields[19]


def _pid_namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def _boot_id() -> str:
    return _read(_PROC / "sys" / "kernel" / "random" / "boot_id")


@functools.lru_cache(maxsize=4)
def _owner_of(pid: int) -> str:
    found = _stat(pid)
    start = found[1] if found is not None else ""
    return "|".join((socket.gethostname(), str(pid), start, _boot_id(), _pid_namespace()))


def current_owner() -> str:
    """This process as a run's owner: ``host|pid|start|boot|pidns``."""
    # Cached per pid: a forked child is another owner.
    return _owner_of(os.getpid())


def owner_gone(owner: str | None) -> bool:
    """Whether the process recorded as ``owner`` (:func:`current_owner`'s form) has certainly
    ended; False when that cannot be told (no owner recorded, another host, another PID
    namespace, a process that cannot be looked at)."""
    if not owner:
        return False
    host, _, rest = owner.partition("|")
    pid_text, start, boot, namespace = ([*rest.split("|"), "", "", ""])[:4]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    here_boot = _boot_id()
    if boot and here_boot and boot != here_boot:
        return True  # the host restarted since: every process of that boot is gone
    here_namespace = _pid_namespace()
    if namespace and here_namespace and namespace != here_namespace:
        return False  # another container's process ids mean nothing here
    pid = int(pid_text)
    if pid <= 0 or sys.platform == "win32":
        return False  # (Windows: os.kill(pid, 0) would not just look, it would signal)
    if _PROC.joinpath("self", "stat").exists():
        found = _stat(pid)
        if found is None:
            return True
        state, ticks = found
        # A zombie (killed, not yet reaped by its parent) is gone; another start time is
        # another process that reuses the id.
        return state in ("Z", "X") or bool(start and ticks != start)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False
