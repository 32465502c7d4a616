"""Tier 1: the optimizers (pgmpi/optimizers.py): ParallelPG's RMSProp and Adam steps against
the textbook formulas, whole and a chunk at a time; PrunedGA's PruningOptimizer (ask / tell)
and its invariants."""

import hashlib
import math
import re

import numpy as np
import pytest

from pgmpi import optimizers
from pgmpi.optimizers import MUTATION_RATE_RANGE, Adam, PruningOptimizer, RMSProp


# ---------------------------------------------------------------- RMSProp and Adam (ParallelPG)
def test_rmsprop_step_by_hand():
    opt = RMSProp(3, learning_rate=0.1, decay_rate=0.9, eps=1e-5)
    params = np.array([1.0, -1.0, 0.0], dtype=np.float32)
    g = np.array([2.0, -0.5, 0.0], dtype=np.float32)
    opt.step(params, g)
    cache = 0.1 * g.astype(np.float64) ** 2
    expected = np.array([1.0, -1.0, 0.0]) + 0.1 * g / (np.sqrt(cache) + 1e-5)
    np.testing.assert_allclose(params, expected, rtol=1e-6)
    np.testing.assert_allclose(opt.cache, cache, rtol=1e-6)


def test_adam_step_by_hand():
    opt = Adam(2, learning_rate=0.1, beta1=0.9, beta2=0.999, eps=1e-8)
    params = np.array([1.0, -1.0], dtype=np.float32)
    g1, g2 = np.array([2.0, -0.5], np.float32), np.array([1.0, 0.5], np.float32)
    opt.step(params, g1), opt.step(params, g2)
    m, v, expected = np.zeros(2), np.zeros(2), np.array([1.0, -1.0])
    for t, g in ((1, g1), (2, g2)):
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g.astype(np.float64) ** 2
        expected += 0.1 * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    np.testing.assert_allclose(params, expected, rtol=1e-5)
    assert opt.t == 2


def test_optimizer_steps_taken_a_chunk_at_a_time_equal_whole_vector_steps():
    """Pong's 1.28 M parameters span many chunks: each element gets the textbook step once,
    with the same float32 bits as the step on the whole vector at once."""
    n = 2 * optimizers.CHUNK + 7  # two whole chunks and a short one
    covered = np.concatenate([np.arange(n)[part] for part in optimizers.chunks(n)])
    assert np.array_equal(covered, np.arange(n))
    rng = np.random.default_rng(0)
    start = rng.standard_normal(n).astype(np.float32)
    adam, rms = Adam(n, learning_rate=2e-3), RMSProp(n, learning_rate=1e-4, decay_rate=0.99)
    p_adam, p_rms, want_adam, want_rms = (start.copy() for _ in range(4))
    m, v, cache = (np.zeros(n, np.float32) for _ in range(3))
    for t in (1, 2):
        g = rng.standard_normal(n).astype(np.float32) * 1e-3
        adam.step(p_adam, g)
        rms.step(p_rms, g)
        # The same steps on whole vectors.
        m *= 0.9
        m += (1.0 - 0.9) * g
        v *= 0.999
        v += (1.0 - 0.999) * np.square(g)
        lr = 2e-3 * math.sqrt(1.0 - 0.999**t) / (1.0 - 0.9**t)
        want_adam += np.float32(lr) * m / (np.sqrt(v) + np.float32(1e-8))
        cache *= 0.99
        cache += (1.0 - 0.99) * np.square(g)
        want_rms += 1e-4 * g / (np.sqrt(cache) + 1e-5)
    pairs = [(p_adam, want_adam), (adam.m, m), (adam.v, v), (p_rms, want_rms), (rms.cache, cache)]
    for got, want in pairs:
        assert np.array_equal(got.view(np.int32), want.view(np.int32))


# ---------------------------------------------------------------- PruningOptimizer: ask / tell
def _run_optimizer(seed=0, P=40, W=60, generations=6, fitness_seed=1):
    """Drive the optimizer with random fitness; per tell yield (optimizer, population before,
    (best mask, best fitness) before, fitness)."""
    opt = PruningOptimizer(W, population_size=P, seed=seed)
    frng = np.random.default_rng(fitness_seed)
    for _ in range(generations):
        before = opt.ask().copy()
        best_before = opt.result()
        fitness = frng.standard_normal(P)
        opt.tell(fitness)
        yield opt, before, best_before, fitness


def test_generation_zero_is_all_ones_pruned_at_the_initial_rate():
    opt = PruningOptimizer(500, population_size=64, prune_rate=0.25, seed=0)
    pop = opt.ask()
    assert pop.dtype == bool and pop.shape == (64, 500) and not pop.flags.writeable
    assert abs(pop.mean() - 0.75) < 0.01
    assert opt.generation == 0 and opt.mutation_rate == 0.25 and opt.best_fitness == -math.inf


