"""An A/B session's benchmarked tests (the ``benchmark`` fixture, or the marker alone): each
test runs on both sides, in processes where pytest runs on that side's tree, in turns.

Per side, as many processes as ``--bench-ab-processes`` (``R``) run the program
:mod:`.side_session` (a pytest session of that side's test files, collected once, which runs a
test when asked). When the main session reaches a test's call, the test does not run there:
it runs once in each process pair ``i`` (its *turn* ``i``), on side A and on side B, one
after the other in an order drawn at random per turn (both at once with ``duet``), each
with its ``max_time`` divided by ``R``, so that the test's rounds take about twice as long
as in a plain session, whatever ``R``. Each side's turns make one record
(:func:`~pytest_benchsdk._engine.rounds.repeated_record`): B's is the test's, A's goes to
side A's run of the group. The comparison pairs, within turn ``i``, A's ``j``-th round with
B's ``j``-th, and its intervals resample the turns (the process pairs) as clusters.

The main session's item reports side B's outcome: B's failure fails it with B's report, B's
skip skips it. Side A's failure is said once (its record is kept, the row is not compared);
a test (or a test file) the revision lacks is said once, and is measured on side B alone.
The main process does not set the test's fixtures up (the sides set up their own): its
protocol reports what side B did.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from pytest_benchsdk._ab.side_processes import SideName, Sides, side_paths
from pytest_benchsdk._engine.payload import RecordPayload
from pytest_benchsdk._engine.rounds import Rounds, failed_record, repeated_record
from pytest_benchsdk._plugin.ab import side_session
from pytest_benchsdk._plugin.ab.side_session import side_test_key
from pytest_benchsdk._plugin.benchmark.fixture import FIXTURE_KEY, RECORD_KEY
from pytest_benchsdk._plugin.benchmark.providers import blocked_options

if TYPE_CHECKING:
    from pytest_benchsdk._ab.revision import Worktree
    from pytest_benchsdk._plugin.benchmark.measuring import BenchmarkedTests
    from pytest_benchsdk._session import BenchSession
    from pytest_benchsdk.records import TaskRecord
    from pytest_benchsdk.results import BenchmarkRun

__all__ = ["ABTests"]


#: Where a test keeps side A's record until its report says its group (:meth:`ABTests.keep_a`).
_A_RECORD_KEY = pytest.StashKey["TaskRecord"]()


class ABSession(Protocol):
    """What the benchmarked tests' sides use of the A/B session (:class:`~.plugin.ABPlugin`)."""

    config: pytest.Config
    #: The session's own bench session (side B's runs).
    session: BenchSession
    benchmarked: BenchmarkedTests | None

    #: ``--bench-instructions``' counted calls (None: nothing is counted).
    instructions: int | None

    def write(self, line: str) -> None: ...

    def local_payload(self, report: pytest.TestReport) -> RecordPayload | None: ...

    def a_knobs(self, run: BenchmarkRun) -> dict[str, Any]: ...


