"""The store CLI (``pytest-benchsdk`` / ``python -m pytest_benchsdk``) on stores written by real
sessions: runs, export, merge, compare, show, report."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.cli import cli
from helpers.sessions import SCORING, bench, store_path, stored_records, stored_runs
from pytest_benchsdk import ResultStore
from pytest_benchsdk.cli import main
from pytest_benchsdk.cli._store import flatten
from pytest_benchsdk.results import merged_run_id

#: 12 iterations of a value seeded per participant and task index (the same in every session),
#: scaled by $SLOWDOWN; nested data and a list for the CSV; one log line per iteration.
BENCH = bench(
    'participants=[Participant("p1"), Participant("p2"), Participant("p3")], iterations=12,\n'
    f"scoring={SCORING}",
    """
    import os, random

    @define_task
    def task(participant, task_index, measure, log):
        rng = random.Random(task_index * 7 + ord(participant.name[-1]) * 1000)
        base = {"p1": 20.0, "p2": 40.0, "p3": 30.0}[participant.name]
        factor = float(os.environ.get("SLOWDOWN", "1"))
        measure(value=base * factor * rng.lognormvariate(0, 0.1))
        measure(meta={"region": "eu", "size": {"mb": 3}}, tags=["a", "b"])
        log(f"iteration {task_index}")
    """,
)


def _session(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run", *args)
    assert result.ret == 0, result.stdout.str()
    return result


def _cli(*args: str | os.PathLike[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return cli(*args, cwd=cwd)


def _main(capsys: pytest.CaptureFixture[str], *args: str | os.PathLike[str]) -> tuple[int, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out + err


@pytest.fixture
def one_run(pytester: pytest.Pytester) -> tuple[Path, str]:
    pytester.makepyfile(bench_x=BENCH)
    _session(pytester)
    path = store_path(pytester)
    return path, stored_runs(path)[-1].run_id


def _content(path: Path) -> list[tuple[object, ...]]:
    """Every run of a store with its records, log lines, scores and analyses (no timestamps
    of arrival), comparable between two stores."""
    with ResultStore(path) as store:
        content = []
        for run in sorted(store.list_runs(limit=1000), key=lambda r: r.run_id):
            content.append(
                (
                    run.run_id,
                    run.participants,
                    run.status,
                    run.run_key,
                    sorted(
                        (name, json.dumps(wire, sort_keys=True))
                        for name, wire in store.record_wires(run.run_id)
                    ),
                    store.all_log_lines(run.run_id),
                    [s.to_wire() for s in store.scores(run.run_id)],
                    store.analyses(run.run_id),
                )
            )
        return content


# --- runs, errors -----------------------------------------------------------------------------


def test_runs_lists_newest_first_as_a_table(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=BENCH)
    _session(pytester)
    _session(pytester, "--bench-provider", "p1")
    runs = stored_runs(store_path(pytester))
    done = _cli("runs", cwd=pytester.path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == [
        "id", "benchmark", "started", "status", "participants", "records", "git", "key"
    ]  # fmt: skip
    assert lines[1].startswith(runs[1].run_id[:12])
    assert lines[2].startswith(runs[0].run_id[:12])
    assert "p1,p2,p3" in lines[2]
    assert " 36 " in lines[2]
    assert lines[1].index("demo") == lines[0].index("benchmark")  # aligned
    limited = _cli("runs", "--limit", "1", "--benchmark", "demo", cwd=pytester.path)
    assert len(limited.stdout.splitlines()) == 2
    assert (
        "no runs of benchmark nope" in _cli("runs", "--benchmark", "nope", cwd=pytester.path).stdout
    )


def test_unknown_run_names_the_closest_ids_and_prefixes_work(
    one_run: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    path, run_id = one_run
    typo = run_id[:5] + ("0" if run_id[5] != "0" else "1") + run_id[6:10]
    code, text = _main(capsys, "--store", path, "show", typo)
    assert code == 2
    assert f"no run {typo} in {path}; closest: {run_id[:12]}…" in text
    code, text = _main(capsys, "--store", path, "show", run_id[:6])
    assert code == 0, text
    assert f"  Run {run_id}, stored " in text
    code, text = _main(capsys, "--store", path.parent / "missing.sqlite3", "runs")
    assert code == 2
    assert "no results store at" in text
    code, text = _main(capsys, "--store", path, "export", run_id, "--format", "xml")
    assert code == 2
    assert "invalid choice" in text
    assert _main(capsys)[0] == 2
    code, text = _main(capsys, "--help")
    assert code == 0
    assert "examples:" in text
    assert "merge shard-*/benchsdk.sqlite3" in text


# --- export -----------------------------------------------------------------------------------


def test_json_export_equals_the_stored_wire_records(
    pytester: pytest.Pytester, one_run: tuple[Path, str]
) -> None:
    path, run_id = one_run
    done = _cli("--store", path, "export", run_id[:8], cwd=pytester.path)
    assert done.returncode == 0, done.stderr
    exported = json.loads(done.stdout)
    assert exported == [
        {"participant": name, "records": records}
        for name, records in stored_records(path, run_id).items()
    ]
    assert _cli("--store", path, "export", run_id, "-o", "out.json", cwd=pytester.path).stdout == ""
    assert json.loads((pytester.path / "out.json").read_text()) == exported


def test_csv_export_flattens_the_data(
    pytester: pytest.Pytester, one_run: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    path, run_id = one_run
    code, text = _main(capsys, "--store", path, "export", run_id, "--format", "csv")
    assert code == 0, text
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == 36
    header = next(csv.reader(io.StringIO(text)))
    assert header[:1] == ["participant"]
    assert {"taskIndex", "status", "data.value", "data.meta.region", "data.meta.size.mb"} <= set(
        header
    )
    first = rows[0]
    assert first["participant"] == "p1"
    assert first["taskIndex"] == "0"
    assert first["data.meta.region"] == "eu"
    assert first["data.meta.size.mb"] == "3"
    assert json.loads(first["data.tags"]) == ["a", "b"]
    value = stored_records(path, run_id)["p1"][0]["data"]["value"]
    assert float(first["data.value"]) == value


HOSTILE = bench(
    """participants=[Participant('=HYPERLINK("http://evil.example","x")'), Participant("ok")],
    iterations=1""",
    """
    @define_task
    def task(participant, measure):
        measure(plus="+1", minus="-x", at="@SUM(A1)", tab="\\tx", cr="\\rx", eq="=1+1",
                safe="a=b", negative=-5, positive=3, tags=["=x"])
    """,
)


def test_csv_export_neutralises_formulas_in_text_cells(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """OWASP's CSV injection rule: a text cell starting with = + - @ tab or CR gets a leading
    ', so a spreadsheet shows it as text; numbers stay numbers."""
    pytester.makepyfile(bench_x=HOSTILE)
    _session(pytester)
    capsys.readouterr()
    path = store_path(pytester)
    run_id = stored_runs(path)[-1].run_id
    code, text = _main(capsys, "--store", path, "export", run_id, "--format", "csv")
    assert code == 0, text
    rows = {row["participant"]: row for row in csv.DictReader(io.StringIO(text, newline=""))}
    assert len(rows) == 2
    evil = rows['\'=HYPERLINK("http://evil.example","x")']
    assert rows["ok"]["data.plus"] == evil["data.plus"] == "'+1"
    assert evil["data.minus"] == "'-x"
    assert evil["data.at"] == "'@SUM(A1)"
    assert evil["data.tab"] == "'\tx"
    assert evil["data.cr"] == "'\rx"
    assert evil["data.eq"] == "'=1+1"
    assert evil["data.safe"] == "a=b"
    assert evil["data.negative"] == "-5"
    assert evil["data.positive"] == "3"
    assert json.loads(evil["data.tags"]) == ["=x"]  # a JSON list starts with [
    # The JSON export and the store keep the values as they are.
    code, exported = _main(capsys, "--store", path, "export", run_id)
    names = [entry["participant"] for entry in json.loads(exported)]
    assert names[0] == '=HYPERLINK("http://evil.example","x")'