def test_population_size_constant_and_masks_only_lose_connections():
    for opt, before, (best_before, _), _ in _run_optimizer():
        after = opt.ask()
        assert after.shape == before.shape and after.dtype == bool
        parent_masks = np.where(
            (opt.parents >= 0)[:, None], before[np.maximum(opt.parents, 0)], best_before
        )
        assert not np.any(after & ~parent_masks), "a child gained a connection"
        assert after.sum() <= parent_masks.sum()


def test_elites_are_the_fittest_in_order_and_survive_unchanged():
    carried = 0
    for opt, before, (best_before, best_fit_before), fitness in _run_optimizer(generations=10):
        k = opt.n_elites
        top = np.argsort(-fitness, kind="stable")[:k]
        after = opt.ask()
        lead = int(fitness.max() <= best_fit_before)  # the best ever leads if not beaten
        carried += lead
        if lead:
            assert np.array_equal(after[0], best_before) and opt.parents[0] == -1
        assert np.array_equal(after[lead : lead + k], before[top])
        assert np.array_equal(opt.parents[lead : lead + k], top)
        assert opt.best_fitness == max(best_fit_before, fitness.max())
    assert carried > 0  # random fitness: some generations fail to beat the best ever


def test_best_ever_is_kept_when_a_generation_is_worse():
    opt = PruningOptimizer(30, population_size=16, seed=2)
    first = opt.ask().copy()
    opt.tell(np.arange(16.0))  # individual 15 is the best
    opt.tell(np.full(16, -1.0))  # a worse generation
    assert opt.best_fitness == 15.0
    assert np.array_equal(opt.best_mask, first[15])
    assert np.array_equal(opt.ask()[0], first[15])
    assert np.array_equal(opt.result()[0], first[15])


def test_ties_are_broken_by_index():
    opt = PruningOptimizer(30, population_size=16, elite_fraction=0.25, seed=4)
    before = opt.ask().copy()
    opt.tell(np.zeros(16))
    assert np.array_equal(opt.parents[:4], [0, 1, 2, 3])
    assert np.array_equal(opt.ask()[:4], before[:4])


def test_parents_are_drawn_rank_linearly():
    P = 4000
    opt = PruningOptimizer(10, population_size=P, elite_fraction=0.002, seed=0)  # 8 elites
    fitness = np.random.default_rng(0).permutation(P).astype(float)
    opt.tell(fitness)
    top = np.argsort(-fitness)[:8]
    counts = np.array([np.sum(opt.parents[8:] == t) for t in top])
    expected = (P - 8) * np.arange(8, 0, -1) / 36
    assert np.all(np.abs(counts - expected) < 5 * np.sqrt(expected)), (counts, expected)
    assert np.all(np.diff(counts) < 0)


def test_mutation_rate_rule_and_clip():
    opt = PruningOptimizer(100, population_size=8, elite_fraction=0.25, seed=0)
    counts = np.array([60, 58, 55, 54, 52, 50, 50, 48])
    opt.population = np.arange(100)[None, :] < counts[:, None]
    opt.tell(np.arange(8.0)[::-1])  # individuals 0 and 1 are the elites
    expected = np.sqrt(np.mean((np.array([60, 58]) - counts.mean()) ** 2)) / counts.mean()
    assert expected < MUTATION_RATE_RANGE[1] and opt.mutation_rate == pytest.approx(expected)
    opt = PruningOptimizer(100, population_size=8, seed=0)
    opt.population = np.ones((8, 100), dtype=bool)  # no spread at all: the lower clip
    opt.tell(np.zeros(8))
    assert opt.mutation_rate == MUTATION_RATE_RANGE[0]
    opt.population = np.arange(100)[None, :] < np.array([100, 1, 1, 1, 1, 1, 1, 1])[:, None]
    opt.tell(np.arange(8.0)[::-1] + 100)  # a huge spread (and a new best): the upper clip
    assert opt.mutation_rate == MUTATION_RATE_RANGE[1]


def test_children_are_pruned_at_the_mutation_rate():
    opt = PruningOptimizer(2000, population_size=50, prune_rate=0.0, seed=0)
    assert opt.ask().all()  # prune_rate 0: generation 0 is all ones
    opt.population = np.arange(2000)[None, :] < np.linspace(2000, 1000, 50).astype(int)[:, None]
    before = opt.ask().copy()
    opt.tell(np.arange(50.0)[::-1])  # beats -inf: no best ever carried, so k elites lead
    children, k = opt.ask()[opt.n_elites :], opt.n_elites
    lost = 1 - children.sum() / before[opt.parents[k:]].sum()
    assert opt.mutation_rate > 0.01 and abs(lost - opt.mutation_rate) < 0.005


