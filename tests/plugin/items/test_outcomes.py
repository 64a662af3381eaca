"""Iteration outcomes and the task context: passed/failed/skipped, TaskError, fixtures, steps."""

from __future__ import annotations

import pytest

from helpers.sessions import bench, read_json, without_cpu_times

ONE = 'participants=[Participant("p1")]'


def _records(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict]:
    """Run with --bench-json; return the result and ``{participant: [records]}`` (without
    the CPU times every passing sync iteration and step records: see
    tests/plugin/control/test_cpu_time_and_compare_on.py)."""
    out = pytester.path / "run.json"
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "--bench-json", str(out), *args
    )
    doc = read_json(out)
    records = {
        p["participant"]: [without_cpu_times(r) for r in p["records"]]
        for b in doc["benchmarks"]
        for p in b["participants"]
    }
    return result, records


def test_success_is_passed_with_data_in_the_record(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench())
    result, records = _records(pytester)
    result.assert_outcomes(passed=4)
    assert [r["data"] for r in records["p1"]] == [{"value": 10}, {"value": 11}]
    assert all(r["status"] == "success" and "errorCode" not in r for r in records["p2"])
    # no explicit steps: one implicit "task" step (upstream §4.7)
    assert [s["name"] for s in records["p1"][0]["steps"]] == ["task"]


def test_task_error_fails_with_upstream_text_and_no_internal_traceback(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        bench_x=bench(
            ONE,
            """
            @define_task
            def task(measure):
                measure(before=1)
                raise TaskError("quota exceeded", code="quota", step="create",
                                timeout_ms=1500, data={"limit": 3})
            """,
        )
    )
    result, records = _records(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ task?p1-0? _*",
            "[TaskError (quota)] quota exceeded",
            "  step: create",
            "  timeoutMs: 1500",
            # upstream: "  data: " + JSON.stringify(data, null, 2); ours: on one line
            '  data: {"limit":3}',
        ]
    )
    out = result.stdout.str()
    for internal in ("_running.py", "executor.py", "context.py", "_collect.py", "Traceback"):
        assert internal not in out, internal
    (record,) = records["p1"]
    assert record["status"] == "error"
    assert record["errorCode"] == "quota"
    # The message is kept (upstream's worker does, its runner does not).
    assert record["data"] == {"before": 1, "limit": 3, "errorMessage": "quota exceeded"}


def test_task_error_without_code(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(ONE, '@define_task\ndef task():\n    raise TaskError("nope")\n')
    )
    result, records = _records(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["[TaskError] nope"])
    assert records["p1"][0]["errorCode"] == "TaskError"


def test_other_exception_shows_the_users_traceback(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(
            ONE,
            """
            def helper():
                raise ValueError("boom 42")

            @define_task
            def task(step):
                step("prepare", lambda: None)
                helper()
            """,
        )
    )
    result, records = _records(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            ">       helper()",
            "bench_x.py:*: ",
            '>       raise ValueError("boom 42")',
            "E       ValueError: boom 42",
            "bench_x.py:*: ValueError",
        ]
    )
    assert "FAILED bench_x.py::task[p1-0] - ValueError: boom 42" in result.outlines
    out = result.stdout.str()
    for internal in ("_running.py", "executor.py", "context.py"):
        assert internal not in out, internal
    (record,) = records["p1"]
    assert (record["status"], record["errorCode"]) == ("error", "ValueError")
    assert record["data"] == {"errorMessage": "boom 42"}
    assert [(s["name"], s["status"]) for s in record["steps"]] == [("prepare", "success")]


