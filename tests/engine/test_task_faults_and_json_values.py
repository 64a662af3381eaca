"""Faults a task or a config can cause end in a clear message and a complete record, never an
INTERNALERROR, a hang or a leaked secret: non-JSON values, BaseExceptions, the participant's
repr, '.'/'..' names, bounded knobs, bounded waits for abandoned threads.
"""

from __future__ import annotations

import datetime
import enum
import json
import math
from typing import Any

import attrs
import pytest

from helpers.sessions import bench, read_json, store_path, stored_records, stored_runs
from pytest_benchsdk import Participant, Phase, validate_benchmark_config
from pytest_benchsdk._base.js import MAX_JSON_DEPTH, JSONConversionError, to_json_value
from pytest_benchsdk._engine.flag_values import parse_non_negative_number, parse_positive_int
from pytest_benchsdk.context import TaskContext, TaskError, TaskResult, run_task
from pytest_benchsdk.schedule import RunArgs, schedule_benchmark


def _ctx() -> TaskContext:
    return TaskContext(participant=Participant("p"), participant_name="p", task_index=0)


# --- #3 one conversion rule for task data -----------------------------------------------------


class Colour(enum.Enum):
    RED = "red"


@attrs.frozen
class Point:
    x: int
    y: int


class Wired:
    def to_wire(self) -> dict[str, Any]:
        return {"kind": "wired", "at": datetime.date(2024, 1, 2)}


def test_json_values_pass_unchanged() -> None:
    value = {"a": 1, "b": [1.5, "x", None, True], "c": {"d": {}}}
    assert to_json_value(value) == value
    nan = to_json_value({"n": math.nan, "i": math.inf})
    assert math.isnan(nan["n"])
    assert nan["i"] == math.inf


def test_convertible_values_become_their_json_form() -> None:
    converted = to_json_value(
        {
            "when": datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=datetime.timezone.utc),
            "day": datetime.date(2024, 5, 6),
            "tags": {"b", "a"},
            "frozen": frozenset({3, 1}),
            "pair": (1, 2),
            1: "int key",
            (1, 2): "tuple key",
            None: "null key",
            "raw": b"ok\xff\x00",
            "colour": Colour.RED,
            "point": Point(1, 2),
            "wired": Wired(),
        }
    )
    assert converted == {
        "when": "2024-05-06T07:08:09+00:00",
        "day": "2024-05-06",
        "tags": ["a", "b"],
        "frozen": [1, 3],
        "pair": [1, 2],
        "1": "int key",
        "1,2": "tuple key",
        "null": "null key",
        "raw": "ok\\xff\x00",
        "colour": "red",
        "point": {"x": 1, "y": 2},
        "wired": {"kind": "wired", "at": "2024-01-02"},
    }
    json.dumps(converted)  # plain JSON now


def test_unconvertible_values_name_the_key_path_and_type() -> None:
    circular: dict[str, Any] = {}
    circular["self"] = [circular]
    with pytest.raises(JSONConversionError, match=r"data\.self\[0\] is a circular reference"):
        to_json_value(circular, "data")
    with pytest.raises(JSONConversionError, match=r'data\.a\["b c"\] is of type object'):
        to_json_value({"a": {"b c": object()}}, "data")
    deep: list[Any] = []
    inner = deep
    for _ in range(5000):
        inner.append([])
        inner = inner[0]
    with pytest.raises(JSONConversionError, match=f"deeper than {MAX_JSON_DEPTH} levels"):
        to_json_value({"deep": deep}, "data")
    with pytest.raises(JSONConversionError, match="key of type object"):
        to_json_value({object(): 1}, "data")


def test_measure_log_returned_and_task_error_data_are_converted_at_handover() -> None:
    def task(ctx: TaskContext) -> TaskResult:
        ctx.measure(when=datetime.date(2024, 1, 1), tags={"x"})
        with ctx.step("s"):
            ctx.measure(pair=(1, 2))
        ctx.log("hello", {"b": b"\x00", (1,): 2})
        return TaskResult(data={"set": frozenset({2, 1})})

    outcome = run_task(_ctx(), task)
    assert outcome.error is None
    assert outcome.record.data == {
        "when": "2024-01-01",
        "tags": ["x"],
        "set": [1, 2],
        "cpu_ms": outcome.record.data["cpu_ms"],
    }
    assert outcome.record.steps is not None
    assert outcome.record.steps[0].data == {
        "pair": [1, 2],
        "cpu_ms": outcome.record.steps[0].data["cpu_ms"],
    }
    assert outcome.logs[-1].meta == {"b": "\x00", "1": 2}

    def failing(ctx: TaskContext) -> None:
        raise TaskError("no", code="c", data={"at": datetime.date(2024, 1, 1)})

    failed = run_task(_ctx(), failing)
    assert failed.record.error_code == "c"
    assert failed.record.data == {"at": "2024-01-01", "errorMessage": "no"}


