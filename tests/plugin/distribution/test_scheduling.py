"""Bench files under pytest-xdist, decided in this process: the controller's part
(``DistributedBench``: the scheduler for ``-n`` without ``--dist``, what the workers are told,
the line that says so, plain report ids), a worker's collection (which ids it shows xdist's
scheduler, which ``--dist`` it refuses), and xdist's own ``LoadGroupScheduling`` fed with those
ids on fake nodes, as pytest-xdist's ``testing/test_dsession.py`` tests its schedulers. A few
real ``-n`` sessions stay in ``test_xdist.py`` and ``test_xdist_ids_and_caches.py``."""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import given

from helpers.runs import config as bench_config
from helpers.sessions import bench
from pytest_benchsdk._engine.benchfile import BenchFile
from pytest_benchsdk._engine.schedule import BenchmarkSchedule, RunArgs, schedule_benchmark
from pytest_benchsdk._plugin.distribution.loadgroup import group_name
from pytest_benchsdk._plugin.distribution.scheduling import (
    WORKERINPUT_KEY,
    DistributedBench,
    dist_mode,
    grouping_problem,
    tags_items,
    xdist_distributes,
)
from pytest_benchsdk._plugin.options import note_dist_choice
from pytest_benchsdk._plugin.runtime.catalog import Catalog

xdist = pytest.importorskip("xdist")
from xdist.scheduler import LoadFileScheduling, LoadGroupScheduling  # noqa: E402

#: Needs one process per participant: concurrency 2, warm-up and a threshold.
GROUPED = bench(
    'participants=["p1", "a]@b"], iterations=3, concurrency=2, warmup=1,\n'
    'thresholds={"value": "max < 50"}'
)
#: Needs nothing: its items may spread one by one.
PLAIN = bench('participants=["q"], iterations=4', slug="plain")


class FakeNode:
    """An xdist worker as the scheduler sees it (xdist's ``MockNode``)."""

    def __init__(self, name: str) -> None:
        self.sent: list[int] = []
        self.gateway = SimpleNamespace(id=name)
        self.workerinput: dict[str, Any] = {"workerid": name}
        self._shutdown = False

    def send_runtest_some(self, indices: Sequence[int]) -> None:
        self.sent.extend(indices)

    def send_runtest_all(self) -> None:
        raise AssertionError("a load scheduler sends items, not all")

    def shutdown(self) -> None:
        self._shutdown = True

    @property
    def shutting_down(self) -> bool:
        return self._shutdown

    def __repr__(self) -> str:
        return f"<FakeNode {self.gateway.id}>"


def _controller(
    pytester: pytest.Pytester, request: pytest.FixtureRequest, *args: str
) -> pytest.Config:
    """The controller's config of ``pytest -p xdist --bench ARGS``, configured as a session
    would be (the plugin and xdist read ``-n``/``--dist`` first), without starting workers."""
    config = pytester.parseconfig("-p", "xdist", "--bench", "--bench-dry-run", *args)
    note_dist_choice(config)  # the plugin's pytest_cmdline_main, before xdist's
    xdist.plugin.pytest_cmdline_main(config)
    config._do_configure()
    request.addfinalizer(config._ensure_unconfigure)
    return config


class WorkerShim:
    """What an xdist worker has before any plugin configures (``remote.py``: the controller's
    ``workerinput``), and a look at the ids it sends the scheduler."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.shown: list[str] = []

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        config.workerinput = {"workerid": "gw0", WORKERINPUT_KEY: self.mode}  # type: ignore[attr-defined]

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        # Called where xdist's worker sends its collected ids to the scheduler.
        self.shown = [item.nodeid for item in session.items]


def _worker_collection(pytester: pytest.Pytester, mode: str) -> pytest.HookRecorder:
    return pytester.inline_run(
        "-p", "xdist", "--bench", "--bench-dry-run", "--collect-only", plugins=[WorkerShim(mode)]
    )


def _worker_ids(pytester: pytest.Pytester, mode: str) -> tuple[list[str], list[str]]:
    """A worker's collection of the bench files with the controller's ``mode``: the ids it
    shows xdist's scheduler, and its items' own ids."""
    shim = WorkerShim(mode)
    recorded = pytester.inline_run(
        "-p", "xdist", "--bench", "--bench-dry-run", "--collect-only", plugins=[shim]
    )
    own = [call.item.nodeid for call in recorded.getcalls("pytest_itemcollected")]
    return shim.shown, own


def _run_everything(scheduler: LoadGroupScheduling, nodes: Sequence[FakeNode]) -> None:
    """Complete the nodes' items one at a time, in turns, until the scheduler has no more."""
    done: dict[str, int] = {node.gateway.id: 0 for node in nodes}
    while not scheduler.tests_finished:
        progressed = False
        for node in nodes:
            at = done[node.gateway.id]
            if at < len(node.sent):
                scheduler.mark_test_complete(node, node.sent[at])
                done[node.gateway.id] = at + 1
                progressed = True
        assert progressed, "the scheduler holds items back"


