"""What a 256 MiB platform answer costs in memory (issue 32, item 2).

A real pytest session (``--bench``, a two-participant bench file, reporting) and the
``pytest-benchsdk platform benchmarks list`` command run as whole processes against the
loopback platform of the test suite, once with ordinary answers and once with the platform
answering 256 MiB (without a ``Content-Length``, so only reading tells the size) to the run
creation and to the benchmark listing. Reported: each process's peak RSS (``wait4``), and the
ratio of the 256 MiB case to the ordinary one (target: the session and the command stay far
below the answer's size; before the cap the session peaked at 680-1,074 MiB).

    python benchmarks/answer_cap_rss.py [--src OTHER/src] [--size-mib 256]

``--src`` measures another checkout's package (e.g. the code before the cap, exported with
``git archive``) by putting it first on ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from helpers.platform_server import API_KEY, LoopbackPlatform  # noqa: E402

BENCH = textwrap.dedent(
    """
    from pytest_benchsdk import Participant, define_benchmark_config, define_task

    config = define_benchmark_config(
        benchmark_slug="demo", benchmark_name="Demo",
        participants=[Participant("p1"), Participant("p2")], iterations=5,
    )

    @define_task
    def task(participant, task_index, measure):
        measure(value=task_index)
    """
)
MIB = 1024 * 1024


def _peak_mib(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, int]:
    """Peak RSS (MiB) and exit status of ``command`` run to its end."""
    proc = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_maxrss / 1024, proc.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", help="another checkout's src directory to measure")
    parser.add_argument("--size-mib", type=int, default=256)
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    if args.src:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [args.src, env.get("PYTHONPATH")]))
    env["BENCHMARKS_PLATFORM_API_KEY"] = API_KEY
    rows = []
    with tempfile.TemporaryDirectory() as tmp, LoopbackPlatform(tokens=(API_KEY,)) as server:
        folder = Path(tmp)
        (folder / "bench_demo.py").write_text(BENCH)
        env["BENCHMARKS_PLATFORM_URL"] = server.root_url
        env["HOME"] = str(folder)
        session = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--bench"]
        session += ["--bench-base-url", server.root_url, "--bench-upload-timeout", "10"]
        command = [sys.executable, "-m", "pytest_benchsdk", "platform", "benchmarks", "list"]
        for name, argv, route in (
            ("session", session, "create_run"),
            ("benchmarks list", command, "list_benchmarks"),
        ):
            server.clear_faults()
            ordinary, _ = _peak_mib(argv, folder, env)
            server.fault(route, huge=args.size_mib * MIB, declare_length=False, times=None)
            huge, status = _peak_mib(argv, folder, env)
            rows.append((name, ordinary, huge, status))
    print(f"peak RSS, ordinary answers vs a {args.size_mib} MiB answer ({args.src or 'this tree'})")
    for name, ordinary, huge, status in rows:
        print(
            f"  {name:16} {ordinary:7.1f} MiB  {huge:7.1f} MiB  "
            f"ratio {huge / ordinary:5.2f}  (exit {status})"
        )


if __name__ == "__main__":
    main()
