"""Verdicts replay (issue 46): false alarms and detections per row kind (median, p95) on two
benchmarks of the kind the plugin is for, with a stored history, on a loaded machine.

* **sandbox**: two fake sandbox providers behind a threaded ``http.server`` on loopback (in
  this script's process): ``POST /create`` answers after a delay (cold: 80 ms, warm: 25 ms, plus
  jitter), phases ``cold`` and ``warm`` (20 iterations each, so each phase's p95 has the 20
  samples a tail verdict needs), concurrency 4; the latency is the round trip.
* **micro**: three slugify implementations (regex, ``str.translate``, a character loop); each
  iteration times 100 calls in one plain step (``--calibrated``: ``step(..., calls="auto")``,
  the calibrated per-call step), 30 iterations.

Real pytest sessions (``--bench-compare --bench-compare-fail``) into one store per benchmark,
while ``--load`` busy loops run for the whole script: ``--history`` sessions build the history,
then ``--sessions`` unchanged sessions (every failing one is a **false alarm**, counted per
row kind), then ``--slowed`` sessions with +20 % on one participant (the sandbox's ``alpha``
answers 20 % later; the micro's ``regex`` slugifies a text 20 % longer); a session counts as a
detection of a row kind when that participant's row of that kind is ``regressed``.

Target: false alarms at most 1 in 10 unchanged sessions, per benchmark.

Run: ``python benchmarks/verdicts_replay.py [--history 4] [--sessions 10] [--slowed 5]
[--load 2] [--calibrated] [--only sandbox|micro]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

from _busy import busy_loops

SANDBOX = """
import os
import time
import urllib.request

from pytest_benchsdk import Participant, Phase, define_benchmark_config, define_task

URL = os.environ["SANDBOX_URL"]

config = define_benchmark_config(
    benchmark_slug="replay-sandbox",
    benchmark_name="Replay: sandbox providers",
    participants=[Participant("alpha"), Participant("beta")],
    phases=[Phase("cold", 20), Phase("warm", 20)],
    concurrency=4,
)


@define_task
def task(participant, phase, step):
    def create():
        request = urllib.request.Request(
            f"{URL}/create?provider={participant.name}&phase={phase}", method="POST"
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.read()

    step("create", create)
"""

MICRO = """
import os
import re
import unicodedata

from pytest_benchsdk import Participant, define_benchmark_config, define_task

# Five titles' worth of text; the slowed participant gets six (+20 % of the work).
TITLE = "Héllo, Wörld! A title -- with  Punctuation & numbers 123 (quickly) "
SLOW = os.environ.get("SLOW_PARTICIPANT")
SLOW_TEXT = os.environ.get("SLOW_FACTOR", "1") != "1"
CALIBRATED = os.environ.get("CALIBRATED") == "1"
CALLS = 100
_NON_WORD = re.compile(r"[^a-z0-9]+")
_TABLE = {c: "-" for c in range(128) if not chr(c).isalnum()}


def _ascii(text):
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()


def slug_regex(text):
    return _NON_WORD.sub("-", _ascii(text)).strip("-")


def slug_translate(text):
    return "-".join(filter(None, _ascii(text).translate(_TABLE).split("-")))


def slug_loop(text):
    out, dash = [], False
    for ch in _ascii(text):
        if ch.isalnum():
            out.append(ch)
            dash = False
        elif not dash:
            out.append("-")
            dash = True
    return "".join(out).strip("-")


IMPLS = {"regex": slug_regex, "translate": slug_translate, "loop": slug_loop}

config = define_benchmark_config(
    benchmark_slug="replay-micro",
    benchmark_name="Replay: slugify",
    participants=[Participant(name) for name in IMPLS],
    iterations=30,
)


@define_task
def task(participant, step):
    fn = IMPLS[participant.name]
    text = TITLE * (6 if SLOW_TEXT and participant.name == SLOW else 5)
    if CALIBRATED:
        step("slugify", lambda: fn(text), calls="auto")
        return

    def loop():
        for _ in range(CALLS):
            fn(text)

    step("slugify", loop)
"""


class _Providers(BaseHTTPRequestHandler):
    """``POST /create?provider=P&phase=cold|warm``: answers after the provider's delay."""

    delays: ClassVar[dict[str, float]] = {"cold": 0.080, "warm": 0.025}
    slow: ClassVar[dict[str, float]] = {}

    def do_POST(self) -> None:
        query = dict(p.split("=", 1) for p in self.path.split("?", 1)[1].split("&"))
        delay = self.delays[query["phase"]] * self.slow.get(query["provider"], 1.0)
        time.sleep(delay * random.uniform(0.9, 1.1))
        body = b'{"id": "sbx"}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def session(root: Path, bench: str, env: dict[str, str]) -> tuple[int, Any, str]:
    out = root / "run.json"
    out.unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", bench, "--bench", "--bench-dry-run",
         "--bench-store", str(root / "store.sqlite3"), "-q", "-p", "no:cacheprovider",
         "-p", "no:randomly", "--bench-compare", "--bench-compare-fail",
         "--bench-json", str(out)],
        cwd=root, env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip
    doc = json.loads(out.read_text()) if out.exists() else {}
    return done.returncode, doc, done.stdout


