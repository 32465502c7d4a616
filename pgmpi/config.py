"""Every setting in one place: :class:`PGConfig` and :class:`GAConfig`, ParallelPG's presets,
and the checks.

Each field of a settings dataclass carries its default, a one-line doc, how a command-line
flag parses it and the rule a value must keep, so the examples build their flags from the
fields and no default is written twice. A constructor gathers the first problem it finds
(without raising) and hands it to :func:`pgmpi.mpi.agree`, which raises the same
:class:`~pgmpi.mpi.ConfigError` on every rank.
"""

from __future__ import annotations

import math
import numbers
import os
from dataclasses import asdict, dataclass, field, fields, replace


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


def first_problem(checks: list[tuple]) -> str | None:
    """The message for the first failed ``(ok, name, value, expected)`` check, or None.

    Example: ``(gamma <= 1, "gamma", gamma, "in (0, 1]")`` fails as
    ``"gamma must be in (0, 1], got 1.5"``.
    """
    for ok, name, value, expected in checks:
        if not ok:
            return f"{name} must be {expected}, got {value!r}"
    return None


def check_limits(
    limits: dict, target_return, checkpoint_every, callback, checkpoint_path=None
) -> str | None:
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
        (checkpoint_path is None or is_path(checkpoint_path), "checkpoint_path",
         checkpoint_path, "None or a non-empty path"),
    ])  # fmt: skip


def _int_at_least(low: int):
    return lambda v: is_int(v) and v >= low


def setting(default, doc: str, flag=None, rule=None, expected: str = "", **argparse_kwargs):
    """A settings field: its default, a one-line doc (the flag's help), how a flag parses
    it (the name of a parser in :data:`pgmpi.cli.FLAG_TYPES`, ``bool`` for an on/off flag,
    or None for no flag), and the rule a value must keep, with what it must be (the
    :class:`ConfigError` message)."""
    meta = dict(doc=doc, flag=flag, rule=rule, expected=expected, argparse=argparse_kwargs)
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=meta)
    return field(default=default, metadata=meta)


# The learned baseline's weight for Pong (value_baseline None); other envs get none, since an
# unscaled return (CartPole's reach 100) would swamp the policy's standardised advantages.
PONG_VALUE_BASELINE = 0.05

# The largest weight of the entropy bonus and of the learned baseline: both weigh terms
# against standardised returns (about 1), where 0.01 and 0.05 are the defaults; a weight far
# above this makes the gradients overflow, and the blow-up would name learning_rate instead.
MAX_WEIGHT = 100
# Pong's emulator frames per agent step: ALE's 4, Pong-v0's 2-4; past this, one agent step
# is most of a rally, and 10**9 would play one step for ever.
MAX_FRAME_SKIP = 100


def _skip(v) -> bool:
    return is_int(v) and 1 <= v <= MAX_FRAME_SKIP


# ALE v5's own limit, 108,000 frames at frameskip 4, so Pong is unchanged; for envs without
# a time limit it stops a good policy playing one game (and filling memory) forever.
MAX_EPISODE_STEPS = 27_000


class Settings:
    """What the settings dataclasses share: their check and their dict."""

    def problem(self) -> str | None:
        """The message for the first field that breaks its rule, or None."""
        return first_problem([
            (f.metadata["rule"](getattr(self, f.name)), f.name, getattr(self, f.name),
             f.metadata["expected"])
            for f in fields(self) if f.metadata.get("rule") is not None
        ])  # fmt: skip

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


