"""Random SIGKILLs over delivering sessions, then resubmits: nothing lost, nothing twice, no
hang (issue 48).

Each case is one real ``pytest --bench`` session in its own directory (a small git repository:
a bench file of three participants, 8 iterations of 20 ms each) against its own loopback platform
(``tests/helpers/platform_server.py``) with a few transient faults (503, 429, 502, a dropped
connection, an answer lost after the platform acted) at random requests. One process of the
session is SIGKILLed, the victim drawn among:

* ``controller``: the pytest process (of a plain session, a ``-n 2`` session or an A/B one);
* ``worker``: one of the two xdist workers of a ``-n 2`` session;
* ``side``: one of the side processes of an A/B session (``--bench-ab=HEAD``);

a worker or side is found in the controller's process tree (psutil) among those inside an
iteration at that moment (each iteration keeps a file named by its process's pid while it
runs), so it dies mid-iteration, never idle.

The kill lands at an observable moment, never after a timer: when the platform receives its
n-th request (before handling it, or after handling it with its answer lost), or once the
store holds k records (read-only reads of the store). Concurrency is 1 or 2 at random (2 runs
each participant's iterations as one pool, on one worker). A session that has not ended
after ``--hang-after`` seconds counts as hung (and its processes are killed). Then
``pytest --bench-resubmit`` runs (with a transient fault or two of its own) until it exits 0.

Per case and in total: records stored, delivered (on the platform), duplicated (a record of
one iteration on the platform more than once), lost (stored, not on the platform after the
resubmits), hung sessions, runs left ``running``. An A/B session reports nothing to the
platform (it is local only, as documented): its records count as stored, not as expected on
the platform. A case whose moment never came (the session ended first) is drawn again and
not counted as a kill.

Run: ``python benchmarks/random_kills.py --kills 100 [--seed S] [--hang-after 120]
[--keep DIR]``. Exit status 1 when anything was lost, duplicated or hung.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from helpers.gitrepo import git  # noqa: E402
from helpers.platform_server import API_KEY, LoopbackPlatform  # noqa: E402
from pytest_benchsdk.store import ResultStore  # noqa: E402

PARTICIPANTS = ("p1", "p2", "p3")
ITERATIONS = 8
#: The folder where each process running an iteration keeps a file named by its pid while the
#: iteration runs (so a worker or side is killed inside an iteration, not while idle).
RUNNING_ENV = "BENCH_KILLS_RUNNING"
BENCH = f'''
import os
import pathlib
import time

from pytest_benchsdk import Participant, define_benchmark_config, define_task

config = define_benchmark_config(
    benchmark_slug="kills",
    benchmark_name="Kills",
    participants=[{", ".join(f'Participant("{p}")' for p in PARTICIPANTS)}],
    iterations={ITERATIONS},
)


@define_task
def task(participant, task_index, measure, log):
    running = pathlib.Path(os.environ["{RUNNING_ENV}"]) / str(os.getpid())
    running.touch()
    try:
        time.sleep(0.02)
        log(f"iteration {{task_index}}")
        measure(value=10 + task_index)
    finally:
        running.unlink(missing_ok=True)
'''

KINDS = ("controller", "worker", "side")
#: The platform routes a transient fault may hit (``*``: any).
FAULT_ROUTES = ("*", "create_run", "upsert_participant", "claim", "events", "complete", "summary")


@dataclass
class Case:
    number: int
    seed: int
    kind: str
    flavor: str
    plan: list[str] = field(default_factory=list)
    killed: bool = False
    hung: bool = False
    exit_code: int | None = None
    resubmits: int = 0
    resubmit_ok: bool = False
    stored: int = 0
    delivered: int = 0
    duplicated: int = 0
    lost: int = 0
    running: int = 0
    seconds: float = 0.0


def _env(cwd: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    env[RUNNING_ENV] = str(cwd.parent / f"{cwd.name}-running")
    env["BENCHMARKS_PLATFORM_API_KEY"] = API_KEY
    env["BENCHSDK_BENCHMARK_FIXTURE"] = "benchsdk"
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _pytest(cwd: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        env=_env(cwd),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: a hung tree can be ended whole
    )


def _store(cwd: Path) -> Path:
    return cwd / ".benchmarks" / "benchsdk.sqlite3"


def _stored(path: Path) -> int:
    try:
        with ResultStore(path, read_only=True) as store:
            return sum(run.record_count for run in store.list_runs())
    except Exception:  # not created yet, or busy for a moment
        return 0


def _children(pid: int, running: Path) -> list[psutil.Process]:
    """The session's worker processes (xdist's or A/B's: execnet popen gateways) that are
    inside an iteration now."""
    try:
        kids = psutil.Process(pid).children()
    except psutil.Error:
        return []
    found = []
    for kid in kids:
        try:
            gateway = "exec(eval(sys.stdin.readline()))" in " ".join(kid.cmdline())
            if gateway and (running / str(kid.pid)).exists():
                found.append(kid)
        except psutil.Error:
            continue
    return found


class Killer:
    """Kills the case's victim once, when :meth:`strike` is called (from the platform's
    request thread or the store watcher)."""

    def __init__(
        self, proc: subprocess.Popen[str], kind: str, rng: random.Random, running: Path
    ) -> None:
        self.proc = proc
        self.running = running
        self.kind = kind
        self.rng = rng
        self.done = threading.Event()
        self.victim: str | None = None
        self._lock = threading.Lock()

    def strike(self, *_: object) -> None:
        with self._lock:
            if self.done.is_set() or self.proc.poll() is not None:
                return
            if self.kind == "controller":
                pid = self.proc.pid
            else:
                kids = _children(self.proc.pid, self.running)
                if not kids:
                    return  # none inside an iteration now: try at the next moment
                pid = self.rng.choice(kids).pid
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                return
            self.victim = f"{self.kind} pid {pid}"
            self.done.set()


def _transient_faults(server: LoopbackPlatform, rng: random.Random, plan: list[str]) -> None:
    for _ in range(rng.randrange(1, 4)):
        route = rng.choice(FAULT_ROUTES)
        skip = rng.randrange(0, 12)
        kind = rng.choice(("503", "429", "502", "drop", "drop_after"))
        if kind == "drop":
            server.fault(route, skip=skip, drop=True)
        elif kind == "drop_after":
            server.fault(route, skip=skip, drop_after=True)
        elif kind == "429":
            server.fault(route, skip=skip, status=429, retry_after="0")
        else:
            server.fault(route, skip=skip, status=int(kind))
        plan.append(f"fault {kind} on {route} after {skip}")


def _make_repo(path: Path) -> None:
    path.mkdir(parents=True)
    (path / "bench_kills.py").write_text(BENCH)
    (path / ".gitignore").write_text(".benchmarks/\n")
    git(path, "init", "-q")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "bench")


def _session_args(case: Case, server: LoopbackPlatform, rng: random.Random) -> list[str]:
    concurrency = rng.choice((1, 2))
    case.plan.append(f"concurrency {concurrency}")
    args = ["--bench", "--bench-base-url", server.root_url, "--bench-concurrency", str(concurrency)]
    args += ["--bench-upload-timeout", "20"]
    if case.flavor == "xdist":
        args += ["-p", "xdist", "-n", "2"]
    elif case.flavor == "ab":
        args += ["-p", "no:xdist", "--bench-ab=HEAD", "--bench-ab-processes", "1"]
    else:
        args += ["-p", "no:xdist"]
    return args


def _arm(
    case: Case, server: LoopbackPlatform, killer: Killer, path: Path, rng: random.Random
) -> threading.Thread | None:
    """Arm the kill at the n-th platform request or at k stored records (an A/B session
    sends no requests: always records)."""
    total = len(PARTICIPANTS) * ITERATIONS * (2 if case.flavor == "ab" else 1)
    if case.flavor != "ab" and rng.random() < 0.5:
        nth = rng.randrange(2, 25)
        handled = case.kind == "controller" and rng.random() < 0.5
        case.plan.append(
            f"kill at request #{nth + 1}" + (" after handling it (answer lost)" if handled else "")
        )
        if case.kind == "controller":
            server.fault("*", skip=nth, drop_after=handled, drop=not handled, call=killer.strike)
        else:
            # A worker: the request is answered as usual; each later one tries again.
            server.fault("*", skip=nth, times=None, call=killer.strike)
        return None
    count = rng.randrange(1, total)
    case.plan.append(f"kill at {count} stored records")

    def watch() -> None:
        while killer.proc.poll() is None and not killer.done.is_set():
            if _stored(path) >= count:
                killer.strike()
            time.sleep(0.01)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    return watcher


def _end_tree(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def _check(case: Case, server: LoopbackPlatform, path: Path) -> None:
    """Stored, delivered, duplicated, lost, left running."""
    if not path.exists():
        return
    with ResultStore(path, read_only=True) as store:
        runs = store.list_runs(limit=1000)
        stored_keys: dict[str, set[tuple[str, int]]] = {}
        for run in runs:
            keys = stored_keys.setdefault(run.platform_run_id or f"local:{run.run_id}", set())
            for part in store.participant_records(run.run_id):
                keys.update((part.participant, r.task_index) for r in part.records)
            case.running += run.status == "running"
    case.stored = sum(len(keys) for keys in stored_keys.values())
    on_platform = Counter(
        (run_id, participant, record["taskIndex"])
        for run_id in list(server.runs)
        for participant, record in server.records(run_id)
    )
    case.delivered = len(on_platform)
    case.duplicated = sum(n - 1 for n in on_platform.values())
    if case.flavor == "ab":
        return  # local only: nothing is expected on the platform (delivered stays 0)
    case.lost = sum(
        (run_id, participant, index) not in on_platform
        for run_id, keys in stored_keys.items()
        for participant, index in keys
    )


def run_case(case: Case, base: Path, hang_after: float, max_resubmits: int) -> Case:
    rng = random.Random(case.seed)
    cwd = base / f"case-{case.number:03d}"
    _make_repo(cwd)
    path = _store(cwd)
    running = cwd.parent / f"{cwd.name}-running"
    running.mkdir()
    started = time.monotonic()
    with LoopbackPlatform() as server:
        _transient_faults(server, rng, case.plan)
        proc = _pytest(cwd, *_session_args(case, server, rng))
        killer = Killer(proc, case.kind, rng, running)
        watcher = _arm(case, server, killer, path, rng)
        try:
            output = proc.communicate(timeout=hang_after)[0]
        except subprocess.TimeoutExpired:
            case.hung = True
            _end_tree(proc)
            output = proc.communicate()[0]
        if watcher is not None:
            watcher.join(5)
        # A killed controller leaves its workers or sides: they end with it (stdin closed);
        # the group's stragglers are ended here so that the resubmit finds the store free.
        _end_tree(proc)
        case.exit_code = proc.returncode
        case.killed = killer.done.is_set()
        if killer.victim:
            case.plan.append(f"killed {killer.victim}")
        (cwd / "session.log").write_text(output)
        server.clear_faults()
        if not case.killed:
            case.seconds = time.monotonic() - started
            return case
        for attempt in range(max_resubmits):
            if attempt < 2:
                _transient_faults(server, rng, case.plan)
            resubmit = _pytest(
                cwd, "-p", "no:xdist", "--bench-resubmit", "--bench-base-url", server.root_url
            )
            try:
                out = resubmit.communicate(timeout=hang_after)[0]
            except subprocess.TimeoutExpired:
                case.hung = True
                _end_tree(resubmit)
                out = resubmit.communicate()[0]
            server.clear_faults()
            (cwd / f"resubmit-{attempt}.log").write_text(out)
            case.resubmits += 1
            if resubmit.returncode == 0:
                case.resubmit_ok = True
                break
        _check(case, server, path)
    case.seconds = time.monotonic() - started
    return case


def _draw(number: int, seed: int, kinds: tuple[str, ...]) -> Case:
    rng = random.Random(seed)
    kind = rng.choice(kinds)
    flavor = {"worker": "xdist", "side": "ab"}.get(kind) or rng.choice(("plain", "xdist", "ab"))
    return Case(number=number, seed=seed, kind=kind, flavor=flavor, plan=[f"seed {seed}"])


def _remove(base: Path, case: Case) -> None:
    for name in (f"case-{case.number:03d}", f"case-{case.number:03d}-running"):
        shutil.rmtree(base / name, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kills", type=int, default=100, help="SIGKILLs to land (default 100)")
    parser.add_argument("--seed", type=int, default=None, help="the base seed (printed)")
    parser.add_argument(
        "--hang-after", type=float, default=120.0, help="seconds a session may take (120)"
    )
    parser.add_argument("--resubmits", type=int, default=6, help="resubmits at most (6)")
    parser.add_argument("--kinds", default=",".join(KINDS), help="victim kinds to draw from")
    parser.add_argument("--keep", type=Path, default=None, help="keep the cases in DIR")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    kinds = tuple(k for k in args.kinds.split(",") if k)
    base = args.keep or Path(tempfile.mkdtemp(prefix="benchsdk-kills-"))
    base.mkdir(parents=True, exist_ok=True)
    print(f"random kills: base seed {seed}, cases in {base}", flush=True)

    landed: list[Case] = []
    drawn = 0
    started = time.monotonic()
    while len(landed) < args.kills:
        case = run_case(_draw(drawn, seed + drawn, kinds), base, args.hang_after, args.resubmits)
        drawn += 1
        if not case.killed:
            _remove(base, case)
            continue
        landed.append(case)
        bad = case.lost or case.duplicated or case.hung or not case.resubmit_ok
        print(
            f"[{len(landed):3d}] {case.kind:10s} {case.flavor:6s} exit {case.exit_code} "
            f"stored {case.stored:2d} delivered {case.delivered:2d} dup {case.duplicated} "
            f"lost {case.lost} hung {int(case.hung)} resubmits {case.resubmits} "
            f"{case.seconds:5.1f} s{'  <-- ' + '; '.join(case.plan) if bad else ''}",
            flush=True,
        )
        if not bad and args.keep is None:
            _remove(base, case)

    by_kind = Counter(c.kind for c in landed)
    flavors = Counter(f"{c.kind}/{c.flavor}" for c in landed)
    total = {
        "stored": sum(c.stored for c in landed),
        "delivered": sum(c.delivered for c in landed),
        "duplicated": sum(c.duplicated for c in landed),
        "lost": sum(c.lost for c in landed),
        "hung": sum(c.hung for c in landed),
        "resubmit never exited 0": sum(not c.resubmit_ok for c in landed),
        "runs left running": sum(c.running for c in landed),
    }
    local = sum(c.stored for c in landed if c.flavor == "ab")
    print()
    took = time.monotonic() - started
    print(f"kills landed: {len(landed)} (of {drawn} cases drawn) in {took:.0f} s")
    print("  by victim: " + ", ".join(f"{k} {by_kind[k]}" for k in KINDS if by_kind[k]))
    print("  by victim/session: " + ", ".join(f"{k} {n}" for k, n in sorted(flavors.items())))
    print(
        f"records stored: {total['stored']} ({total['stored'] - local} of reporting sessions, "
        f"{local} of A/B sessions, local only)"
    )
    print(f"records delivered: {total['delivered']}")
    print(f"duplicated: {total['duplicated']}, lost: {total['lost']}")
    print(f"sessions hung (> {args.hang_after:.0f} s): {total['hung']}")
    print(
        f"resubmits: {sum(c.resubmits for c in landed)}, cases whose resubmit never exited 0: "
        f"{total['resubmit never exited 0']}"
    )
    print(f"runs left running after the resubmits: {total['runs left running']}")
    failed = total["duplicated"] or total["lost"] or total["hung"]
    failed = failed or total["resubmit never exited 0"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
