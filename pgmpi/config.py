"""The algorithms' argument checks, and ParallelPG's presets.

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


def _int_at_least(low: int):
    return lambda v: is_int(v) and v >= low


# ParallelPG's named settings (``ParallelPG.from_preset``, ``examples/pong.py --preset``); the
# constructor's defaults are "fast".
PRESETS = {
    # The defaults: Adam on the mean over slots of time-boxed pieces of play.
    "fast": dict(optimizer="adam", learning_rate=2e-3, slots=None, steps_per_slot=512,
                 whole_games=None, batch_gradient="mean"),
    # The post's algorithm: 10 whole games per update, summed gradient, RMSProp 1e-4.
    "karpathy": dict(optimizer="rmsprop", learning_rate=1e-4, decay_rate=0.99, slots=10,
                     steps_per_slot=1, whole_games=True, batch_gradient="sum"),
}  # fmt: skip

# The constructor arguments that define a ParallelPG run, with its env: its ``config``, kept in
# checkpoints and agreed by every rank (the others: log_dir, blas_threads, quiet, trace).
PG_SETTINGS = (
    "hidden_size", "optimizer", "learning_rate", "decay_rate", "gamma", "slots",
    "steps_per_slot", "whole_games", "batch_gradient", "sticky_actions", "max_episode_steps",
    "seed", "exact_reduction",
)  # fmt: skip

# ParallelPG's constructor arguments: (is the value fine?, what it must be).
PG_RULES = {
    "hidden_size": (_int_at_least(1), "an int >= 1"),
    "optimizer": (lambda v: v in ("adam", "rmsprop"), "'adam' or 'rmsprop'"),
    "learning_rate": (lambda v: is_real(v) and v > 0, "> 0"),
    "decay_rate": (lambda v: is_real(v) and 0 <= v < 1, "in [0, 1)"),
    "gamma": (lambda v: is_real(v) and 0 < v <= 1, "in (0, 1]"),
    "sticky_actions": (lambda v: v in (True, False), "True or False"),
    "slots": (lambda v: v is None or _int_at_least(1)(v), "None or an int >= 1"),
    "steps_per_slot": (_int_at_least(1), "an int >= 1"),
    "max_episode_steps": (_int_at_least(1), "an int >= 1"),
    "whole_games": (lambda v: v in (None, True, False), "None, True or False"),
    "batch_gradient": (lambda v: v in ("mean", "sum"), "'mean' or 'sum'"),
    "seed": (_int_at_least(0), "an int >= 0"),
    "blas_threads": (lambda v: v is None or _int_at_least(1)(v), "None or an int >= 1"),
    "trace": (lambda v: v in (True, False), "True or False"),
}


def pg_problem(arguments: dict) -> str | None:
    """The first problem with ParallelPG's constructor arguments, given by name (other
    names, such as ``self``, are ignored), or None."""
    problem = rules_problem(arguments, PG_RULES)
    if problem is None and arguments["trace"] and arguments["log_dir"] is None:
        problem = "trace=True needs a log_dir to write to"
    return problem


# ParallelPG.evaluate's arguments, likewise.
EVALUATE_RULES = {
    "episodes": (_int_at_least(1), "an int >= 1"),
    "greedy": (lambda v: v in (True, False), "True or False"),
    "sticky": (lambda v: v in (True, False), "True or False"),
}


def rules_problem(values: dict, rules: dict) -> str | None:
    """The message for the first of ``values`` that breaks its rule in ``rules``, or None."""
    return first_problem(
        [(rules[k][0](v), k, v, rules[k][1]) for k, v in values.items() if k in rules]
    )
