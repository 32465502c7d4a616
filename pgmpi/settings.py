"""What every setting is made of: the small checks of values and arguments (:func:`is_int`,
:func:`must`, :func:`first_problem`, ...), the pruning GA's selection check, the
:class:`Settings` the configs of :mod:`pgmpi.config` share, and :func:`configure`, which
builds an algorithm's settings and finds the first problem with them.
"""

from __future__ import annotations

import math
import numbers
import os
from dataclasses import asdict, fields, replace


def is_int(x) -> bool:
    """An integer, and not a bool."""
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def is_real(x) -> bool:
    """A finite real number, and not a bool."""
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(x)


def is_bool(x) -> bool:
    """True or False, and not 1 or 0 (which equal them)."""
    return isinstance(x, bool)


def is_path(x) -> bool:
    """A non-empty str or os.PathLike ('' would mean the working directory)."""
    return isinstance(x, (str, os.PathLike)) and str(x) != ""


def at_least(x, low: int) -> bool:
    """An int >= ``low``."""
    return is_int(x) and x >= low


def is_sizes(x) -> bool:
    """A list (or tuple) of ints >= 1: hidden layers."""
    return isinstance(x, (list, tuple)) and all(at_least(h, 1) for h in x)


def must(name: str, value, expected: str) -> str:
    """The message for a bad value: ``must("gamma", 1.5, "in (0, 1]")`` is
    ``"gamma must be in (0, 1], got 1.5"``."""
    return f"{name} must be {expected}, got {value!r}"


def first_problem(values, checks) -> str | None:
    """The message for the first failed check, or None. ``values`` holds the values by name:
    a dict, or an object whose fields they are (a settings dataclass). Checks run in order,
    each only once those before it pass: ``(name, ok, expected)`` fails when ``ok(value)`` is
    false for the value ``name`` (the message is :func:`must`'s), and ``(ok, message)``, a
    check of several values, when ``ok(values)`` is false."""
    for check in checks:
        if len(check) == 2:
            ok, message = check
            if not ok(values):
                return message
        else:
            name, ok, expected = check
            value = values[name] if isinstance(values, dict) else getattr(values, name)
            if not ok(value):
                return must(name, value, expected)
    return None


def pruning_problem(
    population_size,
    elite_fraction,
    prune_rate,
    seed,
    mutation_rate=None,
    elite_averaging=False,
) -> str | None:
    """The first problem with a pruning GA's selection and mutation settings, or None."""
    P = population_size
    return first_problem(dict(population_size=P, elite_fraction=elite_fraction,
                              prune_rate=prune_rate, seed=seed, mutation_rate=mutation_rate,
                              elite_averaging=elite_averaging), [
        ("population_size", lambda x: at_least(x, 2), "an int >= 2"),
        ("elite_fraction", lambda x: is_real(x) and 0 < x < 1, "in (0, 1)"),
        ("elite_fraction", lambda x: math.ceil(x * P - 1e-9) < P,
         f"small enough to leave a child in a population of {P}"),
        ("prune_rate", lambda x: is_real(x) and 0 <= x < 1, "in [0, 1)"),
        ("seed", lambda x: at_least(x, 0), "an int >= 0"),
        ("mutation_rate", lambda x: x is None or (is_real(x) and 0 <= x < 1),
         "None or a number in [0, 1)"),
        ("elite_averaging", is_bool, "True or False"),
    ])  # fmt: skip


class Settings:
    """What the settings dataclasses share: their dict, and the check of unknown names."""

    def as_dict(self) -> dict:
        """The settings by name, as JSON keeps them (lists, not tuples)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    @classmethod
    def unknown_problem(cls, names) -> str | None:
        """The message for names that are not settings of this class, or None."""
        unknown = sorted(set(names) - {f.name for f in fields(cls)})
        if not unknown:
            return None
        return f"unknown setting(s) {unknown}; {cls.__name__} has: " + ", ".join(
            f.name for f in fields(cls)
        )


def configure(cls, config, settings: dict, options) -> tuple:
    """An algorithm's settings, ``config`` (default ``cls()``) with ``settings`` replaced,
    and the first problem with them (their ``check()``) or with the run's ``options`` (a
    :class:`pgmpi.options.RunOptions`), or None; with an unknown setting, ``cls()`` and
    that problem."""
    problem = cls.unknown_problem(settings)
    if problem is not None:
        return cls(), problem
    cfg = replace(config or cls(), **settings)
    return cfg, cfg.check() or options.problem()