@dataclass(frozen=True)
class PGConfig(Settings):
    """The settings that define a ParallelPG run (with its env): the defaults are the "fast"
    preset. Kept in checkpoints and agreed by every rank."""

    # One field a row: default, doc (the flag's help), flag parser, rule, what it must be.
    # fmt: off
    hidden_size: int = setting(200, "hidden units of the two-layer network (200 in the post)",
                               "positive_int", _int_at_least(1), "an int >= 1")
    optimizer: str = setting("adam", "'adam' or 'rmsprop' (the post's), both ascending", "str",
                             lambda v: v in ("adam", "rmsprop"), "'adam' or 'rmsprop'",
                             choices=["adam", "rmsprop"])
    learning_rate: float = setting(4e-3, "step size; with batch_gradient 'mean' it is for 16 "
                                   "slots, scaled by sqrt(slots / 16) for more",
                                   "positive_float", lambda v: is_real(v) and v > 0, "> 0")
    lr_decay_steps: int | None = setting(8_000_000, "a late inverse-time decay: past "
                                         "decay_from agent steps, the step size and the "
                                         "entropy bonus are divided by 1 + (steps - "
                                         "decay_from) / this, halved after this many more "
                                         "(none: constant)", "positive_int_or_none",
                                         lambda v: v is None or _int_at_least(1)(v),
                                         "None or an int >= 1")
    decay_from: int = setting(10_000_000, "agent steps played before lr_decay_steps' decay "
                              "starts (0: from the first update)", "int", _int_at_least(0),
                              "an int >= 0")
    decay_rate: float = setting(0.99, "RMSProp decay of the squared-gradient average",
                                "fraction", lambda v: is_real(v) and 0 <= v < 1, "in [0, 1)")
    entropy_bonus: float = setting(0.01, "weight of the policy's entropy added to the "
                                   "objective, against standardised returns (0: none, as in "
                                   "the post)", "non_negative_float",
                                   lambda v: is_real(v) and v >= 0, ">= 0")
    value_baseline: float | None = setting(None, "weight of a learned baseline: the network "
                                           "gets a value output trained on the discounted "
                                           "returns, and the advantages become the returns "
                                           "less it (0: none, as in the post; None: "
                                           f"{PONG_VALUE_BASELINE:g} for Pong, whose returns "
                                           "lie in [-1, 1], 0 for other envs)",
                                           "non_negative_float",
                                           lambda v: v is None or (is_real(v) and v >= 0),
                                           "None or a number >= 0")
    average_half_life: float = setting(200.0, "the policy evaluate() and act() play: a "
                                       "running average of the parameters with this "
                                       "half-life in updates, kept beside training and never "
                                       "fed back (0: the live parameters, as in the post)",
                                       "non_negative_float", lambda v: is_real(v) and v >= 0,
                                       ">= 0")
    gamma: float = setting(0.99, "discount factor", None,
                           lambda v: is_real(v) and 0 < v <= 1, "in (0, 1]")
    slots: int | None = setting(None, "games played at once, over all ranks (default: the "
                                "smallest multiple of the rank count >= 16); fix it to get "
                                "the same result on any rank count", "positive_int",
                                lambda v: v is None or _int_at_least(1)(v), "None or an int >= 1")
    steps_per_slot: int = setting(512, "agent steps each game plays per update (then, with "
                                  "whole_games, on to the end of a game; else the steps of a "
                                  "rally still open carry over)", "positive_int",
                                  _int_at_least(1), "an int >= 1")
    whole_games: bool | None = setting(None, "play every game to its end before an update "
                                       "(None: not for Pong, whose games can be saved "
                                       "mid-way; yes for other envs)", None,
                                       lambda v: v is None or is_bool(v), "None, True or False")
    batch_gradient: str = setting("mean", "'mean' over slots, or 'sum' (the post's)", None,
                                  lambda v: v in ("mean", "sum"), "'mean' or 'sum'")
    sticky_actions: bool = setting(True, "Pong with ALE v5's sticky actions (repeat probability "
                                   "0.25, the standard since Machado et al. 2018); "
                                   "--deterministic turns them off", bool, is_bool,
                                   "True or False")
    deterministic_games: float = setting(0.0, "with sticky actions, the share of training "
                                         "games played without them, each game drawing "
                                         "which from its own stream; the logged scores are "
                                         "the sticky games' (0: none)", "fraction",
                                         lambda v: is_real(v) and 0 <= v < 1, "in [0, 1)")
    frame_skip: int | list = setting(4, "Pong's emulator frames per agent step: 4 (ALE v5's), "
                                     "or [2, 4], drawn uniformly from 2, 3, 4 at every step "
                                     "from the game's own stream (gym's Pong-v0, the post's "
                                     "game; the flag: 4 or 2-4)", "frame_skip",
                                     lambda v: _skip(v) or (
                                         isinstance(v, (list, tuple)) and len(v) == 2
                                         and all(_skip(x) for x in v) and v[0] <= v[1]),
                                     f"an int in [1, {MAX_FRAME_SKIP}], or [low, high] with "
                                     f"1 <= low <= high <= {MAX_FRAME_SKIP}")
    max_episode_steps: int = setting(MAX_EPISODE_STEPS, "a game that reaches this many agent "
                                     "steps ends, truncated", None, _int_at_least(1),
                                     "an int >= 1")
    seed: int = setting(0, "root seed of every random stream in the run", "int",
                        _int_at_least(0), "an int >= 0")
    exact_reduction: bool = setting(True, "exact fixed-point gradient sums, alike on any rank "
                                    "count (False: float32)", None, is_bool, "True or False")
    # fmt: on

    def problem(self) -> str | None:
        weights = [(n, getattr(self, n)) for n in ("entropy_bonus", "value_baseline")]
        return super().problem() or first_problem(
            [
                (v is None or v <= MAX_WEIGHT, n, v, f"at most {MAX_WEIGHT} (a weight against "
                 "standardised returns: more makes every gradient overflow)")
                for n, v in weights
            ]
        )  # fmt: skip


