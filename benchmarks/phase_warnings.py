"""Run-hygiene warnings on a cold/warm benchmark (issue 30, part 1): the phase boundary is no
``trend`` and no ``first-outlier``, a drift within a phase still is.

Real pytest sessions (``pytest --bench --bench-dry-run --bench-json``) of an HTTP client
against a local HTTP server (``http.server`` on loopback, started by the bench file), with
``phases=[Phase("cold", 20), Phase("warm", 40)]``:

* **cold**: a new connection per iteration, whose first request pays the server's connection
  set-up (``--setup-rounds`` of sha256, standing in for a TLS handshake or an auth round trip);
* **warm**: one kept-alive connection per participant, reused; ``warmup=1`` opens it (a
  phase named cold gets no warm-up), without which the first warm iteration pays the set-up and
  is, rightly, a ``first-outlier`` of warm.

Two participants: ``steady`` (unchanged code), and ``leaky``, whose server keeps more data for
every request it served in warm and scans all of it on each new one (a real drift within warm:
each iteration is slower than the last, the scan growing with the square of the requests).

For each session the script counts the warnings the session printed (from its ``--bench-json``)
and, from the same stored records, what the analysis said before phases were judged apart: the
participant's samples pooled over both phases, in run order (:func:`run_warnings` on them).

Targets: ``steady`` draws no ``trend`` and no ``first-outlier`` in any session (pooled: both, in
every session); ``leaky · warm`` draws ``trend`` in every session.

Run: ``python benchmarks/phase_warnings.py [--sessions 5] [--setup-rounds 10000] [--load N]``
(``--load N``: N busy-looping processes beside the sessions).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from pathlib import Path

from _busy import busy_loops

from pytest_benchsdk import ResultStore
from pytest_benchsdk.compare import run_warnings

BENCH = """
import hashlib
import http.client
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from pytest_benchsdk import Participant, Phase, define_benchmark_config, define_task

SETUP_ROUNDS = int(os.environ.get("BENCH_SETUP_ROUNDS", "10000"))
SEEN: list[int] = []
SERVED = [0]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are two writes: no delayed-ACK wait

    def setup(self):
        super().setup()
        digest = b"x" * 64
        for _ in range(SETUP_ROUNDS):  # the connection's set-up: paid once per connection
            digest = hashlib.sha256(digest).digest()

    def do_GET(self):
        if self.path == "/leaky":
            # Kept forever and scanned on every request, each keeping more than the last: the
            # scan grows with the square of the requests served (a cache that never evicts).
            SERVED[0] += 1
            SEEN.extend(range(5_000 * SERVED[0]))
            total = sum(SEEN)
        else:
            total = 0
        body = str(total).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


SERVER = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=SERVER.serve_forever, daemon=True).start()
PORT = SERVER.server_address[1]
KEPT: dict[str, http.client.HTTPConnection] = {}

config = define_benchmark_config(
    benchmark_slug="cold-warm",
    benchmark_name="Cold and warm HTTP",
    participants=[Participant("steady"), Participant("leaky")],
    phases=[Phase("cold", 20), Phase("warm", 40)],
    warmup=1,  # warm's first request opens the kept connection; a cold phase gets none
)


@define_task
def task(participant, phase):
    path = "/leaky" if participant.name == "leaky" and phase == "warm" else "/"
    if phase == "cold":
        connection = http.client.HTTPConnection("127.0.0.1", PORT)
    else:
        connection = KEPT.setdefault(
            participant.name, http.client.HTTPConnection("127.0.0.1", PORT)
        )
    connection.request("GET", path)
    connection.getresponse().read()
    if phase == "cold":
        connection.close()
"""

_WATCHED = ("trend", "first-outlier")


def session(project: Path, env: dict[str, str]) -> dict[str, object]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "bench_cold_warm.py",
            "--bench",
            "--bench-dry-run",
            "--bench-json",
            "out.json",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        sys.exit(f"session exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    (benchmark,) = json.loads((project / "out.json").read_text())["benchmarks"]
    return dict(benchmark)


def pooled_codes(store_path: Path) -> dict[str, set[str]]:
    """What the analysis said before phases were judged apart: each participant's passing
    latencies over both phases, in run order."""
    with ResultStore(store_path) as store:
        run = store.list_runs(limit=1)[0]
        found: dict[str, set[str]] = {}
        for pr in store.participant_records(run.run_id):
            ordered = sorted(pr.records, key=lambda r: r.task_index)
            latencies = [
                r.latency_ms for r in ordered if r.status == "success" and r.latency_ms is not None
            ]
            warnings = run_warnings(
                pr.participant, {"latency_ms": latencies}, p99_metrics=(), units={}
            )
            found[pr.participant] = {w.code for w in warnings}
    return found


def _drift(message: str) -> str:
    """`` -16%`` of a trend's message (its last third against its first), else ``""``."""
    found = re.search(r"last third's median ([+-]\d+%)", message)
    return f" {found.group(1)}" if found else ""


