"""Run environment metadata: git commit and ref, trigger, interpreter and machine.

This is what upstream puts in a run's ``trigger`` block (the run-config snapshot) and in the
run summary's ``run`` block. It is collected once per session on the controller, kept with
the run in the local store and sent to the platform.

Only non-secret facts are read: ``GITHUB_SHA``, ``GITHUB_REF_NAME``, ``GITHUB_REF``,
``GITHUB_EVENT_NAME``, ``BENCH_TRIGGER_SOURCE``, ``BENCH_TRIGGER_REQUESTED_BY``,
``BENCH_TRIGGER_REQUEST_ID`` and ``PATH`` (to find ``git``). Nothing else from the environment
is looked at or stored.

Differences from upstream, on purpose:

* An empty ``GITHUB_SHA`` / ``GITHUB_REF_NAME`` / ``GITHUB_REF`` counts as unset (upstream's
  ``??`` would keep ``""`` for the summary's ``gitSha``/``gitRef``, which tells nobody anything).
* The summary's ``nodeVersion`` field (name kept, the platform expects it) holds
  ``python-<version>``, e.g. ``python-3.11.7``; ``pythonVersion`` and ``pythonImplementation``
  are added next to it.
"""

from __future__ import annotations

import os
import platform as _platform
import shutil
import socket
import struct
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

import attrs

from pytest_benchsdk._base.js import js_trim

__all__ = [
    "GIT_TIMEOUT_S",
    "RunEnvironment",
    "Trigger",
    "collect_run_environment",
    "git_output",
    "node_arch",
    "node_platform",
    "resolve_trigger",
]

#: Seconds one ``git rev-parse`` may take before it counts as "no answer".
GIT_TIMEOUT_S = 3.0


@attrs.frozen
class Trigger:
    """What started the run (upstream's ``trigger`` block).

    ``source`` is never empty; the other fields are ``None`` when absent.
    """

    source: str
    event: str | None = None
    requested_by: str | None = None
    request_id: str | None = None

    def to_wire(self) -> dict[str, str]:
        """``{source, event?, requestedBy?, requestId?}`` with absent keys omitted."""
        wire = {"source": self.source}
        if self.event is not None:
            wire["event"] = self.event
        if self.requested_by is not None:
            wire["requestedBy"] = self.requested_by
        if self.request_id is not None:
            wire["requestId"] = self.request_id
        return wire

    @classmethod
    def from_wire(cls, wire: Mapping[str, Any]) -> Trigger:
        """Read back what :meth:`to_wire` wrote."""
        return cls(
            source=str(wire["source"]),
            event=wire.get("event"),
            requested_by=wire.get("requestedBy"),
            request_id=wire.get("requestId"),
        )


def resolve_trigger(environ: Mapping[str, str]) -> Trigger:
    """Upstream ``triggerToJson``: every value trimmed, blank values count as absent.

    ``source`` = ``BENCH_TRIGGER_SOURCE`` or ``GITHUB_EVENT_NAME`` or ``"manual"``;
    ``event`` = ``GITHUB_EVENT_NAME``; ``requested_by`` = ``BENCH_TRIGGER_REQUESTED_BY``;
    ``request_id`` = ``BENCH_TRIGGER_REQUEST_ID``.
    """
    event = js_trim(environ.get("GITHUB_EVENT_NAME")) or None
    requested_by = js_trim(environ.get("BENCH_TRIGGER_REQUESTED_BY")) or None
    request_id = js_trim(environ.get("BENCH_TRIGGER_REQUEST_ID")) or None
    source = js_trim(environ.get("BENCH_TRIGGER_SOURCE")) or event or "manual"
    return Trigger(source=source, event=event, requested_by=requested_by, request_id=request_id)


