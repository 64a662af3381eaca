"""Exports other tools read (``pytest-benchsdk export --format gab|gab-bigger|bmf``,
``--bench-export FORMAT:PATH``), validated against the formats' documented schemas, and the
CSV export's columns.

The schemas, transcribed from their documentation:

* github-action-benchmark's custom tools (``customSmallerIsBetter`` / ``customBiggerIsBetter``):
  its README ("Every entry in the JSON file you provide only needs to provide ``name``,
  ``unit``, and ``value``. You can also provide optional ``range`` (results' variance) and
  ``extra`` …") and the parser the action runs on the file, ``src/extract.ts``
  (``BenchmarkResult = z.object({name: string, value: number, range?: string, unit: string,
  extra?: string})``, ``BenchmarkResults = z.array(BenchmarkResult)``), at
  https://github.com/benchmark-action/github-action-benchmark.
* Bencher Metric Format: the JSON Schema published at
  https://bencher.dev/docs/reference/bencher-metric-format/ (``$id``
  https://bencher.dev/bmf.json), verbatim below; and from the same page, a Measure's name or
  slug is at most 64 characters.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any

import attrs
import jsonschema
import pytest

from helpers.sessions import SCORING, bench, read_json, store_path, stored_runs
from pytest_benchsdk._views.exports import bmf_document, gab_entries
from pytest_benchsdk.cli import main
from pytest_benchsdk.results import LATENCY, RunSummary, stored_summary
from pytest_benchsdk.store import ResultStore

#: github-action-benchmark's custom entry (src/extract.ts, as a JSON Schema): no other key is
#: read, ``value`` a finite number (JSON has no other).
GAB_SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema",
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1},
            "value": {"type": "number"},
            "range": {"type": "string"},
            "unit": {"type": "string"},
            "extra": {"type": "string"},
        },
        "required": ["name", "value", "unit"],
        "additionalProperties": False,
    },
}

#: The Bencher Metric Format's JSON Schema, as bencher.dev publishes it.
BMF_SCHEMA: dict[str, Any] = {
    "$id": "https://bencher.dev/bmf.json",
    "$schema": "http://json-schema.org/draft-07/schema",
    "type": "object",
    "patternProperties": {
        ".+": {
            "type": "object",
            "patternProperties": {
                ".+": {
                    "type": "object",
                    "properties": {
                        "value": {"type": "number"},
                        "lower_value": {"type": "number"},
                        "upper_value": {"type": "number"},
                    },
                    "required": ["value"],
                }
            },
        }
    },
}

#: Two participants ten times apart, scored on ``request_ms``; ``throughput`` is declared
#: higher-better, ``retries`` says nothing (smaller is better then); two steps.
BENCH = bench(
    'participants=[Participant("keepalive"), Participant("new-client")], iterations=30,\n'
    f"scoring={SCORING.replace('value', 'request_ms')},\n"
    'display={"metrics": [{"key": "throughput", "label": "requests/s", "unit": "req/s",\n'
    '                      "direction": "higher-better"}]}',
    """
    import random

    @define_task
    def task(participant, task_index, step, measure):
        rng = random.Random(task_index * 17 + len(participant.name))
        base = {"keepalive": 5.0, "new-client": 50.0}[participant.name]
        with step("connect"):
            pass
        with step("send"):
            pass
        ms = base * rng.lognormvariate(0, 0.2)
        measure(request_ms=ms, throughput=1000 / ms, retries=task_index % 2)
    """,
    slug="http",
    name="HTTP",
)

STATISTICS = ("median", "p95", "p99")


def _session(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "-p", "no:cacheprovider", *args
    )
    assert result.ret == 0, result.stdout.str()
    return result


def _export(
    capsys: pytest.CaptureFixture[str], path: Path, run_id: str, fmt: str
) -> tuple[Any, str]:
    capsys.readouterr()  # what came before (a session's output)
    code = main(["--store", str(path), "export", run_id[:10], "--format", fmt])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out), err


def _summary(path: Path, run_id: str) -> RunSummary:
    with ResultStore(path) as store:
        return stored_summary(store, store.get_run(run_id))


@pytest.fixture
def run(pytester: pytest.Pytester) -> tuple[Path, str]:
    pytester.makepyfile(bench_http=BENCH)
    _session(pytester)
    path = store_path(pytester)
    return path, stored_runs(path)[-1].run_id


@pytest.mark.slow
def test_gab_export_follows_github_action_benchmarks_custom_format(
    run: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    path, run_id = run
    smaller, note = _export(capsys, path, run_id, "gab")
    bigger, _ = _export(capsys, path, run_id, "gab-bigger")
    jsonschema.validate(smaller, GAB_SCHEMA)
    jsonschema.validate(bigger, GAB_SCHEMA)
    summary = _summary(path, run_id)

    # One entry per participant x metric x statistic, by the metric's direction.
    expected_smaller = {
        f"http/{p}/{metric} {stat}"
        for p in ("keepalive", "new-client")
        for metric in (LATENCY, "request_ms", "retries", "cpu_ms")
        for stat in STATISTICS
    }
    expected_bigger = {
        f"http/{p}/throughput {stat}" for p in ("keepalive", "new-client") for stat in STATISTICS
    } | {"http/keepalive/score", "http/new-client/score"}
    assert {e["name"] for e in smaller} == expected_smaller
    assert {e["name"] for e in bigger} == expected_bigger
    assert len(smaller) == len(expected_smaller)  # names are unique: one chart each
    assert "2 bigger-is-better" not in note
    assert f"{len(bigger)} bigger-is-better entries" in note
    assert "--format gab-bigger" in note

    # The numbers are the model's: the statistics, their intervals, the score's interval.
    by_name = {e["name"]: e for e in smaller + bigger}
    for p in summary.ran_participants:
        request = p.metric("request_ms")
        assert request is not None
        assert request.stats is not None
        for stat in STATISTICS:
            entry = by_name[f"http/{p.name}/request_ms {stat}"]
            assert entry["value"] == request.stats.get(stat)
            assert entry["unit"] == "ms"
            interval = summary.interval(p.name, "request_ms", stat)
            assert interval is not None
            assert entry["range"].startswith("95% CI ")
            assert f"n = {request.stats.count}" in entry["extra"]
            assert run_id in entry["extra"]
        throughput = by_name[f"http/{p.name}/throughput median"]
        assert throughput["unit"] == "req/s"
        assert by_name[f"http/{p.name}/{LATENCY} median"]["unit"] == "ms"
    assert summary.scores is not None
    for entry in summary.scores.ranking:
        score = by_name[f"http/{entry.participant}/score"]
        assert score["value"] == entry.row.composite_score
        assert entry.uncertainty is not None
        assert score["range"].startswith("95% CI ")
        assert score["unit"] == "points"


@pytest.mark.slow
def test_bmf_export_follows_the_bencher_metric_format(
    run: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    path, run_id = run
    document, note = _export(capsys, path, run_id, "bmf")
    jsonschema.validate(document, BMF_SCHEMA)
    assert note == ""
    summary = _summary(path, run_id)
    assert set(document) == {"http/keepalive", "http/new-client"}
    for p in summary.ran_participants:
        measures = document[f"http/{p.name}"]
        assert set(measures) == {
            f"{metric} {stat}"
            for metric in (LATENCY, "request_ms", "throughput", "retries", "cpu_ms")
            for stat in STATISTICS
        } | {"score"}
        assert all(len(measure) <= 64 for measure in measures)  # Bencher's limit
        for metric in (LATENCY, "request_ms", "throughput"):
            for stat in STATISTICS:
                bmf = measures[f"{metric} {stat}"]
                interval = summary.interval(p.name, metric, stat)
                assert interval is not None
                assert (bmf["lower_value"], bmf["upper_value"]) == (interval.low, interval.high)
                assert bmf["lower_value"] <= bmf["value"] <= bmf["upper_value"]
        # retries is 0 or 1: its median's interval still holds the median.
        assert measures["retries median"]["value"] in (0, 0.5, 1)
        assert measures["score"]["lower_value"] <= measures["score"]["value"]


@pytest.mark.slow
def test_bench_export_writes_the_same_files_at_the_session_end(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makepyfile(bench_http=BENCH)
    result = _session(
        pytester,
        "--bench-export",
        "gab:out/smaller.json",
        "--bench-export",
        "gab-bigger:out/bigger.json",
        "--bench-export",
        "BMF:out/bencher.json",
    )
    out = pytester.path / "out"
    result.stdout.fnmatch_lines(
        [
            f"Export (gab) written to {out / 'smaller.json'}",
            f"Export (gab-bigger) written to {out / 'bigger.json'}",
            f"Export (bmf) written to {out / 'bencher.json'}",
        ]
    )
    path = store_path(pytester)
    run_id = stored_runs(path)[-1].run_id
    # The session's files and the store CLI's exports of the run: one model, two routes.
    for name, fmt in (("smaller", "gab"), ("bigger", "gab-bigger"), ("bencher", "bmf")):
        written = json.loads((out / f"{name}.json").read_text())
        assert written == _export(capsys, path, run_id, fmt)[0], fmt
    jsonschema.validate(json.loads((out / "bencher.json").read_text()), BMF_SCHEMA)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("gab", "*--bench-export expects FORMAT:PATH, e.g. gab:benchmark.json (got 'gab')*"),
        ("csv:x.csv", "*--bench-export csv:x.csv: unknown format 'csv'; expected one of gab, "
         "gab-bigger, bmf*"),
        ("gab:", "*--bench-export expects FORMAT:PATH*"),
        ("bmf:adir", "*--bench-export bmf:adir: is a directory; give a file path*"),
    ],
)  # fmt: skip
def test_bench_export_usage_errors_come_before_anything_runs(
    pytester: pytest.Pytester, value: str, message: str
) -> None:
    pytester.makepyfile(bench_http=BENCH)
    (pytester.path / "adir").mkdir()
    result = pytester.runpytest_inprocess("--bench-dry-run", "--bench-export", value)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert not store_path(pytester).exists()


def test_the_same_export_path_twice_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_http=BENCH)
    result = pytester.runpytest_inprocess(
        "--bench-dry-run", "--bench-export", "gab:x.json", "--bench-export", "bmf:x.json"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--bench-export bmf:x.json: x.json is given twice*"])


def test_without_resampling_the_exports_have_no_intervals(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(bench_http=BENCH)
    _session(
        pytester,
        "--bench-score-resamples",
        "0",
        "--bench-export",
        "gab:g.json",
        "--bench-export",
        "bmf:b.json",
        "--bench-json",
        "run.json",
    )
    gab = json.loads((pytester.path / "g.json").read_text())
    bmf = json.loads((pytester.path / "b.json").read_text())
    jsonschema.validate(gab, GAB_SCHEMA)
    jsonschema.validate(bmf, BMF_SCHEMA)
    assert gab
    assert not any("range" in e for e in gab)
    assert not any("lower_value" in m for measures in bmf.values() for m in measures.values())
    result = read_json(pytester.path / "run.json")["benchmarks"][0]["result"]
    assert result["intervals"] == []
    assert result["relative"] is None


@pytest.mark.slow
def test_exports_render_the_model_and_compute_nothing(run: tuple[Path, str]) -> None:
    path, run_id = run
    summary = _summary(path, run_id)
    # Numbers no statistic of the samples could give: the exports show them as they are.
    p = summary.ran_participants[0]
    assert p.latency is not None
    odd = attrs.evolve(p.latency, median=123.25, p95=456.5, p99=789.75)
    changed = attrs.evolve(
        summary, participants=(attrs.evolve(p, latency=odd), *summary.participants[1:])
    )
    entries = {e["name"]: e["value"] for e in gab_entries([changed])}
    assert entries[f"http/{p.name}/{LATENCY} median"] == 123.25
    assert entries[f"http/{p.name}/{LATENCY} p99"] == 789.75
    assert bmf_document([changed])[f"http/{p.name}"][f"{LATENCY} p95"]["value"] == 456.5
    # A statistic that is not a number is left out, not written as null.
    broken = attrs.evolve(p.latency, p95=math.nan)
    changed = attrs.evolve(
        summary, participants=(attrs.evolve(p, latency=broken), *summary.participants[1:])
    )
    names = {e["name"] for e in gab_entries([changed])}
    assert f"http/{p.name}/{LATENCY} p95" not in names
    assert f"http/{p.name}/{LATENCY} p99" in names


# --- CSV ----------------------------------------------------------------------------------------


def test_csv_has_a_column_per_step_and_empty_cells_for_what_a_record_lacks(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makepyfile(
        bench_steps=bench(
            'participants=[Participant("a"), Participant("b")], iterations=3',
            """
            @define_task
            def task(participant, task_index, step, measure):
                with step("create"):
                    pass
                if participant.name == "b":
                    with step("create"):  # a second invocation
                        pass
                with step("exec"):
                    pass
                if task_index == 1:
                    raise TaskError("boom", code="x")
                if task_index:
                    measure(value=task_index)
            """,
        )
    )
    pytester.runpytest_inprocess("--bench", "--bench-dry-run", "-p", "no:cacheprovider")
    path = store_path(pytester)
    run_id = stored_runs(path)[-1].run_id
    capsys.readouterr()
    code = main(["--store", str(path), "export", run_id, "--format", "csv"])
    out, _ = capsys.readouterr()
    assert code == 0
    header = next(csv.reader(io.StringIO(out)))
    rows = list(csv.DictReader(io.StringIO(out)))
    assert "steps" not in header  # no JSON column of all steps
    for column in (
        "steps.create.latencyMs",
        "steps.create.status",
        "steps.exec.latencyMs",
        "steps.create[2].latencyMs",
    ):
        assert column in header, column
    records = {(r["participant"], r["taskIndex"]): r for r in rows}
    first = records[("a", "0")]
    assert float(first["steps.create.latencyMs"]) >= 0
    assert first["steps.create.status"] == "success"
    # What a record does not have is an empty cell: no None, null or nan anywhere.
    assert first["steps.create[2].latencyMs"] == ""
    assert first["data.value"] == ""
    assert records[("b", "0")]["steps.create[2].latencyMs"] != ""
    assert records[("a", "1")]["errorCode"] == "x"
    assert records[("a", "2")]["errorCode"] == ""
    cells = [cell for row in csv.reader(io.StringIO(out)) for cell in row]
    assert not {"None", "null", "nan", "NaN"} & set(cells)