# What ParallelPG did before each of these settings existed: a checkpoint written then lacks
# the setting, and resumes with this value (not today's default), so it plays on as it ran.
PG_BEFORE = dict(sticky_actions=False, frame_skip=4, lr_decay_steps=None, entropy_bonus=0.0,
                 deterministic_games=0.0, average_half_life=0.0, value_baseline=0.0,
                 decay_from=0)  # fmt: skip


# ParallelPG's named settings (``ParallelPG.from_preset``, ``examples/pong.py --preset``).
PRESETS = {
    # The defaults: Adam on the mean over slots of time-boxed pieces of play, with an entropy
    # bonus (docs/screens.md: it lifted sticky-action Pong's plateau) and a learned baseline
    # (it passed 0 sooner on both seeds screened), a late decay of both (it lifted the hour's
    # sticky score); the policy played is the parameters' running average (it beat Pong under
    # both protocols).
    "fast": PGConfig(),
    # The post's algorithm: 10 whole games per update, summed gradient, RMSProp 1e-4, in the
    # post's game: Pong-v0 as gym registered it, a frame skip drawn from {2, 3, 4} at every
    # step and sticky actions (0.25).
    "karpathy": replace(PGConfig(), optimizer="rmsprop", learning_rate=1e-4, slots=10,
                        steps_per_slot=1, whole_games=True, batch_gradient="sum",
                        entropy_bonus=0.0, sticky_actions=True, frame_skip=[2, 4],
                        average_half_life=0.0, value_baseline=0.0, lr_decay_steps=None),
}  # fmt: skip


def pruning_problem(population_size, elite_fraction, prune_rate, seed) -> str | None:
    """The first problem with a pruning GA's selection settings, or None."""
    P, f, r = population_size, elite_fraction, prune_rate
    ok_p = is_int(P) and P >= 2
    ok_f = is_real(f) and 0 < f < 1
    child = f"small enough to leave a child in a population of {P}"
    return first_problem([
        (ok_p, "population_size", P, "an int >= 2"),
        (ok_f, "elite_fraction", f, "in (0, 1)"),
        (not (ok_p and ok_f) or math.ceil(f * P - 1e-9) < P, "elite_fraction", f, child),
        (is_real(r) and 0 <= r < 1, "prune_rate", r, "in [0, 1)"),
        (is_int(seed) and seed >= 0, "seed", seed, "an int >= 0"),
    ])  # fmt: skip


@dataclass(frozen=True)
class GAConfig(Settings):
    """The settings that define a PrunedGA run (with its env), as in the synaptolytic-learning
    project's defaults. Kept in checkpoints and agreed by every rank."""

    # One field a row, as in PGConfig; the selection settings are checked by pruning_problem.
    # fmt: off
    hidden_sizes: list = setting([32], "units of each tanh hidden layer ([32] in the original)",
                                 "positive_int", lambda h: isinstance(h, (list, tuple)) and all(
                                     is_int(x) and x >= 1 for x in h), "a list of ints >= 1",
                                 nargs="+")
    genome: str | None = setting(None, "'ones': all weights 1, each layer feeds the next (the "
                                 "original's pruneable agent); 'signed-dag': N(0,1) weights, "
                                 "every layer fed by all earlier ones, Hebbian-guided pruning; "
                                 "None: signed-dag for continuous actions, ones for discrete",
                                 "str", lambda v: v in (None, "ones", "signed-dag"),
                                 "None, 'ones' or 'signed-dag'", choices=["ones", "signed-dag"])
    population_size: int = setting(128, "individuals per generation", "positive_int")
    episodes_per_individual: int = setting(8, "episodes averaged into each fitness (8 in the "
                                           "original)", "positive_int", _int_at_least(1),
                                           "an int >= 1")
    elite_fraction: float = setting(0.125, "share of a generation kept unchanged", "fraction")
    prune_rate: float = setting(0.25, "pruning probability of generation 0; later rates adapt",
                                "fraction")
    complexity_weight: float = setting(1.0, "fitness penalty per fraction of connections kept "
                                       "(1 in the original)", "float",
                                       lambda v: is_real(v) and v >= 0, "a number >= 0")
    max_episode_steps: int = setting(MAX_EPISODE_STEPS, "an episode that reaches this many "
                                     "steps ends there, truncated", None, _int_at_least(1),
                                     "an int >= 1")
    seed: int = setting(0, "root seed of every random stream in the run", "int")
    # fmt: on

    def problem(self) -> str | None:
        return (
            pruning_problem(self.population_size, self.elite_fraction, self.prune_rate, self.seed)
            or super().problem()
        )


