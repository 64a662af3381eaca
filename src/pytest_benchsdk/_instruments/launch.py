"""Starting a session under callgrind, and counting in each of its processes.

The user types the pytest command (``pytest --bench --bench-instructions …``). Its process,
not yet under valgrind, builds the helper (:func:`~.build.build_helper`: a missing compiler is
said before anything runs), finds valgrind, and replaces itself (``os.execve``: same pid,
stdio and parent, so an IDE or a CI step sees the same process) with
:func:`valgrind_command`: the same interpreter and arguments under
``valgrind --tool=callgrind --instr-atstart=no --separate-threads=yes --trace-children=yes``.
Its environment (:func:`relaunch_environment`) fixes the hash seed (``PYTHONHASHSEED=0``
unless the user set one) and names a temporary folder for callgrind's dumps and log, which
the process that asked (the *owner*, by pid) has removed once it has exited
(:func:`remove_dump_folder`); folders of owners that were killed are removed by the next
session (:func:`remove_abandoned_folders`).

Every process of the session (xdist's workers, an A/B session's sides: the children are
traced, except the programs in :data:`UNTRACED`) inherits that environment and counts its own
regions with a :class:`~.callgrind.CallgrindCounter` (:func:`counter_from_environment`).

Running the whole session under valgrind, not only the processes that measure, is the
simplest thing that keeps one process for pytest's view of the session; what it costs is
published in ``docs/explanation/performance.md`` (about 7× before anything is counted, the
interpreter's start-up and collection under valgrind's JIT).
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import attrs

from pytest_benchsdk._instruments.build import build_helper

__all__ = [
    "DUMP_PREFIX",
    "ENV_FOLDER",
    "ENV_HELPER",
    "ENV_OWNER",
    "ENV_SETUP",
    "UNTRACED",
    "CountSetup",
    "ValgrindMissing",
    "count_setup",
    "counter_from_environment",
    "find_valgrind",
    "interpreter_argv",
    "launched_here",
    "new_dump_folder",
    "relaunch_environment",
    "remove_abandoned_folders",
    "remove_dump_folder",
    "running_on_valgrind",
    "valgrind_command",
    "valgrind_version",
]

#: The folder of this session's dumps and valgrind's log.
ENV_FOLDER: Final = "BENCHSDK_CALLGRIND_DIR"
#: The pid of the process that started the session under valgrind (it removes the folder).
ENV_OWNER: Final = "BENCHSDK_CALLGRIND_OWNER"
#: The built helper library.
ENV_HELPER: Final = "BENCHSDK_CALLGRIND_HELPER"
#: The count's setup as the launch knew it (JSON): valgrind's version, the hash seed and who
#: chose it.
ENV_SETUP: Final = "BENCHSDK_CALLGRIND_SETUP"
#: callgrind's dump files are ``<folder>/<DUMP_PREFIX>.<pid>[.<part>][-<thread>]``.
DUMP_PREFIX: Final = "callgrind.out"
#: The temporary folders' name prefix (followed by the owner's pid).
_FOLDER_PREFIX: Final = "pytest-benchsdk-callgrind-"
#: Programs a traced session starts that are not measured and need not crawl under valgrind:
#: version control, compilers and linkers, shells (what they start is not measured either).
UNTRACED: Final = (
    "*/git",
    "*/git-*",
    "*/cc",
    "*/gcc",
    "*/gcc-*",
    "*/g++",
    "*/c++",
    "*/clang",
    "*/clang++",
    "*/ld",
    "*/ld.*",
    "*/as",
    "*/sh",
    "*/bash",
    "*/dash",
    "*/uname",
)
_INSTALL_HINT: Final = (
    "install it (Debian/Ubuntu: apt-get install valgrind; Fedora: dnf install valgrind) or put "
    "it on PATH"
)


class ValgrindMissing(RuntimeError):
    """valgrind is not installed (or not on PATH): the message says what to install."""


def find_valgrind(environ: Mapping[str, str] | None = None) -> str:
    """The valgrind program on ``PATH``; :class:`ValgrindMissing` when there is none."""
    env = os.environ if environ is None else environ
    found = shutil.which("valgrind", path=env.get("PATH", os.defpath))
    if found is None:
        raise ValgrindMissing(
            "--bench-instructions counts instructions under Valgrind's callgrind, and valgrind "
            f"was not found on PATH; {_INSTALL_HINT}"
        )
    return found


def valgrind_version(valgrind: str) -> str:
    """``valgrind --version``'s answer (``valgrind-3.19.0``), or ``unknown``."""
    try:
        completed = subprocess.run(
            [valgrind, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return completed.stdout.strip() or "unknown"


def valgrind_command(valgrind: str, folder: Path, argv: Sequence[str]) -> list[str]:
    """The command that runs ``argv`` (interpreter first) under callgrind, counting nothing
    until a region starts, each thread apart, children traced (but :data:`UNTRACED`), dumps
    and valgrind's own messages in ``folder``."""
    return [
        valgrind,
        "--tool=callgrind",
        "--instr-atstart=no",
        "--separate-threads=yes",
        "--trace-children=yes",
        f"--trace-children-skip={','.join(UNTRACED)}",
        # Every dump names its functions (not only the first that uses a name): a region's
        # dump is read alone, and the allocators' part of it is found by name.
        "--compress-strings=no",
        f"--callgrind-out-file={folder / DUMP_PREFIX}.%p",
        f"--log-file={folder}/valgrind.%p.log",
        *argv,
    ]


def relaunch_environment(
    environ: Mapping[str, str], folder: Path, helper: Path, valgrind_version: str
) -> dict[str, str]:
    """The environment of the session under valgrind: the hash seed fixed (``0`` unless the
    user set one: ``random`` counts as not set) and recorded, the dump folder, its owner, the
    helper."""
    env = dict(environ)
    given = env.get("PYTHONHASHSEED", "")
    user_seed = given not in ("", "random")
    if not user_seed:
        env["PYTHONHASHSEED"] = "0"
    env[ENV_FOLDER] = str(folder)
    env[ENV_OWNER] = str(os.getpid())
    env[ENV_HELPER] = str(helper)
    env[ENV_SETUP] = json.dumps(
        {
            "valgrind": valgrind_version,
            "hash_seed": env["PYTHONHASHSEED"],
            "hash_seed_from": "user" if user_seed else "benchsdk",
        },
        sort_keys=True,
    )
    return env


def new_dump_folder() -> Path:
    """A fresh temporary folder for the session's dumps, named after this process."""
    return Path(tempfile.mkdtemp(prefix=f"{_FOLDER_PREFIX}{os.getpid()}-"))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_abandoned_folders() -> list[Path]:
    """Remove the dump folders of sessions whose owner is gone (killed before it could)."""
    removed: list[Path] = []
    base = Path(tempfile.gettempdir())
    for folder in base.glob(f"{_FOLDER_PREFIX}*"):
        pid_text = folder.name[len(_FOLDER_PREFIX) :].split("-", 1)[0]
        if pid_text.isdigit() and not _pid_alive(int(pid_text)):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def launched_here(environ: Mapping[str, str] | None = None) -> bool:
    """Whether this process started the session under valgrind (it owns the dump folder)."""
    env = os.environ if environ is None else environ
    return env.get(ENV_OWNER) == str(os.getpid()) and bool(env.get(ENV_FOLDER))


def remove_dump_folder(environ: Mapping[str, str] | None = None) -> None:
    """The owner's session ends: have its dump folder removed once this process has exited.
    Not now: callgrind writes its last dump there at exit, and a missing folder makes valgrind
    exit with status 1. A small untraced shell waits for this pid, in a session of its own and
    with no standard streams (so a CI step or an IDE does not wait for it), then removes it."""
    env = os.environ if environ is None else environ
    if not launched_here(env):
        return
    script = 'while kill -0 "$1" 2>/dev/null; do sleep 0.2; done; rm -rf -- "$2"'
    with contextlib.suppress(OSError):
        subprocess.Popen(
            ["/bin/sh", "-c", script, "sh", str(os.getpid()), env[ENV_FOLDER]],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )


def counter_from_environment(calls: int, environ: Mapping[str, str] | None = None) -> Any:
    """This process's :class:`~.callgrind.CallgrindCounter`, calibrated, when the session runs
    under callgrind as :func:`relaunch_environment` set it up; None when this process is not
    under valgrind (or was not started so)."""
    from pytest_benchsdk._instruments.callgrind import CallgrindCounter

    env = os.environ if environ is None else environ
    folder = env.get(ENV_FOLDER)
    helper = env.get(ENV_HELPER)
    if not folder or not helper or not Path(helper).is_file():
        return None
    counter = CallgrindCounter(helper, Path(folder), DUMP_PREFIX, calls)
    if not counter.running_on_valgrind():
        return None
    counter.calibrate()
    return counter


def running_on_valgrind(environ: Mapping[str, str] | None = None) -> bool:
    """Whether this process runs under valgrind (told by the helper, built if need be)."""
    from pytest_benchsdk._instruments.callgrind import CallgrindCounter

    helper = build_helper(environ)
    return CallgrindCounter(helper, Path(tempfile.gettempdir())).running_on_valgrind()


@attrs.frozen
class CountSetup:
    """What an instruction count depends on besides the code: recorded with the run, so a
    comparison across setups can say so."""

    tool: str
    valgrind: str
    python: str
    build: str
    arch: str
    hash_seed: str
    hash_seed_from: str
    calls: int
    #: What the count leaves out: the memory allocators' instructions (``"allocators"``,
    #: see :func:`~.callgrind.dump_count`).
    excluded: str = "allocators"

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def count_setup(calls: int, environ: Mapping[str, str] | None = None) -> CountSetup | None:
    """This session's :class:`CountSetup` (``calls``: the counted calls of a loop), when it
    counts (None otherwise)."""
    env = os.environ if environ is None else environ
    raw = env.get(ENV_SETUP)
    if not raw:
        return None
    try:
        launched = json.loads(raw)
    except ValueError:
        launched = {}
    name, compiler = platform.python_build()
    return CountSetup(
        tool="callgrind",
        valgrind=str(launched.get("valgrind", "unknown")),
        python=f"{platform.python_implementation()} {platform.python_version()}",
        build=f"{name} {compiler}".strip(),
        arch=platform.machine(),
        hash_seed=str(launched.get("hash_seed", env.get("PYTHONHASHSEED", ""))),
        hash_seed_from=str(launched.get("hash_seed_from", "unknown")),
        calls=calls,
    )


def interpreter_argv() -> list[str]:
    """This process's command line with the interpreter it runs (``sys.executable``: a
    ``python3`` found on PATH may be a shell shim, which valgrind would trace instead)."""
    orig = list(getattr(sys, "orig_argv", [])) or [sys.executable, *sys.argv]
    return [sys.executable, *orig[1:]]
