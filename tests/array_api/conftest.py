"""The vendored suite is run in a subprocess by test_suite.py (its own conftest and options), never collected
by the project's pytest run."""

collect_ignore = ["vendor"]
