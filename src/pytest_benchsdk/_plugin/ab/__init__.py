"""``--bench-ab=REV``: the A/B session's part in the controller, its benchmarked tests, and a
benchmarked-test side's pytest session.
"""