def test_unconvertible_values_fail_only_that_iteration() -> None:
    def measured(ctx: TaskContext) -> None:
        ctx.measure(ok=1)
        ctx.measure(bad=object())

    outcome = run_task(_ctx(), measured)
    assert outcome.record.status == "error"
    assert outcome.record.error_code == "JSONConversionError"
    assert outcome.record.data is not None
    assert outcome.record.data["ok"] == 1
    assert "measure().bad is of type object" in outcome.record.data["errorMessage"]

    circular: dict[str, Any] = {}
    circular["c"] = circular

    def returned(ctx: TaskContext) -> dict[str, Any]:
        return {"loop": circular}

    outcome = run_task(_ctx(), returned)
    assert outcome.record.status == "error"
    assert "returned data.loop.c is a circular reference" in str(outcome.error)

    def task_error(ctx: TaskContext) -> None:
        raise TaskError("x", code="c", data={"fn": print})

    outcome = run_task(_ctx(), task_error)
    assert outcome.record.status == "error"
    assert "TaskError data.fn is of type builtin_function_or_method" in str(outcome.error)
    assert isinstance(outcome.error, TypeError)
    assert isinstance(outcome.error.__cause__, TaskError)
    # the TaskError's own text never raises either
    assert "data:" in str(TaskError("x", data={"b": b"\x00", "o": object()}))

    def logged(ctx: TaskContext) -> None:
        ctx.log("m", {"o": object()})

    outcome = run_task(_ctx(), logged)
    assert "log() meta.o is of type object" in str(outcome.error)


NON_JSON_TASK = """
import datetime

@define_task
def task(participant, measure, log, task_index):
    name = participant.name
    if name == "bytes":
        measure(b=b"\\x00")
    elif name == "dates":
        measure(at=datetime.datetime(2024, 1, 2, 3, 4, 5))
    elif name == "sets":
        measure(tags={"a"}, pair=(1, 2), **{"k": {(1, 2): 1}})
        log("meta", {"s": {1}})
    elif name == "object":
        measure(o=object())
    elif name == "circular":
        c = {}
        c["c"] = c
        return {"c": c}
    elif name == "deep":
        d = x = []
        for _ in range(5000):
            x.append([])
            x = x[0]
        measure(deep=d)
    elif name == "taskerror":
        raise TaskError("bad", code="bad", data={"s": {1}})
    measure(value=1)
"""

NAMES = ["bytes", "dates", "sets", "object", "circular", "deep", "taskerror", "last"]


def test_non_json_values_fail_the_iteration_not_the_session(pytester: pytest.Pytester) -> None:
    participants = ", ".join(f'Participant("{n}")' for n in NAMES)
    pytester.makepyfile(bench_x=bench(f"participants=[{participants}]", NON_JSON_TASK))
    out = pytester.path / "run.json"
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "-v", "--bench-json", str(out)
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # not INTERNALERROR
    result.assert_outcomes(passed=4, failed=4)
    assert "INTERNALERROR" not in result.stdout.str()
    result.stdout.fnmatch_lines(["*measure().o is of type object*"])
    doc = read_json(out)
    records = {p["participant"]: p["records"] for b in doc["benchmarks"] for p in b["participants"]}
    assert set(records) == set(NAMES)  # later participants ran
    assert records["bytes"][0]["data"] == {
        "b": "\x00",
        "value": 1,
        "cpu_ms": records["bytes"][0]["data"]["cpu_ms"],
    }
    assert records["dates"][0]["data"]["at"] == "2024-01-02T03:04:05"
    assert records["sets"][0]["data"] == {
        "tags": ["a"],
        "pair": [1, 2],
        "k": {"1,2": 1},
        "value": 1,
        "cpu_ms": records["sets"][0]["data"]["cpu_ms"],
    }
    assert records["taskerror"][0]["data"] == {"s": [1], "errorMessage": "bad"}
    for name, fragment in [
        ("object", "measure().o is of type object"),
        ("circular", "returned data.c.c is a circular reference"),
        ("deep", "deeper than 100 levels"),
    ]:
        (record,) = records[name]
        assert record["status"] == "error"
        assert fragment in record["data"]["errorMessage"], name
    (run,) = stored_runs(store_path(pytester))
    assert run.status == "failed"
    stored = stored_records(store_path(pytester), run.run_id)
    assert stored["sets"] == records["sets"]  # the store and the JSON see the same data


