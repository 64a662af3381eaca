"""pytest-benchmark's ``machine_info`` and ``commit_info``, as its JSON files hold them.

Its defaults (``pytest_benchmark.plugin.pytest_benchmark_generate_machine_info`` and
``utils.get_commit_info``), made without its dependencies: ``cpu`` holds what the standard
library and ``/proc/cpuinfo`` tell (pytest-benchmark asks py-cpuinfo for more). A conftest's
``pytest_benchmark_generate_*`` / ``pytest_benchmark_update_*`` hooks replace or extend them
(the glue calls them). A leaf: it imports nothing of the package.
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["default_commit_info", "default_machine_info"]


def _cpu() -> dict[str, Any]:
    cpu: dict[str, Any] = {
        "arch_string_raw": platform.machine(),
        "bits": 64 if sys.maxsize > 2**32 else 32,
        "count": os.cpu_count(),
    }
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return cpu
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and "brand_raw" not in cpu:
            cpu["brand_raw"] = value.strip()
        elif key == "vendor_id" and "vendor_id_raw" not in cpu:
            cpu["vendor_id_raw"] = value.strip()
    return cpu


def default_machine_info() -> dict[str, Any]:
    """pytest-benchmark's default ``machine_info`` keys, with the same values."""
    implementation = platform.python_implementation()
    version = platform.python_version()
    if implementation == "PyPy":  # pragma: no cover - CPython here
        info = sys.pypy_version_info  # type: ignore[attr-defined]
        version = ".".join(str(part) for part in info[:3])
    return {
        "node": platform.node(),
        "processor": platform.processor(),
        "machine": platform.machine(),
        "python_compiler": platform.python_compiler(),
        "python_implementation": implementation,
        "python_implementation_version": version,
        "python_version": platform.python_version(),
        "python_build": list(platform.python_build()),
        "release": platform.release(),
        "system": platform.system(),
        "cpu": _cpu(),
    }


def default_commit_info(
    git: Callable[[list[str]], str | None], project: str, environ: Mapping[str, str]
) -> dict[str, Any]:
    """pytest-benchmark's default ``commit_info`` (``id``, ``time``, ``author_time``,
    ``dirty``, ``project``, ``branch``), from ``git`` (a function running ``git ARGS`` in the
    project, None on failure); ``GITHUB_SHA``/``GITHUB_REF_NAME`` where git says nothing."""
    commit = git(["rev-parse", "HEAD"]) or environ.get("GITHUB_SHA") or None
    if commit is None:
        return {
            "id": "unversioned",
            "time": None,
            "author_time": None,
            "dirty": False,
            "project": project,
            "branch": "(unknown)",
        }
    times = (git(["show", "-s", "--pretty=format:%cI%n%aI"]) or "").splitlines()
    branch = git(["rev-parse", "--abbrev-ref", "HEAD"]) or environ.get("GITHUB_REF_NAME")
    if branch == "HEAD":
        branch = "(detached head)"
    dirty = git(["status", "--porcelain", "--untracked-files=no"])
    return {
        "id": commit,
        "time": times[0] if times else None,
        "author_time": times[1] if len(times) > 1 else None,
        "dirty": bool(dirty),
        "project": project,
        "branch": branch or "(unknown)",
    }
