"""The library version, recorded in every checkpoint."""

__version__ = "0.3.0"