# platform.machine() spellings → Node's process.arch names.
_ARCH = {
    "x86_64": "x64",
    "amd64": "x64",
    "x64": "x64",
    "i386": "ia32",
    "i486": "ia32",
    "i586": "ia32",
    "i686": "ia32",
    "x86": "ia32",
    "aarch64": "arm64",
    "arm64": "arm64",
    "armv8l": "arm",
    "armv7l": "arm",
    "armv6l": "arm",
    "arm": "arm",
    "ppc64le": "ppc64",
    "ppc64": "ppc64",
    "ppc": "ppc",
    "s390x": "s390x",
    "s390": "s390",
    "riscv64": "riscv64",
    "loongarch64": "loong64",
    "mips": "mips",
    "mipsel": "mipsel",
    "mips64": "mips64",
}


def node_arch(machine: str, pointer_bits: int = 64) -> str:
    """Node's ``process.arch`` for a ``platform.machine()`` value.

    Like Node, this names the interpreter's architecture: a 32-bit Python on an x86-64 machine
    is ``ia32``. Unknown machines are returned lower-cased (``"unknown"`` when empty).
    """
    key = machine.strip().lower()
    arch = _ARCH.get(key, key or "unknown")
    if pointer_bits == 32:
        arch = {"x64": "ia32", "arm64": "arm"}.get(arch, arch)
    return arch


def node_platform(sys_platform: str) -> str:
    """Node's ``os.platform()`` for a ``sys.platform`` value (``linux``, ``darwin``, ``win32``…).

    Python appends a version to some names (``freebsd13``, ``sunos5``); Node does not.
    """
    for prefix in ("freebsd", "openbsd", "netbsd", "aix"):
        if sys_platform.startswith(prefix):
            return prefix
    if sys_platform.startswith("sunos"):
        return "sunos"
    return sys_platform