# --- #4 BaseExceptions leave records ----------------------------------------------------------

BASE_EXCEPTION_TASK = """
import sys

import pytest

class Custom(BaseException):
    pass

@define_task
def task(participant, measure):
    measure(before=1)
    name = participant.name
    if name == "exit":
        sys.exit(3)
    if name == "fail":
        pytest.fail("failed on purpose")
    if name == "genexit":
        raise GeneratorExit("closed")
    if name == "custom":
        raise Custom("custom base")
    if name == "skip":
        pytest.skip("not today")
"""


@pytest.mark.parametrize("concurrency", [1, 2])
def test_base_exceptions_leave_error_records(pytester: pytest.Pytester, concurrency: int) -> None:
    names = ["exit", "fail", "genexit", "custom", "skip", "ok"]
    participants = ", ".join(f'Participant("{n}")' for n in names)
    pytester.makepyfile(
        bench_x=bench(
            f"participants=[{participants}], iterations=2, concurrency={concurrency}",
            BASE_EXCEPTION_TASK,
        )
    )
    out = pytester.path / "run.json"
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "-p", "no:xdist", "--bench-json", str(out)
    )
    result.assert_outcomes(passed=2, failed=8, skipped=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    doc = read_json(out)
    records = {p["participant"]: p["records"] for b in doc["benchmarks"] for p in b["participants"]}
    expected = {
        "exit": ("SystemExit", "3"),
        "fail": ("Failed", "failed on purpose"),
        "genexit": ("GeneratorExit", "closed"),
        "custom": ("Custom", "custom base"),
    }
    for name, (code, message) in expected.items():
        assert len(records[name]) == 2, name
        for record in records[name]:
            assert record["status"] == "error"
            assert record["errorCode"] == code
            assert record["data"] == {"before": 1, "errorMessage": message}
    # pytest.skip() keeps pytest's meaning: skipped, no record
    assert records.get("skip", []) == []
    assert [r["status"] for r in records["ok"]] == ["success", "success"]
    (run,) = stored_runs(store_path(pytester))
    assert run.status == "failed"
    assert run.record_count == 10


def test_base_exceptions_in_async_tasks_leave_records() -> None:
    import asyncio

    from pytest_benchsdk.context import run_task_async

    class Custom(BaseException):
        pass

    async def task(ctx: TaskContext) -> None:
        ctx.measure(before=1)
        raise Custom("async base")

    ctx = TaskContext(
        participant=Participant("p"), participant_name="p", task_index=0, is_async=True
    )
    outcome = asyncio.run(run_task_async(ctx, task))
    assert isinstance(outcome.error, Custom)
    assert outcome.record.error_code == "Custom"
    assert outcome.record.data == {"before": 1, "errorMessage": "async base"}

    async def cancelled(ctx: TaskContext) -> None:
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(run_task_async(ctx, cancelled))


@pytest.mark.slow
def test_a_tasks_own_keyboard_interrupt_fails_only_its_iteration(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1")], iterations=3',
            """
            @define_task
            def task(task_index, measure):
                measure(i=task_index)
                if task_index == 1:
                    raise KeyboardInterrupt
            """,
        )
    )
    result = pytester.runpytest_subprocess("--bench", "--bench-dry-run")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    (run,) = stored_runs(store_path(pytester))
    records = stored_records(store_path(pytester), run.run_id)
    assert [(r["taskIndex"], r["status"]) for r in records["p1"]] == [
        (0, "success"),
        (1, "error"),
        (2, "success"),
    ]


# --- #9 the participant's repr shows no extra values ------------------------------------------


def test_participant_repr_hides_extra_values() -> None:
    participant = Participant("p", required_env_vars=["PSECRET"], token="sk-live-123", port=1)
    text = repr(participant)
    assert "sk-live-123" not in text
    assert text == "Participant('p', required_env_vars=('PSECRET',), token=<str>, port=<int>)"


def test_failing_iteration_traceback_does_not_show_participant_secret(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PSECRET", "sk-very-secret-value")
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p", required_env_vars=["PSECRET"], '
            'token=os.environ["PSECRET"])]',
            "@define_task\ndef task(participant):\n    assert participant.name == 'q'\n",
            prelude="import os\n",
        )
    )
    xml = pytester.path / "junit.xml"
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "--bench-no-store", f"--junitxml={xml}", "-l"
    )
    result.assert_outcomes(failed=1)
    assert "token=<str>" in result.stdout.str()
    assert "sk-very-secret-value" not in result.stdout.str()
    assert "sk-very-secret-value" not in xml.read_text()