class ABTests:
    """The benchmarked tests of an A/B session (see the module): :meth:`launched` starts the
    sides' processes, :meth:`start` has them collect, :meth:`run` runs one test,
    :meth:`keep_a` keeps side A's record in A's run of the group B's report names."""

    def __init__(
        self,
        sides: Sides,
        items: Sequence[pytest.Item],
        *,
        a_session: BenchSession,
        ab: ABSession,
        mode: str,
    ) -> None:
        self.sides = sides
        self.items = list(items)
        self.a_session = a_session
        self.ab = ab
        self._write = ab.write
        self.mode = mode
        #: Per node id of a test the sides run: its key on both sides.
        self._keys: dict[str, str] = {}
        #: The keys of the tests side A has (known once it collected).
        self._on_a: set[str] = set()
        self._said: set[str] = set()
        #: The test files side A lacks (relative to the repository), said once each.
        self._missing_files: set[str] = set()
        self._order = random.Random()

    @classmethod
    def launched(
        cls,
        processes: int,
        items: Sequence[pytest.Item],
        *,
        a_session: BenchSession,
        ab: ABSession,
        mode: str,
    ) -> ABTests:
        """The tests' side processes, started in the background (:meth:`start` sets them
        up)."""
        sides = Sides.launched(processes, program=side_session.__name__, role="tests-")
        return cls(sides, items, a_session=a_session, ab=ab, mode=mode)

    @property
    def turns(self) -> int:
        return len(self.sides.pairs)

    def start(self, worktree: Worktree, cwd_b: Path, cwd_a: Path, folders: Sequence[Path]) -> None:
        """Have every process collect its side's test files (an ``ABError`` if a side's pytest
        could not start, or imported the other side's code, or a test file lies outside the
        repository); ``folders`` as :func:`~pytest_benchsdk._ab.side_processes.side_paths` takes
        them."""
        repository = worktree.repository
        files_b: list[str] = []
        files_a: list[str] = []
        for item in self.items:
            path = Path(item.path).resolve()
            relative = worktree.relative(path)
            self._keys[item.nodeid] = side_test_key(relative, item.nodeid)
            if isinstance(item, pytest.Function):
                # The sides set the test's fixtures up, each in its own session: here they
                # would only cost their setup (a database, a server) and could collide with
                # the sides' (a fixed port, a lock file). The protocol runs on without them.
                item.setup = _fixtures_on_the_sides  # type: ignore[method-assign]
            if str(path) in files_b:
                continue
            files_b.append(str(path))
            there = worktree.counterpart(path)
            if there is not None:
                files_a.append(str(there))
            else:
                self._missing_files.add(relative.as_posix())
                self._say(
                    f"{relative} does not exist at {worktree.label}: its "
                    "benchmarked tests are measured in the working tree only, not compared"
                )
        paths_b = side_paths(repository, [Path(f).parent for f in files_b], folders)
        paths_a = side_paths(worktree.path, [Path(f).parent for f in files_a], folders)
        turns = self.turns
        # The command line's -p and -o; and the other benchmark-fixture providers this session
        # switched off (bench_benchmark_fixture, perhaps given on the command line only), as
        # -p no:NAME, which a side of any version understands.
        config = self.ab.config
        options = [*passed_options(config.invocation_params.args), *blocked_options(config)]
        for pair in self.sides.pairs:
            pair["A"].set_up(
                {
                    "cwd": str(cwd_a),
                    "paths": paths_a,
                    "files": files_a,
                    "root": str(worktree.path),
                    "foreign": str(repository),
                    "turns": turns,
                    "options": options,
                    "instructions": self.ab.instructions,
                }
            )
            pair["B"].set_up(
                {
                    "cwd": str(cwd_b),
                    "paths": paths_b,
                    "files": files_b,
                    "root": str(repository),
                    "foreign": str(worktree.path),
                    "turns": turns,
                    "options": options,
                    "instructions": self.ab.instructions,
                }
            )
        answers = self.sides.wait_ready("its test files")
        self._on_a = set(answers[0]["A"].get("tests", ()))
        for name in ("A", "B"):
            for problem in answers[0][name].get("problems", ()):
                last = [line for line in str(problem).splitlines() if line.strip()]
                where = str(problem).split(":", 1)[0]
                self._say(
                    f"side {name} could not collect {where}: {last[-1].strip() if last else ''}"
                )

    def compares(self, item: pytest.Item) -> bool:
        return item.nodeid in self._keys

    def run(self, item: pytest.Item) -> None:
        """Run the test in every turn on both sides; keep A's record, stash B's for the
        item's report (:data:`~pytest_benchsdk._plugin.benchmark.fixture.RECORD_KEY`). Raises B's
        failure (as pytest's
        ``fail``, with B's report) or B's skip."""
        key = self._keys[item.nodeid]
        answers: dict[SideName, list[dict[str, Any]]] = {"A": [], "B": []}
        running: list[SideName] = ["A", "B"] if key in self._on_a else ["B"]
        if "A" not in running:
            self._say_missing(key)
        for pair in self.sides.pairs:
            order = list(running)
            self._order.shuffle(order)
            if self.mode == "duet":
                for name in order:
                    pair[name].send({"run": key})
                replies = {name: pair[name].receive() for name in order}
            else:
                replies = {}
                for name in order:
                    pair[name].send({"run": key})
                    replies[name] = pair[name].receive()
            for name, reply in replies.items():
                answers[name].append(reply)
                if reply.get("outcome") != "passed":
                    running.remove(name)  # one failure (or skip) says it: no more turns
            if "B" not in running:
                break
        if answers["A"]:
            self._a_record(item, answers["A"])
        self._b_outcome(item, answers["B"])

    def _a_record(self, item: pytest.Item, answers: list[dict[str, Any]]) -> None:
        last = answers[-1]
        if "missing" in last:
            self._say_missing(self._keys[item.nodeid])
            return
        if last.get("outcome") == "skipped":
            self._say(f"side A skipped {item.nodeid}: {last.get('line')}: not compared")
            return
        if last.get("outcome") == "failed":
            self._say(f"side A: {item.nodeid} failed: {last.get('line')}: not compared")
        record = _record(answers)
        if record is not None:
            item.stash[_A_RECORD_KEY] = record

    def keep_a(self, item: pytest.Item, report: pytest.TestReport) -> None:
        """The test reported (its call): side A's record joins A's run of the group B's record
        went to (a group's run opens as its tests report), under the same name."""
        record = item.stash.get(_A_RECORD_KEY, None)
        b = self.ab.local_payload(report)
        if record is None or b is None:
            return
        del item.stash[_A_RECORD_KEY]
        benchmarked = self.ab.benchmarked
        group = benchmarked.groups.get(b.file_key) if benchmarked is not None else None
        b_run = self.ab.session.runs.get(b.file_key)
        if group is None or b_run is None:
            return
        self.a_session.extra_knobs = self.ab.a_knobs(b_run)
        self.a_session.add_participant(
            b.file_key,
            group.bench_file,
            group.schedule,
            b.participant,
            {0},
            thresholds=[],
            knobs=group.rounds.as_knobs(),
        )
        self.a_session.keep(RecordPayload.of_record(b.file_key, b.participant, record))

    def _b_outcome(self, item: pytest.Item, answers: list[dict[str, Any]]) -> None:
        last = answers[-1] if answers else {"missing": "side B ran nothing"}
        if "missing" in last:
            message = f"side B (the working tree): {last['missing']}"
            item.stash[RECORD_KEY] = _failed([], message)
            pytest.fail(message, pytrace=False)
        if last.get("outcome") == "skipped":
            pytest.skip(str(last.get("line") or "skipped"))
        record = _record(answers)
        if record is not None:
            item.stash[RECORD_KEY] = record
        fixture = item.stash.get(FIXTURE_KEY, None)
        if fixture is None and "group" in last:
            # No fixture was set up here (see start): this one carries side B's group and name.
            benchmarked = self.ab.benchmarked
            if benchmarked is not None:
                fixture = item.stash[FIXTURE_KEY] = benchmarked.fixture_for(item)
        if fixture is not None and "group" in last:
            # benchmark.group / benchmark.name as the test left them, on side B.
            fixture.group, fixture.name = last["group"], last["name"]
        if last.get("outcome") == "failed":
            pytest.fail(str(last.get("text") or last.get("line")), pytrace=False)

    def _say_missing(self, key: str) -> None:
        path, _, name = key.partition("::")
        if path in self._missing_files:  # the whole file: said already
            return
        self._say(f"{path} has no test {name} at the revision: measured in the working tree only")

    def _say(self, line: str) -> None:
        if line not in self._said:
            self._said.add(line)
            self._write(f"benchsdk: A/B: {line}")


