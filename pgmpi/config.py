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


def check_limits(limits: dict, target_return, checkpoint_every, callback) -> str | None:
    """The first problem with a ``train`` call's arguments, or None.

    ``limits`` maps each limit's name to its value: None, or > 0 (``minutes`` a finite
    number, the others ints). NaN, negative and zero limits are refused, so a typo cannot
    turn into "no limit" or "train once".
    """
    checks = [
        (v is None or ((is_real(v) if k == "minutes" else is_int(v)) and v > 0), k, v,
         "None or a finite number > 0" if k == "minutes" else "None or an int >= 1")
        for k, v in limits.items()
    ]  # fmt: skip
    return first_problem([
        *checks,
        (target_return is None or is_real(target_return), "target_return", target_return,
         "None or a finite number"),
        (is_int(checkpoint_every) and checkpoint_every >= 1, "checkpoint_every",
         checkpoint_every, "an int >= 1"),
        (callback is None or callable(callback), "callback", callback, "None or a function"),
    ])  # fmt: skip
