"""One side of an A/B session's benchmarked tests, in its own process: pytest runs there, on
the side's tree, and runs one test at a time when asked.

The controller (:mod:`.benchmarked_tests`) starts the processes through
:class:`~pytest_benchsdk._ab.side_processes.Sides`, which has :mod:`pytest_benchsdk._ab.side_start`
import this module there (as pytest-xdist's ``remote.py`` runs a worker) and hand it the
setup. Over the channel:

1. ``{"harness": …, "program": …}`` (:mod:`~pytest_benchsdk._ab.side_start`'s): the folder
   holding the measuring ``pytest_benchsdk`` goes first on ``sys.path`` (both sides measure
   with it), then this module is imported;
2. ``{"cwd", "paths", "files", "root", "foreign", "turns", "instructions"}``: move to ``cwd``
   (the side's tree), put its ``paths`` right after the harness, count instructions when
   ``instructions`` (the counted calls of ``--bench-instructions``) says so, and run
   ``pytest.main`` on ``files`` (the test files, those this side has) with
   :class:`SidePlugin`, which answers once collection is done:
   ``{"foreign": [modules imported from the other side's tree], "problems": [collection
   errors], "tests": [keys]}``;
3. ``{"run": key}`` (a key is the test file's path relative to ``root``, ``::``, the rest of
   its node id): run that test now (pytest's whole protocol: setup, call, teardown) and answer
   ``{"outcome": "passed" | "failed" | "skipped", "rounds": {...} | None, "extra_info": ...,
   "line": one-line error | None, "text": pytest's report of it | None}``, or ``{"missing":
   why}`` for a test this side does not have;
4. ``None``: stop (pytest finishes its session, its fixtures torn down).

The side's pytest is a plain session with this side's configuration (its ini, conftests and
plugins): :class:`SidePlugin` (plugin ``benchsdk-ab-side``) keeps pytest-benchsdk's bench
roles out of it, measures what the ``benchmark`` fixture (or the marker alone) asks for with
the test's settings, ``max_time`` divided by ``turns`` (each test runs once per process pair),
and sends every measured round back as it is: the controller makes the records.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_benchsdk._engine.rounds import Rounds, RoundSettings
    from pytest_benchsdk._plugin.benchmark.fixture import BenchmarkFixture

#: The plugin's name in the side's pytest (:mod:`pytest_benchsdk.plugin` gives such a
#: session no bench role).
SIDE_PLUGIN = "benchsdk-ab-side"


def side_test_key(relative: Path, nodeid: str) -> str:
    """The key a test has on both sides: its file relative to its side's root and the rest of
    its node id."""
    _, _, rest = nodeid.partition("::")
    return f"{relative.as_posix()}::{rest}"


def rounds_data(rounds: Rounds) -> dict[str, Any]:
    """:class:`~pytest_benchsdk._engine.rounds.Rounds` as plain data (it crosses the channel)."""
    return {
        "iterations": rounds.iterations,
        "wall": list(rounds.wall),
        "cpu": list(rounds.cpu),
        "started": rounds.started,
        "ended": rounds.ended,
        "instructions": list(rounds.instructions),
    }


class _Measuring:
    """The ``benchmark`` fixture's measuring side in a side's process (installed where the
    fixture looks for it): each test's own settings with its share of ``max_time``."""

    def __init__(self, turns: int) -> None:
        self.turns = turns

    def fixture_for(self, node: pytest.Item) -> BenchmarkFixture:
        from pytest_benchsdk._plugin.benchmark.fixture import BenchmarkFixture

        return BenchmarkFixture(node, measuring=True, settings=self.settings(node))

    def settings(self, node: pytest.Item) -> RoundSettings:
        import attrs

        from pytest_benchsdk._engine.rounds import RoundSettings
        from pytest_benchsdk._plugin.benchmark.fixture import marker_options

        options = marker_options(node)
        options.pop("group", None)
        settings = RoundSettings(**options)
        return attrs.evolve(settings, max_time=settings.max_time / self.turns)


