"""Collection of bench files: --bench / ini, patterns, ids, order, markers, selection, errors."""

from __future__ import annotations

import pytest

from helpers.sessions import bench, store_path

PHASED = bench(
    'participants=[Participant("p1"), Participant("p2")],\n'
    'phases=[Phase("cold", 1), Phase("warm", 2)]'
)

FAST_SLOWSTART = 'participants=[Participant("fast"), Participant("slowstart")], iterations=1'
FAST_OTHER = 'participants=[Participant("fast"), Participant("other")], iterations=1'


def _ids(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if "::" in line and line.startswith("bench_")]


def test_without_bench_files_are_not_collected(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench(), test_plain="def test_ok():\n    pass\n")
    result = pytester.runpytest_inprocess()
    result.assert_outcomes(passed=1)
    assert "benchmarks" not in result.stdout.str()
    # (.benchmarks/ itself may belong to pytest-benchmark when that plugin is installed)
    assert not store_path(pytester).exists()


def test_without_bench_a_normal_run_is_unchanged(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_ok():\n    pass\n")
    result = pytester.runpytest_inprocess("--collect-only", "-q")
    assert result.outlines[0] == "test_plain.py::test_ok"
    assert result.ret == 0


def test_bench_collects_one_item_per_participant_and_iteration(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench(), test_plain="def test_ok():\n    pass\n")
    result = pytester.runpytest_inprocess("--bench", "--collect-only", "-q")
    assert _ids(result) == [
        "bench_x.py::task[p1-0]",
        "bench_x.py::task[p1-1]",
        "bench_x.py::task[p2-0]",
        "bench_x.py::task[p2-1]",
    ]
    assert "test_plain.py::test_ok" in result.outlines
    assert result.ret == 0


def test_ini_bench_true_enables_collection(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nbench = true\n")
    pytester.makepyfile(bench_x=bench())
    result = pytester.runpytest_inprocess("--bench-no-store")
    result.assert_outcomes(passed=4)


def test_ids_with_phases(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=PHASED)
    result = pytester.runpytest_inprocess("--bench", "--collect-only", "-q")
    assert _ids(result) == [
        "bench_x.py::task[p1-cold-0]",
        "bench_x.py::task[p1-warm-1]",
        "bench_x.py::task[p1-warm-2]",
        "bench_x.py::task[p2-cold-0]",
        "bench_x.py::task[p2-warm-1]",
        "bench_x.py::task[p2-warm-2]",
    ]


def test_group_by_round_orders_round_major(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("a"), Participant("b")], iterations=2, group_by="round"'
        )
    )
    result = pytester.runpytest_inprocess("--bench", "--collect-only", "-q")
    assert _ids(result) == [
        "bench_x.py::task[a-0]",
        "bench_x.py::task[b-0]",
        "bench_x.py::task[a-1]",
        "bench_x.py::task[b-1]",
    ]


def test_order_is_deterministic_and_declared(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench('participants=[Participant("zeta"), Participant("alpha")], iterations=1')
    )
    first = pytester.runpytest_inprocess("--bench", "--collect-only", "-q")
    second = pytester.runpytest_inprocess("--bench", "--collect-only", "-q")
    assert _ids(first) == ["bench_x.py::task[zeta-0]", "bench_x.py::task[alpha-0]"]
    assert _ids(first) == _ids(second)


def test_default_export_is_the_task(pytester: pytest.Pytester) -> None:
    source = bench(task="@define_task\ndef default(participant, measure):\n    measure(v=1)\n")
    pytester.makepyfile(bench_x=source)
    result = pytester.runpytest_inprocess("--bench", "--bench-no-store")
    result.assert_outcomes(passed=4)