def git_output(
    args: list[str], cwd: str | os.PathLike[str], environ: Mapping[str, str]
) -> str | None:
    """Stripped stdout of ``git <args>`` run in *cwd*, or ``None`` on any failure.

    ``git`` is looked up on ``environ["PATH"]``. A missing ``git``, a non-zero exit, a timeout
    (:data:`GIT_TIMEOUT_S`), an unreadable directory or empty output all give ``None``: run
    metadata is informational and never fails a run.
    """
    git = shutil.which("git", path=environ.get("PATH", os.defpath))
    if git is None:
        return None
    try:
        completed = subprocess.run(
            [git, *args],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if completed.returncode != 0:
        return None
    text = completed.stdout.decode("utf-8", "replace").strip()
    return text or None


@attrs.frozen
class RunEnvironment:
    """Where and why a run happened. Every field is informational.

    ``platform`` and ``arch`` use Node's names (``linux``/``darwin``/``win32``,
    ``x64``/``arm64``…) so the platform can compare them with upstream runs; ``machine`` keeps
    the raw ``platform.machine()``.
    """

    git_sha: str | None
    git_ref: str | None
    trigger: Trigger
    python_version: str
    implementation: str
    platform: str
    arch: str
    machine: str
    hostname: str | None
    #: Logical CPUs (``os.cpu_count()``): comparisons warn when runs differ in it.
    cpu_count: int | None = None
    #: What the run's instruction counts depend on besides the code (``--bench-instructions``:
    #: the tool and valgrind's version, the Python build, the architecture, the hash seed and
    #: who fixed it, the counted calls); None when nothing was counted.
    instructions: Mapping[str, Any] | None = None
    #: pytest-benchmark's ``machine_info`` and ``commit_info`` of a session with benchmarked
    #: tests (its hooks' results: a conftest's ``pytest_benchmark_update_machine_info`` …);
    #: None otherwise.
    machine_info: Mapping[str, Any] | None = None
    commit_info: Mapping[str, Any] | None = None

    def trigger_to_wire(self) -> dict[str, str]:
        """The run-config snapshot's ``trigger`` block (see :meth:`Trigger.to_wire`)."""
        return self.trigger.to_wire()

    def to_wire(self) -> dict[str, str]:
        """The run summary's ``run`` block, absent git fields omitted.

        ``{gitSha?, gitRef?, triggeredBy, nodeVersion, platform, arch, pythonVersion,
        pythonImplementation}``; ``nodeVersion`` is ``python-<version>``.
        """
        wire: dict[str, str] = {}
        if self.git_sha is not None:
            wire["gitSha"] = self.git_sha
        if self.git_ref is not None:
            wire["gitRef"] = self.git_ref
        wire["triggeredBy"] = self.trigger.source
        wire["nodeVersion"] = f"python-{self.python_version}"
        wire["platform"] = self.platform
        wire["arch"] = self.arch
        wire["pythonVersion"] = self.python_version
        wire["pythonImplementation"] = self.implementation
        return wire

    def to_dict(self) -> dict[str, Any]:
        """Every field as JSON (snake_case keys), for the local store; see :meth:`from_dict`."""
        data = attrs.asdict(self, recurse=False)
        data["trigger"] = self.trigger.to_wire()
        if self.instructions is None:
            del data["instructions"]  # (the stored form of a run that counted nothing is as before)
        else:
            data["instructions"] = dict(self.instructions)
        for key in ("machine_info", "commit_info"):
            if data[key] is None:
                del data[key]  # (as before issue 47 when there is none)
            else:
                data[key] = dict(data[key])
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunEnvironment:
        """Read back :meth:`to_dict`; missing fields (older stores) become ``None``/``""``."""
        return cls(
            git_sha=data.get("git_sha"),
            git_ref=data.get("git_ref"),
            trigger=Trigger.from_wire(data.get("trigger") or {"source": "manual"}),
            python_version=str(data.get("python_version", "")),
            implementation=str(data.get("implementation", "")),
            platform=str(data.get("platform", "")),
            arch=str(data.get("arch", "")),
            machine=str(data.get("machine", "")),
            hostname=data.get("hostname"),
            cpu_count=data.get("cpu_count"),
            instructions=data.get("instructions"),
            machine_info=data.get("machine_info"),
            commit_info=data.get("commit_info"),
        )


def _hostname() -> str | None:
    try:
        return socket.gethostname() or None
    except OSError:
        return None


def collect_run_environment(
    environ: Mapping[str, str],
    cwd: str | os.PathLike[str],
    *,
    instructions: Mapping[str, Any] | None = None,
) -> RunEnvironment:
    """Collect the run environment as upstream does, from *environ* and the git repo at *cwd*.

    * ``git_sha`` = ``GITHUB_SHA``, else ``git rev-parse HEAD``, else ``None``.
    * ``git_ref`` = ``GITHUB_REF_NAME``, else ``GITHUB_REF``, else
      ``git rev-parse --abbrev-ref HEAD`` (``"HEAD"`` on a detached head, as upstream), else
      ``None``.
    * ``trigger`` per :func:`resolve_trigger`.

    ``git`` only runs when the variables are unset or empty; each call has a short timeout.
    ``instructions`` is the setup of the run's instruction counts, when it counts.
    """
    git_sha = environ.get("GITHUB_SHA") or git_output(["rev-parse", "HEAD"], cwd, environ)
    git_ref = (
        environ.get("GITHUB_REF_NAME")
        or environ.get("GITHUB_REF")
        or git_output(["rev-parse", "--abbrev-ref", "HEAD"], cwd, environ)
    )
    machine = _platform.machine()
    return RunEnvironment(
        git_sha=git_sha,
        git_ref=git_ref,
        trigger=resolve_trigger(environ),
        python_version=_platform.python_version(),
        implementation=_platform.python_implementation(),
        platform=node_platform(sys.platform),
        arch=node_arch(machine, struct.calcsize("P") * 8),
        machine=machine,
        hostname=_hostname(),
        cpu_count=os.cpu_count(),
        instructions=instructions,
    )
