"""Verdicts on a calibrated step's per-call figure (issue 46, part A).

A small package in its own git repository (``src/slugs``: three slugify implementations,
``regex``, ``split`` and ``translate``) and a bench file timing each per call in a calibrated
loop, ``step("slugify4", fn, calls="auto")``, with no scoring: such a benchmark is judged on
the step's per-call metric ``slugify4``, not on the iterations' latency (the length of their
calibration loops). ``regex`` runs its substitution ``REPEAT`` times a call (10); the slowed
code runs it 13 times (+30 % of its work; the call's own overhead is not repeated, so the
per-call figure grows a little less).

1. ``--bench-compare``: one session saved as the baseline ``main``, ``--history`` more
   unchanged sessions (the history's between-run noise), then ``--sessions`` unchanged and
   ``--slowed`` slowed sessions, each ``--bench-compare=main --bench-compare-fail``;
2. ``--bench-ab=HEAD``: ``--sessions`` A/A sessions (the working tree is the revision) and
   ``--slowed`` A/B sessions (the working tree slowed).

Per session the script prints the exit status, the rows' metric (``slugify4`` expected), the
regex median row (change, interval, verdict, noise) and whether any judged row of any
participant regressed (a false alarm; in a slowed session, a row of ``split`` or
``translate``). Targets: unchanged sessions regress 0 of 5 each way; every slowed session
regresses on ``regex``'s median.
``--load N`` runs N busy loops (``python3 -c 'while True: pass'``) beside the whole script (2
by default; 0 for none); the load average is printed before and after.

Run: ``python benchmarks/calibrated_verdicts.py [--sessions 5] [--slowed 3] [--history 3]
[--iterations 10] [--load 2]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _busy import busy_loops

PACKAGE = """
import re
import string

TEXT = "Hello World, this is a Title! Ünïcode and -- dashes --"
REPEAT = 10
TABLE = str.maketrans({c: " " for c in string.punctuation})
_NOT_WORD = re.compile(r"[^a-z0-9]+")


def regex() -> str:
    for _ in range(REPEAT):
        out = _NOT_WORD.sub("-", TEXT.lower()).strip("-")
    return out


def split() -> str:
    return "-".join("".join(c if c.isalnum() else " " for c in TEXT.lower()).split())


def translate() -> str:
    return "-".join(TEXT.lower().translate(TABLE).split())
"""

BENCH = """
import os

import slugs

from pytest_benchsdk import Participant, define_benchmark_config, define_task

config = define_benchmark_config(
    benchmark_slug="slugify-calibrated",
    benchmark_name="slugify, per call",
    participants=[Participant("regex"), Participant("split"), Participant("translate")],
    iterations=int(os.environ.get("SLUG_ITERATIONS", "10")),
)


@define_task
def task(participant, step):
    step("slugify4", getattr(slugs, participant.name), calls="auto")
