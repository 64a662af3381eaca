"""Open a file in headless Chromium and see what it did: the rendered DOM, every console
message, every network request.

* The DOM: ``--dump-dom`` after ``--virtual-time-budget`` (the page's scripts and timers run);
  or, with :func:`chromium_page`, read over the DevTools protocol (``--remote-debugging-pipe``)
  once the page says it is ready: real time, for pages whose scripts wait on work off the main
  thread (virtual time does not wait for it), and the page can be scrolled between reads.
* The console: ``--enable-logging=stderr --v=0`` writes each console message (any level, and
  uncaught exceptions) as an ``INFO:CONSOLE`` line on stderr.
* The network: every http(s)/ws request of the browser goes through ``--proxy-server`` to a
  recording proxy on loopback (``--proxy-bypass-list=<-loopback>`` sends loopback there too);
  the proxy answers 502 and keeps the request line (``GET http://host/path``, ``CONNECT
  host:443``). Chromium's own background traffic is turned off by flags as far as flags go;
  what Debian's Chromium 156 still sends (the component updater, network time, the Google
  account check; seen on a blank page) is recognised by exact host and path in
  :data:`BROWSER_OWN` and kept apart (:attr:`BrowserResult.browser_requests`), so
  :attr:`BrowserResult.page_requests` holds every other request: the page's.

:func:`chromium_available` tells whether a browser is installed; :func:`open_in_chromium` does
the rest. ``tests/views/test_report_browser.py`` checks the helper itself on a page that does all
the wrong things (a console error, an uncaught exception, an image and a fetch from the network).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import attrs

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
_CONSOLE = re.compile(r":INFO:CONSOLE[^\]]*\] (.*)$")

#: Chromium's own background requests (request line without the query), never a page's.
BROWSER_OWN = frozenset(
    {
        "CONNECT update.googleapis.com:443",
        "POST http://update.googleapis.com/service/update2/json",
        "GET http://clients2.google.com/time/1/current",
        "CONNECT clients2.google.com:443",
        "CONNECT accounts.google.com:443",
        # The optimization guide fetches its models when the machine is slow to start it
        # (seen under load); --disable-features below turns it off where Chromium allows.
        "CONNECT optimizationguide-pa.googleapis.com:443",
    }
)


def _request_key(line: str) -> str:
    method, _, rest = line.partition(" ")
    target = rest.rsplit(" ", 1)[0]
    return f"{method} {target.split('?', 1)[0]}"


def chromium_path() -> str | None:
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    return None


def chromium_available() -> bool:
    return chromium_path() is not None


@attrs.frozen
class BrowserResult:
    dom: str
    console: tuple[str, ...]
    requests: tuple[str, ...]
    stderr: str

    @property
    def browser_requests(self) -> tuple[str, ...]:
        return tuple(r for r in self.requests if _request_key(r) in BROWSER_OWN)

    @property
    def page_requests(self) -> tuple[str, ...]:
        return tuple(r for r in self.requests if _request_key(r) not in BROWSER_OWN)


class _Recorder(BaseHTTPRequestHandler):
    """A proxy that forwards nothing: it records each request line and answers 502."""

    def handle_one_request(self) -> None:
        self.raw_requestline = self.rfile.readline(65537)
        if not self.raw_requestline:
            self.close_connection = True
            return
        if not self.parse_request():
            return
        self.server.seen.append(self.requestline)  # type: ignore[attr-defined]
        self.send_error(502, "offline test proxy")
        self.close_connection = True

    def log_message(self, format: str, *args: object) -> None:
        pass


_QUIET_FLAGS = (
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-sync",
    "--disable-features=OptimizationGuideModelDownloading,"
    "OptimizationHintsFetching,OptimizationTargetPrediction,OptimizationHints",
    "--no-first-run",
    "--no-default-browser-check",
)


@contextlib.contextmanager
def _recording_proxy() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    server.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def open_in_chromium(
    path: Path, *, budget_ms: int = 5000, window: str = "1280,2000", timeout_s: float = 120
) -> BrowserResult:
    """Load ``path`` (a local file) in headless Chromium and report what happened."""
    browser = chromium_path()
    assert browser is not None, "chromium is not installed"
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    server.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with tempfile.TemporaryDirectory(
            prefix="benchsdk-chromium-", ignore_cleanup_errors=True
        ) as profile:
            done = subprocess.run(
                [
                    browser,
                    "--headless=new",
                    "--disable-gpu",
                    "--no-sandbox",
                    f"--user-data-dir={profile}",
                    f"--window-size={window}",
                    "--enable-logging=stderr",
                    "--v=0",
                    f"--proxy-server=http://127.0.0.1:{server.server_address[1]}",
                    "--proxy-bypass-list=<-loopback>",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-default-apps",
                    "--disable-extensions",
                    "--disable-sync",
                    "--disable-features=OptimizationGuideModelDownloading,"
                    "OptimizationHintsFetching,OptimizationTargetPrediction,OptimizationHints",
                    "--no-first-run",
                    "--no-default-browser-check",
                    f"--virtual-time-budget={budget_ms}",
                    "--dump-dom",
                    path.resolve().as_uri(),
                ],
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
            )
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == 0, done.stderr[-3000:]
    console = tuple(
        match.group(1) for line in done.stderr.splitlines() if (match := _CONSOLE.search(line))
    )
    return BrowserResult(done.stdout, console, tuple(server.seen), done.stderr)  # type: ignore[attr-defined]


@attrs.frozen
class Plot:
    """One rendered plotly figure of the dumped DOM."""

    chart: str
    expected_traces: int
    traces: int
    texts: tuple[str, ...]
    rendered: bool


class _Plots(HTMLParser):
    """The report's ``<figure class="chart">`` elements and what plotly drew in each: the
    ``.main-svg`` (rendered), ``g.trace`` groups, and every SVG text (legend, axes)."""

    def __init__(self) -> None:
        super().__init__()
        self.plots: list[dict[str, object]] = []
        self._depth = 0
        self._figure_depth: int | None = None
        self._in_text = 0

    def handle_starttag(self, tag: str, attrs_: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs_)
        classes = (attributes.get("class") or "").split()
        self._depth += 1
        if tag == "figure" and "chart" in classes:
            self._figure_depth = self._depth
            self.plots.append(
                {
                    "chart": attributes.get("data-chart") or "",
                    "expected": int(attributes.get("data-traces") or 0),
                    "traces": 0,
                    "texts": [],
                    "rendered": False,
                    "plotly": False,
                }
            )
        if self._figure_depth is None:
            return
        plot = self.plots[-1]
        if "js-plotly-plot" in classes:
            plot["plotly"] = True
        if tag == "svg" and "main-svg" in classes:
            plot["rendered"] = True
        if tag == "g" and "trace" in classes:
            plot["traces"] = int(plot["traces"]) + 1  # type: ignore[call-overload]
        if tag == "text":
            self._in_text += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "text" and self._in_text:
            self._in_text -= 1
        if self._figure_depth is not None and self._depth == self._figure_depth:
            self._figure_depth = None
        self._depth -= 1

    def handle_data(self, data: str) -> None:
        if self._figure_depth is not None and self._in_text and data.strip():
            self.plots[-1]["texts"].append(data.strip())  # type: ignore[union-attr]


def rendered_plots(dom: str) -> list[Plot]:
    parser = _Plots()
    parser.feed(dom)
    return [
        Plot(
            chart=str(p["chart"]),
            expected_traces=int(p["expected"]),  # type: ignore[call-overload]
            traces=int(p["traces"]),  # type: ignore[call-overload]
            texts=tuple(p["texts"]),  # type: ignore[arg-type]
            rendered=bool(p["rendered"]) and bool(p["plotly"]),
        )
        for p in parser.plots
    ]


class DevToolsError(AssertionError):
    """The browser did not do what the test waited for (or broke the protocol)."""


class ChromiumPage:
    """A page in headless Chromium driven over the DevTools protocol (a pipe: fds 3 and 4 of
    the browser process). :meth:`wait_for` polls a JavaScript expression until it is truthy;
    ``console`` collects console messages, uncaught exceptions and the browser's own log
    entries (CSP refusals); ``requests`` the recording proxy's request lines."""

    def __init__(self, process: subprocess.Popen[bytes], write_fd: int, read_fd: int) -> None:
        self._process = process
        self._write = write_fd
        self._read = read_fd
        self._buffer = b""
        self._id = 0
        self._session: str | None = None
        self.console: list[str] = []
        self.requests: list[str] = []

    # -- the protocol ---------------------------------------------------------------------

    def _event(self, message: dict[str, Any]) -> None:
        method, params = message.get("method"), message.get("params") or {}
        if method == "Runtime.consoleAPICalled":
            parts = [str(a.get("value", a.get("description", ""))) for a in params["args"]]
            self.console.append(f"{params.get('type')}: {' '.join(parts)}")
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            text = (details.get("exception") or {}).get("description") or details.get("text")
            self.console.append(f"exception: {text}")
        elif method == "Log.entryAdded":
            entry = params["entry"]
            self.console.append(f"{entry.get('level')}: {entry.get('text')}")

    def call(
        self, method: str, params: dict[str, Any] | None = None, *, timeout_s: float = 60
    ) -> Any:
        self._id += 1
        message: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if self._session is not None and not method.startswith("Target."):
            message["sessionId"] = self._session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout_s
        while True:
            while b"\0" not in self._buffer:
                if time.monotonic() > deadline:
                    raise DevToolsError(f"no answer to {method} in {timeout_s} s")
                chunk = os.read(self._read, 1 << 20)
                if not chunk:
                    raise DevToolsError(f"the browser closed the pipe during {method}")
                self._buffer += chunk
            raw, self._buffer = self._buffer.split(b"\0", 1)
            answer = json.loads(raw)
            if answer.get("id") == self._id:
                if "error" in answer:
                    raise DevToolsError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            self._event(answer)

    def _attach(self) -> None:
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self._session = self.call(
            "Target.attachToTarget", {"targetId": page["targetId"], "flatten": True}
        )["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            self.call(f"{domain}.enable")

    # -- for tests --------------------------------------------------------------------------

    def evaluate(self, expression: str) -> Any:
        result = self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in result:
            raise DevToolsError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def open(self, path: Path) -> None:
        self.call("Page.navigate", {"url": path.resolve().as_uri()})

    def wait_for(self, expression: str, *, timeout_s: float = 90) -> Any:
        """Poll ``expression`` until it is truthy; its value."""
        deadline = time.monotonic() + timeout_s
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise DevToolsError(
                    f"{expression} still false after {timeout_s} s; console: {self.console}"
                )
            time.sleep(0.1)

    def dom(self) -> str:
        return str(self.evaluate("'<!DOCTYPE html>\\n' + document.documentElement.outerHTML"))

    def screenshot(self, path: Path) -> None:
        """The whole page as a PNG."""
        import base64

        data = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
        path.write_bytes(base64.b64decode(data["data"]))


@contextlib.contextmanager
def chromium_page(*, window: str = "1280,2000") -> Iterator[ChromiumPage]:
    """Headless Chromium on ``about:blank`` behind the recording proxy, for
    :meth:`ChromiumPage.open`; closed afterwards."""
    browser = chromium_path()
    assert browser is not None, "chromium is not installed"
    with (
        _recording_proxy() as proxy,
        # Chromium's helper processes can still write to the profile after the browser exits
        # (a loaded CI run failed removing it: "Directory not empty: 'Default'"): a leftover
        # temporary profile is not the test's failure.
        tempfile.TemporaryDirectory(prefix="benchsdk-cdp-", ignore_cleanup_errors=True) as profile,
    ):
        # Chromium reads commands from fd 3 and writes answers to fd 4.
        to_browser, commands = os.pipe()
        answers, from_browser = os.pipe()
        # Copies above 2 that are neither 3 nor 4, so that moving them there in the child
        # overwrites nothing of theirs.
        high_in = fcntl.fcntl(to_browser, fcntl.F_DUPFD, 10)
        high_out = fcntl.fcntl(from_browser, fcntl.F_DUPFD, 10)

        def descriptors() -> None:
            os.dup2(high_in, 3)
            os.dup2(high_out, 4)

        process = subprocess.Popen(
            [
                browser,
                "--headless=new",
                "--disable-gpu",
                "--no-sandbox",
                f"--user-data-dir={profile}",
                f"--window-size={window}",
                "--remote-debugging-pipe",
                f"--proxy-server=http://127.0.0.1:{proxy.server_address[1]}",
                "--proxy-bypass-list=<-loopback>",
                *_QUIET_FLAGS,
                "about:blank",
            ],
            preexec_fn=descriptors,
            pass_fds=(3, 4),
            start_new_session=True,  # its helper processes go with it (os.killpg below)
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for fd in (to_browser, from_browser, high_in, high_out):
            os.close(fd)
        page = ChromiumPage(process, commands, answers)
        try:
            page._attach()
            yield page
            page.requests = [
                r
                for r in proxy.seen
                if _request_key(r) not in BROWSER_OWN  # type: ignore[attr-defined]
            ]
        finally:
            with contextlib.suppress(OSError):
                os.close(commands)
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.close(answers)
