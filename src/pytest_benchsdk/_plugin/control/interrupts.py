"""Ctrl-C during a bench session, in the process that owns the runs.

The first Ctrl-C stops the session as pytest expects (a ``KeyboardInterrupt``). A second one,
pressed while the session stops, is absorbed: wherever it would land (pytest formatting the
first one's traceback, the summary, the store's last writes) it would abort the session end
with a traceback and leave the runs half-finished. A third one stops at once, as Python would.
Only the default handler is replaced (an IDE or a tool with its own handler keeps it), and only
in the main thread.

"While the session stops" lasts until pytest has done everything it does: the handler is handed
back only when ``pytest_cmdline_main`` returns (:meth:`CtrlC.release`), after every plugin's
``pytest_unconfigure`` and the config's cleanups (pytest's unraisable-exception check collects
the whole heap there, a few hundred milliseconds after a bench run), not at this plugin's own
unconfigure. On pytest's command line, whose process exits right after, a session stopping on a
first Ctrl-C keeps it to the end: through the interpreter's exit, where a second press is
ignored once the ``atexit`` callbacks start (Python then resets its handlers, and a press would
kill the process with the signal instead of the session's exit status).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import CodeType, FrameType, TracebackType
from typing import Any, Final

from pytest_benchsdk._base.ctrlc import ctrl_c_interrupt, marking

__all__ = ["NOT_CTRL_C_LINE", "STOPPED_LINE", "STOPPING_LINE", "CtrlC", "give_every_frame_a_line"]

#: What the session prints on the first Ctrl-C (tests wait for it before pressing again).
STOPPING_LINE: Final = (
    "benchsdk: Ctrl-C: stopping; what ran is kept and stored as interrupted (a second Ctrl-C "
    "is ignored while that happens, a third stops at once)"
)

#: What the session prints when a ``KeyboardInterrupt`` nobody pressed Ctrl-C for (a fixture's
#: or a hook's own) stops it.
NOT_CTRL_C_LINE: Final = (
    "benchsdk: stopping on a KeyboardInterrupt that was raised, not a Ctrl-C; what ran is kept "
    "and stored as interrupted"
)


class _Phase:
    """:meth:`CtrlC.phase`: a slotted context manager (entered three times per item)."""

    __slots__ = ("_ctrl_c",)

    def __init__(self, ctrl_c: CtrlC) -> None:
        self._ctrl_c = ctrl_c

    def __enter__(self) -> None:
        self._ctrl_c._enter_phase()

    def __exit__(self, *exc_info: object) -> None:
        self._ctrl_c.in_phase = False


class CtrlC:
    """Counts Ctrl-C presses once :meth:`install` ed; see the module."""

    def __init__(self) -> None:
        self.presses = 0
        self._previous: Any = None
        self._installed = False
        #: An item's run protocol is under way in this process, and one of its phases
        #: (setup, call, teardown: where benchmark and fixture code runs).
        self.in_protocol = False
        self.in_phase = False
        #: A first press landed between two phases, in pytest's own bookkeeping.
        self.deferred = False
        #: Told of a deferred press: the session stops after the item (``shouldstop``).
        self.on_deferred: Callable[[], None] | None = None
        #: Told of the first press, in the signal handler, before anything else: no
        #: iteration starts from then on (it must only set flags).
        self.on_first_press: Callable[[], None] | None = None
        # Three phases an item: one reusable context manager, not a generator's each time.
        self._phase = _Phase(self)

    def phase(self) -> _Phase:
        """Around one phase of an item (``with ctrl_c.phase():``): a press deferred before it
        is raised as it starts."""
        return self._phase

    def _enter_phase(self) -> None:
        if self.deferred:
            self.deferred = False
            raise ctrl_c_interrupt()
        self.in_phase = True

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            return
        self._previous = signal.signal(signal.SIGINT, self._handle)
        self._installed = True
        marking(True)

    def restore(self) -> None:
        if self._installed and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, self._previous)
            self._installed = False
            marking(False)

    def release(self) -> None:
        """pytest is done with the session: hand the handler back, unless the session stops on
        a first Ctrl-C and pytest's command line exits next (see the module)."""
        if self._installed and self.presses == 1 and _command_line_exits_next():
            atexit.register(self._ignore_while_exiting)
            return
        self.restore()

    def _ignore_while_exiting(self) -> None:
        if self._installed and self.presses == 1:
            signal.signal(signal.SIGINT, signal.SIG_IGN)

    @property
    def pressed(self) -> bool:
        return self.presses > 0

    @property
    def counting(self) -> bool:
        """Whether presses are counted here (else another handler has Ctrl-C)."""
        return self._installed

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        __tracebackhide__ = True  # pytest shows where the user's code was, not this frame
        self.presses += 1
        if self.presses == 1 and self.on_first_press is not None:
            self.on_first_press()
        if self.presses == 1 and self.in_protocol and not self.in_phase:
            # Between an item's phases the main thread is in pytest's own bookkeeping
            # (reports, the capture and log handlers being swapped): a KeyboardInterrupt
            # there leaves it half done (a capture generator that fails when collected, a
            # report never made). The press takes effect at the next phase's start, or
            # when the item is done, whichever comes first.
            self.deferred = True
            if self.on_deferred is not None:
                self.on_deferred()
            return
        if self.presses == 2:
            return  # the session is stopping: let it store what ran and say so
        if self.presses > 2:
            _stop_at_once()
        raise ctrl_c_interrupt()


