"""The two sides of an A/B session, each a Python process of its own (execnet gateways).

Both run the same program (:mod:`pytest_benchsdk._ab.side_program` for bench files; the glue's
``_plugin.ab.side_session`` for benchmarked tests, in processes of their own), started by the
same first steps (:mod:`pytest_benchsdk._ab.side_start`) with the same measuring harness; they
differ only in whose code they import: side B the working tree's, side A the revision's
worktree (:mod:`pytest_benchsdk._ab.revision`). :func:`side_paths` says what goes first on a
side's import path; :class:`Side` starts the process, loads the bench files there and runs one
iteration at a time on request.

execnet (the engine under pytest-xdist's workers) starts and talks to the processes: a popen
gateway per process, :mod:`~pytest_benchsdk._ab.side_start` sent as source, and a channel that
carries plain data; ``Group.terminate`` kills them all on the way out, Ctrl-C included. The
processes start in the background, all at once: what a process costs to start (the interpreter,
execnet's bootstrap, the measuring engine's imports) overlaps with the session's own work and
with the other processes' starts.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal

import attrs

from pytest_benchsdk._ab.revision import ABError, tracked
from pytest_benchsdk._engine.payload import RecordPayload

__all__ = [
    "COMPILED_SUFFIXES",
    "Side",
    "SideResult",
    "Sides",
    "compiled_files",
    "import_folders",
    "side_paths",
]

SideName = Literal["A", "B"]

#: Files that hold compiled code: a source tree does not build them.
COMPILED_SUFFIXES: Final = (".so", ".pyd", ".dylib")

#: How long a side may take to start and import its bench files (seconds).
START_TIMEOUT: Final = 300.0


def side_paths(root: Path, bench_dirs: Sequence[Path], folders: Sequence[Path]) -> list[str]:
    """What a side puts first on its import path: its ``src/`` (the src layout), its root (a
    flat layout), its bench files' folders (a bench file's sibling modules), then ``folders``
    (:func:`import_folders`, relative to the repository) as they are in this side's tree
    (``root``: the repository or the revision's worktree) where it has them."""
    paths = [root / "src"] if (root / "src").is_dir() else []
    paths.append(root)
    paths += [d for d in bench_dirs if d not in paths]
    paths += [root / f for f in folders if (root / f).is_dir() and root / f not in paths]
    return [str(p) for p in paths]


def import_folders(repository: Path) -> list[Path]:
    """The folders of ``repository`` (but its root) on the session's own import path
    (``PYTHONPATH=tools``, the ini's ``pythonpath``), relative to it, that git tracks: a
    module the session finds there (a plugin named by ``-p``, a helper package) is each
    side's own. Ignored files (a virtualenv in the repository) are in the working tree only:
    they stay both sides'."""
    base = repository.resolve()
    found: list[Path] = []
    for entry in sys.path:
        try:
            folder = Path(entry or ".").resolve()
        except (OSError, RuntimeError):
            continue
        if folder == base or not folder.is_relative_to(base) or not folder.is_dir():
            continue
        relative = folder.relative_to(base)
        if relative not in found and tracked(base, folder):
            found.append(relative)
    return found


def compiled_files(paths: Sequence[str], root: Path) -> set[str]:
    """The compiled extension modules under ``paths`` (those within ``root``), relative to
    ``root``: what a worktree of the source would lack."""
    found: set[str] = set()
    for entry in paths:
        folder = Path(entry)
        if folder == root:
            continue  # the root itself: its packages are searched through src/ or by name
        for suffix in COMPILED_SUFFIXES:
            for file in folder.rglob(f"*{suffix}"):
                try:
                    found.add(str(file.relative_to(root)))
                except ValueError:
                    continue
    for child in root.iterdir() if root.is_dir() else ():
        if child.is_dir() and (child / "__init__.py").is_file():
            for suffix in COMPILED_SUFFIXES:
                found.update(str(f.relative_to(root)) for f in child.rglob(f"*{suffix}"))
    return found


@attrs.frozen
class SideResult:
    """One iteration on one side: its record (None when the side could not run it, then
    ``problem`` says why), the error text when it failed, and what it wrote (its stdout,
    stderr and log records: :mod:`pytest_benchsdk._ab.side_output`)."""

    payload: RecordPayload | None
    error: str | None = None
    problem: str | None = None
    output: Mapping[str, Any] | None = None


class Side:
    """One side's process (see the module): :meth:`launch` starts it in the background (it
    imports the measuring engine meanwhile), :meth:`load` tells it what to import,
    :meth:`wait_ready` waits for that.

    ``program`` names the module the process runs (by default
    :mod:`pytest_benchsdk._ab.side_program`, which runs bench files' iterations; the glue's
    benchmarked tests have one that runs pytest there): its ``serve(channel, setup)`` takes
    over once :mod:`.side_start` has put the harness and the side's paths in place; ``role``
    names its processes apart from the other programs'."""

    def __init__(
        self,
        name: SideName,
        *,
        group: Any,
        index: int = 0,
        program: str = "pytest_benchsdk._ab.side_program",
        role: str = "",
    ) -> None:
        self.name = name
        #: Which of the side's processes this is (rounds go to process ``task_index % N``).
        self.index = index
        self._group = group
        self._program = program
        self._role = role
        self._channel: Any = None
        self._launching: threading.Thread | None = None
        self._launch_error: BaseException | None = None

    def launch(self) -> None:
        """Start the process in the background: the session goes on while the interpreter
        starts (execnet waits for each to answer) and imports the measuring engine."""
        self._launching = threading.Thread(
            target=self._launch, name=f"benchsdk-ab-launch-{self.name}{self.index}", daemon=True
        )
        self._launching.start()

    def _launch(self) -> None:
        from pytest_benchsdk._ab import side_start

        # This interpreter (execnet's default, started with -c and execnet's installed
        # bootstrap rather than its source sent over); the side runs in its main thread: its
        # executor and signal handling expect it.
        spec = (
            f"popen//id=benchsdk-ab-{self._role}{self.name}{self.index}//execmodel=main_thread_only"
        )
        try:
            gateway = self._group.makegateway(spec)
            self._channel = gateway.remote_exec(side_start)
            # The folder holding this pytest_benchsdk: both sides measure with it.
            harness = str(Path(__file__).resolve().parents[2])
            self._channel.send({"harness": harness, "program": self._program})
        except BaseException as exc:  # the session's thread reports it (load)
            self._launch_error = exc

    def _launched(self) -> None:
        """Wait for :meth:`launch` (:class:`ABError` if the process did not start)."""
        if self._launching is not None:
            self._launching.join()
        if self._launch_error is not None or self._channel is None:
            raise ABError(f"side {self.name}'s process did not start: {self._launch_error}")

    def load(
        self,
        *,
        cwd: Path,
        paths: Sequence[str],
        files: Mapping[str, str],
        foreign: Path | None,
        instructions: int | None = None,
    ) -> None:
        """Send the process its working folder, what goes first on its import path, the bench
        files to import, the other side's tree (imports from there are refused), and with
        ``--bench-instructions`` the counted calls of a loop (the process counts its regions);
        :meth:`wait_ready` waits for the imports."""
        self.set_up(
            {
                "cwd": str(cwd),
                "paths": list(paths),
                "files": dict(files),
                "foreign": None if foreign is None else str(foreign),
                "instructions": instructions,
            }
        )

    def set_up(self, setup: Mapping[str, Any]) -> None:
        """Send the process its setup (what :meth:`load` sends for bench files; another
        program's own), once it started."""
        self._launched()
        self._channel.send(dict(setup))

    def wait_ready(self, what: str = "its bench files") -> dict[str, Any]:
        """Wait until the process imported ``what`` (:class:`ABError` if that failed, or if
        side A's imports reached into the working tree); its answer."""
        reply = self._receive(START_TIMEOUT)
        if "error" in reply:
            error = str(reply["error"])
            if "only pytest provides" in error:
                error += (
                    "\n--bench-ab runs each side's tasks in a process of its own, outside "
                    "pytest: a task's parameters must be the context's (participant, phase, "
                    "task_index, step, measure, log, bench); build what a fixture gave at the "
                    "bench file's top level instead"
                )
            raise ABError(f"side {self.name} could not import {what}:\n{error}")
        if reply["foreign"]:
            shown = "\n  ".join(reply["foreign"][:10])
            raise ABError(
                f"side {self.name} imported modules from the other side's tree, so it would "
                f"not measure its own code:\n  {shown}\nA/B puts each side's src/ and root "
                "first on its import path; a package installed in the environment by path "
                "(not editable) or a .pth file can still win: install it editable "
                "(pip install -e .), or run from a virtualenv without it"
            )
        return reply

    def run(
        self, file_key: str, participant: str, phase: str | None, task_index: int, args: Any
    ) -> SideResult:
        """Run one iteration now and wait for it."""
        self.submit(file_key, participant, phase, task_index, args)
        return self.result()

    def submit(
        self, file_key: str, participant: str, phase: str | None, task_index: int, args: Any
    ) -> None:
        """Start one iteration (:meth:`result` waits for it)."""
        self._send({"run": [file_key, participant, phase, task_index, dict(args)]})

    def result(self) -> SideResult:
        """The iteration :meth:`submit` started, once it finished."""
        reply = self._receive(None)
        if "missing" in reply:
            return SideResult(None, problem=str(reply["missing"]))
        return SideResult(
            RecordPayload.from_json(reply["payload"]), reply["error"], output=reply.get("output")
        )

    def send(self, message: Mapping[str, Any]) -> None:
        """Send the process a request of its program's (:meth:`receive` waits for the
        answer)."""
        self._send(dict(message))

    def _send(self, message: Mapping[str, Any]) -> None:
        try:
            self._channel.send(message)
        except Exception:  # execnet's OSError: the process has ended (killed, crashed)
            raise ABError(
                f"side {self.name}'s process has ended (killed, out of memory or crashed): "
                "its remaining iterations cannot run"
            ) from None

    def receive(self) -> dict[str, Any]:
        """The answer to the request :meth:`send` sent, once the process gave it."""
        return self._receive(None)

    def _receive(self, timeout: float | None) -> dict[str, Any]:
        try:
            reply = self._channel.receive(timeout)
        except Exception as exc:  # execnet's RemoteError, EOFError, TimeoutError
            raise ABError(f"side {self.name}'s process failed: {exc}") from None
        assert isinstance(reply, dict)
        return reply

    def stop(self) -> None:
        if self._launching is not None:
            self._launching.join()
        if self._channel is not None:
            with contextlib.suppress(Exception):  # the process is gone already
                self._channel.send(None)


class Sides:
    """Both sides' processes (``processes`` of each, in pairs), started together and stopped
    together (killed if they do not stop in a second)."""

    def __init__(self) -> None:
        import execnet

        self.group = execnet.Group()
        self.pairs: list[dict[SideName, Side]] = []
        self._stopping: threading.Thread | None = None

    def add_pair(self, a: Side, b: Side) -> None:
        self.pairs.append({"A": a, "B": b})

    @classmethod
    def launched(
        cls, processes: int, *, program: str = "pytest_benchsdk._ab.side_program", role: str = ""
    ) -> Sides:
        """``processes`` pairs of sides, every process started (each :meth:`Side.load`
        tells it what to import); ``program`` and ``role`` as :class:`Side`'s."""
        sides = cls()
        for index in range(processes):
            sides.add_pair(
                Side("A", group=sides.group, index=index, program=program, role=role),
                Side("B", group=sides.group, index=index, program=program, role=role),
            )
        for pair in sides.pairs:
            for side in pair.values():
                side.launch()
        return sides

    def wait_ready(self, what: str = "its bench files") -> list[dict[SideName, dict[str, Any]]]:
        """Wait for every process (:meth:`Side.wait_ready`); their answers, pair by pair."""
        return [{name: side.wait_ready(what) for name, side in pair.items()} for pair in self.pairs]

    def pair_of(self, task_index: int) -> dict[SideName, Side]:
        """The pair of processes that runs the round of ``task_index``."""
        return self.pairs[task_index % len(self.pairs)]

    def stop(self) -> None:
        """Ask every process to stop and let them come down in the background (a process's
        interpreter takes a moment to exit): :meth:`close` waits for them."""
        if self._stopping is not None:
            return
        for pair in self.pairs:
            for side in pair.values():
                side.stop()
        self._stopping = threading.Thread(
            target=self.group.terminate, kwargs={"timeout": 1.0}, name="benchsdk-ab-stop"
        )
        self._stopping.start()

    def close(self) -> None:
        """Stop every process and wait until each is gone (killed after a second)."""
        self.stop()
        assert self._stopping is not None
        self._stopping.join()
