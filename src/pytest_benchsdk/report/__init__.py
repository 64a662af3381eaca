"""The HTML report: stored runs as one self-contained, offline HTML file (``--bench-html``).

:func:`write_report` (and :func:`render_report`, the page as a string) reads the runs from a
:class:`~pytest_benchsdk.store.ResultStore` and draws them with plotly (the ``report`` extra:
``pip install 'pytest-benchsdk[report]'``). Per run, in this order: the scores as a chart (at a
glance), the ranked scores with their intervals and ties, and the relative summary under them;
per participant (and phase) an ECDF and a box/strip plot of the latency and of each measured
metric (a log axis when they differ more than 10×, linear/log buttons on each; the stored
baseline's distributions beside them); the steps' medians side by side; the iterations against
run time; the failures by error code; the history of the benchmark's comparable runs (those
``pytest-benchsdk history`` shows); the run's knobs, machine, git sha and stored baseline
comparison; its warnings.

The file needs nothing else: plotly.js is carried once (gzipped), charts are drawn when they
come near the viewport, no fonts or images are fetched, and a Content Security Policy forbids
the page any request and runs only the page's own scripts. Only the names in ``__all__`` are public;
plotly is imported when a report is rendered, not with this package.

Code: :mod:`._model` reads a run from the store into plain values, :mod:`._charts` builds the
figures, :mod:`._page` writes the page.
"""

from pytest_benchsdk._base.public import publish
from pytest_benchsdk.report._page import render_report, write_report

__all__ = ["render_report", "write_report"]

# Name this package as the home of what it re-exports (reprs, tracebacks, pickles, docs).
publish(__name__, globals())