def _placed(collection: list[str], nodes: Sequence[FakeNode]) -> dict[str, str]:
    """Which node each collected id ran on."""
    where = {}
    for node in nodes:
        for index in node.sent:
            assert collection[index] not in where, "an item sent twice"
            where[collection[index]] = node.gateway.id
    return where


def _distribution(config: pytest.Config) -> DistributedBench:
    plugin = config.pluginmanager.get_plugin("benchsdk-distribution")
    assert isinstance(plugin, DistributedBench)
    return plugin


def _schedule(config: pytest.Config, ids: list[str], workers: int = 2) -> dict[str, str]:
    scheduler = config.hook.pytest_xdist_make_scheduler(config=config, log=None)
    assert isinstance(scheduler, LoadGroupScheduling)
    nodes = [FakeNode(f"gw{i}") for i in range(workers)]
    for node in nodes:
        scheduler.add_node(node)
    for node in nodes:
        scheduler.add_node_collection(node, ids)
    scheduler.schedule()
    _run_everything(scheduler, nodes)
    placed = _placed(ids, nodes)
    assert sorted(placed) == sorted(ids)
    return placed


# --- the controller -----------------------------------------------------------------------------


def test_n_without_dist_schedules_loadgroup_and_tells_the_workers(
    pytester: pytest.Pytester, request: pytest.FixtureRequest
) -> None:
    config = _controller(pytester, request, "-n", "2")
    assert xdist_distributes(config)
    plugin = _distribution(config)
    assert isinstance(plugin, DistributedBench)
    node = FakeNode("gw0")
    config.hook.pytest_configure_node(node=node)
    assert node.workerinput[WORKERINPUT_KEY] == "auto"
    assert isinstance(
        config.hook.pytest_xdist_make_scheduler(config=config, log=None), LoadGroupScheduling
    )


@pytest.mark.parametrize("dist", ["load", "loadgroup", "loadfile", "worksteal"])
def test_an_explicit_dist_is_the_workers_and_xdist_schedules_it(
    pytester: pytest.Pytester, request: pytest.FixtureRequest, dist: str
) -> None:
    config = _controller(pytester, request, "-n", "2", "--dist", dist)
    node = FakeNode("gw0")
    config.hook.pytest_configure_node(node=node)
    assert node.workerinput[WORKERINPUT_KEY] == dist
    plugin = _distribution(config)
    scheduler = plugin.pytest_xdist_make_scheduler(config, None)
    if dist in ("loadgroup", "loadfile"):
        # xdist's own scheduler, fixed for a worker that dies (see test_worker_crashes.py).
        own = {"loadgroup": LoadGroupScheduling, "loadfile": LoadFileScheduling}[dist]
        assert type(scheduler).__mro__[1] is own
        assert type(scheduler).__name__ == f"CrashSafe{own.__name__}"
    else:
        assert scheduler is None  # xdist's own choice


def test_without_workers_there_is_no_distribution(
    pytester: pytest.Pytester, request: pytest.FixtureRequest
) -> None:
    config = _controller(pytester, request)
    assert not xdist_distributes(config)
    assert config.pluginmanager.get_plugin("benchsdk-distribution") is None
    collecting = _controller(pytester, request, "-n", "2", "--collect-only")
    assert not xdist_distributes(collecting)