def test_bench_files_ini_pattern(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nbench_files = perf_*.py\n")
    pytester.makepyfile(perf_x=bench(), bench_y=bench())
    result = pytester.runpytest_inprocess("--bench", "--collect-only", "-q")
    ids = [line for line in result.outlines if "::task[" in line]
    assert ids == [f"perf_x.py::task[{p}-{i}]" for p in ("p1", "p2") for i in (0, 1)]


def test_file_named_on_command_line_is_collected_once(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench())
    result = pytester.runpytest_inprocess("--bench", "--bench-no-store", "bench_x.py")
    result.assert_outcomes(passed=4)


def test_file_also_matched_by_python_files_is_collected_once(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\npython_files = test_*.py bench_*.py\n")
    pytester.makepyfile(bench_x=bench())
    result = pytester.runpytest_inprocess("--bench", "--bench-no-store")
    result.assert_outcomes(passed=4)
    collect = pytester.runpytest_inprocess("--bench", "--collect-only", "-q")
    assert len(_ids(collect)) == 4


def test_items_carry_bench_marker(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench(), test_plain="def test_ok():\n    pass\n")
    result = pytester.runpytest_inprocess("--bench", "--bench-no-store", "-m", "bench")
    result.assert_outcomes(passed=4, deselected=1)
    result = pytester.runpytest_inprocess("--bench", "--bench-no-store", "-m", "not bench")
    result.assert_outcomes(passed=1, deselected=4)


def test_bench_marker_is_registered(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_inprocess("--markers")
    result.stdout.fnmatch_lines(
        ["@pytest.mark.bench: a benchmark iteration run by pytest-benchsdk"]
    )


def test_k_selects_participant_and_phase_keywords(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=PHASED)
    result = pytester.runpytest_inprocess("--bench", "--collect-only", "-q", "-k", "p2 and warm")
    assert _ids(result) == ["bench_x.py::task[p2-warm-1]", "bench_x.py::task[p2-warm-2]"]
    result = pytester.runpytest_inprocess("--bench", "--bench-no-store", "-k", "cold")
    result.assert_outcomes(passed=2, deselected=4)


def test_deselect_runs_and_scores_only_the_rest(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench())
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-no-store", "--deselect", "bench_x.py::task[p1-1]"
    )
    result.assert_outcomes(passed=3, deselected=1)
    result.stdout.fnmatch_lines(["  p1           1/1 *", "  p2           2/2 *"])


def test_collect_only_runs_nothing_and_writes_no_store(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(task="@define_task\ndef task():\n    raise SystemExit('ran')\n")
    )
    result = pytester.runpytest_inprocess("--bench", "--collect-only")
    assert result.ret == 0
    assert "benchmarks" not in result.stdout.str()
    # (.benchmarks/ itself may belong to pytest-benchmark when that plugin is installed)
    assert not store_path(pytester).exists()


@pytest.mark.slow
def test_last_failed_reruns_only_failed_iterations(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(
            task="""
            @define_task
            def task(participant, task_index):
                assert not (participant.name == "p2" and task_index == 1)
            """
        )
    )
    first = pytester.runpytest_inprocess("--bench", "--bench-no-store", "-p", "cacheprovider")
    first.assert_outcomes(passed=3, failed=1)
    again = pytester.runpytest_inprocess(
        "--bench", "--bench-no-store", "-p", "cacheprovider", "--lf"
    )
    again.assert_outcomes(failed=1)
    again.stdout.fnmatch_lines(["run-last-failure: rerun previous 1 failure*"])
    failed = [line for line in again.outlines if line.startswith("FAILED ")]
    assert len(failed) == 1
    assert failed[0].startswith("FAILED bench_x.py::task[p2-1] - AssertionError")


# -- bad input -------------------------------------------------------------------------------


def test_invalid_config_is_a_collection_error_listing_every_issue(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        bench_bad=(
            "from pytest_benchsdk import define_benchmark_config, define_task\n"
            "config = define_benchmark_config(benchmark_slug='', benchmark_name='',"
            " participants=[], iterations=0)\n"
            "@define_task\ndef task():\n    pass\n"
        ),
        bench_good=bench(),
    )
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-no-store", "--continue-on-collection-errors"
    )
    result.assert_outcomes(passed=4, errors=1)
    out = result.stdout.str()
    assert "ERROR collecting bench_bad.py" in out
    result.stdout.fnmatch_lines(
        [
            "*Invalid benchmark config:",
            "*  - benchmark_slug: *",
            "*  - benchmark_name: *",
            "*  - participants: *",
            "*  - iterations: *",
            "*Fix the fields above and try again.",
        ]
    )


def test_invalid_plain_dict_config_is_a_collection_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_bad=(
            "config = {'benchmark_slug': 'x', 'benchmark_name': 'X', 'participants': [],"
            " 'concurrency': 0}\n"
            "def task():\n    pass\n"
        )
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-no-store")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*Invalid benchmark config:", "*  - participants: *"])
    result.stdout.fnmatch_lines(["*  - concurrency: *"])


