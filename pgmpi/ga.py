"""PrunedGA: learning by pruning connections ("synaptolysis"), a genetic algorithm over MPI ranks.

The algorithm is the pruneable agent of Rive Sunder's synaptolytic-learning project
(github.com/riveSunder/synaptolytic-learning, 2019): a genome is a feed-forward network whose
weights start as all ones, and learning only removes connections (see PruningOptimizer).

There is no coordinator: every rank runs the same selection and mutation from the same random
stream, so all ranks hold the same population without sending any network. Each rank plays its
share of individuals, and one Allreduce per generation sums a buffer in which each individual's
mean return and step count has exactly one non-zero contributor, so the sum is exact.
Individual i of generation g plays episodes seeded from the stream keyed on (seed, g, i),
whichever rank plays it, so a seed gives the same results, bit for bit, on any number of
ranks. Episode lengths vary a lot, so individuals are shared out longest-first, each costed
at its parent's step count in the previous generation (which never changes the results).
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from pgmpi import checkpoint, mpi, rng, threads
from pgmpi.config import first_problem
from pgmpi.envs import make_gym
from pgmpi.logger import Logger
from pgmpi.networks import PrunedNetwork
from pgmpi.version import __version__

MUTATION_RATE_RANGE = (0.001, 0.125)  # clip range of the adaptive rate, as in the original


def _real(x) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(x)


def _int(x) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def balance(costs: np.ndarray, n_ranks: int) -> np.ndarray:
    """Longest-processing-time-first: int64 (P,) owner rank of each of P individuals.

    In order of decreasing cost (ties: lower index first) each individual goes to the rank
    with the least total cost so far (ties: lower rank). Deterministic, so every rank computes
    the same assignment from the same float64 ``costs`` without communicating.
    """
    owner, load = np.empty(len(costs), dtype=np.int64), np.zeros(n_ranks)
    for i in np.lexsort((np.arange(len(costs)), -np.asarray(costs, dtype=np.float64))):
        owner[i] = r = int(np.argmin(load))
        load[r] += costs[i]
    return owner


class PruningOptimizer:
    """Synaptolysis as a pure-numpy ``ask()`` / ``tell(fitness)`` optimizer over boolean masks.

    Generation 0 is all ones, each connection then pruned with probability ``prune_rate``.
    ``tell`` ranks the population by fitness (higher is better; ties: lower index first). The
    elites are the top k = ceil(elite_fraction * P), preceded by the best individual ever seen
    if it is not of this generation. The next population is the elites unchanged, then
    P - len(elites) children: a copy of elite j (0 = best), picked with probability
    proportional to len(elites) - j, each of whose connections is then pruned with probability
    ``mutation_rate = clip(sqrt(mean((c_elites - mean(c))**2)) / mean(c), *MUTATION_RATE_RANGE)``
    (c: connection counts of the population just told; c_elites: of its elites). Population g
    is drawn from ``rng.stream(seed, rng.GA_SELECTION, g)``.

    Args:
        n_weights: W, connections per genome.
        population_size: P >= 2.
        elite_fraction: share kept as elites, in (0, 1), with ceil(fraction * P) < P.
        prune_rate: pruning probability of generation 0 (0.25 in the original), in [0, 1).
        seed: root seed of the run.

    Attributes:
        population: bool (P, W), the masks of generation ``generation``.
        parents: int64 (P,), each individual's parent in the previous population (-1 for the
            best ever carried over from an earlier generation, and in generation 0).
        mutation_rate: the rate that made the current children (``prune_rate`` at first).
        best_mask, best_fitness: bool (W,) and float, the best ever (-inf before any tell).
        fitness_history: one float64 (P,) array per generation told.
    """

    def __init__(
        self,
        n_weights: int,
        *,
        population_size: int,
        elite_fraction: float = 0.125,
        prune_rate: float = 0.25,
        seed: int = 0,
    ):
        problem = self.check(population_size, elite_fraction, prune_rate, seed)
        if problem is not None:
            raise ValueError(problem)
        self.seed, self.n_elites = seed, math.ceil(elite_fraction * population_size - 1e-9)
        self.generation, self.mutation_rate = 0, float(prune_rate)
        stream = rng.stream(seed, rng.GA_SELECTION, 0)
        self.population = stream.random((population_size, n_weights)) >= prune_rate
        self.parents = np.full(population_size, -1, dtype=np.int64)
        self.best_mask, self.best_fitness = np.zeros(n_weights, dtype=bool), -np.inf
        self.fitness_history: list[np.ndarray] = []

    @staticmethod
    def check(population_size, elite_fraction, prune_rate, seed) -> str | None:
        """The first problem with these arguments, or None."""
        P, f, r = population_size, elite_fraction, prune_rate
        ok_p, ok_f = _int(P) and P >= 2, _real(f) and 0 < f < 1
        child = f"small enough to leave a child in a population of {P}"
        return first_problem(
            [
                (ok_p, "population_size", P, "an int >= 2"),
                (ok_f, "elite_fraction", f, "in (0, 1)"),
                (not (ok_p and ok_f) or math.ceil(f * P - 1e-9) < P, "elite_fraction", f, child),
                (_real(r) and 0 <= r < 1, "prune_rate", r, "in [0, 1)"),
                (_int(seed) and seed >= 0, "seed", seed, "an int >= 0"),
            ]
        )

    def ask(self) -> np.ndarray:
        """The masks to evaluate: bool (P, W), read-only."""
        view = self.population.view()
        view.flags.writeable = False
        return view

    def tell(self, fitness: np.ndarray) -> None:
        """Select and mutate from ``fitness``: float64 (P,), one value per row of ``ask()``."""
        f, P = np.asarray(fitness, dtype=np.float64), len(self.population)
        if f.shape != (P,) or not np.all(np.isfinite(f)):
            raise ValueError(f"fitness must be {P} finite values, got {f.shape} {f[:3]}...")
        self.fitness_history.append(f.copy())
        order = np.lexsort((np.arange(P), -f))[: self.n_elites]
        elites, sources = self.population[order], order
        if f[order[0]] > self.best_fitness:
            self.best_mask, self.best_fitness = self.population[order[0]].copy(), float(f[order[0]])
        else:  # the best ever is from an earlier generation: it leads the elites
            elites = np.concatenate([self.best_mask[None], elites])
            sources = np.concatenate([[-1], order])
        c = self.population.sum(axis=1, dtype=np.float64)
        spread = np.sqrt(np.mean((elites.sum(axis=1) - c.mean()) ** 2))
        rate = spread / c.mean() if c.mean() > 0 else 0.0
        self.mutation_rate = float(np.clip(rate, *MUTATION_RATE_RANGE))
        self.generation += 1
        stream, n = rng.stream(self.seed, rng.GA_SELECTION, self.generation), len(elites)
        pick = stream.choice(n, size=P - n, p=np.arange(n, 0, -1) / (n * (n + 1) / 2))
        keep = stream.random((P - n, self.population.shape[1])) >= self.mutation_rate
        self.population = np.concatenate([elites, elites[pick] & keep])
        self.parents = np.concatenate([sources, sources[pick]])

    def result(self) -> tuple[np.ndarray, float]:
        """(best mask ever seen, bool (W,); its fitness)."""
        return self.best_mask.copy(), self.best_fitness

    def state(self) -> dict[str, np.ndarray]:
        """Everything ``tell`` depends on, as named arrays (for checkpoints)."""
        history = np.array(self.fitness_history).reshape(-1, len(self.population))
        return dict(
            population=self.population,
            parents=self.parents,
            best_mask=self.best_mask,
            best_fitness=np.float64(self.best_fitness),
            mutation_rate=np.float64(self.mutation_rate),
            fitness_history=history,
        )

    def set_state(self, arrays: dict[str, np.ndarray]) -> None:
        """Restore what ``state`` returned; the generation is the length of the history."""
        self.population, self.parents = arrays["population"].copy(), arrays["parents"].copy()
        self.best_mask, self.best_fitness = (
            arrays["best_mask"].copy(),
            float(arrays["best_fitness"]),
        )
        self.mutation_rate = float(arrays["mutation_rate"])
        self.fitness_history = list(arrays["fitness_history"])
        self.generation = len(self.fitness_history)


class PrunedGA:
    """Synaptolysis over MPI ranks; every rank must construct it with the same arguments.

    Fitness is the mean return over ``episodes_per_individual`` episodes minus
    ``complexity_weight`` times the fraction of connections kept.

    Args:
        env: a gymnasium env id, or a zero-argument function returning an env, with a 1-D box
            observation and a discrete action space (argmax output) or a bounded 1-D box one
            (tanh output, stretched onto the bounds unless they are [-1, 1]). A new env is
            made for each individual.
        hidden_sizes: units of each tanh hidden layer ([32] in the original).
        population_size: individuals per generation.
        episodes_per_individual: episodes averaged into each fitness (8 in the original).
        elite_fraction: share of a generation kept unchanged (0.125).
        prune_rate: pruning probability of generation 0 (0.25); later rates adapt.
        complexity_weight: weight of the connections-kept penalty (1 in the original).
        seed: root seed of every random stream in the run.
        log_dir: folder for ``progress.csv``; None to print only.
        blas_threads: BLAS threads per rank; None means cores per node / ranks per node.
        quiet: print nothing (the CSV is still written).

    Attributes:
        optimizer: the :class:`PruningOptimizer`, identical on every rank.
        net: the :class:`~pgmpi.networks.PrunedNetwork` layer layout.

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
        hidden_sizes: tuple[int, ...] | list[int] = (32,),
        population_size: int = 128,
        episodes_per_individual: int = 8,
        elite_fraction: float = 0.125,
        prune_rate: float = 0.25,
        complexity_weight: float = 1.0,
        seed: int = 0,
        log_dir: str | Path | None = None,
        blas_threads: int | None = None,
        quiet: bool = False,
    ):
        h, E, w, b = hidden_sizes, episodes_per_individual, complexity_weight, blas_threads
        ok_h = isinstance(h, (list, tuple)) and all(_int(x) and x >= 1 for x in h)
        problem = PruningOptimizer.check(population_size, elite_fraction, prune_rate, seed)
        problem = problem or first_problem(
            [
                (ok_h, "hidden_sizes", h, "a list of ints >= 1"),
                (_int(E) and E >= 1, "episodes_per_individual", E, "an int >= 1"),
                (_real(w) and w >= 0, "complexity_weight", w, "a number >= 0"),
                (b is None or (_int(b) and b >= 1), "blas_threads", b, "None or an int >= 1"),
            ]
        )
        name = env if isinstance(env, str) else "custom"
        if problem is None:
            try:
                name, sizes = self._spaces(env)
            except Exception as e:  # any failure to make the env is the user's input
                problem = f"cannot make env {env!r}: {type(e).__name__}: {e}"
        self.config = dict(
            env=name,
            hidden_sizes=list(h) if ok_h else h,
            population_size=population_size,
            episodes_per_individual=E,
            elite_fraction=elite_fraction,
            prune_rate=prune_rate,
            complexity_weight=w,
            seed=seed,
        )
        mpi.agree(dict(self.config, version=__version__, numpy=np.__version__), problem)
        self.log_dir, self.quiet, self._env = log_dir, quiet, env
        self.blas = threads.cap_blas_threads(blas_threads)
        self.net = PrunedNetwork((sizes[0], *h, sizes[1]), discrete=sizes[2])
        self._bounds = sizes[3]
        self.optimizer = PruningOptimizer(
            self.net.n_weights, population_size=population_size, elite_fraction=elite_fraction,
            prune_rate=prune_rate, seed=seed,
        )  # fmt: skip
        self.steps, self._evaluations = 0, 0
        self.last_steps = np.zeros(population_size)  # each individual's steps, last generation

    @staticmethod
    def _spaces(env):
        """(env id, (n_inputs, n_outputs, discrete, None or the (low, high) to stretch onto))."""
        import gymnasium as gym

        e = make_gym(env)
        e.close()
        name = env if isinstance(env, str) else getattr(e.spec, "id", "custom")
        obs, act = e.observation_space, e.action_space
        if not (isinstance(obs, gym.spaces.Box) and len(obs.shape) == 1):
            raise ValueError(f"observation space {obs} is not a 1-D Box")
        if isinstance(act, gym.spaces.Discrete):
            return name, (obs.shape[0], int(act.n), True, None)
        if not (isinstance(act, gym.spaces.Box) and len(act.shape) == 1 and act.is_bounded()):
            raise ValueError(f"action space {act} is neither Discrete nor a bounded 1-D Box")
        unit = np.all(act.low == -1) and np.all(act.high == 1)
        return name, (obs.shape[0], act.shape[0], False, None if unit else (act.low, act.high))

    @property
    def generation(self) -> int:
        """Generations evaluated so far (the index of the population evaluated next)."""
        return self.optimizer.generation

    def _play(self, weights: list[np.ndarray], stream: np.random.Generator, episodes: int):
        """Total return and steps of ``episodes`` episodes seeded from ``stream``, in a new env:
        Box2D envs carry state from one episode into the next, so reusing one would make the
        results depend on which individuals this rank happened to play before."""
        env, total, steps, act = make_gym(self._env), 0.0, 0, self.net.act
        for _ in range(episodes):
            obs, _ = env.reset(seed=rng.env_seed(stream))
            done = False
            while not done:
                a = act(weights, obs)
                if self._bounds is not None:  # tanh's (-1, 1) stretched onto the env's bounds
                    a = self._bounds[0] + (a + 1) * (self._bounds[1] - self._bounds[0]) / 2
                obs, r, terminated, truncated, _ = env.step(a)
                total, steps, done = total + float(r), steps + 1, terminated or truncated
        env.close()
        return total, steps

    def _generation(self, start: float, minutes: float | None) -> tuple[dict, bool]:
        """Evaluate the population, tell the optimizer; returns (log row, stop vote)."""
        opt, P, E = self.optimizer, len(self.last_steps), self.config["episodes_per_individual"]
        me, n, g, masks = mpi.rank(), mpi.size(), self.generation, opt.ask()
        parent_steps = self.last_steps[np.maximum(opt.parents, 0)]
        costs = np.where(opt.parents >= 0, parent_steps, self.last_steps.mean()) + 1.0
        # One buffer: each individual's mean return and steps (each slot written by one rank
        # only, so the sum is exact), a stop vote, then every rank's evaluation seconds.
        buf = np.zeros(2 * P + 1 + n)
        t0 = time.perf_counter()
        for i in np.flatnonzero(balance(costs, n) == me):
            stream = rng.stream(self.config["seed"], rng.GA_EVALUATION, g, i)
            total, buf[P + i] = self._play(self.net.weights(masks[i]), stream, E)
            buf[i] = total / E
        t1 = time.perf_counter()
        buf[2 * P] = minutes is not None and t1 - start >= 60 * minutes
        buf[2 * P + 1 + me] = t1 - t0
        mpi.allreduce_sum_(buf)  # every return and step count, stop votes, busy seconds
        t2 = time.perf_counter()
        returns, self.last_steps = buf[:P].copy(), buf[P : 2 * P].copy()
        kept = masks.sum(axis=1) / self.net.n_weights
        fitness = returns - self.config["complexity_weight"] * kept
        if not np.all(np.isfinite(fitness)):
            raise mpi.NonFiniteError(f"generation {g}: non-finite return (nothing was saved)")
        opt.tell(fitness)
        busy, seconds, steps = buf[2 * P + 1 :], time.perf_counter() - t0, self.last_steps.sum()
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
            "perf/wait_s": busy.max() - busy.min(),  # the most idle rank's wait for the others
            "perf/allreduce_s": t2 - t1,
            "time/generation_s": seconds,
            "time/elapsed_s": time.perf_counter() - start,
        }
        return row, bool(buf[2 * P])  # float64 values are floats: fine for CSV and JSON

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
            minutes: stop after the first generation that ends this many minutes after the call.
            target_return: stop once an individual's mean return reaches this.
            checkpoint_path: save here every ``checkpoint_every`` generations and at the end.
            callback: called on every rank after every generation with the logged row.

        With no limit at all, trains until interrupted. Collective: every rank must call this.
        """
        if not (_int(checkpoint_every) and checkpoint_every >= 1):  # the same on every rank
            raise mpi.ConfigError(f"checkpoint_every must be an int >= 1, got {checkpoint_every!r}")
        log, start = self._logger(), time.perf_counter()
        if generations is None and minutes is None and target_return is None:
            log.print("no limit given: training until interrupted")
        while generations is None or self.generation < generations:
            row, stop = self._generation(start, minutes)
            log.log(row, self._log_line(row))
            if callback is not None:
                callback(row)
            stop = stop or (
                target_return is not None and row["charts/best_return"] >= target_return
            )
            last = stop or self.generation == generations
            if checkpoint_path is not None and (last or self.generation % checkpoint_every == 0):
                self.save(checkpoint_path)
            if stop:
                break
        return self

    @staticmethod
    def _log_line(r: dict) -> str:
        return (
            f"gen {r['generation']:5d} | fitness best {r['charts/best_fitness']:8.2f} "
            f"mean {r['charts/mean_fitness']:8.2f} min {r['charts/min_fitness']:8.2f} "
            f"elite {r['charts/elite_mean_fitness']:8.2f} | kept {r['charts/connections_kept']:.3f}"
            f" | rate {r['charts/mutation_rate']:.4f} | steps {r['perf/env_steps']:8d} "
            f"{r['perf/steps_per_s']:6.0f}/s | {r['time/generation_s']:6.2f} s "
            f"(wait {r['perf/wait_s']:5.2f} s)"
        )

    def _logger(self) -> Logger:
        if not hasattr(self, "_log"):
            self._log = Logger(self.log_dir, resume=self.generation > 0, quiet=self.quiet)
            self._log.truncate(self.generation)
            b = self.blas
            self._log.print(
                f"pgmpi {__version__} PrunedGA | env {self.config['env']} | ranks {mpi.size()}"
                f" | {mpi.library_version()} | BLAS {b['blas']}, {b['threads']} thread(s)/rank"
                f" | layers {self.net.sizes}, {self.net.n_weights} connections"
                f" | generation {self.generation}"
            )
        return self._log

    def evaluate(self, episodes: int = 10, mask: np.ndarray | None = None) -> float:
        """Mean return of ``mask`` (default: the best ever, or before any generation the first
        individual) over ``episodes`` new episodes shared out over ranks.

        Collective: every rank must call this.
        """
        self._evaluations += 1
        if mask is None:
            told = self.optimizer.best_fitness > -np.inf
            mask = self.optimizer.best_mask if told else self.optimizer.population[0]
        weights, returns = self.net.weights(np.asarray(mask, dtype=bool)), np.zeros(episodes)
        for e in range(mpi.rank(), episodes, mpi.size()):
            stream = rng.stream(self.config["seed"], rng.EVALUATE, self._evaluations, e)
            returns[e] = self._play(weights, stream, 1)[0]
        return float(mpi.allreduce_sum_(returns).mean())  # each return lives on one rank

    def save(self, path: str | Path) -> Path:
        """Write the population, best mask, rate and history to ``path`` (root only, atomic)."""
        meta = dict(algorithm=self.algorithm, version=__version__, config=self.config)
        meta.update(generation=self.generation, steps=self.steps, evaluations=self._evaluations)
        return checkpoint.save(path, dict(self.optimizer.state(), last_steps=self.last_steps), meta)

    @classmethod
    def load(cls, path: str | Path, **overrides) -> PrunedGA:
        """A PrunedGA restored from ``path``; training on gives what an uninterrupted run gives.

        ``overrides`` may replace ``env`` (needed if it was a factory), ``log_dir``,
        ``blas_threads`` and ``quiet``. Collective: every rank must call this.
        """
        arrays, meta = checkpoint.load(path, cls.algorithm)
        allowed = {"env", "log_dir", "blas_threads", "quiet"}
        if set(overrides) - allowed:
            raise mpi.ConfigError(f"load() cannot override {sorted(set(overrides) - allowed)}")
        agent = cls(**dict(meta["config"], **overrides))
        have, want = arrays["population"].shape, agent.optimizer.population.shape
        problem = f"checkpoint {str(path)!r}: population {have}, settings make {want}"
        mpi.agree({}, None if have == want else problem)
        agent.optimizer.set_state(arrays)
        agent.last_steps = arrays["last_steps"].copy()
        agent.steps, agent._evaluations = meta["steps"], meta["evaluations"]
        return agent
