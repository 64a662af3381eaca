"""The catalog: every bench file this process collected, with its schedule.

Every role that collects (plain pytest, xdist controller and workers, ``--bench-check``) keeps one
:class:`Catalog` in the config's stash; the collection nodes fill it, the controller and the check
read it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

import pytest

from pytest_benchsdk._base.coordination import StepCoordination
from pytest_benchsdk._base.redact import Redactor
from pytest_benchsdk._config.models import BenchmarkConfig, Participant
from pytest_benchsdk._config.thresholds import closest_key
from pytest_benchsdk._engine.benchfile import BenchFile, schedule_bench_file
from pytest_benchsdk._engine.schedule import BenchmarkSchedule
from pytest_benchsdk._plugin.options.settings import BenchOptions
from pytest_benchsdk._session import SessionSecrets

__all__ = ["Catalog", "ParticipantLink"]


class ParticipantLink(Protocol):
    """What the items running in this process ask the platform link (the controller's, when
    it runs in this process: plain pytest; xdist workers have none)."""

    def admit(self, file_key: str, participant: str) -> str | None:
        """``None`` to run the participant's iterations here, else why they are skipped (a
        worker pool with no worker left). May block while the pool worker is claimed."""
        ...

    def coordination(
        self, file_key: str, participant: str, concurrency: int
    ) -> StepCoordination | None:
        """The participant's step coordination (heartbeat samples, readiness barrier)."""
        ...


_CATALOG_KEY = pytest.StashKey["Catalog"]()


class Catalog:
    """Collected bench files by file key, each with its schedule."""

    def __init__(self, config: pytest.Config, options: BenchOptions) -> None:
        self.config = config
        self.options = options
        self.environ: dict[str, str] = dict(os.environ)
        self.files: dict[str, tuple[BenchFile, BenchmarkSchedule]] = {}
        #: Set by the controller when it reports runs from this very process.
        self.link: ParticipantLink | None = None
        #: Each bench file's secrets, computed once (the participants' env values and the
        #: platform credentials, also what the platform resolved).
        self.secrets = SessionSecrets(
            self.environ, options.api_key, self._participants_of, lambda: tuple(self.files)
        )
        self._file_keys: dict[str, str] = {}
        #: Set when the collection found a usage error (the selection cannot run): the
        #: controller then opens no run.
        self.usage_error = False
        self._node_file_keys: dict[str, str] = {}

    @classmethod
    def install(cls, config: pytest.Config, options: BenchOptions) -> Catalog:
        catalog = config.stash[_CATALOG_KEY] = cls(config, options)
        return catalog

    @classmethod
    def of(cls, config: pytest.Config) -> Catalog:
        return config.stash[_CATALOG_KEY]

    def file_key(self, path: Path) -> str:
        """A bench file's identity: its path relative to the rootdir (never a node id)."""
        # Asked for every item's reports: resolving the path each time costs ~50 µs.
        given = str(path)
        key = self._file_keys.get(given)
        if key is None:
            try:
                key = Path(path).resolve().relative_to(self.config.rootpath.resolve()).as_posix()
            except ValueError:
                key = Path(path).resolve().as_posix()
            self._file_keys[given] = key
        return key

    def node_file_key(self, nodeid_path: str) -> str:
        """The file key of a node id's path part (relative to the rootdir): asked for each
        item's reports, so remembered."""
        key = self._node_file_keys.get(nodeid_path)
        if key is None:
            key = self._node_file_keys[nodeid_path] = self.file_key(
                self.config.rootpath / nodeid_path
            )
        return key

    def add(self, path: Path, bench_file: BenchFile) -> BenchmarkSchedule:
        """Schedule a loaded bench file and keep it (raises ``BenchSetupError``)."""
        schedule = schedule_bench_file(bench_file, self.options.run_args, self.environ)
        self.files[self.file_key(path)] = (bench_file, schedule)
        return schedule

    def _participants_of(self, file_key: str) -> tuple[Participant, ...] | None:
        entry = self.files.get(file_key)
        return entry[0].config.participants if entry is not None else None

    def redactor(self, file_key: str) -> Redactor:
        """The secrets of one bench file: the values of the env vars its participants
        require and the platform credentials (computed once per file)."""
        return self.secrets.redactor(file_key)

    def add_secrets(self, values: Iterable[str]) -> None:
        """More secrets for every bench file (the credentials the platform layer resolved,
        e.g. a refreshed token)."""
        self.secrets.add(values)

    def custom_args_for(self, config: BenchmarkConfig) -> dict[str, str]:
        declared = {flag.lstrip("-") for flag in config.custom_cli_flags or ()}
        return {k: v for k, v in self.options.custom_args.items() if k in declared}

    def unknown_providers(self) -> str | None:
        """Upstream's error for ``--bench-provider`` names no collected bench file declares."""
        if not self.files:
            return None
        configs = [bench_file.config for bench_file, _ in self.files.values()]
        providers = self.options.run_args.providers or ()
        declared = list(dict.fromkeys(p.name for c in configs for p in c.participants))
        unknown = [n for n in dict.fromkeys(providers) if n not in declared]
        if not unknown:
            return None
        message = f"Unknown participant(s): {', '.join(unknown)}. Available: {', '.join(declared)}"
        close = [c for c in (closest_key(name, declared) for name in unknown) if c is not None]
        if close:
            message += f"; did you mean {', '.join(dict.fromkeys(close))}?"
        return message

    def not_selected_lines(self) -> list[str]:
        """One line per bench file ``--bench-provider`` leaves without a participant, which
        therefore does not run (``benchsdk: --bench-provider slowstart: bench_b.py does not
        run (it declares fast, other)``); none when no name was given."""
        providers = self.options.run_args.providers
        if not providers:
            return []
        named, given = set(providers), ",".join(dict.fromkeys(providers))
        return [
            f"benchsdk: --bench-provider {given}: {key} does not run (it declares "
            f"{', '.join(p.name for p in bench_file.config.participants)})"
            for key, (bench_file, _) in self.files.items()
            if not any(p.name in named for p in bench_file.config.participants)
        ]

    def selection_errors(self) -> list[str]:
        """Custom args that no collected bench file declares, and ``--bench-threshold``s naming
        a phase that no collected bench file has."""
        if not self.files:
            return []
        errors: list[str] = []
        configs = [bench_file.config for bench_file, _ in self.files.values()]
        flags = {f.lstrip("-") for c in configs for f in c.custom_cli_flags or ()}
        undeclared = [name for name in self.options.custom_args if name not in flags]
        if undeclared:
            known = ", ".join(sorted(f"--{f}" for f in flags)) or "none"
            errors.append(
                f"--bench-arg {', '.join(undeclared)}: not declared in any collected bench "
                f"file's custom_cli_flags (declared: {known})"
            )
        phases = {
            key: [p.name for p in schedule.config.phases or ()]
            for key, (_, schedule) in self.files.items()
        }
        there = "; ".join(
            f"{key}: {', '.join(names) if names else 'no phases'}" for key, names in phases.items()
        )
        for threshold in self.options.run_args.thresholds:
            if threshold.phase is None or any(threshold.phase in p for p in phases.values()):
                continue
            errors.append(
                f"--bench-threshold {threshold.metric}: {threshold.expression}: no collected "
                f"benchmark has the phase {threshold.phase!r} (phases of {there})"
            )
        for name, _ in self.options.run_args.phase_sizes:
            if not any(name in p for p in phases.values()):
                errors.append(
                    f"--bench-phase-iterations {name}: no collected benchmark has the phase "
                    f"{name!r} (phases of {there})"
                )
        return errors
