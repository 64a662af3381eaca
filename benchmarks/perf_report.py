"""Size and load time of the ``--bench-html`` report at 10 participants x 1,000 samples.

Builds a store with one run of P participants x N iterations (two phases, three steps, a
scored metric, 1 % failures, and the scores, their intervals, the run warnings and the summary
stored as a session stores them) plus H earlier runs for the history chart, writes the report
and measures:

* the file's size (target: under 3 MB), and how much of it is plotly.js;
* how long rendering took (Python);
* the load in headless Chromium (a 1280x2000 window), from the page's own marks (ms since
  navigation, in real time: ``--timeout``, not virtual time): ``data-interactive-ms`` when the
  charts on the first screen are drawn — the page is interactive then (target: 1.5 s) — and,
  as the baseline in the same run, ``data-rendered-ms`` of the same page made to draw every
  chart at load (its loader's first pass given all charts, as the report did before it drew
  them only near the viewport). Every figure of that page is checked to have drawn
  (``.main-svg``).

    python benchmarks/perf_report.py [--participants 10] [--samples 1000] [--history 5]
        [--repeat 3] [--keep report.html]
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from pytest_benchsdk.compare import run_warnings, score_uncertainty
from pytest_benchsdk.records import ParticipantRecords, StepRecord, TaskRecord
from pytest_benchsdk.report import write_report
from pytest_benchsdk.results import rebuild_summary, save_summary
from pytest_benchsdk.schedule import BenchmarkRunOutcome
from pytest_benchsdk.scoring import score, scoring_config_to_spec
from pytest_benchsdk.store import ResultStore

SCORING = {
    "metrics": [
        {
            "key": "value",
            "unit": "ms",
            "ceiling": 200,
            "weights": {"median": 0.6, "p95": 0.25, "p99": 0.15},
        }
    ]
}


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="milliseconds")[:-6] + "Z"


def _records(name: str, index: int, n: int, rng: random.Random) -> list[TaskRecord]:
    t = 1_700_000_000.0
    records = []
    for i in range(n):
        create, exec_, destroy = (rng.lognormvariate(1 + index * 0.1, 0.3) for _ in range(3))
        latency = create + exec_ + destroy
        ok = rng.random() > 0.01
        phase = "cold" if i < n // 10 else "warm"
        start = t + i * 0.02
        data: dict[str, object] = {"phase": phase}
        if ok:
            data["value"] = rng.lognormvariate(3 + index * 0.05, 0.25)
        else:
            data["errorMessage"] = f"sandbox {i} did not start: quota exceeded"
        records.append(
            TaskRecord(
                task_index=i,
                status="success" if ok else "error",
                started_at=_iso(start),
                completed_at=_iso(start + latency / 1000),
                latency_ms=latency,
                error_code=None if ok else "quota",
                steps=[
                    StepRecord("create", "success", latency_ms=create),
                    StepRecord("exec", "success", latency_ms=exec_),
                    StepRecord("destroy", "success", latency_ms=destroy),
                ],
                data=data,
            )
        )
    return records


def build_store(path: Path, participants: int, samples: int, history: int) -> str:
    """The store with ``history`` earlier runs and the measured run; returns its id."""
    from pytest_benchsdk._base.runenv import collect_run_environment

    names = [f"participant-{i:02d}" for i in range(participants)]
    environment = collect_run_environment({}, Path.cwd())
    spec = scoring_config_to_spec(SCORING)
    run_id = ""
    with ResultStore(path) as store:
        for round_ in range(history + 1):
            rng = random.Random(round_)
            run_id = store.begin_run(
                benchmark_slug="perf-report",
                benchmark_name="Perf report",
                file="bench_perf.py",
                knobs={"iterations": samples, "concurrency": 1},
                participants=names,
                config_snapshot={"scoring": SCORING},
                environment=environment,
                dry_run=True,
            )
            outcome_records = []
            for index, name in enumerate(names):
                records = _records(name, index, samples, rng)
                for record in records:
                    store.add_record(run_id, name, record)
                outcome_records.append(ParticipantRecords(name, records))
            outcome = BenchmarkRunOutcome(
                run_id="no-ingest", dashboard_url="", config=None,  # type: ignore[arg-type]
                participants=tuple(outcome_records),
            )  # fmt: skip
            store.save_scores(run_id, score(outcome, spec))
            if round_ == history:
                uncertainty = score_uncertainty(outcome, spec, resamples=50)
                store.save_analysis(run_id, "uncertainty", [u.to_json() for u in uncertainty])
                found = []
                for pr in outcome_records:
                    values = [r.data["value"] for r in pr.records if r.data and "value" in r.data]
                    found += [
                        w.to_json()
                        for w in run_warnings(
                            pr.participant,
                            {"value": values},  # type: ignore[dict-item]
                            failed=sum(r.status != "success" for r in pr.records),
                            iterations=len(pr.records),
                        )
                    ]
                store.save_analysis(run_id, "warnings", found)
            store.finish_run(run_id, "passed")
            # The summary a session keeps with its run (the report reads it back).
            save_summary(store, run_id, rebuild_summary(store, store.get_run(run_id)))
    return run_id


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


#: How long the browser runs before the DOM is read (real time: the marks say when the page
#: was done, the rest is waiting).
WAIT_MS = 20_000


def load_in_browser(browser: str, page: Path, window: str) -> tuple[int | None, int | None, int]:
    """(the page's interactive mark, its rendered mark, figures drawn), in ms since
    navigation; None for a mark the page did not set within :data:`WAIT_MS`."""
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run(
            [
                browser, "--headless=new", "--disable-gpu", "--no-sandbox",
                f"--user-data-dir={profile}", f"--window-size={window}",
                f"--timeout={WAIT_MS}", "--dump-dom", page.resolve().as_uri(),
            ],
            capture_output=True, text=True, timeout=120 + WAIT_MS / 1000, check=True,
        )  # fmt: skip
    body = re.search(r"<body[^>]*>", done.stdout)
    tag = body.group(0) if body else ""
    marks = [re.search(rf'data-{name}-ms="(\d+)"', tag) for name in ("interactive", "rendered")]
    drawn = len(re.findall(r'class="[^"]*\bsvg-container\b', done.stdout))
    interactive, rendered = (int(m.group(1)) if m else None for m in marks)
    return interactive, rendered, drawn


def _median(values: list[int | None]) -> float:
    known = [v for v in values if v is not None]
    return statistics.median(known) if len(known) == len(values) else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--participants", type=int, default=10)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--history", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="copy the report here")
    args = parser.parse_args(argv)
    from plotly.offline import get_plotlyjs

    with tempfile.TemporaryDirectory() as tmp:
        store_file = Path(tmp) / "store.sqlite3"
        t = time.perf_counter()
        run_id = build_store(store_file, args.participants, args.samples, args.history)
        print(f"store built in {time.perf_counter() - t:.1f} s")
        report = Path(tmp) / "report.html"
        with ResultStore(store_file) as store:
            t = time.perf_counter()
            write_report(store, [run_id], report)
            render_s = time.perf_counter() - t
        size = report.stat().st_size
        text = report.read_text(encoding="utf-8")
        figures = text.count('<figure class="chart"')
        packed = re.search(r'id="plotly-js"[^>]*>([^<]*)<', text)
        library = len(packed.group(1)) if packed else 0
        print(
            f"{args.participants} participants x {args.samples} samples, "
            f"{args.history + 1} runs of history: {size / 1e6:.2f} MB "
            f"({'OK' if size < 3e6 else 'OVER'} < 3 MB; plotly.js {library / 1e6:.2f} MB of it, "
            f"{len(get_plotlyjs()) / 1e6:.2f} MB unpacked), {figures} figures, "
            f"rendered in {render_s:.2f} s"
        )
        if args.keep:
            shutil.copy(report, args.keep)
        browser = _chromium()
        if browser is None:
            print("no chromium on PATH: load time not measured")
            return 0 if size < 3e6 else 1
        eager = Path(tmp) / "eager.html"
        lazy_pass = "plots.filter(onScreen).map(draw)"
        assert lazy_pass in text, "the loader's first pass changed: update this script"
        eager.write_text(text.replace(lazy_pass, "plots.map(draw)"), encoding="utf-8")
        first, every = [], []
        drawn = 0
        for _ in range(args.repeat):
            first.append(load_in_browser(browser, report, "1280,2000")[0])
            _, rendered, drawn = load_in_browser(browser, eager, "1280,2000")
            every.append(rendered)
        interactive_ms, all_ms = _median(first), _median(every)
        ok_time = interactive_ms <= 1500
        print(
            f"headless Chromium (median of {args.repeat}): interactive {interactive_ms:.0f} ms "
            f"after navigation, the first screen's charts drawn "
            f"({'OK' if ok_time else 'OVER'} <= 1500 ms); every chart drawn at load instead "
            f"{all_ms:.0f} ms (interactive / that: {interactive_ms / all_ms:.2f}); "
            f"{drawn}/{figures} figures drawn"
        )
        ok = size < 3e6 and ok_time and drawn == figures
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
