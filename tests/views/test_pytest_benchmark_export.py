"""``--bench-export pytest-benchmark`` (issue 47, item 4): pytest-benchmark's JSON schema from
the one results model, read back as its readers read it: github-action-benchmark's ``pytest``
tool (a port of its reader, ``helpers/pytest_benchmark.py``) and the real ``pytest-benchmark
compare`` (pytest-benchmark is in the test extra; the suite's sessions switch it off as a plugin
with ``bench_benchmark_fixture = benchsdk``)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import attrs
import pytest

from helpers.cli import cli
from helpers.pytest_benchmark import extract_pytest_result, pytest_benchmark_cli
from helpers.runs import config, finish, live_run, record, store_run
from helpers.store_processes import ENV
from pytest_benchsdk._views.exports import EXPORT_FORMATS, export_text
from pytest_benchsdk.results import BenchmarkRun, RunSummary
from pytest_benchsdk.store import ResultStore

#: Two benchmarked tests' records as the benchmark fixture makes them (milliseconds per call,
#: its rounds, its identity as pytest-benchmark names it).
TESTS = {
    "test_build": (
        [0.002, 0.001, 0.003, 0.001, 0.002],
        {"count": 5, "iterations": 10},
        {
            "fullname": "benchmarking/bench_packages.py::test_build",
            "name": "test_build",
            "group": None,
            "param": None,
            "params": None,
            "options": {"disable_gc": False, "timer": "perf_counter", "min_rounds": 5,
                        "max_time": 1.0, "min_time": 5e-06, "warmup": False},
        },
    ),
    "test_sizes[10]": (
        [0.5, 0.4, 0.6],
        {"count": 3, "iterations": 1},
        {
            "fullname": "benchmarking/bench_packages.py::test_sizes[10]",
            "name": "test_sizes[10]",
            "group": None,
            "param": "10",
            "params": {"n": 10},
            "options": {},
        },
    ),
}  # fmt: skip


def _run() -> BenchmarkRun:
    bench_config = config(
        participants=list(TESTS),
        iterations=1,
        scoring={
            "metrics": [
                {
                    "key": "time_ms",
                    "unit": "ms",
                    "ceiling": 10,
                    "weights": {"median": 0.6, "p95": 0.25, "p99": 0.15},
                }
            ]
        },
    )
    records = {
        name: [
            record(
                0,
                sorted(times)[len(times) // 2],
                data={
                    "time_ms": times,
                    "rounds": rounds,
                    "test": test,
                    **({"extra_info": {"kind": "list"}} if name == "test_build" else {}),
                },
            )
        ]
        for name, (times, rounds, test) in TESTS.items()
    }
    return live_run(bench_config, records)


#: The run environment with pytest-benchmark's machine and commit info (its hooks made them).
ENVIRONMENT = attrs.evolve(
    ENV,
    machine_info={"node": "ci-1", "python_version": "3.11.7", "machine": "x86_64"},
    commit_info={"id": "abc123", "dirty": False, "project": "demo", "branch": "main"},
)


def _summary() -> RunSummary:
    return finish(_run(), environment=ENVIRONMENT)


def _document() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(export_text("pytest-benchmark", [_summary()]))
    return loaded


def test_the_document_has_pytest_benchmarks_schema() -> None:
    assert "pytest-benchmark" in EXPORT_FORMATS
    document = _document()
    assert list(document) == ["machine_info", "commit_info", "benchmarks", "datetime", "version"]
    assert document["machine_info"]["node"] == "ci-1"
    assert document["commit_info"]["id"] == "abc123"
    first, second = document["benchmarks"]
    assert list(first) == [
        "group", "name", "fullname", "params", "param", "extra_info", "options", "stats",
    ]  # fmt: skip
    assert first["fullname"] == "benchmarking/bench_packages.py::test_build"
    assert first["extra_info"] == {"kind": "list"}
    assert first["options"]["timer"] == "perf_counter"
    assert (second["param"], second["params"]) == ("10", {"n": 10})
    stats = first["stats"]
    assert list(stats) == [
        "min", "max", "mean", "stddev", "rounds", "median", "iqr", "q1", "q3", "iqr_outliers",
        "stddev_outliers", "outliers", "ld15iqr", "hd15iqr", "ops", "total", "data",
        "iterations",
    ]  # fmt: skip
    # Seconds, as pytest-benchmark writes them: the per-call figures were milliseconds.
    assert stats["data"] == pytest.approx([2e-6, 1e-6, 3e-6, 1e-6, 2e-6])
    assert stats["min"] == pytest.approx(1e-6)
    assert stats["median"] == pytest.approx(2e-6)
    assert stats["mean"] == pytest.approx(1.8e-6)
    assert stats["ops"] == pytest.approx(1 / 1.8e-6)
    assert (stats["rounds"], stats["iterations"]) == (5, 10)
    assert stats["outliers"] == f"{stats['stddev_outliers']};{stats['iqr_outliers']}"


def test_the_model_keeps_the_figures_both_ways() -> None:
    summary = _summary()
    again = RunSummary.from_json(json.loads(json.dumps(summary.to_json())))
    assert again == summary
    assert export_text("pytest-benchmark", [again]) == export_text("pytest-benchmark", [summary])


def test_a_stored_run_exports_the_same_from_the_cli(tmp_path: Path) -> None:
    store_file = tmp_path / "store.sqlite3"
    with ResultStore(store_file) as store:
        summary = store_run(store, _run(), environment=ENVIRONMENT)
    assert summary.local_run_id is not None
    out = tmp_path / "out.json"
    done = cli(
        "--store", store_file, "export", summary.local_run_id,
        "--format", "pytest-benchmark", "-o", out,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    stored = json.loads(out.read_text())
    live = _document()
    for document in (stored, live):
        document.pop("datetime")
    assert stored == live


# -- github-action-benchmark's reader -------------------------------------------------------


def test_github_action_benchmarks_pytest_reader_reads_it() -> None:
    entries = extract_pytest_result(export_text("pytest-benchmark", [_summary()]))
    assert [e["name"] for e in entries] == [
        "benchmarking/bench_packages.py::test_build",
        "benchmarking/bench_packages.py::test_sizes[10]",
    ]
    assert entries[0]["unit"] == "iter/sec"
    assert entries[0]["value"] == pytest.approx(1 / 1.8e-6)
    # One series per test (not nine), its mean in a readable unit.
    mean, rounds = entries[0]["extra"].split("\n")
    _, value, unit = mean.split()
    assert (float(value), unit, rounds) == (pytest.approx(1.8), "usec", "rounds: 5")


# -- pytest-benchmark's own reader ----------------------------------------------------------


def test_pytest_benchmark_compare_reads_it(tmp_path: Path) -> None:
    cli = pytest_benchmark_cli()
    path = tmp_path / "0001_export.json"
    path.write_text(export_text("pytest-benchmark", [_summary()]))
    done = subprocess.run(
        [*cli, "compare", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,  # (its CLI imports the conftest.py where it runs)
    )
    assert done.returncode == 0, done.stderr
    assert "test_build" in done.stdout
    assert "test_sizes[10]" in done.stdout
