"""The process's runtime: the catalog of collected bench files, the executor that runs items'
groups, the heap kept out of the GC's way, ``PYTEST_CURRENT_TEST``.
"""
