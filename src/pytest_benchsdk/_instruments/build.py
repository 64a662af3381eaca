"""The callgrind helper, built on first use: ``helper/benchsdk_callgrind.c`` compiled with the
system C compiler into a per-user cache folder, then loaded with :mod:`ctypes`.

Why built here and not at install: ``pip install -e ".[test]"`` must keep working on a machine
with no compiler and no valgrind; only ``--bench-instructions`` needs them, and it says what is
missing (:class:`HelperBuildError`). The helper is four one-line functions around callgrind's
client requests (the vendored ``valgrind.h`` / ``callgrind.h`` beside the source), so any C
compiler builds it in a fraction of a second.

The built library's name carries a hash of the source and headers and of the platform and ABI
(``sysconfig``'s platform and ``SOABI``), so an edited helper or another interpreter builds its
own; it is compiled under a temporary name and published with :func:`os.replace`, so two
processes building at once never load a half-written file.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Final

__all__ = [
    "COMPILER_ENV",
    "HELPER_DIR",
    "HELPER_SOURCE",
    "HelperBuildError",
    "build_helper",
    "cache_dir",
    "compiler_command",
]

#: Where the helper's source and the vendored headers are.
HELPER_DIR: Final = Path(__file__).parent / "helper"
HELPER_SOURCE: Final = HELPER_DIR / "benchsdk_callgrind.c"
_HEADERS: Final = ("valgrind.h", "callgrind.h")
#: The environment variable naming the C compiler (as for every build tool): the command and
#: its leading arguments, e.g. ``gcc`` or ``ccache cc``.
COMPILER_ENV: Final = "CC"
#: Seconds the compiler may take.
_BUILD_TIMEOUT_S: Final = 120.0
_INSTALL_HINT: Final = (
    "install a C compiler (Debian/Ubuntu: apt-get install gcc; Fedora: dnf install gcc; "
    "macOS: xcode-select --install) or name one in CC"
)


class HelperBuildError(RuntimeError):
    """The helper could not be built (no compiler, or it failed): the message says what is
    missing and what to install."""


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The per-user cache folder of built helpers: ``$XDG_CACHE_HOME/pytest-benchsdk`` (else
    ``~/.cache/pytest-benchsdk``)."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pytest-benchsdk"


def compiler_command(environ: Mapping[str, str] | None = None) -> list[str]:
    """The C compiler to use: ``CC`` from the environment, else the one Python was built with
    (``sysconfig``'s ``CC``), else ``cc``; as a command line (program and leading arguments)."""
    env = os.environ if environ is None else environ
    given = env.get(COMPILER_ENV) or sysconfig.get_config_var("CC") or "cc"
    command = shlex.split(str(given))
    return command or ["cc"]


def _fingerprint() -> str:
    digest = hashlib.sha256()
    for path in (HELPER_SOURCE, *(HELPER_DIR / name for name in _HEADERS)):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    abi = f"{sysconfig.get_platform()}|{sysconfig.get_config_var('SOABI')}|{sys.maxsize}"
    digest.update(abi.encode())
    return digest.hexdigest()[:16]


def build_helper(environ: Mapping[str, str] | None = None) -> Path:
    """The helper library's path, compiled now unless the cache has it. Raises
    :class:`HelperBuildError` saying what to install when there is no compiler or it fails."""
    env = os.environ if environ is None else environ
    folder = cache_dir(env)
    target = folder / f"benchsdk_callgrind-{_fingerprint()}.so"
    if target.is_file():
        return target
    command = compiler_command(env)
    program = shutil.which(command[0], path=env.get("PATH", os.defpath))
    if program is None:
        raise HelperBuildError(
            f"--bench-instructions needs a C compiler to build its small callgrind helper, and "
            f"there is none: {command[0]!r} was not found ("
            + (f"CC={env[COMPILER_ENV]!r}" if env.get(COMPILER_ENV) else "looked for cc")
            + f"); {_INSTALL_HINT}"
        )
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise HelperBuildError(
            f"--bench-instructions could not create its helper cache folder {folder}: {exc} "
            "(set XDG_CACHE_HOME to a writable folder)"
        ) from None
    handle, partial = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=folder)
    os.close(handle)
    argv = [
        program,
        *command[1:],
        "-O2",
        "-shared",
        "-fPIC",
        f"-I{HELPER_DIR}",
        "-o",
        partial,
        str(HELPER_SOURCE),
    ]
    try:
        completed = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=_BUILD_TIMEOUT_S,
            check=False,
        )
        if completed.returncode != 0:
            output = (completed.stderr or completed.stdout).strip()
            raise HelperBuildError(
                f"--bench-instructions could not build its callgrind helper: "
                f"{shlex.join(argv)} exited with status {completed.returncode}"
                + (f":\n{output}" if output else "")
                + f"\n({_INSTALL_HINT})"
            )
        os.replace(partial, target)
    except (OSError, subprocess.SubprocessError) as exc:
        raise HelperBuildError(
            f"--bench-instructions could not build its callgrind helper with {command[0]}: "
            f"{exc} ({_INSTALL_HINT})"
        ) from None
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
    return target
