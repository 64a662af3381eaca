"""``pytest-benchsdk run <bench_file.py> [upstream flags]`` (also ``python -m pytest_benchsdk
run``): upstream ``bench run`` for a Python bench file, without pytest; ``check <file>`` and
``run <file> --check`` / ``--validate``: upstream ``bench check`` (:mod:`._check`). Exit status as
upstream's: 0 on success and when no participant is available (its message on stdout), 1 for
anything else (``Benchmark failed: <error>`` on stderr); ours adds 1 for a run that did not
pass (a threshold, a warning rule, a failure of its session end) and 130 for Ctrl-C."""

from __future__ import annotations

import importlib.util
import os
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from pytest_benchsdk._base.storepath import find_inifile, resolve_store
from pytest_benchsdk._engine.schedule import NoAvailableParticipantsError
from pytest_benchsdk.runner._argv import USAGE, split_platform_flags
from pytest_benchsdk.runner._check import CHECK_FLAGS, CheckFailedError, run_check
from pytest_benchsdk.runner._run import _DEFAULT, run_benchmark

__all__ = ["main"]


def _split_store(flags: Sequence[str]) -> tuple[object, list[str]]:
    """``--store PATH`` / ``--no-store`` (ours; the rest goes to the upstream parser)."""
    store: object = _DEFAULT
    rest: list[str] = []
    tokens = list(flags)
    index = 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        flag, eq, inline = token.partition("=")
        if flag == "--no-store" and not eq:
            store = None
        elif flag == "--store":
            value = inline if eq else (tokens[index] if index < len(tokens) else "")
            index += 0 if eq else 1
            if not value or value.startswith("--"):
                raise ValueError(USAGE)
            store = value
        else:
            rest.append(token)
    return store, rest


def _import(path: Path) -> ModuleType:
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such bench file")
    name = f"benchsdk_run_{uuid.uuid4().hex}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    # A bench file's own imports (helpers beside it) resolve as under pytest's rootdir-relative
    # import: its directory first.
    sys.path.insert(0, str(path.parent.resolve()))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent.resolve()))
    return module


def _run(argv: Sequence[str]) -> int:
    command, *rest = list(argv) or [""]
    if command not in ("run", "check") or not rest or rest[0].startswith("-"):
        raise ValueError(USAGE)
    file, *flags = rest
    if command == "check" or any(flag in CHECK_FLAGS for flag in flags):
        # Upstream: `bench run <file> --check|--validate …` is `bench check <file> …`. Ours:
        # --store / --no-store are accepted and ignored (a check writes nothing).
        _, flags = _split_store([flag for flag in flags if flag not in CHECK_FLAGS])
        run_check(file, _import(Path(file)), flags)
        return 0
    base_url, api_key, flags = split_platform_flags(flags)
    store, flags = _split_store(flags)
    if store is _DEFAULT:
        # Where `pytest --bench` and `pytest-benchsdk runs` started here would find it.
        here = Path.cwd()
        ini = find_inifile(here)
        if ini is not None:
            store = resolve_store(
                None,
                flag="--store",
                given_base=here,
                ini=ini,
                rootdir=ini.directory,
                rootdir_words=f"the rootdir {ini.directory}",
            )
    path = Path(file)
    module = _import(path)
    config: Any = getattr(module, "config", None)
    task: Any = getattr(module, "task", None) or getattr(module, "default", None)
    env_flags: list[str] = []
    if os.environ.get("BENCHMARK_SLUG"):
        env_flags += ["--benchmark", os.environ["BENCHMARK_SLUG"]]
    if os.environ.get("BENCHMARK_NAME"):
        env_flags += ["--name", os.environ["BENCHMARK_NAME"]]
    if config is None or not callable(task):
        from pytest_benchsdk._engine.benchfile import load_bench_file

        load_bench_file(path, module)  # raises upstream's message for the missing export
    result = run_benchmark(
        config,
        task,
        [*env_flags, *flags],
        base_url=base_url,
        api_key=api_key,
        store=store,
        file=path,
    )
    return 0 if result.passed else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``run <file> [flags]`` or ``check <file> [flags]``; the exit status (see the module)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[1:2] in (["--help"], ["-h"]):
        print(USAGE)
        return 0
    try:
        return _run(args)
    except NoAvailableParticipantsError as exc:
        print(exc, flush=True)
        return 0
    except KeyboardInterrupt:
        print("Interrupted: the records so far are in the results store.", file=sys.stderr)
        return 130
    except Exception as exc:
        print(f"Benchmark failed: {_describe(exc)}", file=sys.stderr)
        return 1


def _describe(exc: BaseException) -> str:
    """Upstream's ``String(err)``: ``Error: msg``, ``BenchmarkConfigError: …``, a TaskError's
    own rendering."""
    name = type(exc).__name__
    if name == "TaskError":
        return str(exc)
    if isinstance(exc, CheckFailedError):
        return f"Error: {exc}"  # upstream's own words, byte for byte
    return f"{name}: {exc}" if str(exc) else name