def test_each_participants_items_stay_on_one_worker_and_a_plain_files_spread(
    pytester: pytest.Pytester, request: pytest.FixtureRequest
) -> None:
    pytester.makepyfile(bench_x=GROUPED, bench_plain=PLAIN)
    shown, own = _worker_ids(pytester, "auto")
    # Only the file that needs it shows xdist its groups, and only to the scheduler.
    assert [i for i in shown if "@" in i.rpartition("]")[2]] == [
        f"{i}@{group_name('bench_x.py', 'p1' if '[p1-' in i else 'a]@b')}"
        for i in own
        if i.startswith("bench_x.py::")
    ]
    assert not any("]@bench" in i for i in own)
    config = _controller(pytester, request, "-n", "2")
    placed = _schedule(config, shown)
    groups: dict[str, set[str]] = {}
    for nodeid, worker in placed.items():
        if nodeid.startswith("bench_x.py::"):
            participant = "p1" if "[p1-" in nodeid else "a]@b"
            groups.setdefault(participant, set()).add(worker)
    # Warm-up, iterations and threshold of each participant: one worker each.
    assert {name: len(workers) for name, workers in groups.items()} == {"p1": 1, "a]@b": 1}
    plain = {worker for nodeid, worker in placed.items() if nodeid.startswith("bench_plain.py")}
    assert plain == {"gw0", "gw1"}


def test_an_explicit_loadgroup_groups_every_bench_file(
    pytester: pytest.Pytester, request: pytest.FixtureRequest
) -> None:
    pytester.makepyfile(bench_x=GROUPED, bench_plain=PLAIN)
    shown, _ = _worker_ids(pytester, "loadgroup")
    assert all("@" in nodeid.rpartition("]")[2] for nodeid in shown)
    config = _controller(pytester, request, "-n", "2", "--dist", "loadgroup")
    # xdist's own loadgroup scheduler reads our group names whole.
    scheduler = LoadGroupScheduling(config)
    assert {scheduler._split_scope(nodeid) for nodeid in shown} == {
        group_name("bench_x.py", "p1"),
        group_name("bench_x.py", "a]@b"),
        group_name("bench_plain.py", "q"),
    }


