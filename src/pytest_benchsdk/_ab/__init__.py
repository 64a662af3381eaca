"""A/B sessions (``--bench-ab=REV``): the code of a git revision and the working tree, each in
a process of its own, running the same iterations round by round.

* :mod:`.revision`: the revision's temporary git worktree (and removing what a killed session
  left);
* :mod:`.side_processes`: the two processes (execnet gateways), what each puts on its import
  path;
* :mod:`.side_program`: the program each process runs (one iteration at a time, on request).

The pairing of the rounds is an analysis (:func:`pytest_benchsdk.compare.compare_paired`); the
pytest glue drives a session (:mod:`pytest_benchsdk._plugin.ab.plugin`).
"""
