"""``--bench-ab=REV``: the selected benchmarks against the working tree (B) and a git revision
(A), interleaved, compared pairwise.

When the session starts, REV is checked out into a temporary worktree
(:mod:`pytest_benchsdk._ab.revision`; ``--bench-ab-setup`` runs there). Once the items are
collected, the sides' processes start (:mod:`pytest_benchsdk._ab.side_processes`), all at once,
and each imports its own tree's code and the bench files. Each bench item then runs its
iteration on both sides, one right after the other, in an order drawn at random per item (the
item's *round*): whatever the machine does to a round, it does to both sides. The item reports
side B's outcome, as in any session; side A's records go to a run of their own, opened beside
B's by a second :class:`~pytest_benchsdk._session.BenchSession` that shares the store and prints
nothing. Both runs carry the knobs ``abSide`` and ``abRevision`` (so they are never the history
or the ``latest`` baseline of a plain run), A's also ``abRun``, B's run id.

Benchmarked tests (the ``benchmark`` fixture's groups) are compared too: :mod:`.benchmarked_tests`
runs
each test in both sides' pytest processes, once per process pair
(:meth:`ABPlugin.pytest_pyfunc_call` keeps its body out of this process), and side A's record
joins A's run of the group B's record went to (a group's run opens as its tests report).

At the session end A's run is finished first; B's comparison is then made against it with the
rows pairing the two sides' rounds (:class:`~pytest_benchsdk.results.Baseline` ``paired``), and
every view shows it as it shows ``--bench-compare``'s. The worktree and the processes are
removed at the end, also after Ctrl-C; a killed session's worktree is removed by the next
A/B session in the repository.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Generator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_benchsdk._ab.revision import (
    ABError,
    Worktree,
    check_out,
    remove_abandoned,
    repository_root,
)
from pytest_benchsdk._ab.side_processes import (
    SideResult,
    Sides,
    compiled_files,
    import_folders,
    side_paths,
)
from pytest_benchsdk._engine.payload import RecordPayload
from pytest_benchsdk._plugin.items.nodes import BenchItem, ItemFailure
from pytest_benchsdk._session import BenchSession, SessionHooks
from pytest_benchsdk.results import Baseline, BenchmarkRun, RunSetup

if TYPE_CHECKING:
    from pytest_benchsdk._plugin.ab.benchmarked_tests import ABTests
    from pytest_benchsdk._plugin.benchmark.measuring import BenchmarkedTests
    from pytest_benchsdk._plugin.runtime.catalog import Catalog

__all__ = ["ABPlugin", "SideFailure"]


class SideFailure(ItemFailure):
    """Side B's iteration failed in its process: the text is its error (a TaskError's message,
    else the traceback there)."""


class ABPlugin:
    """The A/B session's part in the controller (see the module)."""

    def __init__(
        self,
        config: pytest.Config,
        catalog: Catalog,
        session: BenchSession,
        *,
        write: Callable[[str], None],
        local_payload: Callable[[pytest.TestReport], RecordPayload | None],
        benchmarked: BenchmarkedTests | None,
        revision: str,
        setup: str | None,
        mode: str = "interleaved",
        processes: int = 4,
    ) -> None:
        self.config = config
        self.catalog = catalog
        #: The session's own bench session (side B's runs).
        self.session = session
        self.write = write
        #: Side B's record on a report made in this process.
        self.local_payload = local_payload
        #: The session's benchmarked tests (the ``benchmark`` fixture's groups), if measured.
        self.benchmarked = benchmarked
        self.revision = revision
        self.setup = setup
        #: ``interleaved`` (one side, then the other) or ``duet`` (both at once).
        self.mode = mode
        #: Processes per side: round ``i`` runs in pair ``i % processes``.
        self.processes = processes
        self.worktree: Worktree | None = None
        #: What side A ran (``main (1a2b3c4)``), once checked out.
        self.label: str | None = None
        self.sides: Sides | None = None
        #: The benchmarked tests' sides (:mod:`.benchmarked_tests`), when groups of them were
        #: selected.
        self.tests: ABTests | None = None
        #: Whether the session stopped early (Ctrl-C, -x): set at its end.
        self.interrupted = False
        import attrs

        self.a_session = BenchSession(
            attrs.evolve(
                catalog.options,
                json_path=None,
                markdown_path=None,
                html_path=None,
                exports=(),
                save_as=None,
                history_from=None,
                compare=None,
                compare_fail=False,
                compare_rules=(),
            ),
            environ=catalog.environ,
            rootpath=config.rootpath,
            secrets=catalog.secrets,
            hooks=SessionHooks(),
        )
        self._order = random.Random()
        self._problems: dict[str, str] = {}
        #: ``--bench-instructions``: the counted calls of a loop, sent to every side process
        #: (each counts its own regions under callgrind); None when nothing is counted.
        self.instructions: int | None = (
            catalog.options.instructions_calls if catalog.options.instructions else None
        )

    # -- the session's start: the revision's worktree ----------------------------------------

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if self.config.option.collectonly:
            return
        try:
            repository = repository_root(self.config.rootpath)
            for path in remove_abandoned(repository):
                self.write(f"benchsdk: A/B: removed the worktree {path} a killed session left")
            self.worktree = check_out(repository, self.revision)
            self.label = self.worktree.label
            if self.setup is not None:
                self.worktree.run_setup(self.setup)
        except ABError as exc:
            self._close()
            raise pytest.UsageError(str(exc)) from None
        # Side A's environment (its git commit) is the worktree's.
        try:
            inside = self.config.rootpath.resolve().relative_to(repository)
            self.a_session.rootpath = self.worktree.path / inside
        except ValueError:
            self.a_session.rootpath = self.worktree.path
        knobs = {
            "abSide": "B",
            "abRevision": self.worktree.sha,
            "abProcesses": self.processes,
        }
        self.session.extra_knobs.update(knobs)
        # One store, one writer: side A's runs go through the controller's store.
        self.a_session.store = self.session.store

    # -- after collection: the sides' processes and side A's runs ----------------------------

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if self.config.option.collectonly or self.worktree is None:
            return
        # Bench files' runs are open now; benchmarked tests' groups open as they report.
        runs = dict(self.session.runs)
        benchmarked = self.benchmarked
        tests = list(benchmarked.tests) if benchmarked is not None else []
        if not runs and not tests:
            return
        # The side processes start now (a session that selected no benchmark starts none),
        # in the background: each imports the measuring engine while A's runs are opened and
        # the sides' import paths are worked out.
        if runs:
            self.sides = Sides.launched(self.processes)
        if tests:
            from pytest_benchsdk._plugin.ab.benchmarked_tests import ABTests

            self.tests = ABTests.launched(
                self.processes, tests, a_session=self.a_session, ab=self, mode=self.mode
            )
        for file_key, run in runs.items():
            self.a_session.extra_knobs = self.a_knobs(run)
            self.a_session.open_run(
                file_key,
                run.bench_file,
                run.schedule,
                {name: set(indexes) for name, indexes in run.selected.items()},
                whole_plan=run.whole_plan,
                thresholds={},
            )
        try:
            self._start_sides(runs)
        except ABError as exc:
            self._close()
            raise pytest.UsageError(str(exc)) from None

    def a_knobs(self, run: BenchmarkRun) -> dict[str, Any]:
        """The knobs of side A's run of ``run`` (B's): the side, the revision, B's run."""
        assert self.worktree is not None
        return {
            "abSide": "A",
            "abRevision": self.worktree.sha,
            "abProcesses": self.processes,
            "abRun": run.local_run_id,
        }

    def _start_sides(self, runs: Mapping[str, BenchmarkRun]) -> None:
        assert self.worktree is not None
        worktree = self.worktree
        repository = worktree.repository
        write = self.write
        cwd = Path.cwd().resolve()
        cwd_a = worktree.folder_for(cwd)
        files_b: dict[str, str] = {}
        files_a: dict[str, str] = {}
        dirs_b: list[Path] = []
        dirs_a: list[Path] = []
        for file_key, run in runs.items():
            path = Path(run.bench_file.path).resolve()
            files_b[file_key] = str(path)
            dirs_b.append(path.parent)
            there = worktree.counterpart(path)
            if there is not None:
                files_a[file_key] = str(there)
                dirs_a.append(there.parent)
            else:
                files_a[file_key] = str(path)
                write(
                    f"benchsdk: A/B: {worktree.relative(path)} does not exist at "
                    f"{worktree.label}: side A runs the working tree's bench file against "
                    "that revision's code"
                )
            concurrency = run.schedule.resolved.concurrency
            if concurrency > 1 or run.schedule.resolved.stagger_delay_ms > 0:
                write(
                    f"benchsdk: A/B: {file_key}: each side runs one iteration at a time "
                    f"(concurrency {concurrency} and the stagger are not applied: each "
                    "iteration's two sides make one round)"
                )
        if self.tests is not None:
            dirs_b += [Path(item.path).resolve().parent for item in self.tests.items]
        folders = import_folders(repository)
        paths_b = side_paths(repository, dirs_b, folders)
        paths_a = side_paths(worktree.path, dirs_a, folders)
        if self.setup is None:
            missing = sorted(compiled_files(paths_b, repository) - _existing(worktree.path))
            if missing:
                raise ABError(
                    "--bench-ab imports source trees, and the working tree has compiled "
                    f"extension modules that {worktree.label}'s checkout lacks ("
                    f"{', '.join(missing[:5])}): build them there with --bench-ab-setup CMD, "
                    "e.g. --bench-ab-setup 'python setup.py build_ext --inplace'"
                )
        sides = self.sides
        if sides is not None:
            for pair in sides.pairs:
                pair["A"].load(
                    cwd=cwd_a,
                    paths=paths_a,
                    files=files_a,
                    foreign=repository,
                    instructions=self.instructions,
                )
                pair["B"].load(
                    cwd=cwd,
                    paths=paths_b,
                    files=files_b,
                    foreign=worktree.path,
                    instructions=self.instructions,
                )
        # The paired analysis at the end needs numpy: loading it while the processes import
        # their code costs the session nothing.
        import numpy  # noqa: F401

        if sides is not None:
            sides.wait_ready()
        if self.tests is not None:
            self.tests.start(worktree, cwd, cwd_a, folders)
        what = (
            "every iteration"
            if self.tests is None
            else "every benchmarked test, once per process pair (each turn with its share of "
            "max_time),"
            if sides is None
            else "every iteration (a benchmarked test once per process pair, each turn with "
            "its share of max_time)"
        )
        write(
            f"benchsdk: A/B against {worktree.label}: side A runs that revision (worktree "
            f"{worktree.path}), side B the working tree, each in {self.processes} "
            + ("processes taking turns" if self.processes > 1 else "process")
            + f"; {what} runs on both, "
            + (
                "at the same time (duet)"
                if self.mode == "duet"
                else "one after the other in a random order per round"
                if self.tests is None
                else "one after the other in a random order each time"
            )
            + ". Local only: nothing is reported to the platform."
        )

    # -- each item: one round ----------------------------------------------------------------

    def run_item(self, item: BenchItem) -> tuple[RecordPayload, str | None]:
        """Run the item's iteration on both sides, in a random order; keep A's record, return
        B's with its error text (:class:`SideFailure` if B could not run it at all)."""
        assert self.sides is not None
        iteration = item.bench
        pair = self.sides.pair_of(iteration.slot.index)
        sides = [pair["A"], pair["B"]]
        if self._order.random() < 0.5:
            sides.reverse()
        what = (
            iteration.file_key,
            iteration.participant.name,
            iteration.slot.phase,
            iteration.slot.index,
            iteration.args,
        )
        try:
            if self.mode == "duet":  # both at once, on their own cores
                for side in sides:
                    side.submit(*what)
                results = {side.name: side.result() for side in sides}
            else:
                results = {side.name: side.run(*what) for side in sides}
        except ABError as exc:  # a side's process has ended: the item fails, in one line
            raise SideFailure(str(exc)) from None
        a, b = results["A"], results["B"]
        for side in sides:
            self._replay(iteration.file_key, side.name, results[side.name])
        if a.payload is not None:
            self.a_session.keep(a.payload)
        elif a.problem is not None and a.problem not in self._problems:
            self._problems[a.problem] = iteration.file_key
            self.write(f"benchsdk: A/B: side A: {a.problem}")
        if b.payload is None:
            raise SideFailure(b.problem or "side B ran nothing")
        return b.payload, b.error

    def _replay(self, file_key: str, name: str, result: SideResult) -> None:
        """What a side's iteration wrote, into this item's capture as if the item had written
        it (pytest's capture and log capture, ``-s``, the live log, ``--log-file``), each line
        marked with its side, the bench file's secrets redacted (again: the side redacted
        what it knew)."""
        import logging
        import sys

        from pytest_benchsdk._ab.side_output import log_record

        output = result.output
        if not output:
            return
        redactor = self.catalog.redactor(file_key)
        label = f"[side {name}] "
        for stream, text in (
            (sys.stdout, output.get("stdout")),
            (sys.stderr, output.get("stderr")),
        ):
            if isinstance(text, str) and text:
                text = redactor.text(text) if redactor else text
                lines = text.splitlines(keepends=True)
                stream.write("".join(label + line for line in lines))
                if not lines[-1].endswith("\n"):
                    stream.write("\n")
                stream.flush()
        for fields in output.get("logs") or ():
            if not isinstance(fields, dict):
                continue
            if redactor:
                fields = {
                    k: redactor.text(v) if isinstance(v, str) else v for k, v in fields.items()
                }
            record = log_record(fields, label)
            logging.getLogger(record.name).handle(record)

    # -- each benchmarked test: its turns --------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> bool | None:
        # Before the measuring plugin's own (registered before this one): the test runs in
        # the sides' processes, not here.
        if self.tests is None or not self.tests.compares(pyfuncitem):
            return None
        self.tests.run(pyfuncitem)
        return True

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        # Around the measuring plugin's (registered before this one): B's record is on the
        # report, its group's run open; side A's record goes to A's run of that group.
        report = yield
        if call.when == "call" and self.tests is not None:
            self.tests.keep_a(item, report)
        return report

    # -- the session's end -------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        # Before the controller finishes B's runs: their comparison needs A's run complete.
        # The processes come down while both runs are finished (unconfigure waits for them).
        for sides in self._all_sides():
            with contextlib.suppress(Exception):
                sides.stop()
        if self.benchmarked is not None:
            self.benchmarked.set_ceilings(self.a_session.runs)
        self.interrupted = exitstatus in (
            pytest.ExitCode.INTERRUPTED,
            pytest.ExitCode.INTERNAL_ERROR,
        ) or bool(session.shouldstop)
        if self.a_session.runs:
            self.a_session.finish(interrupted=self.interrupted)

    def baseline(self, run: BenchmarkRun) -> Baseline | str | None:
        """Side A's run of ``run``'s bench file (or group of benchmarked tests), as the
        baseline its rounds pair with."""
        a_run = self.a_session.runs.get(run.file_key)
        if a_run is None and self.interrupted:
            return "nothing compared: the session was interrupted before side A measured any"
        if a_run is None and run.benchmarked_tests:
            return (
                "nothing compared: side A measured none of its tests (the revision lacks "
                "them, or they failed or were skipped there)"
            )
        if a_run is None or self.label is None:
            return "nothing compared: side A did not run"
        # A participant side A has no record of (a test the revision lacks) is not in it.
        records = {pr.participant: pr.records for pr in a_run.participant_records() if pr.records}
        setup = RunSetup.of_live(a_run, True).describe(self.a_session.environment)
        return Baseline(
            label=f"A: {self.label}",
            run_id=a_run.local_run_id,
            records=records,
            setup=setup,
            paired=True,
            processes=self.processes,
            turns=run.benchmarked_tests,
            duet=self.mode == "duet",
        )

    def pytest_unconfigure(self) -> None:
        self._close()
        # The store is the controller's: it closes it after this.
        self.a_session.close(close_store=False)

    def _close(self) -> None:
        self._stop_sides()
        self._remove_worktree()

    def _all_sides(self) -> list[Sides]:
        return [
            sides
            for sides in (self.sides, self.tests.sides if self.tests is not None else None)
            if sides is not None
        ]

    def _stop_sides(self) -> None:
        for sides in self._all_sides():
            with contextlib.suppress(Exception):
                sides.close()
        self.sides = None
        self.tests = None

    def _remove_worktree(self) -> None:
        if self.worktree is not None:
            with contextlib.suppress(Exception):
                self.worktree.remove()
            self.worktree = None


def _existing(root: Path) -> set[str]:
    from pytest_benchsdk._ab.side_processes import COMPILED_SUFFIXES

    return {
        str(path.relative_to(root))
        for suffix in COMPILED_SUFFIXES
        for path in root.rglob(f"*{suffix}")
    }