def test_under_load_a_file_that_needs_no_grouping_shows_plain_ids(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(bench_plain=PLAIN)
    shown, own = _worker_ids(pytester, "load")
    assert shown == own == [f"bench_plain.py::task[q-{i}]" for i in range(4)]


def test_a_file_that_needs_grouping_is_a_collection_error_under_another_dist(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(bench_x=GROUPED, bench_plain=PLAIN)
    result = _worker_collection(pytester, "load")
    (failed,) = [r for r in result.getreports("pytest_collectreport") if r.failed]
    assert failed.nodeid == "bench_x.py"
    assert "bench_x.py: concurrency 2 runs a participant's iterations together" in str(
        failed.longrepr
    )


def test_the_workers_of_a_round_run_group_the_whole_file(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_r=bench('participants=["p1", "p2"], iterations=2, concurrency=2, group_by="round"')
    )
    shown, _ = _worker_ids(pytester, "auto")
    assert {nodeid.rpartition("@")[2] for nodeid in shown} == {group_name("bench_r.py", "round")}


def test_the_header_says_once_which_files_got_loadgroup_and_why(
    pytester: pytest.Pytester, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makepyfile(bench_x=GROUPED, bench_plain=PLAIN)
    shown, _ = _worker_ids(pytester, "auto")
    config = _controller(pytester, request, "-n", "2")
    catalog = Catalog.of(config)
    grouped = bench_config(
        participants=["p1"], iterations=3, concurrency=2, warmup=1, thresholds={"value": "max < 50"}
    )
    catalog.add(
        pytester.path / "bench_x.py", BenchFile(pytester.path / "bench_x.py", grouped, print)
    )
    capsys.readouterr()
    plugin = _distribution(config)
    for name in ("gw0", "gw1"):
        plugin.pytest_xdist_node_collection_finished(FakeNode(name), shown)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("benchsdk:")]
    assert lines == [
        "benchsdk: -n without --dist: running with --dist loadgroup, so each participant's "
        "items stay in one worker: bench_x.py (concurrency 2, thresholds, warm-up)"
    ]


def test_nothing_is_said_when_no_file_needed_grouping(
    pytester: pytest.Pytester, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makepyfile(bench_plain=PLAIN)
    shown, _ = _worker_ids(pytester, "auto")
    config = _controller(pytester, request, "-n", "2")
    capsys.readouterr()
    plugin = _distribution(config)
    plugin.pytest_xdist_node_collection_finished(FakeNode("gw0"), shown)
    assert "benchsdk:" not in capsys.readouterr().out


def test_a_report_under_a_grouped_id_gets_the_plain_one(
    pytester: pytest.Pytester, request: pytest.FixtureRequest
) -> None:
    config = _controller(pytester, request, "-n", "2")
    grouped = "bench_x.py::task[a]@b-1]@bench_x.py:a%5D%40b"
    report = pytest.TestReport(grouped, ("bench_x.py", 0, "task"), {}, "passed", None, "call")
    plugin = _distribution(config)
    plugin.pytest_runtest_logreport(report)
    assert report.nodeid == "bench_x.py::task[a]@b-1]"
    other = pytest.TestReport(
        "test_x.py::test_a@x", ("test_x.py", 0, "t"), {}, "passed", None, "call"
    )
    plugin.pytest_runtest_logreport(other)
    assert other.nodeid == "test_x.py::test_a@x"


# --- a worker's decision ------------------------------------------------------------------------


def _schedule_of(**fields: Any) -> BenchmarkSchedule:
    fields.setdefault("participants", ["p1"])
    fields.setdefault("iterations", 2)
    return schedule_benchmark(bench_config(**fields), RunArgs(), {})


def _worker(
    pytester: pytest.Pytester, workerinput: dict[str, Any] | None, *args: str
) -> pytest.Config:
    config = pytester.parseconfig("-p", "xdist", *args)
    if workerinput is not None:
        config.workerinput = workerinput  # type: ignore[attr-defined]
        config.option.loadgroup = config.getvalue("dist") == "loadgroup"  # as remote.py does
    return config


def test_a_worker_reads_the_controllers_dist(pytester: pytest.Pytester) -> None:
    assert dist_mode(_worker(pytester, None)) is None  # not a worker
    assert dist_mode(_worker(pytester, {WORKERINPUT_KEY: "auto"})) == "auto"
    # A controller without this plugin's part: xdist's own record.
    assert dist_mode(_worker(pytester, {}, "--dist", "loadgroup")) == "loadgroup"
    assert dist_mode(_worker(pytester, {}, "--dist", "load")) == "load"


@pytest.mark.parametrize(
    ("mode", "needs", "tagged"),
    [
        ("auto", True, True),
        ("auto", False, False),
        ("loadgroup", False, True),
        ("load", True, False),
        (None, True, False),
    ],
)
def test_which_files_show_xdist_their_groups(
    pytester: pytest.Pytester, mode: str | None, needs: bool, tagged: bool
) -> None:
    schedule = _schedule_of(concurrency=2) if needs else _schedule_of()
    workerinput = None if mode is None else {WORKERINPUT_KEY: mode}
    assert tags_items(_worker(pytester, workerinput), schedule) is tagged


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"concurrency": 2},
            "bench_x.py: concurrency 2 runs a participant's iterations together, so they must "
            "stay on one xdist worker: run with --dist loadgroup, or use --bench-concurrency 1.",
        ),
        (
            {"thresholds": {"value": "max < 50"}},
            "bench_x.py: thresholds judge a participant's iterations in the process that ran "
            "them, so a participant's items must stay on one xdist worker: run with --dist "
            "loadgroup (or give -n without --dist, which applies it).",
        ),
        (
            {"warmup": 1},
            "bench_x.py: warm-up iterations warm the process that runs the participant's "
            "measured iterations, so a participant's items must stay on one xdist worker: run "
            "with --dist loadgroup (or give -n without --dist, which applies it), or use "
            "--bench-warmup 0.",
        ),
    ],
)
def test_another_dist_is_refused_naming_the_reason(
    pytester: pytest.Pytester, fields: dict[str, Any], message: str
) -> None:
    schedule = _schedule_of(**fields)
    assert (
        grouping_problem(_worker(pytester, {WORKERINPUT_KEY: "load"}), "bench_x.py", schedule)
        == message
    )
    for fine in ("auto", "loadgroup", "loadfile", "loadscope"):
        worker = _worker(pytester, {WORKERINPUT_KEY: fine})
        assert grouping_problem(worker, "bench_x.py", schedule) is None
    assert grouping_problem(_worker(pytester, None), "bench_x.py", schedule) is None


