"""Ctrl-C during a bench session, in the process that owns the runs.

The first Ctrl-C stops the session as pytest expects (a ``KeyboardInterrupt``). A second one,
pressed while the session stops, is absorbed: wherever it would land (pytest formatting the
first one's traceback, the summary, the store's last writes) it would abort the session end
with a traceback and leave the runs half-finished. A third one stops at once, as Python would.
Only the default handler is replaced (an IDE or a tool with its own handler keeps it), and only
in the main thread, for the session's duration.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Any, Final

__all__ = ["STOPPING_LINE", "CtrlC"]

#: What the session prints on the first Ctrl-C (tests wait for it before pressing again).
STOPPING_LINE: Final = (
    "benchsdk: Ctrl-C: stopping; what ran is kept and stored as interrupted (a second Ctrl-C "
    "is ignored while that happens, a third stops at once)"
)


class CtrlC:
    """Counts Ctrl-C presses once :meth:`install` ed; see the module."""

    def __init__(self) -> None:
        self.presses = 0
        self._previous: Any = None
        self._installed = False

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            return
        self._previous = signal.signal(signal.SIGINT, self._handle)
        self._installed = True

    def restore(self) -> None:
        if self._installed and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, self._previous)
            self._installed = False

    @property
    def pressed(self) -> bool:
        return self.presses > 0

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        __tracebackhide__ = True  # pytest shows where the user's code was, not this frame
        self.presses += 1
        if self.presses == 2:
            return  # the session is stopping: let it store what ran and say so
        if self.presses > 2:
            self.restore()
        raise KeyboardInterrupt
