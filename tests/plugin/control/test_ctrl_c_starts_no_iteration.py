"""Ctrl-C at concurrency > 1 (issue 48, item 5): after the first press no iteration starts,
and what was in flight (which a terminal's Ctrl-C may have broken: it stops the user's
servers too) is neither stored as a failure nor scored."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from helpers.processes import Session
from helpers.sessions import bench, store_path, stored_records, stored_runs
from pytest_benchsdk._plugin.control.interrupts import STOPPING_LINE

CALLING = bench(
    'participants=[Participant("p1")], iterations=300, concurrency=8',
    """
    @define_task
    def task(participant, task_index, measure):
        with open(os.environ["STARTS"], "a") as starts:
            starts.write(f"{participant.name} {task_index} {time.time()!r}\\n")
        with urllib.request.urlopen(os.environ["SERVER"], timeout=30) as answer:
            measure(size=len(answer.read()))
    """,
    prelude="import os, time, urllib.request\n",
)

#: Time the session takes at its interrupt (pytest formatting the traceback on a loaded
#: machine): the window in which iterations used to go on starting.
SLOW_INTERRUPT = """
import time

def pytest_keyboard_interrupt():
    time.sleep(1.5)
"""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    down = False


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        time.sleep(0.1)
        if self.server.down:  # stopped by the Ctrl-C, as in a terminal: no answer
            self.close_connection = True
            return
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[_Server]:
    httpd = _Server(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.slow
def test_after_ctrl_c_no_iteration_starts_and_none_in_flight_is_scored(
    pytester: pytest.Pytester, server: _Server
) -> None:
    pytester.makepyfile(bench_calls=CALLING)
    pytester.makeconftest(SLOW_INTERRUPT)
    starts = pytester.path / "starts.txt"
    host, port = server.server_address[:2]
    env = {**os.environ, "STARTS": str(starts), "SERVER": f"http://{host!s}:{port}/"}
    session = Session(pytester.path, "--bench", "--bench-dry-run", "-v", env=env)
    try:
        session.wait_for("task[p1-5] PASSED")
        pressed = time.time()
        session.interrupt()
        server.down = True  # the user's server stops with the same Ctrl-C
        assert session.finish() == pytest.ExitCode.INTERRUPTED, session.output
    finally:
        session.kill()
    output = session.output
    assert STOPPING_LINE in output
    # The press reaches the session within moments; nothing starts after it.
    late = [
        line for line in starts.read_text().splitlines() if float(line.split()[2]) > pressed + 0.3
    ]
    assert late == [], f"{len(late)} iteration(s) started after the Ctrl-C:\n{output}"
    (run,) = stored_runs(store_path(pytester))
    assert run.status == "interrupted"
    records = [r for rs in stored_records(store_path(pytester), run.run_id).values() for r in rs]
    assert records  # what finished before the press is kept
    failed = [r for r in records if r["status"] != "success"]
    assert failed == [], output
    assert "iterations failed" not in output