def test_missing_config_export(pytester: pytest.Pytester) -> None:
    # A module that imports the authoring API is a bench file (one without any of it is a
    # test module: test_bench_named_test_modules.py).
    pytester.makepyfile(
        bench_x="from pytest_benchsdk import define_task\n@define_task\ndef task():\n    pass\n"
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-no-store")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*bench_x.py must export a `config` created with define_benchmark_config "
            "(with participants)."
        ]
    )


@pytest.mark.parametrize("task_source", ["", "task = 3\n"], ids=["missing", "not-callable"])
def test_missing_or_invalid_task(pytester: pytest.Pytester, task_source: str) -> None:
    pytester.makepyfile(bench_x=bench(task=task_source), bench_ok=bench())
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-no-store", "--continue-on-collection-errors"
    )
    result.assert_outcomes(passed=4, errors=1)
    result.stdout.fnmatch_lines(["*bench_x.py must export a `task` created with define_task."])


GENERATOR_TASKS = {
    "def-yield": (
        "@define_task\ndef task(measure):\n    measure(value=1)\n    yield\n",
        "a generator function (it contains `yield`)",
    ),
    "async-def-yield": (
        "@define_task\nasync def task(measure):\n    measure(value=1)\n    yield 1\n",
        "an async generator function (`async def` with `yield`)",
    ),
    "not-decorated": ("def task(measure):\n    yield 1\n", "a generator function*"),
}


@pytest.mark.parametrize("kind", list(GENERATOR_TASKS))
def test_a_generator_task_is_a_collection_error_naming_it(
    pytester: pytest.Pytester, kind: str
) -> None:
    """Calling a generator function runs none of its body: every iteration would pass in no
    time and be scored. A collection error instead; the other bench files still run."""
    source, what = GENERATOR_TASKS[kind]
    pytester.makepyfile(bench_x=bench(task=source), bench_ok=bench())
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-no-store", "--continue-on-collection-errors"
    )
    result.assert_outcomes(passed=4, errors=1)
    result.stdout.fnmatch_lines([f"*the task task() is {what}: calling it only creates a *"])
    assert "INTERNALERROR" not in result.stdout.str()


def test_define_task_refuses_a_generator_function() -> None:
    from pytest_benchsdk import define_task

    def task() -> object:
        yield 1

    with pytest.raises(TypeError, match=r"the task .*task\(\) is a generator function"):
        define_task(task)


def test_unknown_shape_with_shapes_declared(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1")], shapes={"burst": Shape("x-burst"), '
            '"soak": Shape("x-soak")}'
        )
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-no-store", "--bench-shape", "nope")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(['*Unknown --bench-shape "nope". Known shapes: burst, soak.'])


def test_unknown_shape_without_shapes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench())
    result = pytester.runpytest_inprocess("--bench", "--bench-no-store", "--bench-shape", "nope")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ['*Unknown --bench-shape "nope": this benchmark declares no shapes.']
    )


