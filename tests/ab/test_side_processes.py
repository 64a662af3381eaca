"""An A/B side's process as the session talks to it (``_ab/side_processes.py``): what it is sent
and what its answers become, with execnet's gateway and channel played by fakes (as
pytest-xdist's own tests fake its nodes). Real side processes run in ``tests/plugin/ab/``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_benchsdk._ab.revision import ABError
from pytest_benchsdk._ab.side_processes import Side, SideResult, Sides
from pytest_benchsdk.records import TaskRecord


class FakeChannel:
    """execnet's channel: what was sent, and the answers to give (an exception is raised)."""

    def __init__(self, answers: list[object]) -> None:
        self.sent: list[object] = []
        self.answers = answers
        self.timeouts: list[float | None] = []

    def send(self, message: object) -> None:
        self.sent.append(message)

    def receive(self, timeout: float | None = None) -> object:
        self.timeouts.append(timeout)
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer


class FakeGroup:
    """execnet's group: each gateway it makes runs the sent module on ``channel``."""

    def __init__(self, channel: FakeChannel | None = None, refuse: str | None = None) -> None:
        self.channel = channel
        self.refuse = refuse
        self.specs: list[str] = []
        self.modules: list[Any] = []

    def makegateway(self, spec: str) -> FakeGroup:
        if self.refuse is not None:
            raise OSError(self.refuse)
        self.specs.append(spec)
        return self

    def remote_exec(self, module: Any) -> FakeChannel:
        self.modules.append(module)
        assert self.channel is not None
        return self.channel


def _side(answers: list[object], name: str = "A") -> tuple[Side, FakeChannel, FakeGroup]:
    channel = FakeChannel(answers)
    group = FakeGroup(channel)
    side = Side(name, group=group, index=1, role="tests-")  # type: ignore[arg-type]
    side.launch()
    return side, channel, group


def _load(side: Side) -> None:
    side.load(
        cwd=Path("/repo"),
        paths=["/repo/src"],
        files={"bench_x.py": "/repo/bench_x.py"},
        foreign=Path("/wt"),
    )


def test_a_side_starts_its_process_and_sends_what_to_import() -> None:
    side, channel, group = _side([{"foreign": []}])
    _load(side)
    assert side.wait_ready() == {"foreign": []}
    assert group.specs == ["popen//id=benchsdk-ab-tests-A1//execmodel=main_thread_only"]
    assert [m.__name__ for m in group.modules] == ["pytest_benchsdk._ab.side_start"]
    start, setup = channel.sent
    assert isinstance(start, Mapping)
    assert start["program"] == "pytest_benchsdk._ab.side_program"
    assert (Path(start["harness"]) / "pytest_benchsdk").is_dir()
    assert setup == {
        "cwd": "/repo",
        "paths": ["/repo/src"],
        "files": {"bench_x.py": "/repo/bench_x.py"},
        "foreign": "/wt",
        "instructions": None,  # the counted calls under --bench-instructions; None: not counting
    }
    assert channel.timeouts == [300.0]


def test_a_process_that_did_not_start_is_said_when_it_is_needed() -> None:
    side = Side("B", group=FakeGroup(refuse="no interpreter"))
    side.launch()
    with pytest.raises(ABError, match="side B's process did not start: no interpreter"):
        _load(side)


def test_a_side_that_could_not_import_its_bench_files_says_why() -> None:
    side, _, _ = _side([{"error": "ModuleNotFoundError: No module named 'x'"}])
    _load(side)
    with pytest.raises(ABError) as failed:
        side.wait_ready()
    assert str(failed.value) == (
        "side A could not import its bench files:\nModuleNotFoundError: No module named 'x'"
    )


def test_a_task_that_needs_a_fixture_gets_the_advice_for_a_side() -> None:
    side, _, _ = _side([{"error": "the task's parameter db is a fixture only pytest provides"}])
    _load(side)
    with pytest.raises(ABError) as failed:
        side.wait_ready("its tests")
    message = str(failed.value)
    assert message.startswith("side A could not import its tests:\nthe task's parameter db")
    assert "--bench-ab runs each side's tasks in a process of its own, outside pytest" in message


def test_a_side_that_imported_the_other_sides_code_is_refused_with_the_modules() -> None:
    foreign = [f"mod{i} /wt/mod{i}.py" for i in range(12)]
    side, _, _ = _side([{"foreign": foreign}], name="B")
    _load(side)
    with pytest.raises(ABError) as refused:
        side.wait_ready()
    message = str(refused.value)
    assert message.startswith(
        "side B imported modules from the other side's tree, so it would not measure its own "
        "code:\n  mod0 /wt/mod0.py\n"
    )
    assert "mod9 /wt/mod9.py" in message
    assert "mod10" not in message
    assert "install it editable (pip install -e .)" in message


def test_an_iteration_is_sent_and_its_record_comes_back() -> None:
    wire = TaskRecord(task_index=3, status="success", latency_ms=2.0).to_wire()
    payload = {"file": "bench_x.py", "participant": "p", "task_index": 3, "record": wire, "log": []}
    side, channel, _ = _side([{"payload": payload, "error": None}, {"missing": "no participant q"}])
    _load(side)
    result = side.run("bench_x.py", "p", "warm", 3, {"k": "v"})
    assert channel.sent[-1] == {"run": ["bench_x.py", "p", "warm", 3, {"k": "v"}]}
    assert result.payload is not None
    assert result.payload.record.latency_ms == 2.0
    assert (result.error, result.problem) == (None, None)
    assert side.run("bench_x.py", "q", None, 0, {}) == SideResult(None, problem="no participant q")


def test_a_process_that_failed_is_an_ab_error() -> None:
    side, _, _ = _side([EOFError("the channel closed")])
    _load(side)
    with pytest.raises(ABError, match="side A's process failed: the channel closed"):
        side.receive()


def test_a_program_of_its_own_gets_its_setup_and_requests() -> None:
    side, channel, _ = _side([{"ran": 1}])
    side.set_up({"tests": ["t.py::a"]})
    side.send({"measure": "t.py::a"})
    assert side.receive() == {"ran": 1}
    assert channel.sent[1:] == [{"tests": ["t.py::a"]}, {"measure": "t.py::a"}]
    side.stop()
    assert channel.sent[-1] is None  # asked to stop


def test_rounds_go_to_the_pairs_in_turn() -> None:
    sides = Sides()
    pairs = [
        (Side("A", group=sides.group, index=i), Side("B", group=sides.group, index=i))
        for i in range(3)
    ]
    for a, b in pairs:
        sides.add_pair(a, b)
    assert [sides.pair_of(i)["A"].index for i in range(7)] == [0, 1, 2, 0, 1, 2, 0]
    assert sides.pair_of(4)["B"] is pairs[1][1]
    sides.close()  # no process started: nothing to wait for
    sides.stop()  # stopping again does nothing