@dataclass(frozen=True)
class ESConfig(Settings):
    """The settings that define a ParallelES run (with its env): evolution strategies with a
    shared noise table, as in Salimans et al. (2017). Kept in checkpoints and agreed by
    every rank; ``ES_PRESETS["paper"]`` holds the paper's."""

    # One field a row, as in PGConfig.
    # fmt: off
    hidden_sizes: list = setting([64, 64], "units of each tanh hidden layer ([256, 256] in "
                                 "the paper)", "positive_int", lambda h: isinstance(
                                     h, (list, tuple)) and all(is_int(x) and x >= 1 for x in h),
                                 "a list of ints >= 1", nargs="+")
    population_size: int = setting(64, "perturbed networks played per generation, in "
                                   "antithetic pairs (+eps, -eps): even", "positive_int",
                                   lambda v: is_int(v) and v >= 2 and v % 2 == 0,
                                   "an even int >= 2 (antithetic pairs)")
    noise_std: float = setting(0.02, "sigma, the perturbations' standard deviation",
                               "float", lambda v: is_real(v) and v > 0, "a number > 0")
    learning_rate: float = setting(0.01, "Adam's step size on the ES gradient", "float",
                                   lambda v: is_real(v) and v > 0, "a number > 0")
    weight_decay: float = setting(0.005, "L2 coefficient: Adam ascends the ES gradient minus "
                                  "this times the parameters", "float",
                                  lambda v: is_real(v) and v >= 0, "a number >= 0")
    noise_table_size: int = setting(25_000_000, "float32 numbers in the shared noise table, "
                                    "built on every rank (100 MB; 12.8 GB for 128 ranks on a "
                                    "node; the paper's is 250,000,000, one per machine)",
                                    "positive_int", _int_at_least(1), "an int >= 1")
    obs_stat_fraction: float = setting(0.01, "share of a generation's perturbed episodes whose "
                                       "observations update the normalisation statistics "
                                       "(at least one unless 0; 0.01 in the paper)", "float",
                                       lambda v: is_real(v) and 0 <= v <= 1, "in [0, 1]")
    eval_episodes: int = setting(4, "episodes of the unperturbed network per generation, "
                                 "played with the others (its logged return)", "int",
                                 _int_at_least(0), "an int >= 0")
    max_episode_steps: int = setting(MAX_EPISODE_STEPS, "an episode that reaches this many "
                                     "steps ends there, truncated", None, _int_at_least(1),
                                     "an int >= 1")
    seed: int = setting(0, "root seed of every random stream in the run (the noise table's "
                        "too)", "int", _int_at_least(0), "an int >= 0")
    # fmt: on


# ParallelES's named settings: "paper" is Salimans et al.'s (2017) MuJoCo settings, as their
# code ran them: 10,000 episodes a generation, sigma 0.02, Adam 0.01, L2 0.005, two hidden
# layers of 256 tanh units, observation statistics from 1% of episodes, a 250 M-number table.
ES_PRESETS = {
    "default": ESConfig(),
    "paper": replace(ESConfig(), hidden_sizes=[256, 256], population_size=10_000,
                     noise_std=0.02, learning_rate=0.01, weight_decay=0.005,
                     noise_table_size=250_000_000, obs_stat_fraction=0.01),
}  # fmt: skip

# ParallelPG.evaluate's arguments.
EVALUATE_RULES = {
    "episodes": (_int_at_least(1), "an int >= 1"),
    "greedy": (is_bool, "True or False"),
    "sticky": (lambda v: v is None or is_bool(v), "None, True or False"),
    "live": (is_bool, "True or False"),
}


