# shapes/ holds copies of public suites' shapes (ini files, conftests, bench_*.py modules) that
# test_public_suite_shapes.py runs in pytester directories: never this run's own tests.
collect_ignore = ["shapes"]
