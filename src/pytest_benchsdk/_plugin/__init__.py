"""The pytest glue: everything of pytest-benchsdk that imports pytest, apart from the entry point
(:mod:`pytest_benchsdk.plugin`) and the hook specifications (:mod:`pytest_benchsdk.hookspecs`).

:mod:`~pytest_benchsdk.plugin` decides the process's role once and registers the plugin objects
of this package that the role needs. The package has one sub-area per concept, each allowed to
import only those before it (``tests/project/test_architecture.py`` holds the order):

``options``
    the options, declared and parsed (imported by every pytest session).
``runtime``
    the process's runtime: the catalog of collected bench files, the executor that runs items'
    groups, the heap kept out of the GC's way, ``PYTEST_CURRENT_TEST``.
``distribution``
    pytest-xdist: the ``--dist`` choice, groups that stay in one process, plain node ids.
``items``
    bench modules, iteration and threshold items, collection, selection, the task's fixtures
    and the execution role (each record onto its call report). An item runs through the process's
    executor unless a feature installed an item runner (:func:`.items.nodes.install_item_runner`).
``control``
    session control: the controller role (the runs, the store, scoring, the platform, the
    summary), Ctrl-C, the session's own failures, ``--bench-check`` and ``--bench-resubmit``.
    Features plug into its seams (``baseline_source``, ``test_groups``) at wiring.
``benchmark``
    the ``benchmark`` fixture and marker, and what measures them with ``--bench``.
``ab``
    ``--bench-ab``: the A/B session (bench files and benchmarked tests) and a side's session.
"""