class SidePlugin:
    """The side's part in its pytest session (see the module)."""

    def __init__(self, channel: Any, setup: dict[str, Any]) -> None:
        #: The plugin's name (pluggy names a plugin by its ``__name__``).
        self.__name__ = SIDE_PLUGIN
        self.channel = channel
        self.root = Path(setup["root"])
        self.foreign: str | None = setup.get("foreign")
        self.measuring = _Measuring(int(setup["turns"]))
        self.problems: list[str] = []
        #: Whether the session reached its test loop (it answered the controller).
        self.answered = False
        self._reports: list[pytest.TestReport] = []
        self._body: dict[str, Rounds] = {}

    def pytest_configure(self, config: pytest.Config) -> None:
        from pytest_benchsdk._plugin.benchmark.fixture import install_measuring

        install_measuring(config, self.measuring)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.problems.append(f"{report.nodeid or '.'}: {report.longreprtext.strip()}")

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> bool | None:
        # The marker alone (pytest-codspeed's convention): the whole body, measured.
        from pytest_benchsdk._engine.rounds import measure_rounds
        from pytest_benchsdk._plugin.benchmark.fixture import body_benchmarked, is_async

        if not body_benchmarked(pyfuncitem) or is_async(pyfuncitem.obj):
            return None
        names = pyfuncitem._fixtureinfo.argnames
        kwargs = {name: pyfuncitem.funcargs[name] for name in names}
        settings = self.measuring.settings(pyfuncitem)
        self._body[pyfuncitem.nodeid] = measure_rounds(pyfuncitem.obj, (), kwargs, settings)
        return True

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._reports.append(report)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        from pytest_benchsdk._ab.side_program import imported_from

        self.answered = True
        items: dict[str, pytest.Item] = {}
        root = self.root.resolve()
        for item in session.items:
            path = Path(item.path).resolve()
            if path.is_relative_to(root):  # a file outside the side's root has no key
                items.setdefault(side_test_key(path.relative_to(root), item.nodeid), item)
        foreign = imported_from(self.foreign, []) if self.foreign else []
        self.channel.send({"foreign": foreign, "problems": self.problems, "tests": list(items)})
        while True:
            message = self.channel.receive()
            if message is None:
                return True
            key = message["run"]
            found = items.get(key)
            if found is None:
                self.channel.send({"missing": f"{key.partition('::')[0]} has no test {key}"})
                continue
            self.channel.send(self._run(found))

    def _run(self, item: pytest.Item) -> dict[str, Any]:
        from pytest_benchsdk._plugin.benchmark.fixture import FIXTURE_KEY, json_safe

        self._reports = []
        self._body.pop(item.nodeid, None)
        if FIXTURE_KEY in item.stash:
            del item.stash[FIXTURE_KEY]
        item.ihook.pytest_runtest_protocol(item=item, nextitem=None)
        fixture = item.stash.get(FIXTURE_KEY, None)
        rounds = fixture.rounds if fixture is not None else self._body.get(item.nodeid)
        failed = next((r for r in self._reports if r.failed), None)
        skipped = next((r for r in self._reports if r.skipped), None)
        answer: dict[str, Any] = {
            "outcome": "failed" if failed else "skipped" if skipped else "passed",
            "rounds": None if rounds is None else rounds_data(rounds),
            "extra_info": json_safe(fixture.extra_info) if fixture is not None else None,
            # benchmark.group / benchmark.name as the test left them.
            **(
                {"group": _text(fixture.group), "name": _text(fixture.name)}
                if fixture is not None
                else {}
            ),
            "line": None,
            "text": None,
        }
        if failed is not None:
            answer["line"] = _one_line(failed)
            answer["text"] = failed.longreprtext
        elif skipped is not None:
            answer["line"] = _skip_reason(skipped)
        return answer


def _one_line(report: pytest.TestReport) -> str:
    """The failure in one line (``RuntimeError: boom``), its phase said when not the call."""
    crash = getattr(report.longrepr, "reprcrash", None)
    message = getattr(crash, "message", None)
    if not message:
        lines = [line for line in report.longreprtext.splitlines() if line.strip()]
        message = lines[-1] if lines else "the test failed"
    line = str(message).splitlines()[0] if str(message).strip() else "the test failed"
    return line if report.when == "call" else f"error in {report.when}: {line}"


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return "skipped"


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def serve(channel: Any, setup: dict[str, Any]) -> None:
    """Run pytest on the setup's test files (the process already moved to its ``cwd``, with
    its ``paths`` after the harness: :mod:`pytest_benchsdk._ab.side_start`), answering the
    controller's requests from :class:`SidePlugin`."""
    files = list(setup["files"])
    from pytest_benchsdk._ab.side_program import count_here

    why_not = count_here(setup)
    if why_not is not None:
        channel.send({"error": why_not})
        return
    if not files:  # this side has none of the test files: every test is missing here
        channel.send({"foreign": [], "problems": [], "tests": []})
        while (message := channel.receive()) is not None:
            channel.send({"missing": f"{message['run'].partition('::')[0]} does not exist"})
        return
    plugin = SidePlugin(channel, setup)
    # The command line's -p and -o too (the controller's own options are its own).
    args = [*files, "-p", "no:cacheprovider", "-q", *setup.get("options", ())]
    try:
        code = pytest.main(args, plugins=[plugin])
    except BaseException as exc:  # reported to the controller, which stops the session
        if not plugin.answered:
            channel.send({"error": f"{type(exc).__name__}: {exc}"})
        return
    if not plugin.answered:
        problems = "\n".join(plugin.problems)
        channel.send(
            {
                "error": f"its pytest session ended before running any test (exit status "
                f"{int(code)})" + (f":\n{problems}" if problems else "")
            }
        )