#: What the session prints on the third Ctrl-C, just before the process ends.
STOPPED_LINE: Final = (
    "benchsdk: third Ctrl-C: stopping at once; what is stored stays stored, and a run left "
    "unfinished is marked interrupted the next time the store is opened"
)


def _stop_at_once() -> None:
    """End the process now, as Python's own Ctrl-C would (killed by SIGINT: status 130 in a
    shell), with one line instead of a traceback from wherever the press landed, and no
    ``finally`` or ``atexit`` code of anyone's run on the way out."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    with contextlib.suppress(Exception):
        os.write(2, f"\n{STOPPED_LINE}\n".encode())
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)


#: pytest's command-line entry points (pytest 8: ``console_main``; 9: ``_console_main``).
_COMMAND_LINE = frozenset({"console_main", "_console_main"})


def _command_line_exits_next() -> bool:
    """Whether the pytest call running now is pytest's command line (``pytest``, ``python -m
    pytest``), whose process exits when it returns, rather than ``pytest.main()`` called by a
    program (pytester's in-process runs included) that goes on afterwards."""
    frame: FrameType | None = sys._getframe(1)
    # Up to pytest's entry (``main``/``_main`` in ``_pytest.config``), then whoever called it.
    while frame is not None and frame.f_globals.get("__name__") != "_pytest.config":
        frame = frame.f_back
    while frame is not None and frame.f_globals.get("__name__") == "_pytest.config":
        if frame.f_code.co_name in _COMMAND_LINE:
            return True
        frame = frame.f_back
    return False


def give_every_frame_a_line(error: BaseException) -> None:
    """Give each traceback entry of ``error`` (and of the exceptions it chains) a line number.

    A signal handler runs between bytecode instructions, some of which have no line (CPython
    3.11 lands there in a comprehension's or a ``finally``'s cleanup): the ``KeyboardInterrupt``
    it raises then has a traceback entry whose ``tb_lineno`` is ``None``, and pytest, formatting
    that traceback for the interrupted session, fails with a ``TypeError`` instead of exiting
    with status 2. Such an entry is replaced by one at the nearest earlier line of its code
    (the function's first line if there is none).
    """
    seen: set[int] = set()
    pending: list[BaseException | None] = [error]
    while pending:
        exc = pending.pop()
        if exc is None or id(exc) in seen:
            continue
        seen.add(id(exc))
        exc.__traceback__ = _with_lines(exc.__traceback__)
        pending += [exc.__cause__, exc.__context__]


def _with_lines(tb: TracebackType | None) -> TracebackType | None:
    entries: list[TracebackType] = []
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    rest: TracebackType | None = None
    for entry in reversed(entries):  # a RecursionError's traceback is a thousand entries deep
        lineno: int | None = entry.tb_lineno  # typeshed says int; CPython can give None
        if lineno is None:
            line = _line_before(entry.tb_frame.f_code, entry.tb_lasti)
            entry = TracebackType(rest, entry.tb_frame, entry.tb_lasti, line)
        else:
            entry.tb_next = rest
        rest = entry
    return rest


def _line_before(code: CodeType, offset: int) -> int:
    line = code.co_firstlineno
    for start, _end, number in code.co_lines():
        if start > offset:
            break
        if number is not None:
            line = number
    return line