def test_assertion_failure_in_task(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(ONE, "@define_task\ndef task():\n    value = 3\n    assert value == 4\n")
    )
    result, records = _records(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([">       assert value == 4", "bench_x.py:*: AssertionError"])
    assert records["p1"][0]["errorCode"] == "AssertionError"


def test_assert_in_task_is_rewritten(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(ONE, "@define_task\ndef task():\n    value = 3\n    assert value == 4\n")
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["E       assert 3 == 4"])


def test_missing_required_env_vars_skip_with_reason(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BSDK_T_A", raising=False)
    monkeypatch.setenv("BSDK_T_B", "")
    monkeypatch.setenv("BSDK_T_OK", "yes")
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("free"),\n'
            '    Participant("gated", required_env_vars=["BSDK_T_A", "BSDK_T_B"]),\n'
            '    Participant("ok", required_env_vars=["BSDK_T_OK"])], iterations=2'
        )
    )
    result, records = _records(pytester, "-rs")
    result.assert_outcomes(passed=4, skipped=2)
    result.stdout.fnmatch_lines(
        [
            "  Skipping gated: missing BSDK_T_A, BSDK_T_B",
            "SKIPPED [[]2[]] bench_x.py: gated: missing BSDK_T_A, BSDK_T_B",
        ]
    )
    assert set(records) == {"free", "ok"}


def test_all_participants_skipped(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench('participants=[Participant("g", required_env_vars=["BSDK_T_NONE"])]')
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run")
    result.assert_outcomes(skipped=1)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["  Skipped g: missing BSDK_T_NONE"])


# -- fixtures --------------------------------------------------------------------------------


def test_context_fixtures_values(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1", sdk="S1")], phases=[Phase("cold", 1), '
            'Phase("warm", 1)]',
            """
            @define_task
            def task(participant, phase, task_index, bench, measure):
                assert bench.participant is participant
                assert (bench.phase, bench.task_index) == (phase, task_index)
                measure(sdk=participant.sdk, seen_phase=phase, index=task_index)
            """,
        )
    )
    result, records = _records(pytester)
    result.assert_outcomes(passed=2)
    assert [r["data"] for r in records["p1"]] == [
        {"sdk": "S1", "seen_phase": "cold", "index": 0, "phase": "cold"},
        {"sdk": "S1", "seen_phase": "warm", "index": 1, "phase": "warm"},
    ]


def test_phase_is_none_without_phases(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(ONE, "@define_task\ndef task(phase):\n    assert phase is None\n")
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run")
    result.assert_outcomes(passed=1)


def test_fixtures_have_docstrings(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_inprocess("--fixtures")
    out = result.stdout.str()
    for name in ("participant", "phase", "task_index", "step", "measure", "log", "bench"):
        block = out.split(f"\n{name} -- ", 1)
        assert len(block) == 2, name
        doc = block[1].split("\n", 2)[1]
        assert doc.startswith("    "), (name, doc)
        assert doc.strip(), name


def test_context_fixture_outside_bench_item_is_a_clear_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_it(participant):\n    pass\n")
    result = pytester.runpytest_inprocess()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*the 'participant' fixture is only available to benchmark tasks "
            "(bench files run with --bench)*"
        ]
    )


def test_task_uses_user_fixtures_of_any_scope(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        import pytest

        @pytest.fixture(scope="session")
        def server():
            return "srv"

        @pytest.fixture
        def per_iteration(task_index):
            return f"it{task_index}"
        """
    )
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1")], iterations=2',
            """
            @define_task
            def task(server, per_iteration, measure):
                measure(server=server, per=per_iteration)
            """,
        )
    )
    result, records = _records(pytester)
    result.assert_outcomes(passed=2)
    assert [r["data"] for r in records["p1"]] == [
        {"server": "srv", "per": "it0"},
        {"server": "srv", "per": "it1"},
    ]


def test_user_fixture_can_use_log_and_measure(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        import pytest

        @pytest.fixture
        def tracer(measure, log):
            def trace(value):
                log("traced", {"v": value})
                measure(traced=value)
            return trace
        """
    )
    pytester.makepyfile(bench_x=bench(ONE, "@define_task\ndef task(tracer):\n    tracer(7)\n"))
    result, records = _records(pytester)
    result.assert_outcomes(passed=1)
    assert records["p1"][0]["data"] == {"traced": 7}


# -- step / measure / log --------------------------------------------------------------------


