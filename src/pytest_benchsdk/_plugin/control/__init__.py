"""Session control: the controller role that owns the runs (from collection to the summary),
Ctrl-C, the session's own failures, and the run-nothing roles (``--bench-check``, ``--bench-
resubmit``).
"""