def cold_warm_ratio(benchmark: dict[str, object], participant: str) -> float:
    """The participant's cold median latency over its warm one (from the run's records)."""
    (entry,) = [p for p in benchmark["participants"] if p["participant"] == participant]  # type: ignore[attr-defined]
    by_phase: dict[str, list[float]] = {}
    for record in entry["records"]:
        by_phase.setdefault(record["data"]["phase"], []).append(record["latencyMs"])
    return float(statistics.median(by_phase["cold"]) / statistics.median(by_phase["warm"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=5)
    parser.add_argument(
        "--setup-rounds",
        type=int,
        default=10000,
        help="sha256 rounds of a connection's set-up (cold's extra cost)",
    )
    parser.add_argument(
        "--load", type=int, default=0, metavar="N", help="busy-looping processes beside the runs"
    )
    args = parser.parse_args()
    with busy_loops(args.load):
        run(args)


def run(args: argparse.Namespace) -> None:
    project = Path(tempfile.mkdtemp(prefix="benchsdk-phases-"))
    (project / "bench_cold_warm.py").write_text(textwrap.dedent(BENCH).lstrip())
    store_path = project / ".benchmarks" / "benchsdk.sqlite3"
    env = {**os.environ, "BENCH_SETUP_ROUNDS": str(args.setup_rounds)}
    started = time.perf_counter()
    now_counts: Counter[str] = Counter()
    pooled_counts: Counter[str] = Counter()
    ratios: list[float] = []
    for index in range(args.sessions):
        benchmark = session(project, env)
        pooled = pooled_codes(store_path)
        warnings = list(benchmark["warnings"])  # type: ignore[call-overload]
        said = {(w["participant"], w["phase"], w["code"]) for w in warnings}
        steady_now = sorted(
            f"{w['code']} ({w['phase']}{_drift(w['message'])})"
            for w in warnings
            if w["participant"] == "steady" and w["code"] in _WATCHED
        )
        leaky_trend = ("leaky", "warm", "trend") in said
        steady_pooled = sorted(pooled.get("steady", set()) & set(_WATCHED))
        leaky_pooled = "trend" in pooled.get("leaky", set())
        for code in steady_now:
            now_counts[f"steady {code}"] += 1
        now_counts["leaky · warm trend"] += leaky_trend
        for code in steady_pooled:
            pooled_counts[f"steady {code}"] += 1
        pooled_counts["leaky trend"] += leaky_pooled
        ratio = cold_warm_ratio(benchmark, "steady")
        ratios.append(ratio)
        print(
            f"session {index + 1}: steady cold/warm median {ratio:.1f}x; per phase: steady "
            f"{', '.join(steady_now) or 'no trend/first-outlier'}, leaky · warm "
            f"{'trend' if leaky_trend else 'NO TREND'} | pooled: steady "
            f"{', '.join(steady_pooled) or 'none'}, leaky {'trend' if leaky_pooled else 'none'}",
            flush=True,
        )
    elapsed = time.perf_counter() - started
    n = args.sessions
    print()
    print(
        f"{n} sessions in {elapsed:.0f} s ({args.load} busy-looping neighbour(s); load average "
        f"now {', '.join(f'{x:.1f}' for x in os.getloadavg())}); steady's cold median is "
        f"{min(ratios):.1f}–{max(ratios):.1f}x its warm one"
    )
    steady_watched = sum(v for k, v in now_counts.items() if k.startswith("steady"))
    print(f"per phase: steady trend/first-outlier findings: {steady_watched} in {n} sessions")
    print(f"per phase: leaky · warm trend: {now_counts['leaky · warm trend']}/{n}")
    print(
        "pooled (before): steady trend "
        f"{sum(v for k, v in pooled_counts.items() if k.startswith('steady trend'))}/{n}, "
        "steady first-outlier "
        f"{sum(v for k, v in pooled_counts.items() if k.startswith('steady first-outlier'))}/{n}"
        f", leaky trend {pooled_counts['leaky trend']}/{n}"
    )


if __name__ == "__main__":
    main()
