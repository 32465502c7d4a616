"""Argument checks shared by the algorithms' constructors.

A constructor gathers the first problem it finds (without raising) and hands it to
:func:`pgmpi.mpi.agree`, which raises the same :class:`~pgmpi.mpi.ConfigError` on every rank.
"""

from __future__ import annotations

import math
import numbers


def is_int(x) -> bool:
    """An integer, and not a bool."""
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def is_real(x) -> bool:
    """A finite real number, and not a bool."""
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(x)


def first_problem(checks: list[tuple]) -> str | None:
    """The message for the first failed ``(ok, name, value, expected)`` check, or None.

    Example: ``(gamma <= 1, "gamma", gamma, "in (0, 1]")`` fails as
    ``"gamma must be in (0, 1], got 1.5"``.
    """
    for ok, name, value, expected in checks:
        if not ok:
            return f"{name} must be {expected}, got {value!r}"
    return None