def test_sync_steps_call_and_with_forms(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(
            ONE,
            """
            @define_task
            def task(step, measure):
                assert step("add", lambda: 1 + 1) == 2
                with step("block"):
                    measure(in_block=True)
                measure({"outside": 1})
            """,
        )
    )
    result, records = _records(pytester)
    result.assert_outcomes(passed=1)
    (record,) = records["p1"]
    assert [(s["name"], s["status"]) for s in record["steps"]] == [
        ("add", "success"),
        ("block", "success"),
    ]
    assert record["steps"][1]["data"] == {"in_block": True}
    assert record["data"] == {"outside": 1}


def test_async_steps_await_and_async_with(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(
            ONE,
            """
            import asyncio

            async def fetch():
                await asyncio.sleep(0.001)
                return "body"

            @define_task
            async def task(step, measure):
                assert await step("fetch", fetch) == "body"
                assert await step("sync-fn", lambda: 5) == 5
                async with step("block"):
                    await asyncio.sleep(0)
                    measure(k="v")
                measure(done=True)
            """,
        )
    )
    result, records = _records(pytester)
    result.assert_outcomes(passed=1)
    (record,) = records["p1"]
    assert [s["name"] for s in record["steps"]] == ["fetch", "sync-fn", "block"]
    assert record["steps"][2]["data"] == {"k": "v"}
    assert record["data"] == {"done": True}


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_step_timeout_is_a_task_error(pytester: pytest.Pytester, kind: str) -> None:
    task = (
        """
        import time

        @define_task
        def task(step):
            step("slow", lambda: time.sleep(0.5), timeout_ms=20)
        """
        if kind == "sync"
        else """
        import asyncio

        @define_task
        async def task(step):
            await step("slow", lambda: asyncio.sleep(0.5), timeout_ms=20)
        """
    )
    pytester.makepyfile(bench_x=bench(ONE, task))
    result, records = _records(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            '[TaskError (step_timeout)] Step "slow" timed out after 20ms for participant "p1"',
            "  step: slow",
            "  timeoutMs: 20",
        ]
    )
    (record,) = records["p1"]
    assert record["errorCode"] == "step_timeout"
    assert [(s["name"], s["status"], s["errorCode"], s["timeoutMs"]) for s in record["steps"]] == [
        ("slow", "error", "step_timeout", 20)
    ]


def test_caught_step_failure_keeps_task_success(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(
            ONE,
            """
            @define_task
            def task(step):
                try:
                    step("bad", lambda: 1 / 0)
                except ZeroDivisionError:
                    pass
            """,
        )
    )
    result, records = _records(pytester)
    result.assert_outcomes(passed=1)
    (record,) = records["p1"]
    assert record["status"] == "success"
    assert [(s["name"], s["status"], s["errorCode"]) for s in record["steps"]] == [
        ("bad", "error", "ZeroDivisionError")
    ]


def test_log_lines_levels_and_meta(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(
            ONE,
            """
            @define_task
            def task(log):
                log("plain")
                log("with meta", {"a": 1})
                log("warned", level="warn")
                log("both", meta={"b": 2}, level="error")
            """,
        )
    )
    pytester.runpytest_inprocess("--bench", "--bench-dry-run").assert_outcomes(passed=1)
    from helpers.sessions import store_path, stored_runs
    from pytest_benchsdk import ResultStore

    (run,) = stored_runs(store_path(pytester))
    with ResultStore(store_path(pytester)) as store:
        lines = store.log_lines(run.run_id, "p1")
    tails = [line.split(" ", 1)[1] for line in lines]
    assert tails == [
        "[task 0] [info] plain",
        '[task 0] [info] with meta {"a":1}',
        "[task 0] [warn] warned",
        '[task 0] [error] both {"b":2}',
    ]
    assert all(line[:4].isdigit() and line.split(" ", 1)[0].endswith("Z") for line in lines)


def test_task_returning_task_result_data(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(
            ONE,
            """
            @define_task
            def task(measure):
                measure(a=1)
                return {"data": {"b": 2}}
            """,
        )
    )
    result, records = _records(pytester)
    result.assert_outcomes(passed=1)
    assert records["p1"][0]["data"] == {"a": 1, "b": 2}


# -- concurrency -----------------------------------------------------------------------------


