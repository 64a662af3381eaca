"""Collection: bench files become :class:`~.nodes.BenchModule` s, in every role that collects."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from pytest_benchsdk._base.files import is_bench_path
from pytest_benchsdk._plugin.distribution.loadgroup import plain_cached_ids, shown_to_xdist
from pytest_benchsdk._plugin.distribution.scheduling import tags_items
from pytest_benchsdk._plugin.items.nodes import BenchModule
from pytest_benchsdk._plugin.items.selection import Completion, complete_selection
from pytest_benchsdk._plugin.runtime.catalog import Catalog

__all__ = ["CollectionPlugin"]


def _python_collects(file_path: Path, parent: pytest.Collector) -> bool:
    """Whether pytest's python plugin will offer this file to ``pytest_pycollect_makemodule``."""
    from _pytest.python import path_matches_patterns

    return parent.session.isinitpath(file_path) or path_matches_patterns(
        file_path, parent.config.getini("python_files")
    )


class CollectionPlugin:
    """Claims bench files, checks the selection, and keeps a broken bench file from stopping
    the others."""

    def __init__(self, catalog: Catalog, *, runs_items: bool) -> None:
        self.catalog = catalog
        self.runs_items = runs_items
        self.options = catalog.options
        self.config = catalog.config
        self._failed_collections = {"bench": 0, "other": 0}
        self._kept_going = False
        self._running_files = 0
        self._completion_line: str | None = None
        self._not_selected: list[str] = []

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self) -> None:
        # Before collection, after every plugin read its cache.
        plain_cached_ids(self.config)

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> BenchModule | None:
        if not self.options.enabled or file_path.suffix != ".py":
            return None
        if not is_bench_path(file_path, self.options.file_patterns):
            return None
        if _python_collects(file_path, parent):
            return None
        module: BenchModule = BenchModule.from_parent(parent, path=file_path)
        # pytest would not collect this file: if it is a test module after all, nothing is.
        module.python_collects = False
        return module

    @pytest.hookimpl(tryfirst=True)
    def pytest_pycollect_makemodule(self, module_path: Path, parent: pytest.Collector) -> Any:
        # A bench file named on the command line (or matching python_files) reaches pytest's
        # python plugin too; claiming it here collects it once, as a bench file (or, when it is
        # an ordinary test module, as pytest's Module would: BenchModule.collect decides).
        if self.options.enabled and is_bench_path(module_path, self.options.file_patterns):
            return BenchModule.from_parent(parent, path=module_path)
        return None

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            path = Path(report.nodeid.partition("::")[0])
            bench = is_bench_path(path, self.options.file_patterns)
            self._failed_collections["bench" if bench else "other"] += 1

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self) -> None:
        # xdist workers leave it to the controller (an error or exit in a worker's collection
        # crashes xdist's loop), which checks the files of their items.
        unknown = self.catalog.unknown_providers()
        if unknown is not None and getattr(self.config, "workerinput", None) is None:
            # A usage error (status 4, one line, before anything runs), as pytest's own for a
            # bad option value; `pytest-benchsdk run` keeps upstream's status 1.
            self.catalog.usage_error = True
            raise pytest.UsageError(f"--bench-provider: {unknown}")
        errors = self.catalog.selection_errors()
        if errors:
            self.catalog.usage_error = True
            raise pytest.UsageError("\n".join(errors))
        self._not_selected = self.catalog.not_selected_lines()

    @pytest.hookimpl(wrapper=True)
    def pytest_collection_finish(self, session: pytest.Session) -> Generator[None, None, None]:
        # Every selector (node ids, -k, -m, --deselect, --lf, --ff, --sw) has chosen; the
        # terminal, the controller and xdist's worker read session.items inside the yield.
        completion = complete_selection(
            session.items, last_failed=bool(self.config.getoption("lf", False))
        )
        session.items[:] = completion.items
        self._completion_line = completion.summary()
        self._count_as_selected(completion)
        if getattr(self.config, "workerinput", None) is None:
            return (yield)
        # On an xdist worker: the ids xdist sends to its scheduler carry their group.
        grouped = {
            key
            for key, (_, schedule) in self.catalog.files.items()
            if tags_items(self.config, schedule)
        }
        shown = [
            item
            for item in session.items
            if isinstance(item.parent, BenchModule) and item.parent.bench_file_key in grouped
        ]
        with shown_to_xdist(shown):
            return (yield)

    def _count_as_selected(self, completion: Completion) -> None:
        """Items the completion added were reported deselected (by -k, --lf ...): the
        terminal's count is corrected; the warm-up it left out is reported deselected."""
        if completion.removed_warmup:
            self.config.hook.pytest_deselected(items=list(completion.removed_warmup))
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        deselected = getattr(reporter, "stats", {}).get("deselected")
        if completion.added and isinstance(deselected, list):
            added = {id(item) for item in completion.added}
            deselected[:] = [item for item in deselected if id(item) not in added]

    def pytest_report_collectionfinish(self) -> list[str]:
        lines = []
        verbosity = self.config.get_verbosity()
        if self._completion_line is not None and verbosity >= 0:
            lines.append(self._completion_line)
        # Said even under -q: a bench file that does not run is not a detail.
        if verbosity >= -1:
            lines.extend(self._not_selected)
        return lines

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> None:
        # A broken bench file must not stop the others (pytest stops on any collection error);
        # the session still fails. Errors in ordinary test files keep pytest's behaviour.
        failed = self._failed_collections
        option = self.config.option
        keep_going = self.runs_items and failed["bench"] and not failed["other"]
        if keep_going and not option.continue_on_collection_errors:
            option.continue_on_collection_errors = True
            self._kept_going = True
            self._running_files = len(
                {id(item.parent) for item in session.items if isinstance(item.parent, BenchModule)}
            )

    @pytest.hookimpl(tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        # Here, right after pytest's ERRORS section, "above" is true.
        if self._kept_going:
            failed, running = self._failed_collections["bench"], self._running_files
            head = (
                "1 bench file could not be collected"
                if failed == 1
                else f"{failed} bench files could not be collected"
            )
            if running == 0:
                rest = "no other bench file had items to run, so nothing ran"
            else:
                other = "1 other bench file" if running == 1 else f"{running} other bench files"
                rest = f"the {other} ran and the session fails"
            terminalreporter.write_line(f"benchsdk: {head} (errors above); {rest}.")
