"""PrunedGA: learning by pruning connections ("synaptolysis"), a genetic algorithm over MPI ranks.

The algorithm is the pruneable agent of Rive Sunder's synaptolytic-learning project
(github.com/riveSunder/synaptolytic-learning, 2019): a genome is a mask over a network's
connections, whose weights are all ones or signed (:mod:`pgmpi.genomes`), and learning only
removes connections (see :class:`pgmpi.optimizers.PruningOptimizer`).

There is no coordinator: every rank runs the same selection and mutation from the same
random stream, so all ranks hold the same population without sending any network. The unit
of work is one episode of one individual (138 x 8 = 1,104 units in the original's
generation), so ranks stay busy even at 128 ranks. Episode e of individual i in generation
g is seeded from the stream keyed on (seed, g, i, e), whichever rank plays it, or, for an
elite kept unchanged, on (seed, g, its index in generation g - 1, e). Units are
handed out longest-predicted-first (an unchanged elite costed at its own longest episode
last generation, a mutated child at no less than most: :func:`pgmpi.schedule.predict`), one at a
time to whichever rank is free, from a counter on rank 0 that ranks advance by one-sided
MPI (:func:`pgmpi.mpi.shared_counter`): no coordinator, and a bad prediction costs only
the units still running at the end. One Allreduce per generation sums a buffer in which
each unit's return and step count has exactly one non-zero contributor, so the sum is
exact and every rank computes the same fitness from it (and, for the signed genome, each
unit's Hebbian activity per connection): a seed gives the same results, bit for bit, on
any number of ranks and under any assignment. While a rank waits for the others at the
end of a generation, it plays the next generation's episodes of individuals already sure to
be elites (:func:`pgmpi.schedule.sure_elites`, read off the results the ranks post to a
board on rank 0 as they go: :func:`pgmpi.mpi.unit_board`), each claimed so that one rank
plays it, and finishes the one it is playing when the ranks meet: an elite's next episodes
do not depend on how the others end (:mod:`pgmpi.ahead`). benchmarks/ga_scaling.py
measures and projects the balance.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

from pgmpi import checkpoint, genomes, loop, mpi, rng, rollout, schedule, threads
from pgmpi.ahead import Ahead, Episode
from pgmpi.config import GAConfig, first_problem, ga_memory_problem, is_int, resolve
from pgmpi.envs import Game
from pgmpi.optimizers import PruningOptimizer
from pgmpi.version import __version__


class PrunedGA:
    """Synaptolysis over MPI ranks; every rank must construct it with the same arguments.

    Fitness is the mean return over ``episodes_per_individual`` episodes minus
    ``complexity_weight`` times the fraction of connections kept.

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
            which change no result (:class:`pgmpi.loop.Trainable` says what each one does). With
            ``trace``, a generation's ``play_s`` is the rank's evaluation, ``update_s`` the
            selection and mutation.

    Attributes:
        config: the run's settings as a dict (``env`` and every GAConfig field).
        optimizer: the :class:`PruningOptimizer`, identical on every rank.
        net: the genome's network, a :class:`~pgmpi.genomes.PrunedNetwork` or
            :class:`~pgmpi.genomes.SignedDAG`.

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
        run = (log_dir, blas_threads, quiet, trace, tensorboard, overwrite)  # as run_problem
        cfg, problem = resolve(GAConfig, config, settings, run)
        problem = mpi.launcher_problem() or problem  # a mismatched launch is named first
        probe = None
        if problem is None:
            try:
                probe = Game(env)  # its sizes and action box; closed at once
                probe.close()
            except Exception as e:  # any failure to make the env is the user's input
                problem = f"cannot make env {env!r}: {type(e).__name__}: {e}"
        if probe is not None and cfg.genome is None:  # the measured choice per action space
            cfg = replace(cfg, genome="ones" if probe.discrete else "signed-dag")
        problem = problem or ga_memory_problem(probe, cfg)  # before anything big is made
        name = probe.env_id if probe else env if isinstance(env, str) else "custom"
        self.config = {"env": name} | cfg.as_dict()
        # trace is agreed too: with it on, every rank joins one more gather per generation
        settings = dict(self.config, version=__version__, numpy=np.__version__, trace=trace)
        mpi.agree(settings, problem)
        self.log_dir = log_dir
        self.quiet = quiet
        self._env = env
        self.trace = trace
        self.tensorboard = tensorboard
        self.overwrite = overwrite
        self.blas = threads.cap_blas_threads(blas_threads)
        self.probe = probe
        layers = (probe.n_inputs, *cfg.hidden_sizes, probe.n_actions)
        self.net = genomes.make(cfg.genome, layers, probe.discrete, cfg.seed)
        self.optimizer = PruningOptimizer(
            self.net.n_weights,
            population_size=cfg.population_size,
            elite_fraction=cfg.elite_fraction,
            prune_rate=cfg.prune_rate,
            seed=cfg.seed,
        )
        self.steps = 0
        self.evaluations = 0
        self.last_steps = np.zeros(cfg.population_size)  # each one's steps, last generation
        # Each unit's steps, seconds and the rank that played it, last generation: (P, E)
        units = (cfg.population_size, cfg.episodes_per_individual)
        self.unit_steps = np.zeros(units)
        self.unit_seconds = np.zeros(units)
        self.unit_ranks = np.zeros(units, dtype=np.int64)
        self._counter = mpi.shared_counter()  # collective the first time in a process
        self._ahead = Ahead(self.unit_steps.size)  # collective: the next units, played early

    @property
    def generation(self) -> int:
        """Generations evaluated so far (the index of the population evaluated next)."""
        return self.optimizer.generation

    def _episode(self, weights: list[np.ndarray], stream, activity=None) -> Episode:
        """An episode of network ``weights`` seeded from ``stream``, in a new env: Box2D envs
        carry state from one episode into the next, so reusing one would make the results
        depend on which units this rank happened to play before. ``activity`` (zeros,
        float64 (n_weights,), or None) gets each connection's mean Hebbian term per step."""
        game = Game(self._env, self.config["max_episode_steps"])
        act = lambda game: self._action(weights, game.obs, activity)  # noqa: E731
        return Episode(game, act, stream, activity)

    def _play(
        self, weights: list[np.ndarray], stream: np.random.Generator, activity=None
    ) -> tuple[float, int]:
        """Return and steps of :meth:`_episode`, played at once."""
        episode = self._episode(weights, stream, activity)
        while not episode.advance():
            pass
        return episode.result()[:2]

    def _stream(self, g: int, i: int, e: int, elite_of: np.ndarray) -> np.random.Generator:
        """Episode e of individual i of generation g: keyed on (g, i, e), or, for an
        unchanged elite, on (g, its index in generation g - 1, e), which is known before
        the generation's ranking is: so its episodes can be played ahead."""
        if elite_of[i] >= 0:
            return self._elite_stream(g, int(elite_of[i]), e)
        return rng.stream(self.config["seed"], rng.GA_EVALUATION, g, i, e)

    def _elite_stream(self, g: int, x: int, e: int) -> np.random.Generator:
        return rng.stream(self.config["seed"], rng.GA_ELITE_EVALUATION, g, x, e)

    def _fitness(self, unit_returns: np.ndarray, kept: np.ndarray) -> np.ndarray:
        """Each individual's fitness from its episodes' returns (P, E) and the fraction of
        connections it keeps: NaN rows stay NaN."""
        returns = unit_returns.sum(axis=1) / unit_returns.shape[1]
        return returns - self.config["complexity_weight"] * kept

    def _units(self, costs: np.ndarray):
        """This rank's units of work (indices into ``costs``), longest predicted first, each
        taken from a counter shared by all ranks when this rank is free: self-scheduling, so
        a rank that draws short episodes, or runs on a faster core, just plays more units.
        Which rank plays a unit never changes its result."""
        return schedule.self_scheduled(costs, self._counter)

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

    def step(self, log, start: float, minutes: float | None) -> tuple[dict, bool, dict]:
        """Evaluate the population, tell the optimizer; returns the row to log, the stop
        vote and this rank's seconds (see :class:`pgmpi.loop.Trainable`)."""
        opt = self.optimizer
        P = len(self.last_steps)
        E = self.config["episodes_per_individual"]
        U = P * E  # units of work: unit u = i * E + e is episode e of individual i
        me = mpi.rank()
        n = mpi.size()
        g = self.generation
        masks = opt.ask()
        kept = masks.sum(axis=1) / self.net.n_weights
        elite_of = np.where(opt.mutated, -1, opt.parents)  # unchanged elites' last index
        # Episodes end in a fall early or run long, and a long unit handed out last keeps
        # every other rank waiting: predict each unit's steps from last generation's.
        longest = self.unit_steps.max(axis=1)
        costs = np.repeat(schedule.predict(longest, opt.parents, opt.mutated), E)
        # One buffer: each unit's return, steps, seconds and player + 1 (each slot written by
        # one rank only, so the sum is exact), a stop vote, the units played ahead, every
        # rank's busy seconds, then for the signed genome each unit's W activities.
        W = self.net.n_weights if self.net.hebbian else 0
        A = 4 * U + 2 + n  # where the activities start
        buf = np.zeros(A + U * W)

        def record(u: int, result: tuple) -> None:
            buf[u], buf[U + u], buf[2 * U + u], activity = result
            buf[3 * U + u] = me + 1
            if W:
                buf[A + u * W : A + (u + 1) * W] = activity
            self._ahead.post(u, buf[u], g)

        t0 = time.perf_counter()
        for (x, e), result in self._ahead.collect(U):  # collective: units played ahead
            for i in np.flatnonzero(elite_of == x):
                record(int(i) * E + e, result)
                buf[4 * U + 1] += 1
        for u in self._units(costs):
            i, e = divmod(int(u), E)
            if elite_of[i] >= 0 and not self._ahead.claim(int(elite_of[i]) * E + e, g):
                continue  # played ahead, while the ranks waited at the last generation's end
            activity = np.zeros(W) if W else None
            t = time.perf_counter()
            stream = self._stream(g, i, e, elite_of)
            ret, steps = self._play(self.net.weights(masks[i]), stream, activity)
            record(int(u), (ret, steps, time.perf_counter() - t, activity))
        t1 = time.perf_counter()
        buf[4 * U] = minutes is not None and t1 - start >= 60 * minutes
        buf[4 * U + 2 + me] = t1 - t0
        # every unit's return and steps, stop votes, busy seconds; while the others finish,
        # this rank plays the next generation's episodes of the individuals sure to be elites
        mpi.allreduce_sum_(buf, meanwhile=lambda: self._play_ahead(g, masks, kept, E))
        t2 = time.perf_counter()
        unit_returns = buf[:U].reshape(P, E)
        self.unit_steps = buf[U : 2 * U].reshape(P, E).copy()
        self.unit_seconds = buf[2 * U : 3 * U].reshape(P, E).copy()
        self.unit_ranks = buf[3 * U : 4 * U].reshape(P, E).astype(np.int64) - 1
        returns = unit_returns.sum(axis=1) / E  # the same sums in the same order on every rank
        self.last_steps = self.unit_steps.sum(axis=1)
        fitness = self._fitness(unit_returns, kept)
        if not np.all(np.isfinite(fitness)):
            raise mpi.NonFiniteError(f"generation {g}: non-finite return (nothing was saved)")
        activity = None
        if W:  # each individual's mean over its episodes, in the same order on every rank
            activity = buf[A:].reshape(P, E, W).sum(axis=1) / E
        opt.tell(fitness, activity)
        busy = buf[4 * U + 2 : A]
        seconds = time.perf_counter() - t0
        steps = self.last_steps.sum()
        self.steps += int(steps)
        row = {
            "generation": g,
            "steps": self.steps,
            "charts/best_fitness": fitness.max(),
            "charts/mean_fitness": fitness.mean(),
            "charts/min_fitness": fitness.min(),
            "charts/elite_mean_fitness": np.sort(fitness)[::-1][: opt.n_elites].mean(),
            "charts/best_return": returns.max(),
            "charts/connections_kept": kept.mean(),
            "charts/mutation_rate": opt.mutation_rate,
            "perf/env_steps": int(steps),
            "perf/steps_per_s": steps / max(seconds, 1e-9),
            # the most idle rank's wait for the others (playing ahead in it counts as waiting)
            "perf/wait_s": busy.max() - busy.min(),
            "perf/units_played_ahead": int(buf[4 * U + 1]),
            "perf/allreduce_s": t2 - t1,
            "time/generation_s": seconds,
            "time/elapsed_s": time.perf_counter() - start,
        }
        mine = dict(start_s=t0 - start, play_s=t1 - t0, grad_s=0.0, allreduce_s=t2 - t1)
        # float64 values are floats: fine for CSV and JSON
        return row, bool(buf[4 * U]), dict(mine, total_s=seconds)

    def _play_ahead(self, g: int, masks: np.ndarray, kept: np.ndarray, E: int) -> bool:
        """Work for a rank waiting at generation g's end (:meth:`pgmpi.ahead.Ahead.play`):
        the next generation's episodes of the individuals sure to be elites, given the
        returns posted so far. Whether it did anything."""
        n_elites = self.optimizer.n_elites
        sure = lambda returns: schedule.sure_elites(self._fitness(returns, kept), n_elites)  # noqa: E731

        def episode(x: int, e: int) -> Episode:
            activity = np.zeros(self.net.n_weights) if self.net.hebbian else None
            weights = self.net.weights(masks[x])
            return self._episode(weights, self._elite_stream(g + 1, x, e), activity)

        return self._ahead.play(g, E, sure, episode, len(masks) * E)

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

    def header(self) -> str:
        net = self.net
        genome = f"genome {self.config['genome']} ({net.description})"
        return f"{genome}, layers {net.sizes}, {net.n_weights} connections"

    def units(self) -> tuple[int, str, str]:
        P, E = self.config["population_size"], self.config["episodes_per_individual"]
        return (
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

    def evaluate(self, episodes: int = 10, mask: np.ndarray | None = None) -> rollout.Evaluation:
        """Mean return of ``mask`` (default: the best ever, or before any generation the first
        individual) over ``episodes`` new episodes shared out over ranks, as an
        :class:`~pgmpi.rollout.Evaluation`: a float with its 95% confidence interval.

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
        returns = rollout.evaluation_returns(
            episodes,
            self.config["seed"],
            self.evaluations,
            lambda streams: [self._play(weights, stream)[0] for stream in streams],
        )
        return rollout.Evaluation(returns, label)

    def save(self, path: str | Path) -> Path:
        """Write the population, best mask (and its activity for the signed genome), rate and
        history to ``path`` (atomically, by the root); the signed weights are re-drawn from
        the seed on load. Collective: every rank must call this."""
        arrays = dict(
            self.optimizer.state(), last_steps=self.last_steps, unit_steps=self.unit_steps
        )
        counters = dict(generation=self.generation, steps=self.steps, evaluations=self.evaluations)
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
                agent.unit_steps = arrays["unit_steps"].reshape(agent.unit_steps.shape).copy()
            agent.steps = meta["steps"]
            agent.evaluations = meta["evaluations"]
        return agent
