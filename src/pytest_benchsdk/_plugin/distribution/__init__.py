"""Bench items under pytest-xdist: which ``--dist`` a session runs with, groups that stay in one
process, plain node ids.
"""
