"""Tier 1, single process: PrunedGA determinism, checkpoints (its
PruningOptimizer: test_optimizers.py)."""

import csv
import json
import re
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from pgmpi import ConfigError, PrunedGA, checkpoint
from pgmpi.optimizers import PruningOptimizer
from pgmpi.retired import GA_RETIRED
from tests.helpers.checkpoints import assert_refused_unchanged, with_config

TINY = dict(env="CartPole-v1", hidden_sizes=(4,), population_size=12, episodes_per_individual=2)


def _tiny(**kw) -> PrunedGA:
    return PrunedGA(**dict(TINY, seed=3, quiet=True, **kw))


# ---------------------------------------------------------------- PrunedGA
def test_its_units_of_work_are_episodes_not_individuals():
    # The run header's idle-rank warning counts these: 12 individuals x 2 episodes keep 24
    # ranks busy, not 12.
    _, count, what, setting, busy = _tiny().describe()
    assert count == 24 and what == "episodes: 12 individuals x 2 each"
    assert setting == "population_size x episodes_per_individual" and busy == 8


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


def test_elite_averaging_resumes_exactly(tmp_path):
    whole = _tiny(elite_averaging=True).train(generations=4)
    ck = tmp_path / "ga.npz"
    _tiny(elite_averaging=True).train(generations=2, checkpoint_path=ck, checkpoint_every=1)
    resumed = PrunedGA.load(ck, quiet=True).train(generations=4)
    a, b = whole.optimizer.state(), resumed.optimizer.state()
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.any(a["parents"] == -1)  # the best is never carried over


def test_checkpoint_is_npz_with_boolean_masks_and_no_pickle(tmp_path):
    ga = _tiny().train(generations=2)
    ga.save(tmp_path / "ga.npz")
    with np.load(tmp_path / "ga.npz", allow_pickle=False) as data:
        assert data["population"].dtype == bool and data["best_mask"].dtype == bool
        assert data["fitness_history"].shape == (2, 12)
    assert ga.evaluate(4) == PrunedGA.load(tmp_path / "ga.npz", quiet=True).evaluate(4)


# GAConfig fields added after checkpoints were written, each off by default
SCREEN_SETTINGS = ("synapses", "elite_averaging", "best_min_episodes", "crossover", "finish_bonus")