# --- #11 '.' and '..' names -------------------------------------------------------------------


def test_dot_names_are_rejected_with_every_other_issue() -> None:
    issues = validate_benchmark_config(
        {
            "benchmark_slug": "s",
            "benchmark_name": "S",
            "participants": [Participant(".."), Participant("ok/slash"), Participant(".")],
            "iterations": 0,
        }
    )
    fields = [(i.field, i.message) for i in issues]
    assert fields[0][0] == "participants[0].name"
    assert "must not be '..'" in fields[0][1]
    assert "path segment" in fields[0][1]
    assert fields[1][0] == "participants[2].name"
    assert "must not be '.'" in fields[1][1]
    assert fields[2][0] == "iterations"  # reported together


def test_dot_name_bench_file_fails_collection(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench('participants=[Participant("..")]'))
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run", "--bench-no-store")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # a collection error, no INTERNALERROR
    result.stdout.fnmatch_lines(["*participants[[]0[]].name*must not be '..'*"])


@pytest.mark.parametrize("slug", [".", ".."])
def test_dot_benchmark_slugs_are_rejected(slug: str) -> None:
    """httpx drops a dot segment, so ``..`` would send ``PUT /api/v1`` and the 404 would blame
    the platform URL: a validation error instead, like a participant named ``..``."""
    issues = validate_benchmark_config(
        {"benchmark_slug": slug, "benchmark_name": "S", "participants": [Participant("p")]}
    )
    assert [(i.field, i.message) for i in issues] == [
        (
            "benchmark_slug",
            f"must not be '{slug}': the name is a path segment of the platform's URLs, "
            f"where '{slug}' would address another endpoint",
        )
    ]


def test_dot_benchmark_slug_bench_file_fails_collection(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench(slug=".."))
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run", "--bench-no-store")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*benchmark_slug: must not be '..'*"])
    assert "INTERNALERROR" not in result.stdout.str()


# --- #12 bounded knobs ------------------------------------------------------------------------


def _config(**fields: Any) -> dict[str, Any]:
    return {"benchmark_slug": "s", "benchmark_name": "S", "participants": [Participant("p")]} | (
        fields
    )


def test_config_knobs_are_bounded() -> None:
    issues = validate_benchmark_config(
        _config(iterations=10**30, concurrency=10**6, stagger_delay_ms=1e300)
    )
    messages = {i.field: i.message for i in issues}
    assert "at most 1,000,000" in messages["iterations"]
    assert "one pytest item" in messages["iterations"]
    assert "at most 10,000" in messages["concurrency"]
    assert "at most 3,600,000" in messages["stagger_delay_ms"]
    phased = validate_benchmark_config(
        _config(phases=[Phase("a", 10**30), Phase("b", 600_000), Phase("c", 600_000)])
    )
    fields = {i.field: i.message for i in phased}
    assert "at most 1,000,000" in fields["phases['a'].iterations"]
    assert "in all (got 1,200,000)" in fields["phases"]
    assert (
        validate_benchmark_config(_config(iterations=1_000_000, stagger_delay_ms=3_600_000)) == []
    )


def test_cli_knobs_are_bounded() -> None:
    with pytest.raises(ValueError, match="--bench-iterations expects at most 1,000,000"):
        parse_positive_int("--bench-iterations", "99999999999999999999")
    with pytest.raises(ValueError, match="--bench-concurrency expects at most 10,000"):
        parse_positive_int("--bench-concurrency", "1e9")
    with pytest.raises(ValueError, match="--bench-stagger-delay-ms expects at most 3,600,000"):
        parse_non_negative_number("--bench-stagger-delay-ms", "1e300")
    assert parse_positive_int("--bench-iterations", "1000000") == 1_000_000


def test_phase_iterations_from_the_cli_are_bounded_in_total() -> None:
    config = validate_and_define(phases=[Phase("a", 1), Phase("b", 1)])
    with pytest.raises(ValueError, match="at most 1,000,000 per participant"):
        schedule_benchmark(config, RunArgs(iterations=600_000), {})


def validate_and_define(**fields: Any) -> Any:
    from pytest_benchsdk import define_benchmark_config

    return define_benchmark_config(**_config(**fields))