def test_concurrency_one_runs_under_any_dist(pytester: pytest.Pytester) -> None:
    schedule = schedule_benchmark(
        bench_config(participants=["q1", "q2"], iterations=3, concurrency=2),
        RunArgs(concurrency=1),
        {},
    )
    assert schedule.grouping_reasons == ()
    assert grouping_problem(_worker(pytester, {WORKERINPUT_KEY: "load"}), "b.py", schedule) is None


@given(st.text(min_size=1, max_size=20), st.sampled_from(["bench_x.py", "sub/bench a.py"]))
def test_a_group_name_holds_nothing_xdist_or_a_node_id_reads(
    participant: str, file_key: str
) -> None:
    name = group_name(file_key, participant)
    assert not any(mark in name for mark in ("@", "[", "]", "::"))
    # xdist's scheduler reads the text after the last "@" that follows the last "]".
    nodeid = f"{file_key}::task[{participant}-0]@{name}"
    assert LoadGroupScheduling._split_scope(None, nodeid) == name


class CountingNode(FakeNode):
    """A fake worker that also counts the lists of tests it was sent (an empty one included)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.sends: list[list[int]] = []

    def send_runtest_some(self, indices: Sequence[int]) -> None:
        self.sends.append(list(indices))
        super().send_runtest_some(indices)


def test_after_a_worker_dies_what_is_left_runs_once_and_every_worker_is_told_to_stop(
    pytester: pytest.Pytester, request: pytest.FixtureRequest
) -> None:
    # Issue 48, item 4 (-n 2 at concurrency 1: each item a unit of its own). xdist 3.8 put the
    # dead worker's finished units back (sent later as empty lists that never report done),
    # sent the test it died in again, and could leave a worker holding its last test.
    config = _controller(pytester, request, "-n", "2")
    ids = [f"bench_x.py::task[p1-{i}]" for i in range(16)]
    scheduler = config.hook.pytest_xdist_make_scheduler(config=config, log=None)
    gw0, gw1 = CountingNode("gw0"), CountingNode("gw1")
    for node in (gw0, gw1):
        scheduler.add_node(node)
    for node in (gw0, gw1):
        scheduler.add_node_collection(node, ids)
    scheduler.schedule()
    done: dict[str, int] = {"gw0": 0, "gw1": 0, "gw2": 0}

    def complete(node: CountingNode) -> bool:
        at = done[node.gateway.id]
        if at >= len(node.sent) or (len(node.sent) - at == 1 and not node.shutting_down):
            return False  # a worker runs its last test once it has another or must stop
        scheduler.mark_test_complete(node, node.sent[at])
        done[node.gateway.id] = at + 1
        return True

    while done["gw0"] < 5:  # gw0 finishes five tests, gw1 keeps pace
        assert complete(gw0)
        complete(gw1)
    crashed = scheduler.remove_node(gw0)
    assert crashed == ids[gw0.sent[5]]
    gw2 = CountingNode("gw2")  # xdist's replacement
    scheduler.add_node(gw2)
    scheduler.add_node_collection(gw2, ids)
    scheduler.schedule()
    while not scheduler.tests_finished:
        assert complete(gw1) | complete(gw2), "every worker waits: the session would hang"
    while complete(gw1) | complete(gw2):
        pass
    assert gw1.shutting_down
    assert gw2.shutting_down
    assert all(gw1.sends + gw2.sends)  # no empty list of tests
    ran = gw0.sent[:5] + gw1.sent + gw2.sent
    assert sorted(ran) == sorted(set(range(len(ids))) - {ids.index(crashed)})