def test_a_checkpoint_without_the_later_settings_resumes_with_them_off(tmp_path):
    ga, ck = _tiny().train(generations=2), tmp_path / "ga.npz"
    ga.save(ck)
    with np.load(ck, allow_pickle=False) as data:
        arrays = dict(data)
    meta = json.loads(arrays["__meta__"].tobytes())
    for name in SCREEN_SETTINGS:
        del meta["config"][name]
    arrays["__meta__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    np.savez(ck, **arrays)
    old = PrunedGA.load(ck, quiet=True)
    assert old.config == ga.config
    a, b = ga.train(generations=3).optimizer.state(), old.train(generations=3).optimizer.state()
    assert all(np.array_equal(a[k], b[k]) for k in a)


def test_the_best_on_enough_episodes_changes_what_is_reported_not_what_is_selected(tmp_path):
    """best_min_episodes 4 (2 generations of 2 episodes): the fitness history and populations
    are the default's, and the best is an elite that has played 2 generations, where the
    default's (seed 6, generation 4) is a child on its first; it asks for elite_averaging,
    which counts them, past episodes_per_individual."""
    rule = dict(elite_averaging=True, elite_fraction=0.5, seed=6)
    plain = PrunedGA(**TINY, **rule, quiet=True).train(generations=4)
    sure = PrunedGA(**TINY, **rule, quiet=True, best_min_episodes=4).train(generations=4)
    a, b = plain.optimizer.state(), sure.optimizer.state()
    assert all(np.array_equal(a[k], b[k]) for k in a if k not in ("best_mask", "best_fitness"))

    def played(ga) -> float:  # generations the best has played, as an elite of the next
        opt = ga.optimizer
        return opt.earlier_count[[np.array_equal(m, opt.best_mask) for m in opt.population]][0]

    assert played(plain) == 1 and played(sure) >= 2
    assert sure.optimizer.best_fitness < plain.optimizer.best_fitness  # a lucky first one
    back = PrunedGA.load(sure.save(tmp_path / "ga.npz"), quiet=True)
    assert back.config["best_min_episodes"] == 4
    assert np.array_equal(back.optimizer.best_mask, sure.optimizer.best_mask)
    for settings, message in [
        (dict(best_min_episodes=0), "best_min_episodes must be an int >= 1, got 0"),
        (dict(best_min_episodes=3),
         "best_min_episodes must be at most episodes_per_individual without elite_averaging"),
    ]:  # fmt: skip
        with pytest.raises(ConfigError, match=re.escape(message)):
            _tiny(**settings)


def test_a_checkpoint_with_a_retired_setting_resumes_at_its_value_and_is_refused_at_another(
    tmp_path,
):
    """Settings screened and retired (retired.GA_RETIRED: the signed weights' scale, a bias
    input, restoring connections, re-evaluating the best, stalled or charged training episodes,
    common episodes) stay in the checkpoints written before: at the value played today the run
    resumes exactly, into the same log dir; at another, one clear error, and the file is left
    as it was; a new run refuses them as any unknown setting."""
    ck = tmp_path / "ga.npz"
    whole = _tiny().train(generations=4)
    _tiny().train(generations=2).save(ck)
    with_config(ck, **GA_RETIRED)
    back = PrunedGA.load(ck, quiet=True)
    assert not set(GA_RETIRED) & set(back.config)
    back.train(generations=4, checkpoint_path=ck)  # writes over its own checkpoint
    a, b = whole.optimizer.state(), back.optimizer.state()
    assert all(np.array_equal(a[k], b[k]) for k in a)
    with_config(ck, restore_rate=0.01, action_cost=0.028)
    assert_refused_unchanged(
        PrunedGA.load,
        ck,
        r"trained with restore_rate=0.01, "
        r"action_cost=0.028: settings screened and removed \(docs/screens.md",
    )
    with pytest.raises(ConfigError, match="action_cost"):
        _tiny(action_cost=0.1)


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
        (dict(elite_averaging=1), "elite_averaging must be True or False, got 1"),
        (dict(blas_threads=0), "blas_threads must be None or an int >= 1"),
        (dict(env="NoSuchEnv-v0"), "cannot make env 'NoSuchEnv-v0'"),
        (dict(env="FrozenLake-v1"), "is not a 1-D Box"),
    ],
)
def test_bad_arguments_raise_config_error(kwargs, message):
    with pytest.raises(ConfigError) as info:
        PrunedGA(**dict(TINY, quiet=True, **kwargs))
    assert message in str(info.value)


WALKER = Path(__file__).parents[1] / "benchmarks/recordings/ga-tts/seed1/checkpoint.npz"


def _played(ga, weights, seed, bonus, training):
    ga.config["finish_bonus"] = bonus
    episode = ga._episode(weights, np.random.default_rng(seed), None, training)
    ret, steps = episode.finish()[:2]
    return ret, steps, episode.piece.rewards[-1]


def test_a_training_episode_at_the_course_end_earns_the_finish_bonus_an_evaluation_none():
    ga = PrunedGA.load(WALKER, quiet=True)  # seed 1's walker at the hour: it reaches the end
    weights = ga.net.weights(ga.optimizer.best_mask)
    ret, steps, last = _played(ga, weights, 3, 0.0, True)
    assert steps < 1600 and last > -100 and ret > 250  # the course's end, early
    assert _played(ga, weights, 3, 0.5, True)[:2] == (ret + 0.5 * (1600 - steps), steps)
    assert _played(ga, weights, 3, 0.5, False)[:2] == (ret, steps)  # evaluations: the env's


def test_a_fall_or_the_time_limit_earns_no_finish_bonus():
    ga = PrunedGA(env="BipedalWalker-v3", hidden_sizes=(8, 8), genome="signed-dag", quiet=True)
    ends = set()
    for seed in range(40):  # untrained networks: some fall, some stand to the time limit
        weights = ga.net.weights(np.random.default_rng(seed).random(ga.net.n_weights) < 0.5)
        ret, steps, last = _played(ga, weights, seed, 0.0, True)
        end = "fall" if last == -100 else "limit" if steps == 1600 else None
        if end and end not in ends:
            ends.add(end)
            assert _played(ga, weights, seed, 0.5, True)[:2] == (ret, steps)
        if len(ends) == 2:
            break
    assert sorted(ends) == ["fall", "limit"]


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
    assert ga.config["env"].startswith("custom:") and acts.shape == (6 * 2 * 5, 2)
    assert acts.min() >= 0 and acts.max() <= 10 and acts.max() > 1
