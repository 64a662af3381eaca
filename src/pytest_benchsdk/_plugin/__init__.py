"""The pytest glue: everything of pytest-benchsdk that imports pytest, apart from the entry point
(:mod:`pytest_benchsdk.plugin`) and the hook specifications (:mod:`pytest_benchsdk.hookspecs`).

:mod:`~pytest_benchsdk.plugin` decides the process's role once and registers the plugin objects
of this package that the role needs:

* :mod:`.collection` (every role that collects): bench files become items.
* :mod:`.runner` (every process that executes items): runs them through :mod:`.runtime` and
  attaches each iteration's record to its call report.
* :mod:`.controller` (the process without ``workerinput``): the runs, the store, scoring, the
  platform (:mod:`.upload`) and the terminal summary (:mod:`.terminal`).
* :mod:`.check` (``--bench-check``) and :mod:`.resubmit` (``--bench-resubmit``): run-nothing modes.

:mod:`.options`, :mod:`.catalog`, :mod:`.nodes` and :mod:`.fixtures` serve them all.
"""
