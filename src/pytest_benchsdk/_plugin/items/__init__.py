"""The items: bench modules and their iteration and threshold items, collection, selection, the
task's fixtures, and the execution role that attaches each record to its report.
"""
