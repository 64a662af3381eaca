"""A Ctrl-C told apart from a ``KeyboardInterrupt`` that benchmark code raises itself.

A Ctrl-C stops the session; a task that raises ``KeyboardInterrupt`` (or lets one out of a
library) only fails its own iteration. Python raises both the same way, so the handler that
turns Ctrl-C into ``KeyboardInterrupt`` (the plugin's, in ``_plugin/control/interrupts.py``) raises
one
made by :func:`ctrl_c_interrupt`, marked as a Ctrl-C's, and says so with :func:`marking`.
:func:`is_ctrl_c` then decides: a marked one is a Ctrl-C; one raised on any other thread than
the main one never is (Python runs signal handlers on the main thread only); an unmarked one
on the main thread is a Ctrl-C only when no marking handler is installed (an IDE's or a
program's own handler: nothing tells the two apart there, and stopping is the safe side) and
a Ctrl-C can arrive at all (:func:`ctrl_c_can_arrive`: not while SIGINT is ignored, as in a
background job or under ``nohup``).
"""

from __future__ import annotations

import signal
import threading

__all__ = ["ctrl_c_can_arrive", "ctrl_c_interrupt", "is_ctrl_c", "marking"]

#: The attribute a Ctrl-C's ``KeyboardInterrupt`` carries.
_MARK = "_benchsdk_ctrl_c"
#: How many marking handlers are installed (a process-wide fact, as the signal handler is).
_marking = 0


def ctrl_c_interrupt() -> KeyboardInterrupt:
    """The ``KeyboardInterrupt`` a Ctrl-C handler raises, marked as a Ctrl-C's."""
    error = KeyboardInterrupt()
    setattr(error, _MARK, True)
    return error


def marking(installed: bool) -> None:
    """A handler raising :func:`ctrl_c_interrupt` was installed (True) or removed (False)."""
    global _marking
    _marking = max(0, _marking + (1 if installed else -1))


def is_ctrl_c(error: BaseException) -> bool:
    """Whether ``error`` is a Ctrl-C (a ``KeyboardInterrupt`` a signal handler raised, also
    one that benchmark code raised while handling it), not benchmark code's own."""
    if not isinstance(error, KeyboardInterrupt):
        return False
    seen: set[int] = set()
    chained: BaseException | None = error
    while chained is not None and id(chained) not in seen:
        if getattr(chained, _MARK, False):
            return True
        seen.add(id(chained))
        chained = chained.__context__
    if threading.current_thread() is not threading.main_thread():
        return False
    return _marking == 0 and ctrl_c_can_arrive()


def ctrl_c_can_arrive() -> bool:
    """Whether a Ctrl-C can reach this process as a ``KeyboardInterrupt``: not while SIGINT is
    ignored (a process started in the background by a shell, under ``nohup``, or by a parent
    that ignores it inherits that), so then a ``KeyboardInterrupt`` is always code's own."""
    try:
        return signal.getsignal(signal.SIGINT) is not signal.SIG_IGN
    except ValueError:  # no signal module state here (an embedded interpreter)
        return True
