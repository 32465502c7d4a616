"""ParallelES: evolution strategies with a shared noise table over MPI ranks: Algorithm 2 of
Salimans, Ho, Chen, Sidor and Sutskever, "Evolution Strategies as a Scalable Alternative to
Reinforcement Learning" (2017).

Every rank builds the same table of Gaussian noise from the run's seed, so a perturbation is
an index into it, drawn from a stream keyed on (seed, generation, pair): only each episode's
return and steps travel, however big the network. A generation reads top-down as the paper's
loop: ask (each antithetic pair's index), evaluate (its episodes, +eps and -eps, seeded from
(seed, generation, pair, sign) and shared out over the ranks by :class:`pgmpi.units.Episodes`
as PrunedGA's are: from the shared counter, each into its own slots of one buffer summed by
one Allreduce), tell (centred ranks, the ES gradient, Adam with weight decay). The
observation statistics travel in the same buffer, in slots of the episodes that gathered
them, so every sum, and so every rank's update, is the same bits on any number of ranks.
The rest of a run (header, lines, ``evaluate``, ``save``, ``load``) is
:class:`pgmpi.es_run.ESRun`'s.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

from pgmpi import loop, mpi, rng, rollout
from pgmpi.config import ESConfig
from pgmpi.envs import Game, probe_env
from pgmpi.es_run import ESRun
from pgmpi.networks import MLP
from pgmpi.optimizers import Adam
from pgmpi.options import RunOptions
from pgmpi.units import Episodes
from pgmpi.version import __version__


class NoiseTable:
    """``size`` float32 standard normals drawn from ``rng.stream(seed, rng.ES_NOISE)``: the
    same table on every rank. Perturbation ``i`` of ``n`` parameters is ``noise[i : i + n]``."""

    def __init__(self, size: int, seed: int):
        self.noise = rng.stream(seed, rng.ES_NOISE).standard_normal(size, dtype=np.float32)
        self.noise.flags.writeable = False

    def index(self, stream: np.random.Generator, n: int) -> int:
        """A start for a perturbation of ``n`` numbers, drawn from ``stream``."""
        return int(stream.integers(0, len(self.noise) - n + 1))

    def get(self, i: int, n: int) -> np.ndarray:
        return self.noise[i : i + n]


def centred_ranks(x: np.ndarray) -> np.ndarray:
    """float64, ``x``'s shape: each value's rank among all of them (equal values share their
    mean rank), scaled to [-0.5, 0.5]. Fitness shaping: only the order of returns counts."""
    flat = np.sort(x.ravel())
    low, high = np.searchsorted(flat, x, "left"), np.searchsorted(flat, x, "right") - 1
    return (low + high) / (2 * max(x.size - 1, 1)) - 0.5


def es_gradient(table: NoiseTable, indices: np.ndarray, shaped: np.ndarray, sigma: float, n: int):
    """float64 (n,): ``sum_p (shaped[p, 0] - shaped[p, 1]) eps_p / (2 pairs sigma)``, eps_p
    the table's ``n`` numbers from ``indices[p]``; summed pair after pair, in order."""
    g = np.zeros(n)
    for i, (plus, minus) in zip(indices, shaped, strict=True):
        g += (plus - minus) * table.get(int(i), n)
    return g / (shaped.size * sigma)


