"""pytest-benchmark's hooks where they mean something here (declared in
:class:`pytest_benchsdk.hookspecs.PytestBenchmarkHooks`, or by pytest-benchmark itself).

* ``pytest_benchmark_generate_machine_info`` / ``_update_machine_info`` and
  ``pytest_benchmark_generate_commit_info`` / ``_update_commit_info`` make the run
  environment's ``machine_info`` and ``commit_info`` (stored with the run, written to the
  pytest-benchmark JSON), in a session with benchmarked tests; a generate hook that returns
  nothing leaves pytest-benchmark's default (:mod:`pytest_benchsdk._base.pbinfo`).
* ``pytest_benchmark_generate_json`` / ``_update_json`` shape ``--bench-export
  pytest-benchmark:PATH``: ``benchmarks`` are objects with pytest-benchmark's attributes
  (``name``, ``fullname``, ``group``, ``param``, ``params``, ``extra_info``, ``options``,
  ``stats``, ``iterations``, ``has_error``, ``as_dict()``).

A hook that raises is a session error naming it (the runs are stored either way).
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import pytest

from pytest_benchsdk._base.js import js_json
from pytest_benchsdk._base.pbinfo import default_commit_info, default_machine_info
from pytest_benchsdk._base.runenv import RunEnvironment, git_output
from pytest_benchsdk._views.pytest_benchmark import benchmark_entries, pytest_benchmark_document
from pytest_benchsdk.results import RunSummary

__all__ = ["HookBenchmark", "complete_environment", "pytest_benchmark_json"]


class HookBenchmark:
    """One benchmarked test as pytest-benchmark's hooks see it (its ``Metadata``'s
    attributes), made from an entry of the JSON's ``benchmarks``."""

    has_error = False

    def __init__(self, entry: Mapping[str, Any]) -> None:
        self._entry = dict(entry)
        stats = dict(entry["stats"])
        self.name = entry["name"]
        self.fullname = entry["fullname"]
        self.group = entry["group"]
        self.param = entry["param"]
        self.params = entry["params"]
        self.extra_info = entry["extra_info"]
        self.options = entry["options"]
        self.iterations = stats.get("iterations", 1)
        self.stats = types.SimpleNamespace(**stats)

    def __getitem__(self, key: str) -> Any:
        if hasattr(self.stats, key):
            return getattr(self.stats, key)
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except AttributeError:
            return default

    def as_dict(
        self,
        include_data: bool = True,
        flat: bool = False,
        stats: bool = True,
        cprofile: Any = None,
    ) -> dict[str, Any]:
        out = {k: v for k, v in self._entry.items() if k != "stats"}
        if stats:
            figures = dict(self._entry["stats"])
            if not include_data:
                figures.pop("data", None)
            if flat:
                out.update(figures)
            else:
                out["stats"] = figures
        return out


def _project(config: pytest.Config) -> str:
    return config.rootpath.name


def complete_environment(
    config: pytest.Config,
    environ: Mapping[str, str],
    wanted: Callable[[], bool],
    errors: list[str],
) -> Callable[[RunEnvironment], RunEnvironment]:
    """The session's ``complete_environment``: when ``wanted()`` (the session has benchmarked
    tests), pytest-benchmark's machine and commit info through its hooks."""

    def complete(environment: RunEnvironment) -> RunEnvironment:
        if not wanted():
            return environment
        hook = config.hook
        try:
            machine = hook.pytest_benchmark_generate_machine_info(config=config)
            machine = dict(machine) if machine is not None else default_machine_info()
            hook.pytest_benchmark_update_machine_info(config=config, machine_info=machine)
            commit = hook.pytest_benchmark_generate_commit_info(config=config)
            if commit is None:
                root = config.rootpath
                commit = default_commit_info(
                    lambda args: git_output(args, root, environ), _project(config), environ
                )
            commit = dict(commit)
            hook.pytest_benchmark_update_commit_info(config=config, commit_info=commit)
        except Exception as exc:
            errors.append(
                "a pytest_benchmark_*_info hook (conftest.py) raised "
                f"{type(exc).__name__}: {exc}; the runs keep no machine_info/commit_info"
            )
            return environment
        # JSON-safe as stored (what JSON cannot hold, as its str).
        machine = _json_safe(machine)
        commit = _json_safe(commit)
        return attrs.evolve(environment, machine_info=machine, commit_info=commit)

    return complete


def _json_safe(value: Mapping[str, Any]) -> dict[str, Any]:
    import json

    loaded: dict[str, Any] = json.loads(json.dumps(dict(value), default=str))
    return loaded


def pytest_benchmark_json(config: pytest.Config) -> Callable[..., str]:
    """The writer of ``--bench-export pytest-benchmark``: the document of
    :func:`~pytest_benchsdk._views.pytest_benchmark.pytest_benchmark_document`, through
    ``pytest_benchmark_generate_json`` (a conftest may replace it) and
    ``pytest_benchmark_update_json`` (add to it)."""

    def write(summaries: Sequence[RunSummary], include_data: bool = True) -> str:
        document = pytest_benchmark_document(summaries, include_data=include_data)
        entries = benchmark_entries(summaries, include_data=include_data)
        benchmarks = [HookBenchmark(entry) for entry in entries]
        hook = config.hook
        generated = hook.pytest_benchmark_generate_json(
            config=config,
            benchmarks=benchmarks,
            include_data=include_data,
            machine_info=document["machine_info"],
            commit_info=document["commit_info"],
        )
        if generated is not None:
            document = generated
        hook.pytest_benchmark_update_json(
            config=config, benchmarks=benchmarks, output_json=document
        )
        return js_json(document, indent=4) + "\n"

    return write
