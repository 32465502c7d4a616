"""Optimizers, in pure numpy: they do not know where gradients or fitness come from.

* :class:`RMSProp` as in Karpathy's "Pong from Pixels" (after Tieleman & Hinton, 2012,
  lecture 6.5): ``cache = decay * cache + (1 - decay) * g**2``;
  ``params += lr * g / (sqrt(cache) + eps)``. It *ascends*: ``g`` is the gradient of the
  expected return.
* :class:`Adam` (Kingma & Ba, 2015) with bias correction, also ascending: ``step(params, grad)``.
* :class:`PruningOptimizer`: synaptolysis (Rive Sunder's synaptolytic-learning project,
  2019) behind estool's ``ask()`` / ``tell(fitness)``: selection and mutation of boolean
  connection masks that only ever lose connections, the less active ones more often when
  told their Hebbian activity (:func:`hebbian_prune_probabilities`).
"""

from __future__ import annotations

import math

import numpy as np

from pgmpi import rng
from pgmpi.config import GAConfig
from pgmpi.settings import at_least, pruning_problem

MUTATION_RATE_RANGE = (0.001, 0.125)  # clip range of the adaptive rate, as in the original
CHUNK = 1 << 16  # elements per pass of a step: its temporaries stay in the CPU's cache


def chunks(n: int):
    """Slices of ``range(n)``, ``CHUNK`` long. A step is elementwise, so taking it a chunk at
    a time gives the same bits as on the whole vector, without whole-vector temporaries."""
    return (slice(i, i + CHUNK) for i in range(0, n, CHUNK))


class RMSProp:
    """RMSProp ascent on one flat vector, state in one flat ``cache`` of the same shape."""

    def __init__(
        self, n: int, learning_rate: float | None = None, decay_rate: float = 0.99, eps=1e-5
    ):
        self.learning_rate = learning_rate
        self.decay_rate = decay_rate
        self.eps = eps
        self.cache = np.zeros(n, dtype=np.float32)

    def step(self, params: np.ndarray, grad: np.ndarray, learning_rate: float | None = None):
        """Update ``params`` in place with ``grad`` (both float32, same shape as ``cache``),
        by ``learning_rate`` (default: the one given at construction)."""
        lr = self.learning_rate if learning_rate is None else learning_rate
        for part in chunks(len(params)):
            cache, g = self.cache[part], grad[part]
            cache *= self.decay_rate
            cache += (1.0 - self.decay_rate) * np.square(g)
            params[part] += lr * g / (np.sqrt(cache) + self.eps)

    def state(self) -> dict[str, np.ndarray]:
        """The arrays a checkpoint needs to resume exactly."""
        return {"rmsprop_cache": self.cache}

    def set_state(self, arrays: dict[str, np.ndarray]) -> None:
        """Restore what :meth:`state` returned."""
        self.cache[:] = arrays["rmsprop_cache"]


class Adam:
    """Adam ascent on one flat vector; state ``m``, ``v`` (flat, float32) and the step count."""

    def __init__(
        self,
        n: int,
        learning_rate: float | None = None,
        beta1: float = 0.9,
        beta2: float = 0.999,
        eps=1e-8,
    ):
        self.learning_rate = learning_rate
        self.beta1 = beta1
        self.beta2 = beta2
        self.eps = eps
        self.m, self.v, self.t = np.zeros(n, np.float32), np.zeros(n, np.float32), 0

    def step(self, params: np.ndarray, grad: np.ndarray, learning_rate: float | None = None):
        """Update ``params`` in place with ``grad`` (both float32, same shape as ``m``), by
        ``learning_rate`` (default: the one given at construction)."""
        self.t += 1
        lr = self.learning_rate if learning_rate is None else learning_rate
        lr = lr * math.sqrt(1.0 - self.beta2**self.t) / (1.0 - self.beta1**self.t)
        for part in chunks(len(params)):
            m, v, g = self.m[part], self.v[part], grad[part]
            m *= self.beta1
            m += (1.0 - self.beta1) * g
            v *= self.beta2
            v += (1.0 - self.beta2) * np.square(g)
            params[part] += np.float32(lr) * m / (np.sqrt(v) + np.float32(self.eps))

    def state(self) -> dict[str, np.ndarray]:
        """The arrays a checkpoint needs to resume exactly."""
        return {"adam_m": self.m, "adam_v": self.v, "adam_t": np.array([self.t])}

    def set_state(self, arrays: dict[str, np.ndarray]) -> None:
        """Restore what :meth:`state` returned."""
        self.m[:], self.v[:], self.t = arrays["adam_m"], arrays["adam_v"], int(arrays["adam_t"][0])


