"""The callgrind instrument: counting a region's instructions in a process run under
``valgrind --tool=callgrind --instr-atstart=no --separate-threads=yes``.

A region is counted so (:meth:`CallgrindCounter.begin` / :meth:`~CallgrindCounter.end`):

* ``gc.collect()`` first, outside the count: a collection then starts from an empty young
  generation, so a collection inside the region happens at the same allocation every time
  (without it, whether one falls inside depends on what ran before, which differs with load);
* the interpreter's switch interval raised for the region, so another Python thread (the
  executor's event loop, the store's commit timer) cannot take the GIL from the measured
  thread in the middle of it: its wake-ups were the largest source of counts that moved with
  load (±1 %; with it ±6 instructions in 2 million);
* ``CALLGRIND_ZERO_STATS``, ``CALLGRIND_START_INSTRUMENTATION``, the region,
  ``CALLGRIND_STOP_INSTRUMENTATION``, ``CALLGRIND_DUMP_STATS_AT(label)``; the dump's
  ``totals:`` line is the region's ``Ir`` (instructions executed), less what the memory
  allocators executed in it (:func:`dump_count`: their work depends on the heap's history,
  not on the code, and was what moved counts between sessions). With
  ``--separate-threads=yes`` zeroing and dumping are per thread, so a region counts what its
  own thread executed, and a region on another thread never zeroes it;
* the count of an empty region of the same shape (measured once per process,
  :meth:`CallgrindCounter.calibrate`) subtracted, so the figure is the measured code's own
  (the helper calls' and the loop's few thousand instructions are not).

Regions nest on one thread (a step inside the counted task body): an inner region dumps the
outer one's count so far instead of zeroing it, and its own count is added to the outer's.
Dump files are read only after the outermost region has stopped instrumentation: reading them
inside would count the reading, whose cost depends on the file (the pid is in it).

Instrumentation is on while any thread has a region open (a count of open regions), since
``START``/``STOP`` are process-wide; callgrind then discards its translations, which is
what makes each region cost a little wall time of its own.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import re
import shutil
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Final, NamedTuple

__all__ = [
    "ALLOCATOR_ENTRIES",
    "KEEP_ENV",
    "CallgrindCounter",
    "DumpCount",
    "DumpError",
    "dump_count",
    "dump_total",
    "find_dump",
]

#: The interpreter's switch interval while a region is open (seconds): long enough that no
#: other Python thread is handed the GIL during a region (a region under valgrind lasts
#: seconds at most), short enough that code spinning on another thread's progress without
#: releasing the GIL is slowed, not hung.
REGION_SWITCH_INTERVAL_S: Final = 10.0
#: Empty regions the calibration counts (the interpreter specialises the region's own code
#: over its first few; the smallest of the rest is the overhead).
_CALIBRATION_REGIONS: Final = 7
_LABEL_PREFIX: Final = "benchsdk-region-"
#: A folder to copy every region's dump into (named ``<pid>-<label>``), for reading with
#: ``callgrind_annotate`` where a count moved: a debugging aid, off unless set.
KEEP_ENV: Final = "BENCHSDK_CALLGRIND_KEEP"
_TRIGGER_RE: Final = re.compile(r"^desc: Trigger: Client Request: (.*)$", re.MULTILINE)


#: The memory allocators' entry points: the C library's (glibc's ``malloc`` family) and
#: CPython's own small-object allocator (pymalloc, behind ``PyObject_Malloc`` and
#: ``PyMem_Malloc``). What they execute depends on the state of the heap, that is on every
#: allocation the process made before the region, some of them timing-dependent (see
#: :func:`dump_count`), so a count leaves them out.
ALLOCATOR_ENTRIES: Final = frozenset(
    {
        "malloc",
        "free",
        "cfree",
        "realloc",
        "calloc",
        "reallocarray",
        "posix_memalign",
        "memalign",
        "aligned_alloc",
        "valloc",
        "pvalloc",
        "_PyObject_Malloc",
        "_PyObject_Calloc",
        "_PyObject_Realloc",
        "_PyObject_Free",
    }
)


class DumpError(RuntimeError):
    """A dump file is missing or says no count (the message names the file)."""


class DumpCount(NamedTuple):
    """A dump's count: ``total`` (its ``totals:`` line) and the part of it the memory
    allocators executed (``allocator``); ``own`` is the rest, what a region's count is."""

    total: int
    allocator: int

    @property
    def own(self) -> int:
        return self.total - self.allocator


def _base_name(name: str) -> str:
    # callgrind marks recursion levels (``f'2``) and may put a file in front (``file:f``).
    return name.split("'", 1)[0]


