"""Helpers shared by the test modules (no tests, no fixtures: fixtures are in conftest.py)."""
