"""Test support code that is not a fixture (servers, builders shared by tests and benchmarks)."""