def rules_problem(values: dict, rules: dict) -> str | None:
    """The message for the first of ``values`` that breaks its rule in ``rules``, or None."""
    return first_problem(
        [(rules[k][0](v), k, v, rules[k][1]) for k, v in values.items() if k in rules]
    )


def resolve(cls, config, settings: dict, options) -> tuple:
    """An algorithm's settings, ``config`` (default ``cls()``) with ``settings`` replaced,
    and the first problem with them or with the run's ``options`` (a
    :class:`pgmpi.options.RunOptions`), or None; with an unknown setting, ``cls()`` and that
    problem."""
    problem = cls.unknown_problem(settings)
    if problem is not None:
        return cls(), problem
    cfg = replace(config or cls(), **settings)
    return cfg, cfg.problem() or options.problem()


def memory_bytes() -> int:
    """This machine's physical memory, in bytes."""
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


# The least memory one game takes on a rank (an env object, its observation and state): a
# lower bound, so that a slot count no machine could hold is named before it is made.
GAME_BYTES = 10_000


def _gib(n: float) -> str:
    return f"{n / 2**30:,.1f} GiB"


def slots_problem(cfg: PGConfig, ranks: int) -> str | None:
    """Why ``cfg.slots`` games, shared over ``ranks`` ranks, cannot fit in this machine's
    memory (at least :data:`GAME_BYTES` a game), or None. Checked before the games are
    listed or made; :func:`memory_problem` then checks the network and the steps kept."""
    if not is_int(cfg.slots):
        return None  # None, or a bad value the settings' own check names
    local = -(-cfg.slots // ranks)
    need = local * GAME_BYTES
    if need <= memory_bytes():
        return None
    return (
        f"slots={cfg.slots} over {ranks} rank(s) is {local:,} games per rank, which need at "
        f"least {_gib(need)} per rank, more than this machine's {_gib(memory_bytes())} of "
        "memory: use fewer slots or more ranks"
    )


def ga_memory_problem(probe, cfg: GAConfig) -> str | None:
    """Why a PrunedGA rank cannot fit in this machine's memory, naming the settings and what
    they would need, or None (also None without a ``probe``, the env's sizes). Per weight:
    each individual's mask (1 byte) and the float64 draws of a generation's pruning (8), the
    network's own weights and their activity (16); per episode of a generation: its steps,
    seconds and rank, and its slot on the board of units played ahead (64 bytes)."""
    if probe is None:
        return None
    sizes = (probe.n_inputs, *cfg.hidden_sizes, probe.n_actions)
    if cfg.genome == "signed-dag":  # every layer fed by all earlier ones
        weights = sum(sum(sizes[:i]) * sizes[i] for i in range(1, len(sizes)))
    else:
        weights = sum(a * b for a, b in zip(sizes, sizes[1:], strict=False))
    P, E = cfg.population_size, cfg.episodes_per_individual
    need = 9 * P * weights + 16 * weights + 64 * P * E
    if need <= memory_bytes():
        return None
    return (
        f"hidden_sizes={list(cfg.hidden_sizes)} ({weights:,} connections with "
        f"{probe.n_inputs} inputs), population_size={P} and episodes_per_individual={E} need "
        f"about {_gib(need)} per rank (the population's masks, a generation's draws and its "
        f"episodes), more than this machine's {_gib(memory_bytes())} of memory"
    )


def memory_problem(n_inputs: int, n_actions: int, cfg: PGConfig, local_slots: int) -> str | None:
    """Why ParallelPG's rank cannot fit in this machine's memory, naming what it would need,
    or None (checked before anything big is made). Per parameter: float32 parameters and
    Adam's two moments, the int64 exact sum and the float32 gradient (24 bytes); per agent
    step kept for the gradient: its hidden layer and logits (float32) and some overhead."""
    h = cfg.hidden_size
    params = (n_inputs + n_actions) * h
    steps = cfg.steps_per_slot * local_slots
    need = 24 * params + steps * (4 * (h + n_actions) + 200)
    if need <= memory_bytes():
        return None
    what = f"hidden_size={h} with {n_inputs} inputs, steps_per_slot={cfg.steps_per_slot}"
    return (
        f"{what} needs about {need / 2**30:.1f} GiB per rank (parameters, optimizer state, "
        f"the exact sum and the steps kept for the gradient), more than this machine's "
        f"{memory_bytes() / 2**30:.1f} GiB of memory"
    )
