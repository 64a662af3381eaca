"""Instruments: counting what measured code executes, behind one small interface.

``--bench-instructions`` runs the session under Valgrind's callgrind
(:mod:`.launch` says how) and counts instructions only inside the measured regions (a bench
file's steps and task body, the ``benchmark`` fixture's calls): :class:`Counter` is what the
engine sees of it, :data:`ACTIVE` the counter of this process (None when the mode is off,
which is all the engine's hot paths look at). :mod:`.callgrind` is the one instrument so far
(client requests through a small C helper, :mod:`.build`), in the shape pytest-codspeed's
``instruments/`` has, so that another (``perf`` counters, a cache simulation) can join it.

This area imports no pytest and nothing of the package but the leaves.
"""

from __future__ import annotations

from typing import Any, Final, Protocol

from pytest_benchsdk._base.defaults import DEFAULT_INSTRUCTION_CALLS

__all__ = [
    "ACTIVE",
    "DEFAULT_CALLS",
    "INSTRUCTIONS_KEY",
    "Counter",
    "activate",
    "active",
    "deactivate",
]

#: The data key of an instruction count (per call, or per iteration for a task body): a metric
#: like ``cpu_ms``, lower is better, no unit.
INSTRUCTIONS_KEY: Final = "instructions"
#: Counted calls of a calibrated step or a benchmarked test after its one warm call.
DEFAULT_CALLS: Final = DEFAULT_INSTRUCTION_CALLS


class Counter(Protocol):
    """What the engine uses of an instrument: regions on the calling thread, and ``calls``
    (how many counted calls replace a time-calibrated loop)."""

    @property
    def calls(self) -> int: ...

    def begin(self) -> Any:
        """Open a region on this thread (nested in one open here, if any); returns its token."""

    def end(self, region: Any) -> int | None:
        """Close the region: the instructions it executed, the empty region's subtracted
        (None when it could not be counted)."""


#: This process's counter while ``--bench-instructions`` counts here (set by
#: :func:`activate`); read on every measured region, so a plain module attribute.
ACTIVE: Counter | None = None


def active() -> Counter | None:
    """This process's counter, or None when nothing is counted."""
    return ACTIVE


def activate(counter: Counter) -> None:
    """Count this process's measured regions with ``counter``."""
    global ACTIVE
    ACTIVE = counter


def deactivate() -> None:
    """Stop counting (the session ended)."""
    global ACTIVE
    ACTIVE = None
