"""The views of a finished run: each renders :class:`~pytest_benchsdk.results.RunSummary`.

Private. :mod:`.text` is the terminal's ``benchmarks`` section and ``pytest-benchsdk show``;
:mod:`.escape` keeps control characters from the terminal (every view, the CLI and the glue);
:mod:`.markdown` is ``--bench-markdown``; :mod:`.json` is ``--bench-json``. The HTML report
(:mod:`pytest_benchsdk.report`) and the store CLI (:mod:`pytest_benchsdk.cli`) are views too.
Numbers go through :mod:`pytest_benchsdk._base.numbers`; nothing here computes a statistic.
"""