"""

ENV = {
    "GIT_AUTHOR_NAME": "b",
    "GIT_AUTHOR_EMAIL": "b@example.com",
    "GIT_COMMITTER_NAME": "b",
    "GIT_COMMITTER_EMAIL": "b@example.com",
}


def make_project(root: Path) -> None:
    (root / "src" / "slugs").mkdir(parents=True)
    (root / "src" / "slugs" / "__init__.py").write_text(PACKAGE)
    (root / "bench_slugs.py").write_text(BENCH)
    (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["src"]\n')
    (root / ".gitignore").write_text(".benchmarks/\n*.json\n")
    env = {**os.environ, **ENV}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "the revision"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True)


def set_slowed(root: Path, slowed: bool) -> None:
    """The working tree's ``regex``: 13 substitutions a call (slowed) or the revision's 10."""
    source = PACKAGE.replace("REPEAT = 10", "REPEAT = 13") if slowed else PACKAGE
    (root / "src" / "slugs" / "__init__.py").write_text(source)


def session(root: Path, args: list[str], iterations: int) -> tuple[int, dict[str, Any], str]:
    out = root / "run.json"
    out.unlink(missing_ok=True)
    env = {**os.environ, "SLUG_ITERATIONS": str(iterations)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--bench", "--bench-dry-run", "-q",
         "-p", "no:cacheprovider", "-p", "no:randomly", "--bench-json", str(out), *args],
        cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    doc = json.loads(out.read_text()) if out.exists() else {}
    return done.returncode, doc, done.stdout


def rows_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    for benchmark in doc.get("benchmarks") or ():
        return list((benchmark.get("comparison") or {}).get("rows") or ())
    return []


LINE = "{:10} {:>4} {:>9} {:>8} {:>18} {:>10} {:>12} {:>9} {:>14}"


def report(kind: str, status: int, rows: list[dict[str, Any]], slowed: bool) -> tuple[bool, bool]:
    """Print one session's line; (regex median regressed, a false alarm: a judged row of an
    unchanged participant regressed, every participant's in an unchanged session)."""
    regex = next(
        (r for r in rows if r["participant"] == "regex" and r["statistic"] == "median"), {}
    )
    c = regex.get("comparison") or {}
    any_regressed = any(
        r.get("verdict") == "regressed"
        and r.get("judged", True)
        and not (slowed and r["participant"] == "regex")
        for r in rows
    )
    metrics = ",".join(sorted({r["metric"] for r in rows})) or "-"
    change = c.get("change")
    interval = (
        f"[{c['ciLow'] * 100:+.1f}%, {c['ciHigh'] * 100:+.1f}%]"
        if c.get("ciLow") is not None and c.get("ciHigh") is not None
        else "-"
    )
    print(
        LINE.format(
            kind,
            status,
            metrics,
            "-" if change is None else f"{change * 100:+.1f}%",
            interval,
            regex.get("verdict") or "-",
            regex.get("noise") or "-",
            "yes" if any_regressed else "no",  # a false alarm
            ",".join(
                sorted(
                    {
                        f"{r['participant']}/{r['statistic']}"
                        for r in rows
                        if r.get("verdict") == "regressed"
                    }
                )
            )
            or "-",
        ),
        flush=True,
    )
    return regex.get("verdict") == "regressed", any_regressed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=5)
    parser.add_argument("--slowed", type=int, default=3)
    parser.add_argument("--history", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--load", type=int, default=2)
    opts = parser.parse_args()
    header = ("kind", "exit", "metric", "change", "interval", "verdict", "noise", "false",
              "regressed rows")  # fmt: skip
    counts: dict[str, list[int]] = {}
    with busy_loops(opts.load), tempfile.TemporaryDirectory(prefix="calibrated-") as tmp:
        time.sleep(1.0)
        print(f"busy loops: {opts.load}; load average {os.getloadavg()[0]:.2f}", flush=True)
        root = Path(tmp)
        make_project(root)
        print("-- --bench-compare=main (regex median row)")
        print(LINE.format(*header))
        status, _, output = session(root, ["--bench-save", "main"], opts.iterations)
        if status != 0:
            print(output[-3000:])
            raise SystemExit("the baseline session failed")
        for _ in range(opts.history):
            session(root, [], opts.iterations)
        compare = ["--bench-compare=main", "--bench-compare-fail"]
        plan = [("unchanged", False)] * opts.sessions + [("slowed", True)] * opts.slowed
        for kind, slowed in plan:
            set_slowed(root, slowed)
            status, doc, output = session(root, compare, opts.iterations)
            if status not in (0, 1):
                print(output[-3000:])
            regex, any_row = report(kind, status, rows_of(doc), slowed)
            tally = counts.setdefault(f"compare {kind}", [0, 0, 0])
            tally[0] += 1
            tally[1] += regex
            tally[2] += any_row
        set_slowed(root, False)
        print("-- --bench-ab=HEAD (regex median row)")
        print(LINE.format(*header))
        plan = [("A/A", False)] * opts.sessions + [("A/B slowed", True)] * opts.slowed
        for kind, slowed in plan:
            set_slowed(root, slowed)
            status, doc, output = session(root, ["--bench-ab=HEAD"], opts.iterations)
            if status not in (0, 1):
                print(output[-3000:])
            regex, any_row = report(kind, status, rows_of(doc), slowed)
            tally = counts.setdefault(f"ab {kind}", [0, 0, 0])
            tally[0] += 1
            tally[1] += regex
            tally[2] += any_row
        print(f"load average at the end {os.getloadavg()[0]:.2f}")
    print()
    for kind, (sessions, regex, any_row) in counts.items():
        print(
            f"{kind:22} {sessions} sessions: regex median regressed in {regex}, "
            f"a false alarm (another row regressed) in {any_row}"
        )


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"({time.perf_counter() - t0:.0f} s)")