@pytest.mark.slow
@pytest.mark.parametrize("dist", [(), ("-n", "2")], ids=["plain", "xdist"])
def test_unknown_provider_in_every_file_is_a_usage_error(
    pytester: pytest.Pytester, dist: tuple[str, ...]
) -> None:
    pytester.makepyfile(
        bench_x=bench(),
        bench_y=bench('participants=[Participant("q1")]', slug="other"),
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-provider", "p1,zz,yy", *dist)
    # A usage error as pytest's own (status 4, "ERROR: ..."); `pytest-benchsdk run` keeps
    # upstream's status 1.
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    output = result.stdout.str() + result.stderr.str()
    # Under xdist the controller sees the files of the selected items only (bench_y has none).
    available = "p1, p2, q1" if not dist else "p1, p2"
    assert f"ERROR: --bench-provider: Unknown participant(s): zz, yy. Available: {available}" in (
        result.stderr.str()
    )
    assert "passed" not in output
    assert "INTERNALERROR" not in output
    assert "_pytest" not in output
    assert "Exit" not in output
    # Nothing ran, so no run was opened or stored.
    assert "interrupted" not in output
    assert not (pytester.path / ".benchmarks").exists()


def test_unknown_provider_suggests_the_closest_declared_name(pytester: pytest.Pytester) -> None:
    # Issue 46: `--bench-provider=slowstrat` printed `! _pytest.outcomes.Exit: ...`.
    pytester.makepyfile(bench_x=bench(FAST_SLOWSTART))
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-no-store", "--bench-provider=slowstrat"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert (
        "ERROR: --bench-provider: Unknown participant(s): slowstrat. Available: fast, slowstart; "
        "did you mean slowstart?"
    ) in err
    assert "_pytest.outcomes" not in result.stdout.str() + err


def test_a_file_without_the_named_provider_says_it_does_not_run(
    pytester: pytest.Pytester,
) -> None:
    # Issue 46: `--bench-provider=slowstart` dropped a bench file without that participant
    # silently.
    pytester.makepyfile(
        bench_x=bench(FAST_SLOWSTART),
        bench_y=bench(
            'participants=[Participant("fast"), Participant("other")], iterations=1', slug="other"
        ),
    )
    for quiet in ((), ("-q",)):
        result = pytester.runpytest_inprocess(
            "--bench", "--bench-no-store", "--bench-provider=slowstart", *quiet
        )
        result.assert_outcomes(passed=1)
        out = result.stdout.str()
        assert out.count("does not run") == 1
        assert (
            "benchsdk: --bench-provider slowstart: bench_y.py does not run "
            "(it declares fast, other)" in out
        )
    result = pytester.runpytest_inprocess("--bench", "--bench-no-store", "--bench-provider=fast")
    assert "does not run" not in result.stdout.str()


def test_provider_known_in_one_file_only_runs_that_file(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(),
        bench_y=bench('participants=[Participant("q1")]', slug="other"),
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-no-store", "--bench-provider", "q1")
    result.assert_outcomes(passed=1)
    collect = pytester.runpytest_inprocess(
        "--bench", "--collect-only", "-q", "--bench-provider", "q1"
    )
    assert _ids(collect) == ["bench_y.py::task[q1-0]"]


MISSING_FIXTURE = bench(
    'participants=[Participant("a"), Participant("b"), Participant("c")], iterations=20',
    """
    @define_task
    def task(step, measure, db_conn):
        measure(value=1)
    """,
)


def test_a_missing_fixture_is_one_collection_error_naming_the_task_and_the_fixture(
    pytester: pytest.Pytester,
) -> None:
    """Issue 48, item 7: a task parameter no fixture provides was an error at every
    iteration's setup, each with pytest's whole list of fixtures (60 of them here). Now it is
    one error at collection, naming the task, the fixture and where fixtures come from; the
    other bench files still run."""
    pytester.makepyfile(bench_broken=MISSING_FIXTURE, bench_fine=bench())
    result = pytester.runpytest_inprocess("--bench", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4, errors=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*ERROR collecting bench_broken.py*",
            "*bench_broken.py: the task 'task' (line *): its parameter 'db_conn' is not a fixture.",
            "A task's parameters are pytest fixtures: the iteration's own (participant, phase, "
            "task_index, step, measure, log, bench), or one defined with @pytest.fixture in a "
            "conftest.py, *",
        ]
    )
    assert out.count("'db_conn'") == 2  # the error and its advice, once
    assert "available fixtures" not in out


def test_a_fixture_missing_behind_a_conftest_fixture_names_the_one_asking(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest("import pytest\n\n@pytest.fixture\ndef db_conn(dsn):\n    return dsn\n")
    pytester.makepyfile(bench_broken=MISSING_FIXTURE)
    result = pytester.runpytest_inprocess("--bench", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*the task 'task' (line *): 'dsn', which the fixture 'db_conn' asks for, is not "
            "a fixture."
        ]
    )
