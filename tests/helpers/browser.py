"""Open a file in headless Chromium and see what it did: the rendered DOM, every console
message, every network request.

* The DOM: ``--dump-dom`` after ``--virtual-time-budget`` (the page's scripts and timers run).
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

import re
import shutil
import subprocess
import tempfile
import threading
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

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
        with tempfile.TemporaryDirectory(prefix="benchsdk-chromium-") as profile:
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
