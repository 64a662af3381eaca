"""The ``benchmark`` fixture and marker (pytest-benchmark's API) and what measures them with
``--bench``: each group of benchmarked tests is a run.
"""
