"""The library version, recorded in every checkpoint."""

__version__ = "0.1.0"
