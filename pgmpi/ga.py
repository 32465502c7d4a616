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
sizes spread from the population's (or is fixed); with the signed genome a parent's less active
connections (Hebbian activity, measured in play) are pruned more often.

There is no coordinator: every rank runs the same selection and mutation from the same random
stream, so all ranks hold the same population without sending any network; only the
episodes' results travel, in one Allreduce per generation.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from pgmpi import checkpoint, genomes, loop, mpi, rollout
from pgmpi.ahead import PlayingAhead
from pgmpi.best import BestFound, BestScore
from pgmpi.config import GAConfig
from pgmpi.envs import Game
from pgmpi.evaluation import evaluation_returns
from pgmpi.loop import Description
from pgmpi.optimizers import PruningOptimizer
from pgmpi.options import RunOptions
from pgmpi.settings import configure, first_problem, is_int
from pgmpi.version import __version__


class PrunedGA:
    """Synaptolysis over MPI ranks; every rank must construct it with the same arguments.

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

    algorithm = "PrunedGA"

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
        mpi.init()  # the excepthook and the watchdog, once per process
        options = RunOptions(log_dir, blas_threads, quiet, trace, tensorboard, overwrite)
        cfg, problem = configure(GAConfig, config, settings, options)
        problem = mpi.launcher_problem() or problem  # a mismatched launch is named first
        probe = None
        if problem is None:
            try:
                probe = Game(env)  # its sizes and action box; closed at once
                probe.close()
            except Exception as e:  # any failure to make the env is the user's input
                problem = f"cannot make env {env!r}: {type(e).__name__}: {e}"
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
        self.net = genomes.make(cfg.genome, layers, probe.discrete, cfg.seed)
        self.optimizer = PruningOptimizer(
            self.net.n_weights,
            population_size=cfg.population_size,
            elite_fraction=cfg.elite_fraction,
            prune_rate=cfg.prune_rate,
            mutation_rate=cfg.mutation_rate,
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

    def _episode(self, weights: list[np.ndarray], stream, activity=None) -> rollout.Episode:
        """An episode of network ``weights`` seeded from ``stream``, in a new env: Box2D envs
        carry state from one episode into the next, so reusing one would make the results
        depend on which units this rank happened to play before. ``activity`` (zeros,
        float64 (n_weights,), or None) gets each connection's mean Hebbian term per step."""
        game = Game(self._env, self.config["max_episode_steps"])
        act = lambda game: self._action(weights, game.obs, activity)  # noqa: E731
        return rollout.Episode(game, act, stream, activity)

    def _play(self, weights: list[np.ndarray], stream, activity=None) -> tuple[float, int]:
        """Return and steps of :meth:`_episode`, played at once."""
        return self._episode(weights, stream, activity).finish()[:2]

    def fitness(self, unit_returns: np.ndarray, kept: np.ndarray) -> np.ndarray:
        """Each individual's fitness from its episodes' returns (P, E) and the fraction of
        connections it keeps: NaN rows stay NaN."""
        returns = unit_returns.sum(axis=1) / unit_returns.shape[1]
        return returns - self.config["complexity_weight"] * kept

    def _action(self, weights: list[np.ndarray], obs: np.ndarray, activity=None):
        a = self.net.act(weights, obs) if activity is None else self.net.act(weights, obs, activity)
        return self.probe.stretched(a)

    def act(self, observation: np.ndarray, mask: np.ndarray | None = None):
        """The action network ``mask`` takes for one raw env observation, as in training: an
        int, or a float vector within the env's bounds. ``mask`` defaults to the best ever
        seen (before any generation: the first individual, as in :meth:`evaluate`).

        Raises:
            ValueError: if the observation's shape is not the env's or it holds NaN or inf.
                Not collective: only this rank raises.
        """
        Game._checked(observation, (self.net.sizes[0],))
        if mask is None:
            told = self.optimizer.best_fitness > -np.inf
            mask = self.optimizer.best_mask if told else self.optimizer.population[0]
        return self._action(self.net.weights(np.asarray(mask, dtype=bool)), observation)

    def step(self) -> dict:
        """One generation: ask, evaluate, tell. Returns the row to log, with this rank's
        seconds (see :meth:`pgmpi.loop.Trainable.step`)."""
        t0 = time.perf_counter()
        g = self.generation
        masks = self.optimizer.ask()
        results = self.evaluation.run(masks, g)  # collective: every episode, once
        kept = masks.sum(axis=1) / self.net.n_weights
        fitness = self.fitness(results.returns, kept)
        if not np.all(np.isfinite(fitness)):
            raise mpi.NonFiniteError(f"generation {g}: non-finite return (nothing was saved)")
        best = self.optimizer.best_fitness
        self.optimizer.tell(fitness, results.activity)
        returns = results.returns.sum(axis=1) / results.returns.shape[1]
        self.last_steps = results.steps.sum(axis=1)
        steps = self.last_steps.sum()
        self.steps += int(steps)
        seconds = time.perf_counter() - t0
        improved = self.optimizer.best_fitness > best  # this generation holds the best ever
        self.best_found.count(g, self.steps, results.returns.size, seconds, improved)
        mine = dict(play_s=results.play_s, grad_s=0.0, allreduce_s=results.allreduce_s)
        best_k = np.sort(fitness)[::-1][: self.optimizer.n_elites]
        row = {
            "generation": g,
            "steps": self.steps,
            "charts/best_fitness": fitness.max(),
            "charts/mean_fitness": fitness.mean(),
            "charts/min_fitness": fitness.min(),
            "charts/elite_mean_fitness": best_k.mean(),
            "charts/best_return": returns.max(),
            "charts/connections_kept": kept.mean(),
            "charts/mutation_rate": self.optimizer.mutation_rate,
            "perf/env_steps": int(steps),
            "perf/steps_per_s": steps / max(seconds, 1e-9),
            "perf/wait_s": results.wait_s,
            "perf/units_played_ahead": results.played_ahead,
            "perf/allreduce_s": results.allreduce_s,
            "time/generation_s": seconds,
            "_seconds": dict(mine, total_s=seconds),  # the loop's: this rank's, for the trace
        }
        return row  # float64 values are floats: fine for CSV and JSON

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

    def counts(self) -> dict[str, int]:
        return {"generations": self.generation}

    def reached(self, row: dict | None, target_return: float) -> bool:
        return row is not None and row["charts/best_return"] >= target_return

    def describe(self) -> Description:
        """For the run header: the genome and network; a step's units are its episodes."""
        net, c = self.net, self.config
        genome = f"genome {c['genome']} ({net.description})"
        P, E = c["population_size"], c["episodes_per_individual"]
        return Description(
            f"{genome}, layers {net.sizes}, {net.n_weights} connections",
            P * E,
            f"episodes: {P} individuals x {E} each",
            "population_size x episodes_per_individual",
        )

    @staticmethod
    def line(r: dict) -> str:
        """The printed line of one generation."""
        return (
            f"gen {r['generation']:5d} | fitness best {r['charts/best_fitness']:8.2f} "
            f"mean {r['charts/mean_fitness']:8.2f} min {r['charts/min_fitness']:8.2f} "
            f"elite {r['charts/elite_mean_fitness']:8.2f} | kept {r['charts/connections_kept']:.3f}"
            f" | rate {r['charts/mutation_rate']:.4f} | steps {r['perf/env_steps']:8d} "
            f"{r['perf/steps_per_s']:6.0f}/s | {r['time/generation_s']:6.2f} s "
            f"(wait {r['perf/wait_s']:5.2f} s)"
        )

    def evaluate(self, episodes: int = 100, mask: np.ndarray | None = None) -> BestScore:
        """Mean return of ``mask`` (default: the best ever, or before any generation the first
        individual) over ``episodes`` new episodes shared out over ranks, as a
        :class:`~pgmpi.best.BestScore`: a float with its 95% interval, size and ``report()``.

        Raises:
            ConfigError: on every rank, if ``episodes`` is not an int >= 1 or ``mask`` is not
                an array of 0/1 or bools with one entry per connection.

        Collective: every rank must call this.
        """
        n = self.net.n_weights
        shape = None if mask is None else np.shape(mask)
        ok_mask = mask is None or (shape == (n,) and np.isin(mask, (0, 1)).all())
        problem = first_problem(
            [
                (is_int(episodes) and episodes >= 1, "episodes", episodes, "an int >= 1"),
                (ok_mask, "mask", f"an array of shape {shape}", f"0/1 or bool of shape ({n},)"),
            ]
        )
        mpi.agree(dict(episodes=episodes), problem)
        self.evaluations += 1
        label = "best network" if mask is None else "given mask"
        if mask is None:
            told = self.optimizer.best_fitness > -np.inf
            mask = self.optimizer.best_mask if told else self.optimizer.population[0]
        weights = self.net.weights(np.asarray(mask, dtype=bool))
        returns = evaluation_returns(
            episodes,
            self.config["seed"],
            self.evaluations,
            lambda streams: [self._play(weights, stream)[0] for stream in streams],
        )
        found = self.best_found.at if label == "best network" else None
        return BestScore(returns, label, int(mask.sum()), n, found)

    def save(self, path: str | Path) -> Path:
        """Write the population, best mask (and its activity for the signed genome), rate and
        history to ``path`` (atomically, by the root); the signed weights are re-drawn from
        the seed on load. Collective: every rank must call this."""
        steps = dict(last_steps=self.last_steps, unit_steps=self.evaluation.steps)
        arrays = dict(self.optimizer.state(), **steps)
        counters = dict(generation=self.generation, steps=self.steps, evaluations=self.evaluations)
        counters |= self.best_found.state()
        return checkpoint.save_agent(path, self, arrays, **counters)

    @classmethod
    def load(cls, path: str | Path, **overrides) -> PrunedGA:
        """A PrunedGA restored from ``path``; training on gives what an uninterrupted run gives.

        ``overrides`` may replace the run options (:data:`pgmpi.checkpoint.RUN_OPTIONS`:
        ``env``, needed if it was a factory, ``log_dir``, ...). Collective: every rank must
        call this.
        """
        arrays, meta, settings = checkpoint.load_settings(path, cls.algorithm, overrides)
        agent = cls(**settings)
        with checkpoint.complete(path, cls.algorithm):  # a missing key: a ConfigError
            have = arrays["population"].shape
            want = agent.optimizer.population.shape
            problem = f"checkpoint {str(path)!r}: population {have}, settings make {want}"
            mpi.agree({}, None if have == want else problem)
            agent.optimizer.set_state(arrays)
            agent.last_steps = arrays["last_steps"].copy()
            if "unit_steps" in arrays:  # only the next generation's work order needs them
                agent.evaluation.steps = arrays["unit_steps"].reshape(agent.evaluation.steps.shape)
            agent.steps = meta["steps"]
            agent.evaluations = meta["evaluations"]
            agent.best_found.restore(meta, path)
        return agent