def dump_count(
    text: str, event: str = "Ir", allocators: frozenset[str] = ALLOCATOR_ENTRIES
) -> DumpCount:
    """The ``event`` count of one callgrind dump (written with ``--compress-strings=no``, so
    every function is named in it), and how much of it the memory allocators executed.

    The allocators' part is the self cost of the functions named in ``allocators`` and of every
    function the dump shows called only by allocator functions (the C library's ``_int_malloc``,
    ``unlink_chunk``, ``malloc_consolidate``, ``sysmalloc``, pymalloc's arena functions …),
    plus what those functions spent in leaf functions they call (``memcpy`` when ``realloc``
    moves a block, a system call growing the heap). A wrapper that is also called from
    elsewhere stays counted: its cost is the same every call. Measured
    (benchmarks/instructions_identical.py): the allocators' part of a region moves between
    sessions with the heap's state, by up to 11 % of a regex loop's count; the rest does not.
    """
    total = dump_total(text, event)
    events: list[str] = []
    positions = 1
    self_cost: dict[str, int] = {}
    edges: dict[tuple[str, str], int] = {}
    callers: dict[str, set[str]] = {}
    callees: dict[str, set[str]] = {}
    fn = ""
    callee = ""
    column = 0
    call_pending = False
    for line in text.splitlines():
        if not line:
            continue
        head = line[0]
        if head.isdigit() or head in "+-*":
            parts = line.split()
            index = positions + column
            cost = int(parts[index]) if index < len(parts) else 0
            if call_pending:
                call_pending = False
                edges[fn, callee] = edges.get((fn, callee), 0) + cost
                callers.setdefault(callee, set()).add(fn)
                callees.setdefault(fn, set()).add(callee)
            else:
                self_cost[fn] = self_cost.get(fn, 0) + cost
        elif line.startswith("fn="):
            fn = line[3:].strip()
            self_cost.setdefault(fn, 0)
        elif line.startswith("cfn="):
            callee = line[4:].strip()
        elif line.startswith("calls="):
            call_pending = True
        elif line.startswith("events:"):
            events = line.split()[1:]
            column = events.index(event) if event in events else 0
        elif line.startswith("positions:"):
            positions = max(1, len(line.split()) - 1)
    inside = {name for name in (*self_cost, *callers) if _base_name(name) in allocators}
    grown = True
    while grown:
        grown = False
        for name, called_by in callers.items():
            if name not in inside and called_by <= inside:
                inside.add(name)
                grown = True
    allocator = sum(self_cost.get(name, 0) for name in inside)
    for (caller, called), cost in edges.items():
        if caller in inside and called not in inside and not callees.get(called):
            allocator += cost
    return DumpCount(total, min(allocator, total))


def dump_total(text: str, event: str = "Ir") -> int:
    """The ``event`` total of one callgrind dump: its ``totals:`` line (else ``summary:``),
    the column the ``events:`` line gives ``event``."""
    events: list[str] | None = None
    totals: list[str] | None = None
    summary: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("totals:"):
            totals = line.split()[1:]
        elif line.startswith("summary:"):
            summary = line.split()[1:]
    values = totals if totals is not None else summary
    if values is None:
        raise DumpError("the dump has no totals: or summary: line")
    column = events.index(event) if events and event in events else 0
    if column >= len(values):
        return 0  # callgrind leaves out trailing zero columns
    return int(values[column])


def find_dump(folder: Path, prefix: str, pid: int, part: int, label: str) -> Path:
    """The dump file of ``label``, dumped as part ``part`` of process ``pid``: callgrind names it
    ``<prefix>.<pid>.<part>`` (``-<thread>`` appended with ``--separate-threads=yes``); when the
    part number is not the expected one (another dump in the process that was not ours), the
    folder's other dumps of the process are searched for the label."""
    expected = [folder / f"{prefix}.{pid}.{part}", *folder.glob(f"{prefix}.{pid}.{part}-*")]
    for path in expected:
        if path.is_file() and _label_of(path) == label:
            return path
    for path in folder.glob(f"{prefix}.{pid}.*"):
        if path.is_file() and _label_of(path) == label:
            return path
    raise DumpError(f"no callgrind dump of {label} in {folder} (process {pid})")


def _label_of(path: Path) -> str | None:
    with path.open("r", encoding="utf-8", errors="replace") as file:
        head = file.read(4096)
    found = _TRIGGER_RE.search(head)
    return found.group(1).strip() if found else None


class _Region:
    """An open region: the instructions its earlier segments and nested regions counted."""

    __slots__ = ("counted",)

    def __init__(self) -> None:
        self.counted = 0