def rows_of(doc: Any) -> list[dict[str, Any]]:
    return [
        row
        for benchmark in doc.get("benchmarks") or ()
        for row in (benchmark.get("comparison") or {}).get("rows") or ()
    ]


def replay(name: str, opts: argparse.Namespace, root: Path, slow: str) -> dict[str, Any]:
    """One benchmark's history, unchanged and slowed sessions; the counts per row kind."""
    kinds = ("median", "p95")
    counts: dict[str, Any] = {
        "false": dict.fromkeys(kinds, 0),
        "false sessions": 0,
        "caught": dict.fromkeys(kinds, 0),
        "judged slowed": dict.fromkeys(kinds, 0),
        "caught sessions": 0,
    }
    plan = [("history", False)] * opts.history + [("unchanged", False)] * opts.sessions
    plan += [("slowed", True)] * opts.slowed
    server = None
    env = {"CALIBRATED": "1" if opts.calibrated else "0"}
    if name == "sandbox":
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Providers)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        env["SANDBOX_URL"] = f"http://127.0.0.1:{server.server_address[1]}"
        (root / "bench_replay.py").write_text(SANDBOX)
    else:
        (root / "bench_replay.py").write_text(MICRO)
    try:
        for kind, slowed in plan:
            if name == "sandbox":
                _Providers.slow = {slow: 1.2} if slowed else {}
            else:
                env.update(SLOW_PARTICIPANT=slow, SLOW_FACTOR="1.2" if slowed else "1")
            status, doc, output = session(root, "bench_replay.py", env)
            if status not in (0, 1):
                print(output[-3000:])
            rows = rows_of(doc)
            regressed = [r for r in rows if r.get("verdict") == "regressed"]
            marks = ", ".join(
                f"{r['participant']}{'·' + r['phase'] if r.get('phase') else ''} "
                f"{r['statistic']} {r['comparison']['change'] * 100:+.1f}%"
                for r in regressed
            )
            # The slowed participant's median rows, whatever their verdict: what decided.
            watched = "; ".join(
                f"{slow}{'·' + r['phase'] if r.get('phase') else ''} median "
                f"{r['comparison']['change'] * 100:+.1f}% {r.get('verdict')} ({r.get('noise')}"
                + (f", ≥{r['detectable'] * 100:.1f}%" if r.get("detectable") else "")
                + ")"
                for r in rows
                if r["participant"] == slow and r["statistic"] == "median" and r["comparison"]
            )
            print(f"  {name:7} {kind:9} exit {status}  {marks or '-'}  [{watched}]")
            if kind == "unchanged":
                counts["false sessions"] += status != 0
                for k in kinds:
                    counts["false"][k] += any(r["statistic"] == k for r in regressed)
            if kind == "slowed":
                counts["caught sessions"] += status == 1
                mine = [r for r in rows if r["participant"] == slow]
                for k in kinds:
                    counts["caught"][k] += any(
                        r["statistic"] == k and r.get("verdict") == "regressed" for r in mine
                    )
                    counts["judged slowed"][k] += any(
                        r["statistic"] == k and r.get("verdict") not in (None, "not judged")
                        for r in mine
                    )
    finally:
        if server is not None:
            server.shutdown()
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history", type=int, default=4)
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--slowed", type=int, default=5)
    parser.add_argument("--load", type=int, default=2)
    parser.add_argument("--calibrated", action="store_true")
    parser.add_argument("--only", choices=("sandbox", "micro"))
    opts = parser.parse_args()
    results = {}
    with busy_loops(opts.load):
        time.sleep(0.3)
        for name, slow in (("sandbox", "alpha"), ("micro", "regex")):
            if opts.only and name != opts.only:
                continue
            with tempfile.TemporaryDirectory() as tmp:
                results[name] = replay(name, opts, Path(tmp), slow)
    print(f"\n{opts.load} busy loops; {opts.sessions} unchanged and {opts.slowed} slowed (+20 %) "
          "sessions after a history of " f"{opts.history}:")  # fmt: skip
    for name, c in results.items():
        print(
            f"  {name:7} false alarms: {c['false sessions']}/{opts.sessions} sessions "
            f"(median rows {c['false']['median']}, p95 rows {c['false']['p95']}); detections: "
            f"{c['caught sessions']}/{opts.slowed} sessions (median {c['caught']['median']}, "
            f"p95 {c['caught']['p95']} of {c['judged slowed']['p95']} judged)"
        )


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"({time.perf_counter() - t0:.0f} s)")