def elite_count(population_size: int, elite_fraction: float) -> int:
    """How many of a generation :class:`PruningOptimizer` keeps as elites: ceil(fraction x P)
    (the best ever, when of an earlier generation, leads them as one more)."""
    return math.ceil(elite_fraction * population_size - 1e-9)


def hebbian_prune_probabilities(
    masks: np.ndarray, activity: np.ndarray, mutation_rate: float
) -> np.ndarray:
    """Each connection's probability of being pruned in a child of each parent.

    For parent j, live connection c weighs ``w_c = 1 / (1 + a_c / mean(a over live))`` and is
    pruned with probability ``min(1, mutation_rate * w_c / mean(w over live))``: a
    connection of average activity weighs 1/2, an idle one 1 and a busy one towards 0, and
    the expected number pruned stays ``mutation_rate`` times the live ones (but for the
    clip). With no activity at all every live connection is pruned with ``mutation_rate``.
    Only + - * / feed the result, whose bits then do not depend on the host's maths
    library: every rank selects alike.

    Args:
        masks: bool (n, W), the parents' masks.
        activity: float64 (n, W) >= 0, their connections' activity (dead ones are ignored).
        mutation_rate: the mean pruning probability of a live connection.

    Returns:
        float64 (n, W); 0 for dead connections.
    """
    out = np.zeros(masks.shape)
    for j in range(len(masks)):
        live = masks[j]
        if not live.any():
            continue
        a = activity[j][live]
        mean = a.mean()
        w = 1.0 / (1.0 + a / mean) if mean > 0 else np.ones(len(a))
        out[j, live] = np.minimum(1.0, mutation_rate * w / w.mean())
    return out