class ParallelES(ESRun):
    """Evolution strategies over MPI ranks; every rank must construct it with the same arguments.

    Args:
        env: a gymnasium id or a function returning an env, as :class:`pgmpi.PrunedGA` takes
            (discrete actions: argmax output; a bounded box: tanh, stretched onto it).
        config, settings: an :class:`~pgmpi.config.ESConfig` (default ``ESConfig()``; the
            paper's is ``presets.ES_PRESETS["paper"]``), and any of its fields by name.
        log_dir, blas_threads, quiet, trace, tensorboard, overwrite: as PrunedGA's, kept as
            ``options`` (a :class:`~pgmpi.options.RunOptions`).

    Attributes: config (the settings, with ``env``), net (the :class:`~pgmpi.networks.MLP`,
    whose ``params`` are theta), optimizer (:class:`~pgmpi.optimizers.Adam`), noise (the
    :class:`NoiseTable`), obs_stats (float64: sums of observations, of their squares, count),
    evaluation (the :class:`~pgmpi.units.Episodes` that plays each generation; benchmarks
    read each unit's steps, seconds with ``trace``, and rank from it).

    Raises ConfigError on every rank, naming the bad value: an odd population, sigma <= 0, a
    table smaller than a perturbation or than half the node's memory holds for its ranks, an
    env that cannot be made, settings that differ between ranks. Collective.
    """

    def __init__(
        self,
        *,
        env: str | Callable = "CartPole-v1",
        config: ESConfig | None = None,
        log_dir: str | Path | None = None,
        blas_threads: int | None = None,
        quiet: bool = False,
        trace: bool = False,
        tensorboard: bool = False,
        overwrite: bool = False,
        **settings,
    ):
        options = RunOptions(log_dir, blas_threads, quiet, trace, tensorboard, overwrite)
        cfg, problem = options.start(ESConfig, config, settings)  # MPI's hooks; the checks
        probe, node = None, mpi.ranks_on_node()  # collective: before any rank can fail
        if problem is None:
            probe, problem = probe_env(env)  # its sizes and action box
        problem = problem or cfg.check(probe, node)  # the noise table: enough, and it fits
        if probe is not None:
            layers = (probe.n_inputs, *cfg.hidden_sizes, probe.n_actions)
            self.net = MLP(layers, probe.discrete, rng.stream(cfg.seed, rng.INIT))
        name = probe.env_id if probe else env if isinstance(env, str) else "custom"
        self.config = {"env": name} | cfg.as_dict()
        # trace is agreed too: with it on, the Allreduce carries each unit's seconds
        settings = dict(self.config, version=__version__, numpy=np.__version__, trace=trace)
        mpi.agree(settings, problem)
        self.options, self.probe, self._env = options, probe, env
        options.cap_blas_threads()
        self.noise = NoiseTable(cfg.noise_table_size, cfg.seed)
        self.optimizer = Adam(self.net.n_params, cfg.learning_rate)
        d = probe.n_inputs
        self.obs_stats = np.concatenate([np.zeros(d), np.full(d, 1e-2), [1e-2]])
        self.pairs = cfg.population_size // 2
        self.stat_units = math.ceil(cfg.obs_stat_fraction * cfg.population_size - 1e-9)
        self.generation = self.steps = self.evaluations = 0
        units, stats = cfg.population_size + cfg.eval_episodes, (self.stat_units, 2 * d + 1)
        self.evaluation = Episodes(units, stats, trace)  # collective

    def normaliser(self) -> tuple[np.ndarray, np.ndarray]:
        """float32 (mean, std, at least 0.1) of the observations seen."""
        d = self.probe.n_inputs
        s, ss, count = self.obs_stats[:d], self.obs_stats[d : 2 * d], self.obs_stats[-1]
        mean = s / count
        std = np.sqrt(np.maximum(ss / count - np.square(mean), 1e-2))
        return mean.astype(np.float32), std.astype(np.float32)

    def _action(self, layers, norm, obs, stats: np.ndarray | None = None):
        """The env's action for a raw observation; ``stats`` gets its sums, if given."""
        if stats is not None:
            o = np.asarray(obs, dtype=np.float64)
            stats += np.concatenate([o, np.square(o), [1.0]])
        x = np.clip((np.asarray(obs, dtype=np.float32) - norm[0]) / norm[1], -5, 5)
        return self.probe.stretched(self.net.act(layers, x))

    def _play(self, params: np.ndarray, stream, stats=None) -> tuple[float, int]:
        """Return and steps of one episode of ``params``, in a new env seeded from ``stream``."""
        game = Game(self._env, self.config["max_episode_steps"])
        layers, norm = self.net.layers(params), self.normaliser()
        act = lambda game: self._action(layers, norm, game.obs, stats)  # noqa: E731
        return rollout.Episode(game, act, stream).finish()[:2]

    def step(self) -> dict:
        """One generation: ask, evaluate, tell; the row (see :meth:`pgmpi.loop.Trainable.step`)."""
        t0 = time.perf_counter()
        g, P = self.generation, self.config["population_size"]
        indices = self.ask(g)
        sums = self.evaluation.run(partial(self.episode, indices, g))  # collective: each once
        if not np.all(np.isfinite(sums.returns)):
            raise mpi.NonFiniteError(f"generation {g}: non-finite return (nothing was saved)")
        returns, current = sums.returns[:P], sums.returns[P:]
        grad = self.tell(indices, returns.reshape(-1, 2), sums.stats.sum(axis=0))
        self.steps += int(sums.steps.sum())
        seconds = time.perf_counter() - t0
        play_s, allreduce_s = self.evaluation.play_s, self.evaluation.allreduce_s
        return {
            "generation": g, "steps": self.steps,
            "charts/best_fitness": returns.max(), "charts/mean_fitness": returns.mean(),
            "charts/min_fitness": returns.min(),
            "charts/current_return": current.mean() if len(current) else float("nan"),
            "charts/grad_norm": float(np.linalg.norm(grad)),
            "charts/param_norm": float(np.linalg.norm(self.net.params.astype(np.float64))),
            "perf/env_steps": int(sums.steps.sum()),
            "perf/steps_per_s": sums.steps.sum() / max(seconds, 1e-9),
            "perf/wait_s": sums.busy.max() - sums.busy.min(),
            "perf/allreduce_bytes": sums.buffer.nbytes, "perf/allreduce_s": allreduce_s,
            "time/generation_s": seconds,
            "_seconds": dict(play_s=play_s, grad_s=0.0, allreduce_s=allreduce_s, total_s=seconds),
        }  # fmt: skip

    def ask(self, g: int) -> np.ndarray:
        """int64 (pairs,): where each antithetic pair of generation ``g`` starts in the table."""
        seed, n = self.config["seed"], self.net.n_params
        streams = (rng.stream(seed, rng.ES_PERTURBATION, g, p) for p in range(self.pairs))
        return np.array([self.noise.index(stream, n) for stream in streams], dtype=np.int64)

    def episode(self, indices: np.ndarray, g: int, u: int, stats=None) -> tuple[float, int]:
        """Return and steps of generation ``g``'s unit ``u``: pair p = u // 2 with sign
        u % 2 (theta + sigma eps_p, theta - sigma eps_p), or from ``population_size`` on an
        episode of theta itself; seeded from (seed, g, p, sign), whichever rank plays it."""
        c, theta = self.config, self.net.params
        p, s = divmod(u, 2) if u < c["population_size"] else (u - c["population_size"], 2)
        eps = self.noise.get(int(indices[p]), theta.size) if s < 2 else 0
        sigma = np.float32(c["noise_std"])
        params = theta + sigma * eps if s == 0 else theta - sigma * eps
        return self._play(params, rng.stream(c["seed"], rng.ES_EPISODE, g, p, s), stats)

    def tell(self, indices: np.ndarray, returns: np.ndarray, stats: np.ndarray) -> np.ndarray:
        """Update theta from each pair's (return +, return -) (float64 (pairs, 2)) and add
        ``stats`` to the observation statistics; returns the ES gradient (float64)."""
        c, theta = self.config, self.net.params
        grad = es_gradient(self.noise, indices, centred_ranks(returns), c["noise_std"], theta.size)
        step = (grad - c["weight_decay"] * theta).astype(np.float32)
        if not np.all(np.isfinite(step)):
            raise mpi.NonFiniteError(f"generation {self.generation}: non-finite ES gradient")
        self.optimizer.step(theta, step)
        self.obs_stats += stats
        self.generation += 1
        return grad

    def train(
        self,
        *,
        generations: int | None = None,
        minutes: float | None = None,
        target_return: float | None = None,
        checkpoint_path: str | Path | None = None,
        checkpoint_every: int = 5,
        callback: Callable[[dict], None] | None = None,
    ) -> ParallelES:
        """Run generations until a limit is reached, as :meth:`pgmpi.PrunedGA.train`; returns
        self. ``target_return``: of the unperturbed network's episodes in a generation (of
        the perturbed ones, with ``eval_episodes=0``). Collective: every rank must call this."""
        return loop.train(
            self,
            dict(generations=generations),
            minutes=minutes,
            target_return=target_return,
            checkpoint_path=checkpoint_path,
            checkpoint_every=checkpoint_every,
            callback=callback,
        )
