"""The package version, in one place (pyproject reads it: ``[tool.setuptools.dynamic]``)."""

__version__ = "0.3.0"
