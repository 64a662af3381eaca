"""Who provides the ``benchmark`` fixture and marker: this plugin, or pytest-benchmark /
pytest-codspeed when they are installed too.

By default (``auto``) an active pytest-benchmark (the plugin ``benchmark``) or pytest-codspeed
(``codspeed``) keeps the fixture and the marker, and :class:`OtherProvider` says once, in one
line, the one step that hands them to this plugin: the setting ``bench_benchmark_fixture =
benchsdk`` (ini), ``--bench-benchmark-fixture=benchsdk`` (command line) or
``BENCHSDK_BENCHMARK_FIXTURE=benchsdk`` (environment). With it, :func:`switch_off_others`
switches the other plugins off for the session, as ``-p no:benchmark -p no:codspeed`` would:
after every plugin declared its options (so their ``--benchmark-*``/``--codspeed*`` options
still parse, in ``addopts`` too) and before anything else of theirs runs (their
``pytest_configure``, fixtures, markers, hooks and terminal output). This module is light: a
plain session imports it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import pytest

__all__ = [
    "CHOICES",
    "ENV",
    "INI",
    "OTHER_PROVIDERS",
    "OtherProvider",
    "SwitchedOff",
    "blocked_options",
    "fixture_choice",
    "other_provider",
    "switch_off_others",
]

#: Other plugins that provide a ``benchmark`` fixture: their plugin name, and what to call them.
OTHER_PROVIDERS: Final = (("benchmark", "pytest-benchmark"), ("codspeed", "pytest-codspeed"))
#: The setting's ini key, option dest, flag and environment variable.
INI: Final = "bench_benchmark_fixture"
FLAG: Final = "--bench-benchmark-fixture"
ENV: Final = "BENCHSDK_BENCHMARK_FIXTURE"
#: Its values: ``auto``, the other plugin's fixture when one is active (else this plugin's);
#: ``benchsdk``, this plugin's, the others switched off.
CHOICES: Final = ("auto", "benchsdk")
#: The one step, as the advice names it.
STEP: Final = f"{INI} = benchsdk in the ini, or {FLAG}=benchsdk"


def fixture_choice(config: pytest.Config, env: Mapping[str, str]) -> str:
    """The setting as given: the option (from the command line, ``addopts`` or
    ``PYTEST_ADDOPTS``), else the ini key, else the environment variable, else ``auto``. Read
    from the early parse, so that it works before the session is configured."""
    given = getattr(config.known_args_namespace, INI, None)
    if given:
        return str(given)
    try:
        ini = str(config.getini(INI) or "").strip()
    except ValueError:  # the key is not declared (this plugin's options are not loaded)
        ini = ""
    if ini:
        return _checked(ini, f"{INI} (ini)")
    from_env = env.get(ENV, "").strip()
    if from_env:
        return _checked(from_env, f"{ENV} (environment)")
    return "auto"


def _checked(value: str, where: str) -> str:
    choice = value.lower()
    if choice not in CHOICES:
        raise pytest.UsageError(
            f"{where}: {value!r} is not a choice; use one of {', '.join(CHOICES)} (benchsdk: "
            "this plugin provides the benchmark fixture and marker, and pytest-benchmark and "
            "pytest-codspeed are switched off for the session)"
        )
    return choice


def switch_off_others(pluginmanager: pytest.PytestPluginManager) -> list[str]:
    """Switch pytest-benchmark and pytest-codspeed off for the session; their names as they
    were active. Their options stay declared (their ``pytest_addoption`` ran when they were
    registered). Blocked, so that ``-p benchmark`` or a worker cannot bring them back; and
    forgotten by ``pytest_plugin_registered``'s history, which pytest replays to everything
    registered later: the fixture manager (made at the session start) would otherwise still
    read their ``benchmark``, ``benchmark_weave`` and ``codspeed_benchmark`` fixtures."""
    off: list[str] = []
    for name, package in OTHER_PROVIDERS:
        plugin = pluginmanager.get_plugin(name)
        if plugin is None:
            continue
        pluginmanager.set_blocked(name)
        _forget(pluginmanager, plugin)
        off.append(package)
    return off


def _forget(pluginmanager: pytest.PytestPluginManager, plugin: object) -> None:
    caller = pluginmanager.hook.pytest_plugin_registered
    history = getattr(caller, "_call_history", None)
    if isinstance(history, list):
        history[:] = [call for call in history if call[0].get("plugin") is not plugin]


def blocked_options(config: pytest.Config) -> list[str]:
    """``-p no:NAME`` for each other provider this session's plugin manager blocks (switched
    off by the setting, or by ``-p no:NAME``): for the sessions it starts (an A/B session's
    sides), which must give the fixture to the same plugin."""
    out: list[str] = []
    for name, _ in OTHER_PROVIDERS:
        if config.pluginmanager.is_blocked(name):
            out += ["-p", f"no:{name}"]
    return out


class SwitchedOff:
    """The others are off: said in the header under ``-v``."""

    def __init__(self, packages: list[str]) -> None:
        self.packages = packages

    def pytest_report_header(self, config: pytest.Config) -> str | None:
        if config.get_verbosity() < 1:
            return None
        return (
            "benchsdk: the benchmark fixture and marker are pytest-benchsdk's; "
            f"{' and '.join(self.packages)} switched off for this session ({INI} = benchsdk)"
        )


class OtherProvider:
    """Another plugin provides ``benchmark``: say once, when a collected test uses the fixture
    or the marker, whose they are and the one step that makes them this plugin's."""

    def __init__(self, packages: list[str]) -> None:
        self.packages = packages

    def line(self) -> str:
        others = " and ".join(self.packages)
        return (
            f"benchsdk: the benchmark fixture and marker are left to {others} (active); to "
            f"measure them with pytest-benchsdk, set {STEP} (this switches {others} off for "
            "the session)"
        )

    used = False

    def pytest_report_collectionfinish(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> str | None:
        self.used = any(
            "benchmark" in getattr(item, "fixturenames", ())
            or item.get_closest_marker("benchmark") is not None
            for item in items
        )
        # Under -q pytest leaves these lines out: the terminal summary says it then.
        return self.line() if self.used and config.get_verbosity() >= 0 else None

    def pytest_terminal_summary(self, terminalreporter: Any, config: pytest.Config) -> None:
        if self.used and config.get_verbosity() < 0:
            terminalreporter.write_line(self.line())


def other_provider(pluginmanager: pytest.PytestPluginManager) -> OtherProvider | None:
    """The active plugins, other than this one, that provide a ``benchmark`` fixture."""
    packages = [
        package for name, package in OTHER_PROVIDERS if pluginmanager.get_plugin(name) is not None
    ]
    return OtherProvider(packages) if packages else None