class PruningOptimizer:
    """Synaptolysis as a pure-numpy ``ask()`` / ``tell(fitness)`` optimizer over boolean masks.

    Generation 0 is all ones, each connection then pruned with probability ``prune_rate``.
    ``tell`` ranks the population by fitness (higher is better; ties: lower index first). The
    elites are the top k = ceil(elite_fraction * P), preceded by the best individual ever seen
    if it is not of this generation. The next population is the elites unchanged, then
    P - len(elites) children: a copy of elite j (0 = best), picked with probability
    proportional to len(elites) - j, each of whose connections is then pruned with probability
    ``mutation_rate = clip(sqrt(mean((c_elites - mean(c))**2)) / mean(c), *MUTATION_RATE_RANGE)``
    (c: connection counts of the population just told; c_elites: of its elites; or the
    fixed ``mutation_rate`` given), or, when ``tell`` is given the connections' activity,
    with the elite's :func:`hebbian_prune_probabilities` (whose mean is that rate).
    Population g is drawn from ``rng.stream(seed, rng.GA_SELECTION, g)``, the same numbers
    either way.

    The best so far is row 0 of every population after generation 0, so it is played again
    each generation, keeping the best fitness it ever got. With ``elite_averaging`` the
    ranking is by :meth:`ranked`, an unchanged elite's mean fitness over the generations it
    has played, and the best is the top of each ranking, never carried over; with
    ``best_min_count`` M > 1 it is the top-ranked elite that has played M generations (this
    one included), else the first ranked of those that have played the most. Selection is
    the same either way: a lucky child leads it, but is not called the best.

    With ``crossover`` X > 0, a child is made from two elites with probability X: a mate
    picked as its parent is, each unit (``units``: the unit each connection enters) takes its
    incoming connections and their pruning probabilities from one of the two (a coin each);
    ``parents`` names the first. Drawn last, so X = 0 draws the same numbers.

    Args:
        n_weights: W, connections per genome.
        population_size: P >= 2.
        elite_fraction: share kept as elites, in (0, 1), with ceil(fraction * P) < P.
        prune_rate: pruning probability of generation 0 (0.25 in the original), in [0, 1).
        mutation_rate: None (the adaptive rate above), or every later generation's, in [0, 1).
        elite_averaging, best_min_count, crossover (in [0, 1]): as above.
        units: int (W,), the unit each connection enters; needed when ``crossover`` > 0.
        seed: root seed of the run.

    Attributes:
        population: bool (P, W), the masks of generation ``generation``.
        parents: int64 (P,), each individual's parent in the previous population (-1 for the
            best ever carried over from an earlier generation, and in generation 0).
        mutation_rate: the rate that made the current children (``prune_rate`` at first).
        best_mask, best_fitness: bool (W,) and float, the best ever (-inf before any tell;
            with ``elite_averaging``, the top of the ranking last told).
        best_activity: float64 (W,), the best ever's activity, or None if never told one.
        fitness_history: one float64 (P,) array per generation told (as told, not averaged).
        earlier_sum, earlier_count: float64 (P,), with ``elite_averaging``: each one's fitness
            summed over the generations it played before this one, and their number.
    """

    def __init__(
        self,
        n_weights: int,
        *,
        population_size: int,
        elite_fraction: float = GAConfig.elite_fraction,
        prune_rate: float = GAConfig.prune_rate,
        mutation_rate: float | None = None,
        elite_averaging: bool = False,
        best_min_count: int = 1,
        crossover: float = 0.0,
        units: np.ndarray | None = None,
        seed: int = 0,
    ):
        problem = pruning_problem(population_size, elite_fraction, prune_rate, seed,
                                  mutation_rate, elite_averaging)  # fmt: skip
        if problem is None and not at_least(best_min_count, 1):
            problem = f"best_min_count must be an int >= 1, got {best_min_count!r}"
        if problem is None and not (0 <= crossover <= 1):
            problem = f"crossover must be in [0, 1], got {crossover!r}"
        if problem is None and crossover > 0 and (units is None or len(units) != n_weights):
            problem = f"crossover needs units, one per connection ({n_weights})"
        if problem is not None:
            raise ValueError(problem)
        self.best_min_count = best_min_count
        self.crossover = crossover
        self.units = None if units is None else np.asarray(units, dtype=np.int64)
        self.seed, self.fixed_rate, self.elite_averaging = seed, mutation_rate, elite_averaging
        self.earlier_sum, self.earlier_count = np.zeros(population_size), np.zeros(population_size)
        self.n_elites = elite_count(population_size, elite_fraction)
        self.generation = 0
        self.mutation_rate = float(prune_rate)
        stream = rng.stream(seed, rng.GA_SELECTION, 0)
        self.population = stream.random((population_size, n_weights)) >= prune_rate
        self.parents = np.full(population_size, -1, dtype=np.int64)
        self.best_mask, self.best_fitness = np.zeros(n_weights, dtype=bool), -np.inf
        self.best_activity: np.ndarray | None = None
        self.fitness_history: list[np.ndarray] = []

    def ask(self) -> np.ndarray:
        """The masks to evaluate: bool (P, W), read-only."""
        view = self.population.view()
        view.flags.writeable = False
        return view

    def ranked(self, fitness: np.ndarray) -> np.ndarray:
        """What ``tell`` ranks ``fitness`` (P,) by: with ``elite_averaging`` each individual's
        mean over this generation and the earlier ones it played (NaN stays NaN), else
        ``fitness`` itself."""
        if not self.elite_averaging:
            return fitness
        return (self.earlier_sum + fitness) / (self.earlier_count + 1)

    def tell(self, fitness: np.ndarray, activity: np.ndarray | None = None) -> bool:
        """Select and mutate from ``fitness``, float64 (P,), one per row of ``ask()``, and
        ``activity``: None (prune uniformly) or float64 (P, W) >= 0, each one's Hebbian
        activity per connection (a child prunes its parent's less active ones more often; a
        best ever with none known, uniformly). Returns whether one became the best ever (with
        ``elite_averaging``: whether a network other than the best took the lead)."""
        f = np.asarray(fitness, dtype=np.float64)
        P, W = self.population.shape
        if f.shape != (P,) or not np.all(np.isfinite(f)):
            raise ValueError(f"fitness must be {P} finite values, got {f.shape} {f[:3]}...")
        a = None if activity is None else np.asarray(activity, dtype=np.float64)
        if a is not None and (a.shape != (P, W) or not np.all(np.isfinite(a) & (a >= 0))):
            raise ValueError(f"activity must be ({P}, {W}) finite values >= 0, got {a.shape}")
        self.fitness_history.append(f.copy())
        told, f = f, self.ranked(f)
        order = np.lexsort((np.arange(P), -f))[: self.n_elites]
        elites = self.population[order]
        sources = order
        elite_activity = None if a is None else a[order]
        again = self.generation > 0 and self.elite_averaging
        top = order[0]
        if self.elite_averaging and self.best_min_count > 1:  # the best: on enough evidence
            played = self.earlier_count[order] + 1  # generations each elite has played
            sure = np.flatnonzero(played >= self.best_min_count)
            top = order[sure[0]] if len(sure) else order[np.argmax(played)]
        improved = bool(f[top] > self.best_fitness)
        if again:  # a new best is another network, whatever its fitness
            improved = not np.array_equal(self.population[top], self.best_mask)
        if improved or again:  # the top leads, with this generation's fitness
            self.best_mask, self.best_fitness = self.population[top].copy(), float(f[top])
            if a is not None:
                self.best_activity = a[top].copy()
        else:  # the best ever is from an earlier generation: it leads the elites
            elites = np.concatenate([self.best_mask[None], elites])
            sources = np.concatenate([[-1], order])
            if a is not None:
                best = np.zeros(W) if self.best_activity is None else self.best_activity
                elite_activity = np.concatenate([best[None], elite_activity])
        c = self.population.sum(axis=1, dtype=np.float64)
        spread = np.sqrt(np.mean((elites.sum(axis=1) - c.mean()) ** 2))
        rate = spread / c.mean() if c.mean() > 0 else 0.0
        rate = np.clip(rate, *MUTATION_RATE_RANGE) if self.fixed_rate is None else self.fixed_rate
        self.mutation_rate = float(rate)
        self.generation += 1
        stream = rng.stream(self.seed, rng.GA_SELECTION, self.generation)
        n = len(elites)
        by_rank = np.arange(n, 0, -1) / (n * (n + 1) / 2)  # elite j picked in proportion to n - j
        pick = stream.choice(n, size=P - n, p=by_rank)
        draws = stream.random((P - n, W))
        from_mate = None  # (P - n, W): which of a child's connections its mate gives
        if self.crossover > 0:  # drawn last: without crossover, the same numbers
            mates = stream.choice(n, size=P - n, p=by_rank)
            crossed = stream.random(P - n) < self.crossover
            coins = stream.random((P - n, int(self.units.max()) + 1)) < 0.5  # one a unit
            from_mate = crossed[:, None] & coins[:, self.units]

        def inherit(rows):  # each child's row, from its parent (or its mate, connection-wise)
            return rows[pick] if from_mate is None else np.where(from_mate, rows[mates], rows[pick])

        if a is None:
            keep = draws >= self.mutation_rate
        else:
            probabilities = hebbian_prune_probabilities(elites, elite_activity, self.mutation_rate)
            keep = draws >= inherit(probabilities)
        children = inherit(elites) & keep
        self.population = np.concatenate([elites, children])
        self.parents = np.concatenate([sources, sources[pick]])
        if self.elite_averaging:  # elites come from this generation's order (again above)
            self.earlier_sum = np.concatenate(
                [self.earlier_sum[order] + told[order], np.zeros(P - n)]
            )
            self.earlier_count = np.concatenate([self.earlier_count[order] + 1, np.zeros(P - n)])
        return improved

    @property
    def mutated(self) -> np.ndarray:
        """bool (P,): which individuals are mutated children; the others, the first ones of
        the population after generation 0, are unchanged elites."""
        n = 0 if self.generation == 0 else self.n_elites + int(self.parents[0] == -1)
        return np.arange(len(self.population)) >= n

    def result(self) -> tuple[np.ndarray, float]:
        """(best mask ever seen, bool (W,); its fitness)."""
        return self.best_mask.copy(), self.best_fitness

    def state(self) -> dict[str, np.ndarray]:
        """Everything ``tell`` depends on, as named arrays (for checkpoints)."""
        history = np.array(self.fitness_history).reshape(-1, len(self.population))
        arrays = dict(
            population=self.population,
            parents=self.parents,
            best_mask=self.best_mask,
            best_fitness=np.float64(self.best_fitness),
            mutation_rate=np.float64(self.mutation_rate),
            fitness_history=history,
        )
        if self.best_activity is not None:  # only when told activity: else as before it
            arrays["best_activity"] = self.best_activity
        if self.elite_averaging:
            arrays.update(earlier_sum=self.earlier_sum, earlier_count=self.earlier_count)
        return arrays

    def set_state(self, arrays: dict[str, np.ndarray]) -> None:
        """Restore what ``state`` returned; the generation is the length of the history."""
        self.population, self.parents = arrays["population"].copy(), arrays["parents"].copy()
        self.best_mask = arrays["best_mask"].copy()
        self.best_fitness = float(arrays["best_fitness"])
        self.mutation_rate = float(arrays["mutation_rate"])
        has = "best_activity" in arrays
        self.best_activity = arrays["best_activity"].copy() if has else None
        self.fitness_history = list(arrays["fitness_history"])
        self.generation = len(self.fitness_history)
        if self.elite_averaging:
            self.earlier_sum = arrays["earlier_sum"].copy()
            self.earlier_count = arrays["earlier_count"].copy()