class CallgrindCounter:
    """Counts regions of this process (see the module's docstring). ``library`` is the built
    helper (:func:`~pytest_benchsdk._instruments.build.build_helper`); ``folder`` and
    ``prefix`` say where callgrind writes the dumps
    (``--callgrind-out-file=<folder>/<prefix>.%p``); ``calls`` is how many counted calls a
    calibrated step or a benchmarked test makes."""

    def __init__(
        self, library: Path | str, folder: Path, prefix: str = "callgrind.out", calls: int = 10
    ) -> None:
        # PyDLL, not CDLL: a call keeps the GIL, so no other thread runs between the region's
        # client requests and the Python code around them.
        lib = ctypes.PyDLL(str(library))
        lib.benchsdk_running_on_valgrind.restype = ctypes.c_int
        lib.benchsdk_dump_stats_at.argtypes = [ctypes.c_char_p]
        for name in (
            "zero_stats",
            "start_instrumentation",
            "stop_instrumentation",
            "dump_stats_at",
        ):
            getattr(lib, f"benchsdk_{name}").restype = None
        self._running: Callable[[], int] = lib.benchsdk_running_on_valgrind
        self._zero: Callable[[], None] = lib.benchsdk_zero_stats
        self._start: Callable[[], None] = lib.benchsdk_start_instrumentation
        self._stop: Callable[[], None] = lib.benchsdk_stop_instrumentation
        self._dump_at: Callable[[bytes], None] = lib.benchsdk_dump_stats_at
        self.folder = folder
        self.prefix = prefix
        self.calls = calls
        self._lock = threading.Lock()
        self._local = threading.local()
        self._open = 0  # regions open on every thread (instrumentation is on while > 0)
        self._parts = 0  # dumps this process made (callgrind numbers them 1, 2, ...)
        self._switch: float | None = None
        self._discarded: list[tuple[int, str]] = []
        #: The counts of an empty region and of an empty nested region (:meth:`calibrate`).
        self.empty = 0
        self.empty_nested = 0

    def running_on_valgrind(self) -> bool:
        """Whether this process runs under valgrind (outside it nothing would be counted)."""
        return bool(self._running())

    # -- dumps --------------------------------------------------------------------------------

    def _dump(self) -> tuple[int, str]:
        with self._lock:
            self._parts += 1
            part = self._parts
        label = f"{_LABEL_PREFIX}{part}"
        self._dump_at(label.encode())
        return part, label

    def _read(self, part: int, label: str) -> int:
        path = find_dump(self.folder, self.prefix, os.getpid(), part, label)
        try:
            return dump_count(path.read_text(encoding="utf-8", errors="replace")).own
        finally:
            keep = os.environ.get(KEEP_ENV)
            if keep:
                shutil.copy(path, Path(keep) / f"{os.getpid()}-{label}")
            path.unlink(missing_ok=True)

    def _read_inside(self) -> int:
        """Dump and read this thread's count while a region stays open here: what the reading
        itself executes is dumped again and dropped (its cost depends on the file)."""
        count = self._read(*self._dump())
        discarded = self._dump()
        with self._lock:
            self._discarded.append(discarded)
        return count

    def _remove_discarded(self) -> None:
        with self._lock:
            discarded, self._discarded = self._discarded, []
        for part, label in discarded:
            with contextlib.suppress(DumpError, OSError):
                find_dump(self.folder, self.prefix, os.getpid(), part, label).unlink()

    # -- regions ------------------------------------------------------------------------------

    def _stack(self) -> list[_Region]:
        stack: list[_Region] | None = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    def begin(self) -> _Region:
        """Open a region on this thread (nested in the one open here, if any)."""
        stack = self._stack()
        region = _Region()
        if stack:
            # The outer region's count so far: dumping zeroes the counters.
            stack[-1].counted += self._read_inside()
            stack.append(region)
            return region
        gc.collect()
        with self._lock:
            if self._open == 0:
                self._switch = sys.getswitchinterval()
                sys.setswitchinterval(REGION_SWITCH_INTERVAL_S)
            self._open += 1
            first = self._open == 1
        stack.append(region)
        self._zero()
        if first:
            self._start()
        return region

    def end(self, region: _Region) -> int | None:
        """Close ``region``; its own instructions (the empty region's subtracted, never below
        0). None when the regions of this thread did not close in the order they opened (two
        iterations' steps interleaving on one event loop): such a count would mix them."""
        raw = self._end(region)
        if raw is None:
            return None
        return max(0, raw - (self.empty_nested if self._stack() else self.empty))

    def _end(self, region: _Region) -> int | None:
        stack = self._stack()
        if not stack or stack[-1] is not region:
            if region in stack:
                del stack[stack.index(region) :]
                if not stack:
                    self._close(None)
            return None
        stack.pop()
        if stack:
            own = region.counted + self._read_inside()
            stack[-1].counted += own
            return own
        return self._close(region)

    def _close(self, region: _Region | None) -> int | None:
        with self._lock:
            self._open -= 1
            last = self._open == 0
        if last:
            self._stop()
        try:
            own = None if region is None else region.counted + self._read(*self._dump())
        finally:
            if last:
                with self._lock:
                    if self._switch is not None:
                        sys.setswitchinterval(self._switch)
                        self._switch = None
            self._remove_discarded()
        return own

    def calibrate(self) -> None:
        """Count the empty regions (plain and nested) whose counts :meth:`end` subtracts: the
        smallest of a few, after the region's own code has been specialised."""
        empty: list[int] = []
        nested: list[int] = []
        for _ in range(_CALIBRATION_REGIONS):
            outer = self.begin()
            inner = self.begin()
            inner_raw = self._end(inner)
            self._end(outer)
            alone = self.begin()
            alone_raw = self._end(alone)
            assert inner_raw is not None
            assert alone_raw is not None
            nested.append(inner_raw)
            empty.append(alone_raw)
        self.empty = min(empty)
        self.empty_nested = min(nested)