def test_flatten() -> None:
    assert flatten({"a": {"b": {"c": 1}, "d": []}, "e": None, "f": True, "g": {}}) == {
        "a.b.c": "1",
        "a.d": "[]",
        "e": "",
        "f": "true",
        "g": "{}",
    }


# --- merge ------------------------------------------------------------------------------------


def _shards(pytester: pytest.Pytester) -> tuple[Path, Path]:
    """Two shard stores of one keyed run: p1+p3 in one process, p2 in another."""
    pytester.makepyfile(bench_x=BENCH)
    shard1, shard2 = (
        pytester.path / "shard-1" / "s.sqlite3",
        pytester.path / "shard-2" / "s.sqlite3",
    )
    _session(
        pytester,
        "--bench-run-key",
        "ci-42",
        "--bench-provider",
        "p1,p3",
        "--bench-store",
        str(shard1),
    )
    _session(
        pytester, "--bench-run-key", "ci-42", "--bench-provider", "p2", "--bench-store", str(shard2)
    )
    return shard1, shard2


def test_dry_run_keeps_the_run_key(pytester: pytest.Pytester) -> None:
    shard1, _ = _shards(pytester)
    assert [run.run_key for run in stored_runs(shard1)] == ["ci-42"]


@pytest.mark.slow
def test_merged_shards_score_like_one_run(pytester: pytest.Pytester) -> None:
    shard1, shard2 = _shards(pytester)
    whole = pytester.path / "whole.sqlite3"
    _session(pytester, "--bench-store", str(whole))
    merged = pytester.path / "merged.sqlite3"
    done = _cli("merge", shard1, shard2, "-o", merged, cwd=pytester.path)
    assert done.returncode == 0, done.stderr
    assert "demo run key ci-42: 2 shard(s) -> run" in done.stdout
    runs = stored_runs(merged)
    assert len(runs) == 1
    run = runs[0]
    assert run.run_id == merged_run_id("demo", "ci-42")
    assert run.participants == ("p1", "p3", "p2")  # first seen
    assert run.record_count == 36
    assert run.run_key == "ci-42"
    assert run.status == "passed"
    one = stored_runs(whole)[0]
    with ResultStore(merged) as m, ResultStore(whole) as w:
        merged_scores = {r.provider: r.to_wire() for r in m.scores(run.run_id)}
        whole_scores = {r.provider: r.to_wire() for r in w.scores(one.run_id)}
        assert merged_scores == whole_scores
        lines = m.log_lines(run.run_id, "p2")
        assert [line.split("] ")[-1] for line in lines] == [f"iteration {i}" for i in range(12)]
        merged_uncertainty = m.analysis(run.run_id, "uncertainty")
        whole_uncertainty = w.analysis(one.run_id, "uncertainty")

        # The intervals are bootstrapped too; the resamples follow the participants' order
        # (here p1, p3, p2 against p1, p2, p3), so only the bounds may differ a little.
        def stable(estimates: list[dict[str, object]]) -> list[dict[str, object]]:
            return sorted(
                ({k: v for k, v in u.items() if k not in ("low", "high")} for u in estimates),
                key=lambda u: str(u["participant"]),
            )

        assert stable(merged_uncertainty) == stable(whole_uncertainty)
        assert all(u["low"] <= u["score"] <= u["high"] for u in merged_uncertainty)
        merged_warnings = m.analysis(run.run_id, "warnings")
        assert merged_warnings  # 12 samples: p99-few-samples for everyone
        assert sorted(map(json.dumps, merged_warnings)) == sorted(
            map(json.dumps, w.analysis(one.run_id, "warnings"))
        )
    assert run.knobs["providers"] == ["p1", "p3", "p2"]


