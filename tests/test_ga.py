"""Tier 1, single process: PruningOptimizer invariants, PrunedGA determinism, checkpoints."""

import csv
import math
import re

import gymnasium as gym
import numpy as np
import pytest

from pgmpi import ConfigError, PrunedGA, checkpoint
from pgmpi.ga import balance
from pgmpi.optimizers import MUTATION_RATE_RANGE, PruningOptimizer

TINY = dict(env="CartPole-v1", hidden_sizes=(4,), population_size=12, episodes_per_individual=2)


def _tiny(**kw) -> PrunedGA:
    return PrunedGA(**dict(TINY, seed=3, quiet=True, **kw))


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


# ---------------------------------------------------------------- ask / tell invariants
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


def test_optimizer_learns_a_target_mask():
    """Keep the connections of a hidden target, prune the rest: only reachable by pruning."""
    W, target = 200, np.random.default_rng(0).random(200) < 0.3
    opt = PruningOptimizer(W, population_size=64, prune_rate=0.05, seed=1)

    def fitness(pop):
        return -(pop & ~target).sum(axis=1) - 3.0 * (~pop & target).sum(axis=1)

    first = fitness(opt.ask()).max()
    for _ in range(80):
        opt.tell(fitness(opt.ask()))
    assert first < -100 and opt.best_fitness > 0.5 * first and opt.best_fitness > -60


def test_same_seed_same_optimizer_run():
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
    ],
)
def test_optimizer_rejects_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        PruningOptimizer(10, **dict(dict(population_size=10), **kwargs))


def test_tell_rejects_bad_fitness():
    opt = PruningOptimizer(10, population_size=4)
    with pytest.raises(ValueError, match="4 finite values"):
        opt.tell(np.zeros(3))
    with pytest.raises(ValueError, match="4 finite values"):
        opt.tell(np.array([0, 1, np.nan, 2]))


# ---------------------------------------------------------------- load balance
def test_balance_is_longest_first_and_covers_everyone():
    costs = np.array([5.0, 1, 1, 1, 1, 1, 3, 3])
    owner = balance(costs, 2)
    loads = [costs[owner == r].sum() for r in range(2)]
    assert sorted(loads) == [8.0, 8.0]
    assert np.array_equal(balance(np.ones(7), 3), [0, 1, 2, 0, 1, 2, 0])
    assert np.array_equal(balance(costs, 1), np.zeros(8))
    big = np.random.default_rng(0).integers(50, 1600, 138).astype(float)
    loads = np.bincount(balance(big, 4), weights=big)
    assert loads.max() - loads.min() <= big.max()
    assert np.array_equal(balance(big, 4), balance(big.copy(), 4))


# ---------------------------------------------------------------- PrunedGA
def test_same_seed_twice_same_history_and_best_mask():
    a, b = _tiny().train(generations=3), _tiny().train(generations=3)
    c = PrunedGA(**dict(TINY, seed=4, quiet=True)).train(generations=3)
    sa, sb, sc = (x.optimizer.state() for x in (a, b, c))
    assert sa["fitness_history"].shape == (3, 12)
    assert np.array_equal(sa["fitness_history"], sb["fitness_history"])
    assert np.array_equal(sa["best_mask"], sb["best_mask"]) and a.steps == b.steps
    assert not np.array_equal(sa["fitness_history"], sc["fitness_history"])


def test_fitness_is_mean_return_minus_weighted_connections_kept():
    rows = []
    plain = _tiny(complexity_weight=0.0).train(generations=1, callback=rows.append)
    penal = _tiny(complexity_weight=2.5).train(generations=1)
    kept = PruningOptimizer(plain.net.n_weights, population_size=12, seed=3).ask().mean(axis=1)
    diff = plain.optimizer.fitness_history[0] - penal.optimizer.fitness_history[0]
    assert np.allclose(diff, 2.5 * kept)
    assert rows[0]["charts/best_return"] == plain.optimizer.fitness_history[0].max()
    # CartPole pays 1 per step: a mean return is a whole number of steps over the episodes.
    assert (
        rows[0]["perf/env_steps"]
        == plain.steps
        == round(plain.optimizer.fitness_history[0].sum() * 2)
    )


def test_train_limits_log_and_return_self(tmp_path):
    rows = []
    ga = _tiny(log_dir=tmp_path)
    assert ga.train(generations=2, callback=rows.append) is ga and ga.generation == 2
    assert [r["generation"] for r in rows] == [0, 1]
    assert ga.train(minutes=1e-9) is ga and ga.generation == 3  # stops after one generation
    ga.train(generations=50, target_return=20)
    assert ga.generation < 50
    logged = list(csv.DictReader(open(tmp_path / "progress.csv")))
    assert len(logged) == ga.generation and float(logged[-1]["charts/best_return"]) >= 20
    for key in ("charts/elite_mean_fitness", "charts/mutation_rate", "perf/wait_s"):
        assert key in logged[0]
    with pytest.raises(ConfigError, match="checkpoint_every must be an int >= 1, got 0"):
        ga.train(generations=99, checkpoint_every=0)


