"""The check role (``--bench-check``): validate every collected bench file without running an
iteration, and print upstream's check report for each."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_benchsdk._analysis.scoring_spec import scoring_problem
from pytest_benchsdk._plugin.runtime.catalog import Catalog

__all__ = ["CHECK_FAILED", "NOT_CHECKED", "CheckPlugin"]

CHECK_FAILED = "Benchmark check failed. See warnings above for details."
NOT_CHECKED = (
    '[benchsdk] Platform connectivity not checked (dry run): "apiOk" is null; '
    "no credentials are needed."
)


class CheckPlugin:
    """Replaces the test loop with the check report."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.config = catalog.config

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool | None:
        if self.config.option.collectonly:
            return None
        if not self._check():
            session.testsfailed += 1
        return True

    def _platform_probe(self) -> tuple[bool | None, bool, list[str]]:
        """Upstream's ``apiOk`` / ``envOk`` and the warnings. A dry run contacts no platform:
        ``apiOk`` is ``None`` (upstream says ``true`` although nothing was checked) and
        ``envOk`` is true, as no credentials are needed."""
        options = self.catalog.options
        if options.dry_run:
            return None, True, [NOT_CHECKED]
        from pytest_benchsdk.platform import (
            check_connectivity,  # httpx: only when the check needs it
        )

        result = check_connectivity(
            dry_run=options.dry_run,
            base_url=options.base_url,
            api_key=options.api_key,
            org=options.org,
            env=self.catalog.environ,
        )
        return result.api_ok, result.env_ok, list(result.warnings)

    def _check(self) -> bool:
        """Print the check report of each bench file; True when everything is fine."""
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")

        def write(line: str) -> None:
            if reporter is not None:
                reporter.write_line(line)

        api_ok, env_ok, warnings = self._platform_probe()
        ok = api_ok is not False and env_ok
        for warning in warnings:
            write(warning)
        for file_key, (bench_file, schedule) in self.catalog.files.items():
            report: dict[str, Any] = {
                "file": file_key,
                "benchmarkSlug": schedule.config.benchmark_slug,
                "apiOk": api_ok,
                "envOk": env_ok,
                "participants": {
                    "requested": list(schedule.requested),
                    "available": list(schedule.participant_names),
                    "skipped": [s.to_wire() for s in schedule.skipped],
                },
            }
            if not schedule.participants:
                ok = False
            config = bench_file.config
            if config.on_score is not None or config.scoring is not None:
                problem = scoring_problem(config)
                report["scoringOk"] = problem is None
                if problem is not None:
                    write(f"[benchsdk] Scoring validation failed: {problem}")
                    ok = False
            write(json.dumps(report, indent=2, ensure_ascii=False))
        if not self.catalog.files:
            write(
                "[benchsdk] no bench files collected (pattern: "
                f"{', '.join(self.catalog.options.file_patterns)})"
            )
            ok = False
        if not ok:
            write(CHECK_FAILED)
        return ok