def test_a_fixed_mutation_rate_replaces_the_adaptive_one_in_every_generation():
    opt = PruningOptimizer(2000, population_size=50, prune_rate=0.0, mutation_rate=0.02, seed=0)
    opt.population = np.arange(2000)[None, :] < np.linspace(2000, 1000, 50).astype(int)[:, None]
    before = opt.ask().copy()
    opt.tell(np.arange(50.0)[::-1])  # a spread that would adapt the rate above 0.02
    children, k = opt.ask()[opt.n_elites :], opt.n_elites
    lost = 1 - children.sum() / before[opt.parents[k:]].sum()
    assert opt.mutation_rate == 0.02 and abs(lost - 0.02) < 0.005
    opt.tell(np.zeros(50))
    assert opt.mutation_rate == 0.02
    adaptive = PruningOptimizer(2000, population_size=50, prune_rate=0.0, seed=0)
    adaptive.population = before.copy()
    adaptive.tell(np.arange(50.0)[::-1])
    assert adaptive.mutation_rate > 0.02  # the same population adapts to another rate


def _digest_of_a_run(**kwargs) -> str:
    """Six generations through every path of tell(): uniform and Hebbian pruning, the best
    ever carried over or not; a hash of each population and its parents."""
    opt, g = PruningOptimizer(40, population_size=12, seed=7, **kwargs), np.random.default_rng(3)
    h = hashlib.sha256()
    for generation in range(6):
        activity = g.random((12, 40)) if generation % 2 else None
        opt.tell(g.standard_normal(12), activity)
        h.update(opt.population.tobytes() + opt.parents.tobytes())
    return h.hexdigest()[:16]


def test_the_populations_are_those_of_before_the_screens_settings():
    # ac12bff959d50757: this run on commit bdffd57, before the screens of issue 49 added their
    # settings (restore_rate and best_reevaluation the first, since retired)
    assert _digest_of_a_run() == "ac12bff959d50757"


def test_with_elite_averaging_an_unchanged_elite_is_ranked_by_its_mean_over_generations():
    def told(**rule) -> PruningOptimizer:
        opt = PruningOptimizer(500, population_size=16, mutation_rate=0.1, **rule)
        opt.tell(np.arange(16.0))  # 15 is the best, row 0 of generation 1
        second = opt.ask().copy()
        # row 0: 3 now, (15 + 3) / 2 = 9; row 1, the other elite: (14 + 0) / 2; child 2: 4.5
        opt.tell(np.eye(16)[0] * 3.0 + np.eye(16)[2] * 4.5)
        return opt, second

    opt, second = told(elite_averaging=True)
    assert np.array_equal(opt.best_mask, second[0]) and opt.best_fitness == 9.0
    assert opt.earlier_sum[0] == 18.0 and opt.earlier_count[0] == 2  # row 0 again, 2 generations
    third = opt.ask().copy()
    assert opt.ranked(np.eye(16)[0] * 6.0)[0] == 8.0 and np.isnan(
        opt.ranked(np.full(16, np.nan))[0]
    )
    opt.tell(np.eye(16)[0] * 6.0 + np.eye(16)[2] * 8.5)  # (15 + 3 + 6) / 3 = 8 < 8.5
    assert np.array_equal(opt.best_mask, third[2]) and opt.best_fitness == 8.5
    assert opt.earlier_count[0] == 1 and opt.earlier_count[1] == 3  # the child leads, then row 0
    resumed = PruningOptimizer(500, population_size=16, mutation_rate=0.1, elite_averaging=True)
    resumed.set_state(opt.state())
    assert np.array_equal(resumed.earlier_sum, opt.earlier_sum) and resumed.generation == 3