@pytest.mark.parametrize(
    "flag",
    [
        ("--bench-iterations", "99999999999999999999"),
        ("--bench-stagger-delay-ms", "1e300"),
    ],
)
def test_huge_cli_knobs_are_usage_errors(pytester: pytest.Pytester, flag: tuple[str, str]) -> None:
    pytester.makepyfile(bench_x=bench())
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run", "--bench-no-store", *flag)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{flag[0]} expects at most*"])


def test_huge_config_knobs_fail_collection_fast(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench('participants=[Participant("p")], iterations=10**30, stagger_delay_ms=1e300')
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run", "--bench-no-store")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # a collection error, at once
    result.stdout.fnmatch_lines(["*iterations: must be at most 1,000,000*"])


# --- #14 bounded waits for what tasks leave running -------------------------------------------


def _spec(index: int, invoke: Any, *, is_async: bool = False) -> Any:
    from pytest_benchsdk.executor import IterationSpec

    return IterationSpec(
        key=("p", index),
        participant=Participant("p"),
        participant_name="p",
        phase=None,
        task_index=index,
        ordinal=index,
        invoke=invoke,
        is_async=is_async,
    )


def _plan(specs: list[Any], concurrency: int) -> Any:
    from pytest_benchsdk.executor import GroupPlan

    return GroupPlan(
        group_id="g",
        mode="participant",
        concurrency=concurrency,
        stagger_delay_ms=0,
        iterations=specs,
    )


def test_shutdown_does_not_wait_for_stuck_sync_iterations_and_names_them() -> None:
    import threading
    import time

    from pytest_benchsdk.executor import Executor

    release = threading.Event()
    started = threading.Event()

    def stuck(ctx: TaskContext) -> None:
        started.set()
        release.wait(120)

    executor = Executor()
    try:
        executor.start_group(_plan([_spec(0, stuck), _spec(1, stuck)], concurrency=2))
        assert started.wait(30)
        begun = time.monotonic()
        abandoned = executor.shutdown(timeout=60, thread_grace=0.2)
        # before: joined each stuck thread up to `timeout` (5 s per session at Ctrl-C / -x)
        assert time.monotonic() - begun < 20
        assert any(
            line.startswith("iteration p #0: its sync task was still running") for line in abandoned
        ), abandoned
        assert executor.abandoned_threads == ()  # daemon task threads do not block exit
    finally:
        release.set()


def test_non_daemon_threads_left_by_a_task_are_reported() -> None:
    import threading

    from pytest_benchsdk.executor import Executor

    release = threading.Event()

    def leaky(ctx: TaskContext) -> None:
        threading.Thread(target=release.wait, args=(120,), name="leaky-worker").start()

    executor = Executor()
    try:
        plan = _plan([_spec(0, leaky)], concurrency=1)
        assert executor.run_inline(plan, ("p", 0)).error is None
        abandoned = executor.shutdown(thread_grace=0.1)
        assert abandoned == [
            "thread 'leaky-worker' (non-daemon), started during iteration p #0, was still running"
        ]
        assert [t.name for t in executor.abandoned_threads] == ["leaky-worker"]
    finally:
        release.set()


@pytest.mark.slow
def test_leaked_non_daemon_thread_does_not_keep_pytest_alive(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1")], iterations=1',
            """
            import threading
            import time

            @define_task
            def task(measure):
                threading.Thread(target=time.sleep, args=(3600,), name="forever").start()
                measure(value=1)
            """,
        )
    )
    # before: the interpreter joined the thread at exit, for an hour
    result = pytester.runpytest_subprocess("--bench", "--bench-dry-run", timeout=60)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "benchsdk: abandoned 1 thread(s) still running benchmark code at session end*",
            "  thread 'forever' (non-daemon), started during iteration p1 #0, was still running",
        ]
    )
    result.stderr.fnmatch_lines(["*exiting without waiting for 1 non-daemon thread(s)*forever*"])
    (run,) = stored_runs(store_path(pytester))
    assert run.record_count == 1


@pytest.mark.slow
def test_exit_first_at_concurrency_2_names_the_abandoned_iteration(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1")], iterations=2, concurrency=2',
            """
            import time

            @define_task
            def task(task_index):
                if task_index == 1:
                    time.sleep(3600)
                assert False, "first fails"
            """,
        )
    )
    result = pytester.runpytest_subprocess("--bench", "--bench-dry-run", "-x", timeout=60)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["  iteration p1 #1: its sync task was still running (thread 'benchsdk-task-p1-1')*"]
    )
