"""The library version, recorded in every checkpoint."""

__version__ = "0.2.0"
