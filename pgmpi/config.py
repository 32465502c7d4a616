"""Every setting in one place: :class:`PGConfig`, :class:`GAConfig` and :class:`ESConfig`,
and their checks; their named presets are in :mod:`pgmpi.presets`.

A field reads as its default, then a line of doc (the flag's help: :mod:`pgmpi.cli` builds
the examples' flags from the fields). Each config's ``check()`` returns the first problem with
its values, which a constructor hands to :func:`pgmpi.mpi.agree` (the same
:class:`~pgmpi.mpi.ConfigError` on every rank), and ``resolved()`` fills in, once, the
settings whose default depends on the env or the rank count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Literal

from pgmpi import memory
from pgmpi.settings import (
    Settings,
    at_least,
    first_problem,
    is_bool,
    is_int,
    is_real,
    is_sizes,
    pruning_problem,
)

# The learned baseline's weight for Pong (value_baseline None); other envs get none, since an
# unscaled return (CartPole's reach 100) would swamp the policy's standardised advantages.
PONG_VALUE_BASELINE = 0.05
# The entropy bonus for entropy_bonus None: sticky Pong's schedule (from, to), over
# entropy_steps; the constant bonus of other envs and of deterministic Pong.
STICKY_ENTROPY = (0.03, 0.01)
ENTROPY_BONUS = 0.01
# Agent steps after which sticky two-action Pong takes NOOP on (noop_from's default): late enough
# to keep the fast start to 0, early enough to lift the slow seeds past +10 (docs/screens.md).
NOOP_FROM = 3_000_000
# learning_rate is for this many games; more scale it by sqrt(slots / 16) (ParallelPG), and
# the default slot count is the smallest multiple of the rank count at least this.
REFERENCE_SLOTS = 16
# The largest entropy bonus or baseline weight: against standardised returns (about 1; the
# defaults 0.01 and 0.05), far more overflows the gradients, a blow-up blamed on learning_rate.
MAX_WEIGHT = 100
# Pong's emulator frames per agent step: ALE's 4, Pong-v0's 2-4; past this, one agent step
# is most of a rally, and 10**9 would play one step for ever.
MAX_FRAME_SKIP = 100
# ALE v5's own limit, 108,000 frames at frameskip 4, so Pong is unchanged; for envs without
# a time limit it stops a good policy playing one game (and filling memory) forever.
MAX_EPISODE_STEPS = 27_000


def _skip(v) -> bool:
    return is_int(v) and 1 <= v <= MAX_FRAME_SKIP


def _skips(v) -> bool:
    """A frame skip: an int, or [low, high]."""
    return _skip(v) or (isinstance(v, (list, tuple)) and len(v) == 2
                        and all(map(_skip, v)) and v[0] <= v[1])  # fmt: skip


def _weight(v) -> bool:
    """None or a number >= 0."""
    return v is None or (is_real(v) and v >= 0)


@dataclass(frozen=True)
class PGConfig(Settings):
    """The settings that define a ParallelPG run (with its env): the defaults are the "fast"
    preset. Kept in checkpoints and agreed by every rank."""

    hidden_size: int = 200
    """hidden units of the two-layer network (200 in the post)"""
    optimizer: Literal["adam", "rmsprop"] = "adam"
    """'adam' or 'rmsprop' (the post's), both ascending"""
    learning_rate: float = 4e-3
    """step size; with batch_gradient 'mean' it is for 16 slots, scaled by sqrt(slots / 16)
    for more"""
    lr_decay_steps: int | None = 1_250_000
    """a late inverse-time decay: past decay_from agent steps, the step size and the entropy
    bonus are divided by 1 + (steps - decay_from) / this (none: constant)"""
    decay_from: int = 7_500_000
    """agent steps played before lr_decay_steps' decay starts (0: from the first update)"""
    decay_rate: float = 0.99
    """RMSProp decay of the squared-gradient average"""
    entropy_bonus: float | None = None
    """weight of the policy's entropy added to the objective (0: none, as in the post); with
    entropy_final, the weight at the start (None: sticky Pong's 0.03, moved to entropy_final
    or else 0.01 over entropy_steps; 0.01 for other envs and deterministic Pong)"""
    entropy_final: float | None = None
    """an entropy bonus schedule: the bonus moves linearly from entropy_bonus to this over the
    first entropy_steps agent steps, then stays (lr_decay_steps' decay divides it still;
    None, the flag's 'none': entropy_bonus throughout, but see entropy_bonus None)"""
    entropy_steps: int = 3_000_000
    """agent steps over which the entropy bonus moves to entropy_final (only with it)"""
    value_baseline: float | None = None
    """weight of a learned baseline: the network gets a value output trained on the
    discounted returns, and the advantages become the returns less it (0: none, as in the
    post; None: 0.05 for Pong, whose returns lie in [-1, 1], 0 for other envs)"""
    average_half_life: float = 200.0
    """the policy evaluate() and act() play: a running average of the parameters with this
    half-life in updates, kept beside training and never fed back (0: the live parameters,
    as in the post)"""
    gamma: float = 0.99
    """discount factor"""
    slots: int | None = None
    """games played at once, over all ranks (None: the default slot count,
    README.md#glossary); fix it to get the same result on any rank count"""
    steps_per_slot: int = 512
    """agent steps each game plays per update (then, with whole_games, on to the end of a
    game; else the steps of a rally still open carry over)"""
    whole_games: bool | None = None
    """play every game to its end before an update (None: not for Pong, whose games can be
    saved mid-way; yes for other envs)"""
    batch_gradient: Literal["mean", "sum"] = "mean"
    """'mean' over slots, or 'sum' (the post's)"""
    standardise_over: Literal["game", "update"] | None = None
    """advantages standardised over every game of the update, on every rank ('update'), or
    over each game's rallies that finished in the update ('game', the post's); None: 'game'
    for deterministic Pong (it passed 0 sooner so), 'update' for sticky Pong and other envs"""
    sticky_actions: bool = True
    """Pong with ALE v5's sticky actions (repeat probability 0.25, the standard since Machado
    et al. 2018); --deterministic turns them off"""
    frame_skip: int | list = 4
    """Pong's emulator frames per agent step: 4 (ALE v5's), or [2, 4], drawn uniformly from
    2, 3, 4 at every step from the game's own stream (gym's Pong-v0, the post's game; the
    flag: 4 or 2-4)"""
    noop: bool = False
    """Pong: a third action, NOOP, beside the post's up and down, so that the paddle can
    stand still (a softmax over three in place of one up/down logit; a screen's setting)"""
    noop_from: int | None = NOOP_FROM
    """Pong: NOOP joins up and down once this many agent steps are played (the output layer
    grows, keeping the two actions' odds, NOOP at 0.05 in the median state: pgmpi/noop.py;
    None: never, unless noop). Only sticky two-action Pong keeps the default; others: None"""
    max_episode_steps: int = MAX_EPISODE_STEPS
    """a game that reaches this many agent steps ends, truncated"""
    seed: int = 0
    """root seed of every random stream in the run"""
    exact_reduction: bool = True
    """exact fixed-point gradient sums, alike on any rank count (False: float32)"""

    def check(self, probe=None, ranks: int = 1) -> str | None:
        """The first problem with these settings, or None; given the env's ``probe`` (a game)
        and the rank count, of resolved settings: also what the env and this machine's
        memory allow (checked before the games are listed or made)."""
        s = self
        why = "a weight against standardised returns: more makes every gradient overflow"
        problem = first_problem(s, [
            ("hidden_size", lambda x: at_least(x, 1), "an int >= 1"),
            ("optimizer", lambda x: x in ("adam", "rmsprop"), "'adam' or 'rmsprop'"),
            ("learning_rate", lambda x: is_real(x) and x > 0, "> 0"),
            ("lr_decay_steps", lambda x: x is None or at_least(x, 1), "None or an int >= 1"),
            ("decay_from", lambda x: at_least(x, 0), "an int >= 0"),
            ("decay_rate", lambda x: is_real(x) and 0 <= x < 1, "in [0, 1)"),
            ("entropy_bonus", _weight, "None or a number >= 0"),
            ("entropy_final", _weight, "None or a number >= 0"),
            ("entropy_steps", lambda x: at_least(x, 1), "an int >= 1"),
            ("value_baseline", _weight, "None or a number >= 0"),
            ("average_half_life", lambda x: is_real(x) and x >= 0, ">= 0"),
            ("gamma", lambda x: is_real(x) and 0 < x <= 1, "in (0, 1]"),
            ("slots", lambda x: x is None or at_least(x, 1), "None or an int >= 1"),
            ("steps_per_slot", lambda x: at_least(x, 1), "an int >= 1"),
            ("whole_games", lambda x: x is None or is_bool(x), "None, True or False"),
            ("batch_gradient", lambda x: x in ("mean", "sum"), "'mean' or 'sum'"),
            ("standardise_over", lambda x: x in (None, "game", "update"),
             "None, 'game' or 'update'"),
            ("sticky_actions", is_bool, "True or False"),
            ("frame_skip", _skips, f"an int in [1, {MAX_FRAME_SKIP}], or [low, high] with "
             f"1 <= low <= high <= {MAX_FRAME_SKIP}"),
            ("noop", is_bool, "True or False"),
            ("noop_from", lambda x: x is None or at_least(x, 1), "None or an int >= 1"),
            ("max_episode_steps", lambda x: at_least(x, 1), "an int >= 1"),
            ("seed", lambda x: at_least(x, 0), "an int >= 0"),
            ("exact_reduction", is_bool, "True or False"),
            *[(name, lambda x: (x or 0) <= MAX_WEIGHT, f"at most {MAX_WEIGHT} ({why})")
              for name in ("entropy_bonus", "entropy_final", "value_baseline")],
        ])  # fmt: skip
        if problem or probe is None:
            return problem
        local = -(-s.slots // ranks)  # games on rank 0, which has the most
        if problem := memory.slots_problem(s.slots, ranks, local):
            return problem
        if not s.whole_games and not probe.is_pong:
            return (
                f"env {probe.env_id!r}: only Pong games can stop mid-game between updates "
                "(ALE saves their state); pass whole_games=True"
            )
        if not probe.discrete:
            return f"env {probe.env_id!r}: action space {probe.action_space} is not Discrete"
        if s.noop and not probe.is_pong:
            return (
                f"env {probe.env_id!r}: noop=True adds Pong's NOOP; other envs keep their actions"
            )
        if s.noop_from is not None and (s.noop or not probe.is_pong):
            return (
                f"env {probe.env_id!r}, noop={s.noop}: noop_from takes Pong's NOOP on midway, "
                "in a two-action Pong run"
            )
        return memory.pg_problem(probe.n_inputs, probe.n_actions, s, local)

    def resolved(self, probe, ranks: int) -> PGConfig:
        """These settings with each None (and ``noop_from``'s default) made what its field's
        doc says for this env's ``probe`` and ``ranks``, once: ``slots``, ``whole_games``,
        ``value_baseline``, ``entropy_bonus``, ``standardise_over`` and ``noop_from``."""
        slots = self.slots if is_int(self.slots) else ranks * math.ceil(REFERENCE_SLOTS / ranks)
        cfg = replace(self, slots=slots)
        if probe is not None and self.whole_games is None:
            cfg = replace(cfg, whole_games=not probe.is_pong)
        if probe is not None and self.value_baseline is None:
            pong = probe.is_pong
            cfg = replace(cfg, value_baseline=PONG_VALUE_BASELINE if pong else 0.0)
        if probe is not None and self.entropy_bonus is None:
            if probe.is_pong and self.sticky_actions:  # the schedule brought every seed in
                final = STICKY_ENTROPY[1] if self.entropy_final is None else self.entropy_final
                cfg = replace(cfg, entropy_bonus=STICKY_ENTROPY[0], entropy_final=final)
            else:  # deterministic Pong passed 0 sooner without it, on 2 of 3 seeds
                cfg = replace(cfg, entropy_bonus=ENTROPY_BONUS)
        if probe is not None and self.standardise_over is None:
            memorised = probe.is_pong and not self.sticky_actions  # slower over the update
            cfg = replace(cfg, standardise_over="game" if memorised else "update")
        if probe is not None and self.noop_from == NOOP_FROM:  # the default, not a choice
            if not (probe.is_pong and self.sticky_actions and not self.noop):
                cfg = replace(cfg, noop_from=None)
        return cfg


@dataclass(frozen=True)
class GAConfig(Settings):
    """The settings that define a PrunedGA run (with its env), as in the synaptolytic-learning
    project's defaults. Kept in checkpoints and agreed by every rank."""

    hidden_sizes: list[int] = field(default_factory=lambda: [32])
    """units of each tanh hidden layer ([32] in the original)"""
    genome: Literal["ones", "signed-dag"] | None = None
    """'ones': all weights 1, each layer feeds the next (the original's pruneable agent);
    'signed-dag': N(0,1) weights, every layer fed by all earlier ones, Hebbian-guided pruning;
    None: signed-dag for continuous actions, ones for discrete"""
    synapses: int = 1
    """the signed-dag genome's synapses per connection, each a draw over sqrt(synapses) kept or
    pruned on its own, so losing one changes the connection's weight (1: the original's)"""
    population_size: int = 128
    """individuals per generation"""
    episodes_per_individual: int = 8
    """episodes averaged into each fitness (8 in the original)"""
    elite_fraction: float = 0.125
    """share of a generation kept unchanged"""
    prune_rate: float = 0.25
    """pruning probability of generation 0"""
    mutation_rate: float | None = None
    """a child's pruning probability in later generations (its mean, with Hebbian pruning):
    None (the flag's none, the original's) adapts it to how far the elites' sizes spread; a
    number fixes it"""
    elite_averaging: bool = False
    """True: a network kept unchanged is ranked by its mean fitness over every generation it
    has played, and the best is the top of that ranking; False (the original): by the latest
    generation's alone, and the best keeps the best fitness it ever got"""
    best_min_episodes: int = 1
    """with elite_averaging: the best network (which evaluate() plays) is the top-ranked elite
    whose mean rests on at least this many episodes, else the elite that has played the most;
    selection is unchanged. 1 (the original): the top of the ranking, often a lucky child"""
    crossover: float = 0.0
    """share of children made from two elites, each unit taking all its incoming connections
    from one of them (a coin per unit), before pruning; 0 (the original's pruneable agent):
    every child is one elite's"""
    finish_bonus: float = 0.0
    """points a training episode earns for each step it had left when the env ended it on a
    reward above -100 (BipedalWalker: the course's end, not a fall); the evaluations score
    the env's rewards alone. 0: none"""
    complexity_weight: float = 1.0
    """fitness penalty per fraction of connections kept (1 in the original's pruneable agent,
    none in its BipedalWalker benchmark's HebbianDAG)"""
    max_episode_steps: int = MAX_EPISODE_STEPS
    """an episode that reaches this many steps ends there, truncated"""
    seed: int = 0
    """root seed of every random stream in the run"""

    def check(self, probe=None, ranks: int = 1) -> str | None:
        """The first problem with these settings, or None; given the env's ``probe``, of
        resolved settings: also whether a rank fits in this machine's memory."""
        s = self
        problem = pruning_problem(s.population_size, s.elite_fraction, s.prune_rate, s.seed,
                                  s.mutation_rate, s.elite_averaging)  # fmt: skip
        return problem or first_problem(s, [
            ("hidden_sizes", is_sizes, "a list of ints >= 1"),
            ("genome", lambda x: x in (None, "ones", "signed-dag"), "None, 'ones' or 'signed-dag'"),
            ("synapses", lambda x: at_least(x, 1), "an int >= 1"),
            ("synapses", lambda x: s.genome != "ones" or x == 1,
             "1 with genome 'ones' (a connection is 1 or pruned)"),
            ("episodes_per_individual", lambda x: at_least(x, 1), "an int >= 1"),
            ("crossover", lambda x: is_real(x) and 0 <= x <= 1, "in [0, 1]"),
            ("finish_bonus", lambda x: is_real(x) and x >= 0, "a number >= 0"),
            ("best_min_episodes", lambda x: at_least(x, 1), "an int >= 1"),
            ("best_min_episodes", lambda x: x <= s.episodes_per_individual or s.elite_averaging,
             "at most episodes_per_individual without elite_averaging (which counts the "
             "episodes an elite's fitness rests on)"),
            ("complexity_weight", lambda x: is_real(x) and x >= 0, "a number >= 0"),
            ("max_episode_steps", lambda x: at_least(x, 1), "an int >= 1"),
        ]) or memory.ga_problem(probe, s)  # fmt: skip

    def resolved(self, probe, ranks: int) -> GAConfig:
        """These settings with ``genome`` None made the measured best for ``probe``'s actions."""
        if probe is None or self.genome is not None:
            return self
        return replace(self, genome="ones" if probe.discrete else "signed-dag")


@dataclass(frozen=True)
class ESConfig(Settings):
    """The settings that define a ParallelES run (with its env), as in Salimans et al. (2017),
    whose own are ``pgmpi.presets.ES_PRESETS["paper"]``. Kept in checkpoints, agreed by all."""

    hidden_sizes: list[int] = field(default_factory=lambda: [64, 64])
    """units of each tanh hidden layer ([256, 256] in the paper)"""
    population_size: int = 64
    """perturbed networks played per generation, in antithetic pairs (+eps, -eps): even"""
    noise_std: float = 0.02
    """sigma, the perturbations' standard deviation"""
    learning_rate: float = 0.01
    """Adam's step size on the ES gradient"""
    weight_decay: float = 0.005
    """L2 coefficient: Adam ascends the ES gradient minus this times the parameters"""
    noise_table_size: int = 25_000_000
    """float32 numbers in the shared noise table, built on every rank (100 MB; 12.8 GB for
    128 ranks on a node; the paper's is 250,000,000, one per machine)"""
    obs_stat_fraction: float = 0.01
    """share of a generation's perturbed episodes whose observations update the normalisation
    statistics (at least one unless 0; 0.01 in the paper)"""
    eval_episodes: int = 4
    """episodes of the unperturbed network per generation, played with the others (its
    logged return)"""
    max_episode_steps: int = MAX_EPISODE_STEPS
    """an episode that reaches this many steps ends there, truncated"""
    seed: int = 0
    """root seed of every random stream in the run (the noise table's too)"""

    def check(self, probe=None, ranks: int = 1) -> str | None:
        """The first problem with these settings, or None; given the env's ``probe`` and the
        ranks on this node (``ranks``): also whether the table holds a perturbation and fits."""
        s = self
        problem = first_problem(s, [
            ("hidden_sizes", is_sizes, "a list of ints >= 1"),
            ("population_size", lambda x: at_least(x, 2) and x % 2 == 0,
             "an even int >= 2 (antithetic pairs)"),
            ("noise_std", lambda x: is_real(x) and x > 0, "a number > 0"),
            ("learning_rate", lambda x: is_real(x) and x > 0, "a number > 0"),
            ("weight_decay", lambda x: is_real(x) and x >= 0, "a number >= 0"),
            ("noise_table_size", lambda x: at_least(x, 1), "an int >= 1"),
            ("obs_stat_fraction", lambda x: is_real(x) and 0 <= x <= 1, "in [0, 1]"),
            ("eval_episodes", lambda x: at_least(x, 0), "an int >= 0"),
            ("max_episode_steps", lambda x: at_least(x, 1), "an int >= 1"),
            ("seed", lambda x: at_least(x, 0), "an int >= 0"),
        ])  # fmt: skip
        return problem or memory.es_problem(probe, s, ranks)