def test_with_best_min_count_a_child_on_one_lucky_generation_is_not_the_best():
    """best_min_count 2: the best is the top-ranked elite that has played 2 generations, so a
    child topping the ranking on its first (8.5 against row 0's mean of 8 over 3) leads
    selection but not the best; the populations and parents are those of the default."""

    def run(**rule) -> tuple[PruningOptimizer, list, list]:
        opt = PruningOptimizer(500, population_size=16, mutation_rate=0.1, elite_averaging=True,
                               **rule)  # fmt: skip
        opt.tell(np.arange(16.0))
        second = opt.ask().copy()
        told = [opt.tell(np.eye(16)[0] * 3.0 + np.eye(16)[2] * 4.5)]  # row 0: 9 over 2
        third = opt.ask().copy()
        told.append(opt.tell(np.eye(16)[0] * 6.0 + np.eye(16)[2] * 8.5))  # child: 8.5 over 1
        return opt, [second, third], told

    sure, (second, third), told = run(best_min_count=2)
    plain, _, plain_told = run()
    assert np.array_equal(sure.best_mask, second[0]) and sure.best_fitness == 8.0
    assert np.array_equal(plain.best_mask, third[2]) and plain.best_fitness == 8.5
    assert told == [False, False] and plain_told == [False, True]
    assert np.array_equal(sure.ask(), plain.ask()) and np.array_equal(sure.parents, plain.parents)
    assert sure.ask()[1].tolist() == second[0].tolist()  # the best: second of the ranking
    lone = PruningOptimizer(500, population_size=16, elite_averaging=True, best_min_count=5)
    lone.tell(np.arange(16.0))
    before = lone.ask()[0].copy()
    lone.tell(np.eye(16)[5] * 100.0)  # none has played 5: the first that has played most, 2
    assert lone.best_fitness == 7.5 and np.array_equal(lone.best_mask, before)
    assert np.array_equal(lone.ask()[1], before)  # ranked behind the child on 100


def test_pruning_optimizer_learns_a_target_mask():
    """Keep the connections of a hidden target, prune the rest: only reachable by pruning."""
    W, target = 200, np.random.default_rng(0).random(200) < 0.3
    opt = PruningOptimizer(W, population_size=64, prune_rate=0.05, seed=1)

    def fitness(pop):
        return -(pop & ~target).sum(axis=1) - 3.0 * (~pop & target).sum(axis=1)

    first = fitness(opt.ask()).max()
    for _ in range(80):
        opt.tell(fitness(opt.ask()))
    assert first < -100 and opt.best_fitness > 0.5 * first and opt.best_fitness > -60


def test_same_seed_same_pruning_optimizer_run():
    a = [o.ask().copy() for o, *_ in _run_optimizer(seed=5)]
    b = [o.ask().copy() for o, *_ in _run_optimizer(seed=5)]
    c = [o.ask().copy() for o, *_ in _run_optimizer(seed=6)]
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c, strict=True))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(population_size=1), "population_size must be an int >= 2"),
        (dict(population_size=8.0), "population_size must be an int >= 2"),
        (dict(elite_fraction=0), "elite_fraction must be in (0, 1)"),
        (dict(population_size=4, elite_fraction=0.9), "small enough to leave a child"),
        (dict(prune_rate=1.0), "prune_rate must be in [0, 1)"),
        (dict(seed=-1), "seed must be an int >= 0"),
        (dict(mutation_rate=1.0), "mutation_rate must be None or a number in [0, 1)"),
        (dict(elite_averaging=1), "elite_averaging must be True or False"),
        (dict(best_min_count=0), "best_min_count must be an int >= 1, got 0"),
    ],
)
def test_pruning_optimizer_rejects_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        PruningOptimizer(10, **dict(dict(population_size=10), **kwargs))


def test_tell_rejects_bad_fitness():
    opt = PruningOptimizer(10, population_size=4)
    with pytest.raises(ValueError, match="4 finite values"):
        opt.tell(np.zeros(3))
    with pytest.raises(ValueError, match="4 finite values"):
        opt.tell(np.array([0, 1, np.nan, 2]))


def test_crossover_gives_each_unit_the_connections_of_one_of_two_elites():
    """crossover 1, no pruning: every child's unit holds the incoming mask of its first
    parent or of another elite, whole; some children mix two; crossover 0 draws the default's
    populations."""
    P, units = 40, np.repeat(np.arange(6), 10)  # 6 units of 10 connections each
    fitness = np.random.default_rng(3).standard_normal((4, P))
    mixed = 0
    crossed = PruningOptimizer(60, population_size=P, mutation_rate=0.0, crossover=1.0,
                               units=units, seed=5)  # fmt: skip
    for f in fitness:
        before = crossed.ask().copy()
        crossed.tell(f)
        n = crossed.n_elites + int(crossed.parents[0] == -1)
        elites, children = crossed.ask()[:n], crossed.ask()[n:]
        for child, parent in zip(children, crossed.parents[n:], strict=True):
            first = before[parent] if parent >= 0 else elites[0]
            for u in range(6):
                part = child[units == u]
                assert any(np.array_equal(part, e[units == u]) for e in elites)
            mixed += not np.array_equal(child, first)
    assert mixed > 10
    plain = PruningOptimizer(60, population_size=P, seed=5)
    off = PruningOptimizer(60, population_size=P, crossover=0.0, units=units, seed=5)
    for f in fitness:
        plain.tell(f), off.tell(f)
        assert np.array_equal(plain.ask(), off.ask())
    with pytest.raises(ValueError, match="crossover needs units"):
        PruningOptimizer(60, population_size=P, crossover=0.5, seed=5)