@pytest.mark.slow
def test_merge_is_idempotent(pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    shard1, shard2 = _shards(pytester)
    plain = pytester.path / "plain.sqlite3"
    _session(pytester, "--bench-store", str(plain), "--bench-provider", "p1")
    out = pytester.path / "merged.sqlite3"
    assert _main(capsys, "merge", shard1, shard2, plain, "-o", out)[0] == 0
    once = _content(out)
    assert len(once) == 2  # the keyed run, and the run without a key copied as it is
    assert _main(capsys, "merge", shard1, shard2, plain, "-o", out)[0] == 0
    assert _content(out) == once
    assert _main(capsys, "merge", shard2, shard2, out, shard1, "-o", out)[0] == 0
    assert _content(out) == once
    # Merging earlier merges: each brought a part of the keyed run.
    part1, part2 = pytester.path / "part1.sqlite3", pytester.path / "part2.sqlite3"
    assert _main(capsys, "merge", shard1, "-o", part1)[0] == 0
    assert _main(capsys, "merge", shard2, plain, "-o", part2)[0] == 0
    assert _main(capsys, "merge", part1, part2, "-o", pytester.path / "all.sqlite3")[0] == 0
    assert _content(pytester.path / "all.sqlite3") == once
    # The output may be one of the inputs: the shard's own run stays, the merged run is the same.
    assert _main(capsys, "merge", shard1, shard2, "-o", shard1)[0] == 0
    assert _main(capsys, "merge", shard1, shard2, "-o", shard1)[0] == 0
    merged_id = merged_run_id("demo", "ci-42")
    in_shard = [c for c in _content(shard1) if c[0] == merged_id]
    assert in_shard == [c for c in once if c[0] == merged_id]
    assert len(stored_runs(shard1)) == 2
    # The unkeyed run is copied with everything it had.
    plain_id = stored_runs(plain)[0].run_id
    assert [c for c in once if c[0] == plain_id] == list(_content(plain))


def test_merge_without_stored_scoring_keeps_no_scores(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    source = bench(
        'participants=[Participant("p1"), Participant("p2")], iterations=3,\non_score=on_score',
        """
        @define_task
        def task(participant, task_index, measure):
            measure(value=10 + task_index)
        """,
        prelude="""
        from pytest_benchsdk import ScoringSpec

        def on_score(lower_is_better, higher_is_better):
            return ScoringSpec([lower_is_better(
                "value", ceiling=100, weights={"median": 1, "p95": 0, "p99": 0})])
        """,
    )
    pytester.makepyfile(bench_x=source)
    stores = [pytester.path / f"s{i}.sqlite3" for i in (1, 2)]
    for name, store in zip(("p1", "p2"), stores, strict=True):
        _session(
            pytester, "--bench-run-key", "k", "--bench-provider", name, "--bench-store", str(store)
        )
    with ResultStore(stores[0]) as shard:
        assert shard.scores(stored_runs(stores[0])[0].run_id)
    code, text = _main(capsys, "merge", *stores, "-o", pytester.path / "m.sqlite3")
    assert code == 0, text
    assert "not scored: its shards were scored by on_score" in text
    with ResultStore(pytester.path / "m.sqlite3") as merged:
        assert merged.scores(merged_run_id("demo", "k")) == []


# --- compare, show ------------------------------------------------------------------------------


@pytest.mark.slow
def test_compare_two_runs(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makepyfile(bench_x=BENCH)
    _session(pytester)
    monkeypatch.setenv("SLOWDOWN", "1.3")
    _session(pytester)
    base, current = (run.run_id for run in stored_runs(store_path(pytester)))
    done = _cli("compare", base, current[:10], cwd=pytester.path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"Demo (demo) [run {current}]"
    assert lines[1].startswith(f"  Compared with run {base} (")
    assert lines[2].startswith("    Between-run noise: unknown (1 earlier complete run(s) ")
    assert lines[3].split() == [
        "participant", "metric", "stat", "baseline", "current", "change", "interval", "verdict",
        "noise", "detects",
    ]  # fmt: skip
    rows = lines[4:10]
    assert [line.split()[-3:-1] for line in rows[::2]] == [["regressed", "within-run"]] * 3
    # A p95 of 12 samples is their largest: shown, not judged (issue 46).
    assert all("not judged: 12 samples*" in line for line in rows[1::2]), rows
    assert lines[10].startswith("    detects: the smallest change a row can tell from noise")
    # The three p95 rows share one reason: one line names them all.
    shared = [line for line in lines if "not judged: 12 samples; a p95 verdict" in line]
    assert len(shared) == 1, lines
    assert shared[0].startswith("    * p1, p2, p3 value p95: not judged: 12 samples;"), lines
    failing = _cli("compare", base, current, "--fail-on-regression", cwd=pytester.path)
    assert failing.returncode == 1
    assert "ERROR regressed (--fail-on-regression): demo: p1 value median:" in failing.stdout
    code, _ = _main(capsys, "compare", base, base, "--fail-on-regression")
    assert code == 0


def test_compare_on_names_the_rows_compared(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makepyfile(bench_x=BENCH)
    _session(pytester)
    monkeypatch.setenv("SLOWDOWN", "1.3")
    _session(pytester)
    monkeypatch.chdir(pytester.path)
    base, current = (run.run_id for run in stored_runs(store_path(pytester)))
    capsys.readouterr()
    code, text = _main(capsys, "compare", base, current, "--compare-on", "latency_ms")
    assert code == 0, text
    assert "    Judged (--bench-compare-on): latency_ms; the other rows are shown" in text
    rows = [line.split() for line in text.splitlines() if line.startswith("    p")]
    # The scored metric's rows are shown, their verdicts (in parentheses) do not count.
    medians = {row[-3] for row in rows if row[1] == "value" and row[2] == "median"}
    assert medians == {"(regressed)"}, text
    # A p95 of 12 samples is shown, not judged (issue 46).
    assert all("not judged: 12 samples" in " ".join(r) for r in rows if r[2] == "p95"), text
    code, text = _main(capsys, "compare", base, current, "--compare-on=valeu")
    assert code == 2
    assert "--compare-on: " in text, text
    assert "valeu" in text, text


def test_show_prints_the_session_summary(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=BENCH)
    _session(pytester)
    session = _session(pytester, "--bench-compare")
    run_id = stored_runs(store_path(pytester))[-1].run_id
    done = _cli("show", run_id, cwd=pytester.path)
    assert done.returncode == 0, done.stderr
    shown = done.stdout.splitlines()
    assert shown[0] == "Demo (demo) [bench_x.py]"
    assert shown[1].startswith(f"  Run {run_id}, stored ")
    printed = session.stdout.lines
    start = printed.index("Demo (demo) [bench_x.py]") + 1
    assert (
        printed[start]
        == "  Knobs: iterations=12, concurrency=1, staggerDelayMs=0, groupBy=participant"
    )
    # Everything (the run's times and status, latency, scores with intervals, comparison)
    # as the session printed it.
    table_lines = shown[2:]
    assert table_lines == printed[start : start + len(table_lines)]
    assert any(line.startswith("  Compared with run ") for line in table_lines)
    assert any("95% interval" in line for line in table_lines)


def test_the_short_id_runs_prints_names_its_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=BENCH)
    _session(pytester)
    run_id = stored_runs(store_path(pytester))[-1].run_id
    listed = _cli("runs", cwd=pytester.path)
    (short,) = [line.split()[0] for line in listed.stdout.splitlines() if run_id[:8] in line]
    assert short.endswith("…")  # copied as printed, ellipsis and all
    done = _cli("show", short, cwd=pytester.path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1].startswith(f"  Run {run_id}, stored ")


# --- report -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_report_delegates_to_write_report(
    pytester: pytest.Pytester, one_run: tuple[Path, str]
) -> None:
    pytest.importorskip("pytest_benchsdk.report")
    path, run_id = one_run
    done = _cli("--store", path, "report", "-o", "report.html", cwd=pytester.path)
    assert done.returncode == 0, done.stderr
    assert "<html" in (pytester.path / "report.html").read_text().lower()
    assert (
        _cli("--store", path, "report", run_id[:8], "-o", "r2.html", cwd=pytester.path).returncode
        == 0
    )


def test_report_without_plotly_says_how_to_get_it(
    one_run: tuple[Path, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = one_run
    monkeypatch.setitem(sys.modules, "pytest_benchsdk.report", None)
    code, text = _main(capsys, "--store", path, "report", "-o", path.parent / "r.html")
    assert code == 2
    assert "report needs plotly: pip install 'pytest-benchsdk[report]'" in text