@pytest.mark.parametrize("env", ["CartPole-v1", "BipedalWalker-v3"])
def test_exact_resume_matches_an_uninterrupted_run(tmp_path, env):
    # BipedalWalker: Box2D carries state between episodes, which a resume would expose.
    small = dict(env=env, population_size=6, episodes_per_individual=1) if "Bi" in env else {}
    whole = _tiny(**small).train(generations=5 if not small else 3)
    ck = tmp_path / "ga.npz"
    _tiny(log_dir=tmp_path, **small).train(generations=2, checkpoint_path=ck, checkpoint_every=1)
    resumed = PrunedGA.load(ck, log_dir=tmp_path, quiet=True)
    assert resumed.generation == 2
    resumed.train(generations=whole.generation, checkpoint_path=ck)
    a, b = whole.optimizer.state(), resumed.optimizer.state()
    for key in a:
        assert np.array_equal(a[key], b[key]), key
    assert whole.steps == resumed.steps
    assert np.array_equal(whole.last_steps, resumed.last_steps)
    assert len(list(csv.DictReader(open(tmp_path / "progress.csv")))) == whole.generation
    again = PrunedGA.load(ck, quiet=True)
    assert (
        again.generation == whole.generation
        and again.optimizer.best_fitness == whole.optimizer.best_fitness
    )


def test_checkpoint_is_npz_with_boolean_masks_and_no_pickle(tmp_path):
    ga = _tiny().train(generations=2)
    ga.save(tmp_path / "ga.npz")
    with np.load(tmp_path / "ga.npz", allow_pickle=False) as data:
        assert data["population"].dtype == bool and data["best_mask"].dtype == bool
        assert data["fitness_history"].shape == (2, 12)
    assert ga.evaluate(4) == PrunedGA.load(tmp_path / "ga.npz", quiet=True).evaluate(4)


def test_load_refuses_other_files(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        PrunedGA.load(tmp_path / "missing.npz")
    checkpoint.save(tmp_path / "pg.npz", {"x": np.zeros(2)}, {"algorithm": "ParallelPG"})
    with pytest.raises(ConfigError, match="not 'PrunedGA'"):
        PrunedGA.load(tmp_path / "pg.npz")
    _tiny().save(tmp_path / "ga.npz")
    with pytest.raises(ConfigError, match="cannot override"):
        PrunedGA.load(tmp_path / "ga.npz", population_size=5)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(hidden_sizes=(4, 0)), "hidden_sizes must be a list of ints >= 1"),
        (dict(hidden_sizes=4), "hidden_sizes must be a list of ints >= 1"),
        (dict(episodes_per_individual=0), "episodes_per_individual must be an int >= 1"),
        (dict(complexity_weight=-1), "complexity_weight must be a number >= 0"),
        (dict(complexity_weight="a"), "complexity_weight must be a number >= 0"),
        (dict(population_size=1), "population_size must be an int >= 2"),
        (dict(blas_threads=0), "blas_threads must be None or an int >= 1"),
        (dict(env="NoSuchEnv-v0"), "cannot make env 'NoSuchEnv-v0'"),
        (dict(env="FrozenLake-v1"), "is not a 1-D Box"),
    ],
)
def test_bad_arguments_raise_config_error(kwargs, message):
    with pytest.raises(ConfigError) as info:
        PrunedGA(**dict(TINY, quiet=True, **kwargs))
    assert message in str(info.value)


class _BoxEnv(gym.Env):
    """Five steps; actions must lie in [0, 10] (records them); reward = first action."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
    action_space = gym.spaces.Box(0.0, 10.0, (2,), np.float32)
    actions: list = []

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.np_random.uniform(-1, 1, 3).astype(np.float32), {}

    def step(self, action):
        self.actions.append(np.array(action))
        self.t += 1
        obs = self.np_random.uniform(-1, 1, 3).astype(np.float32)
        return obs, float(action[0]), False, self.t >= 5, {}


def test_continuous_actions_are_stretched_onto_the_bounds():
    _BoxEnv.actions = []
    ga = PrunedGA(env=_BoxEnv, hidden_sizes=(4,), population_size=6, episodes_per_individual=1)
    ga.train(generations=2)
    acts = np.array(_BoxEnv.actions)
    assert ga.config["env"] == "custom" and acts.shape == (6 * 2 * 5, 2)
    assert acts.min() >= 0 and acts.max() <= 10 and acts.max() > 1