def _fixtures_on_the_sides() -> None:
    """A compared test's setup in the session's own process: nothing (see :meth:`ABTests.start`)."""


def _rounds(data: Mapping[str, Any]) -> Rounds:
    return Rounds(
        int(data["iterations"]),
        tuple(data["wall"]),
        tuple(data["cpu"]),
        float(data["started"]),
        float(data["ended"]),
        tuple(data.get("instructions") or ()),
    )


def _record(answers: Sequence[Mapping[str, Any]]) -> TaskRecord | None:
    """One side's record of a test from its turns' answers: the rounds of every turn, or (the
    last turn failed) the failure; None when it passed without measuring (the fixture never
    called: as in a plain session, no record)."""
    last = answers[-1]
    parts = [_rounds(a["rounds"]) for a in answers if a.get("rounds") is not None]
    if last.get("outcome") == "passed":
        if len(parts) < len(answers):
            return None
        return repeated_record(parts, last.get("extra_info"))
    return _failed(parts, str(last.get("line") or "the test failed"), last.get("extra_info"))


def _failed(
    parts: Sequence[Rounds], message: str, extra: Mapping[str, Any] | None = None
) -> TaskRecord:
    import time

    now = time.time()
    return failed_record(None, message, parts[0].started if parts else now, now, extra)


#: The command line's options a side session takes too: the plugins (``-p no:randomly``, ``-p
#: myplugin``) and the ini overrides (``-o key=value``) that make the session the user ran.
_PASSED = {"-p": "-p", "-o": "-o", "--override-ini": "-o"}


def passed_options(args: Sequence[str]) -> list[str]:
    """The ``-p`` and ``-o`` options of a pytest command line, each as ``[flag, value]``
    (``-pNAME``, ``-o=k=v`` and ``--override-ini=k=v`` spelled out), for the side sessions:
    the rest (test paths, ``--bench-*``, ``-k``) is the controller's."""
    out: list[str] = []
    pending: str | None = None
    for arg in args:
        if pending is not None:
            out += [pending, arg]
            pending = None
        elif arg in _PASSED:
            pending = _PASSED[arg]
        elif arg.startswith("--override-ini="):
            out += ["-o", arg.partition("=")[2]]
        elif arg[:2] in ("-p", "-o") and len(arg) > 2:
            out += [arg[:2], arg[2:].removeprefix("=")]
    return out