def test_concurrency_runs_every_iteration(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1"), Participant("p2")], iterations=4, concurrency=2',
            """
            import asyncio

            @define_task
            async def task(task_index, measure):
                await asyncio.sleep(0.01)
                measure(value=task_index)
            """,
        )
    )
    result, records = _records(pytester)
    result.assert_outcomes(passed=8)
    assert {p: [r["data"]["value"] for r in rs] for p, rs in records.items()} == {
        "p1": [0, 1, 2, 3],
        "p2": [0, 1, 2, 3],
    }


def test_concurrency_with_function_scoped_fixture_is_a_collection_error(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(
        """
        import pytest

        @pytest.fixture
        def client():
            return object()

        @pytest.fixture(scope="module")
        def shared():
            return object()
        """
    )
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1")], iterations=2, concurrency=2',
            "@define_task\ndef task(shared, client, step):\n    pass\n",
        )
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*bench_x.py: the task uses the function-scoped fixture 'client', but concurrency 2 "
            "runs several iterations at once, so it cannot be set up per iteration. Give "
            "'client' a wider scope (e.g. scope=\"module\") or run with --bench-concurrency 1."
        ]
    )
    # the same file runs fine one iteration at a time
    again = pytester.runpytest_inprocess("--bench", "--bench-dry-run", "--bench-concurrency=1")
    again.assert_outcomes(passed=2)


def test_concurrency_with_wider_scoped_fixture_is_fine(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        "import pytest\n\n@pytest.fixture(scope='session')\ndef shared():\n    return 5\n"
    )
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1")], iterations=3, concurrency=3',
            "@define_task\ndef task(shared, measure):\n    measure(s=shared)\n",
        )
    )
    result, records = _records(pytester)
    result.assert_outcomes(passed=3)
    assert [r["data"] for r in records["p1"]] == [{"s": 5}] * 3


def test_concurrency_failure_in_one_iteration(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1")], iterations=3, concurrency=3',
            """
            @define_task
            async def task(task_index):
                if task_index == 1:
                    raise TaskError("bad one", code="bad")
            """,
        )
    )
    result, records = _records(pytester)
    result.assert_outcomes(passed=2, failed=1)
    assert [r["status"] for r in records["p1"]] == ["success", "error", "success"]
    assert "FAILED bench_x.py::task[p1-1]" in result.stdout.str()


@pytest.mark.parametrize("concurrency", [1, 3])
def test_task_can_take_pytests_request_fixture(pytester: pytest.Pytester, concurrency: int) -> None:
    # `request` is pytest's own fixture, not part of the task context; each iteration gets
    # its own item's request (also when iterations of a group run together).
    pytester.makepyfile(
        bench_x=bench(
            f'participants=[Participant("p1")], iterations=3, concurrency={concurrency}',
            """
            @define_task
            def task(request, task_index, measure):
                measure(node=request.node.name, index=task_index)
            """,
        )
    )
    result, records = _records(pytester)
    result.assert_outcomes(passed=3)
    assert [r["data"] for r in records["p1"]] == [
        {"node": f"task[p1-{i}]", "index": i} for i in range(3)
    ]


def test_bench_files_run_without_xdist_under_strict_markers(pytester: pytest.Pytester) -> None:
    # xdist_group is xdist's marker: without xdist it must not be applied (unknown marks warn,
    # and are collection errors with --strict-markers).
    pytester.makepyfile(bench_x=bench(config='participants=[Participant("p1")], iterations=2'))
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "-p", "no:xdist", "--strict-markers", "-W", "error"
    )
    result.assert_outcomes(passed=2)
    assert "PytestUnknownMarkWarning" not in result.stdout.str()
    assert result.ret == pytest.ExitCode.OK


def test_bench_items_keep_their_xdist_group_with_xdist(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench(config='participants=[Participant("p1")], iterations=1'))
    items, _ = pytester.inline_genitems("--bench", "--bench-dry-run", "--strict-markers")
    assert [m.kwargs for m in items[0].iter_markers("xdist_group")] == [{"name": "bench_x.py:p1"}]
