"""PrunedGA: learning by pruning connections ("synaptolysis"), a genetic algorithm over MPI ranks.

The algorithm is the pruneable agent of Rive Sunder's synaptolytic-learning project
(github.com/riveSunder/synaptolytic-learning, 2019). Synaptolysis is the loss of synapses: a
brain starts with more connections than it keeps, and learns partly by losing those that do
not serve. Here a genome is a mask over a network's connections, whose weights are fixed, all
ones or signed (:mod:`pgmpi.genomes`): nothing is trained but which connections remain, and
learning only removes them.

A generation reads as estool's ``es.py``: ask, evaluate, tell. The optimizer
(:class:`pgmpi.optimizers.PruningOptimizer`) gives its population's masks (``ask``); each
individual plays ``episodes_per_individual`` episodes, shared out over the ranks
(:mod:`pgmpi.units` says how); its fitness is its mean return minus ``complexity_weight``
times the fraction of connections it keeps, so of two networks that play alike the smaller
wins; and the optimizer selects and mutates from the fitness (``tell``). Selection keeps the
top ``elite_fraction`` unchanged (led by the best ever seen, if it is not among them) and
fills the population with children of elites, better ones picked more often, each of whose
parent's connections is pruned with the mutation rate, which follows how far the elites'
sizes spread from the population's (or is fixed); with the signed genome a parent's less
active connections (Hebbian activity, measured in play) are pruned more often. A screen's
options, off by default, rank a surviving elite by its mean over the generations it has
played (``elite_averaging``), call the best only an elite whose mean rests on enough
episodes (``best_min_episodes``), give each connection several synapses to lose one at a
time (``synapses``), make some children from two elites, unit by unit (``crossover``), and
pay a training episode for the steps it had left at the course's end (``finish_bonus``);
the screens' other settings are retired (docs/screens.md).

There is no coordinator: every rank runs the same selection and mutation from the same random
stream, so all ranks hold the same population without sending any network; only the
episodes' results travel, in one Allreduce per generation.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from pgmpi import genomes, loop, mpi, rollout
from pgmpi.ahead import PlayingAhead
from pgmpi.best import BestFound
from pgmpi.config import GAConfig
from pgmpi.envs import Game, probe_env
from pgmpi.ga_run import GARun
from pgmpi.optimizers import PruningOptimizer
from pgmpi.options import RunOptions
from pgmpi.version import __version__


class PrunedGA(GARun):
    """Synaptolysis over MPI ranks; every rank must construct it with the same arguments.

    The set-up and a generation are here; what the run does besides (its rows and printed
    lines, ``act``, ``evaluate``, ``save``, ``load``) is :class:`pgmpi.ga_run.GARun`.

    Args:
        env: a gymnasium env id, or a zero-argument function returning an env, with a 1-D box
            observation and a discrete action space (argmax output) or a bounded 1-D box one
            (tanh output, stretched onto the bounds unless they are [-1, 1]). A new env is
            made for each episode. The network is the ``genome`` setting's:
            ``"ones"`` (all weights 1) or ``"signed-dag"`` (signed weights drawn once from the
            seed, every layer fed by all earlier ones, less active connections pruned more
            often); :mod:`pgmpi.genomes` describes both. By default continuous actions get
            signed-dag and discrete ones get ones, as measured (docs/benchmarks.md).
        config: the settings to start from (default ``GAConfig()``);
            :class:`pgmpi.config.GAConfig` documents each one and its default.
        settings: any :class:`~pgmpi.config.GAConfig` field by name (``hidden_sizes``,
            ``population_size``, ``seed``, ...), replacing ``config``'s value.
        log_dir, blas_threads, quiet, trace, tensorboard, overwrite: the run's options,
            which change no result (:class:`pgmpi.options.RunOptions` says what each one
            does), kept as ``options``. With ``trace``, a generation's ``play_s`` is the
            rank's evaluation, the rest of its ``total_s`` the selection and mutation, and
            each unit's seconds are shared (:class:`~pgmpi.units.UnitEvaluation`).

    Attributes:
        config: the run's settings as a dict (``env`` and every GAConfig field).
        optimizer: the :class:`PruningOptimizer`, identical on every rank.
        net: the genome's network, a :class:`~pgmpi.genomes.PrunedNetwork` or
            :class:`~pgmpi.genomes.SignedDAG`.
        evaluation: what plays each generation over the ranks, a
            :class:`~pgmpi.ahead.PlayingAhead`; benchmarks read each unit's steps, seconds
            and rank from it.

    Raises:
        ConfigError (a ValueError): on every rank, naming the bad value, if an argument is
            invalid, the env cannot be made, or ranks were given different settings.

    Collective: every rank must call this.
    """

    def __init__(
        self,
        *,
        env: str | Callable = "CartPole-v1",
        config: GAConfig | None = None,
        log_dir: str | Path | None = None,
        blas_threads: int | None = None,
        quiet: bool = False,
        trace: bool = False,
        tensorboard: bool = False,
        overwrite: bool = False,
        **settings,
    ):
        options = RunOptions(log_dir, blas_threads, quiet, trace, tensorboard, overwrite)
        cfg, problem = options.start(GAConfig, config, settings)  # MPI's hooks; the checks
        probe = None
        if problem is None:
            probe, problem = probe_env(env)  # its sizes and action box
        cfg = cfg.resolved(probe, mpi.size())  # genome: the measured choice per action space
        problem = problem or cfg.check(probe)  # memory, before anything big is made
        name = probe.env_id if probe else env if isinstance(env, str) else "custom"
        self.config = {"env": name} | cfg.as_dict()
        # trace is agreed too: with it on, every rank joins one more gather per generation,
        # and the Allreduce carries each unit's seconds
        settings = dict(self.config, version=__version__, numpy=np.__version__, trace=trace)
        mpi.agree(settings, problem)
        self.options = options
        self._env = env
        options.cap_blas_threads()
        self.probe = probe
        layers = (probe.n_inputs, *cfg.hidden_sizes, probe.n_actions)
        self.net = genomes.make(cfg.genome, layers, probe.discrete, cfg.seed, cfg.synapses)
        self.optimizer = PruningOptimizer(
            self.net.n_weights,
            population_size=cfg.population_size,
            elite_fraction=cfg.elite_fraction,
            prune_rate=cfg.prune_rate,
            mutation_rate=cfg.mutation_rate,
            elite_averaging=cfg.elite_averaging,
            best_min_count=-(-cfg.best_min_episodes // cfg.episodes_per_individual),  # generations
            crossover=cfg.crossover,
            units=genomes.receiving_units(self.net),
            seed=cfg.seed,
        )
        self.steps = 0
        self.evaluations = 0
        self.best_found = BestFound()  # when the best network was found, and the run's time
        self.last_steps = np.zeros(cfg.population_size)  # each one's steps, last generation
        self.evaluation = PlayingAhead(self)  # collective

    @property
    def generation(self) -> int:
        """Generations evaluated so far (the index of the population evaluated next)."""
        return self.optimizer.generation

    def step(self) -> dict:
        """One generation: ask, evaluate, tell. Returns the row to log, with this rank's
        seconds (see :meth:`pgmpi.loop.Trainable.step`). Collective: every rank must call
        this (the evaluation's one Allreduce of every episode's result)."""
        t0 = time.perf_counter()
        g = self.generation
        masks = self.optimizer.ask()
        results = self.evaluation.run(masks, g)  # collective: every episode, once
        kept = masks.sum(axis=1) / self.net.n_weights
        fitness = self.fitness(results.returns, kept)
        if not np.all(np.isfinite(fitness)):
            raise mpi.NonFiniteError(f"generation {g}: non-finite return (nothing was saved)")
        improved = self.optimizer.tell(fitness, results.activity)  # a new best ever?
        return self._book_keeping(g, results, fitness, kept, t0, improved)

    def fitness(self, unit_returns: np.ndarray, kept: np.ndarray) -> np.ndarray:
        """Each individual's fitness from its episodes' returns (P, E) and the fraction of
        connections it keeps: NaN rows stay NaN."""
        returns = unit_returns.sum(axis=1) / unit_returns.shape[1]
        return returns - self.config["complexity_weight"] * kept

    def _play(self, weights: list[np.ndarray], stream, activity=None, training=False):
        """Return and steps of :meth:`_episode`, played at once (``training``: with the
        finishing bonus, ``finish_bonus``; evaluations play without it)."""
        return self._episode(weights, stream, activity, training).finish()[:2]

    def _episode(self, weights: list[np.ndarray], stream, activity=None, training=False):
        """An episode (a :class:`~pgmpi.rollout.Episode`) of network ``weights`` seeded from
        ``stream``, in a new env (Box2D envs carry state over, so a reused one would make
        results depend on which units this rank played before); ``activity`` (float64 (W,),
        or None) gets each connection's mean Hebbian term per step at the end (recorded by a
        :class:`~pgmpi.genomes.Trace`); a ``training`` episode earns ``finish_bonus``."""
        game = Game(self._env, self.config["max_episode_steps"])
        trace = None if activity is None else genomes.Trace(self.net.shapes, activity)
        act = lambda game: self._action(weights, game.obs, trace)  # noqa: E731
        bonus = self.config["finish_bonus"] if training else 0.0
        return rollout.Episode(game, act, stream, trace, bonus)

    def _action(self, weights: list[np.ndarray], obs: np.ndarray, activity=None):
        a = self.net.act(weights, obs) if activity is None else self.net.act(weights, obs, activity)
        return self.probe.stretched(a)

    def train(
        self,
        *,
        generations: int | None = None,
        minutes: float | None = None,
        target_return: float | None = None,
        checkpoint_path: str | Path | None = None,
        checkpoint_every: int = 5,
        callback: Callable[[dict], None] | None = None,
    ) -> PrunedGA:
        """Run generations until a limit is reached; returns self.

        Args:
            generations: stop once this many generations in total have been evaluated
                (counted from the start of the run, resumes included).
            target_return: stop once an individual's mean return reaches this.
            minutes, checkpoint_path, checkpoint_every, callback: as in :func:`pgmpi.loop.train`
                (a step is a generation), which also says what no limit, errors and Ctrl-C do.

        Collective: every rank must call this.
        """
        return loop.train(
            self,
            dict(generations=generations),
            minutes=minutes,
            target_return=target_return,
            checkpoint_path=checkpoint_path,
            checkpoint_every=checkpoint_every,
            callback=callback,
        )
