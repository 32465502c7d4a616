"""Tier 1, single process: PrunedGA's units of work, one (individual, episode) each, and the
shared counter that hands them out (tests/test_ga_units_launch.py: the same over ranks)."""

import numpy as np
import pytest

from pgmpi import PrunedGA, mpi, rng, rollout
from pgmpi.ahead import Ahead, Episode, sure_elites
from pgmpi.envs import Game
from pgmpi.genomes import SignedDAG, Trace
from pgmpi.networks import PrunedNetwork
from pgmpi.schedule import longest_first, predict

TINY = dict(env="CartPole-v1", hidden_sizes=(4,), population_size=7, episodes_per_individual=3)


def _tiny(**kw) -> PrunedGA:
    return PrunedGA(**dict(TINY, seed=5, quiet=True, **kw))


def _state(ga: PrunedGA) -> dict:
    return ga.optimizer.state()


def test_each_unit_is_its_own_episode_keyed_on_generation_individual_and_episode():
    ga = _tiny().train(generations=1)
    fresh = _tiny()
    masks = fresh.optimizer.ask()
    for i in range(7):
        for e in range(3):
            stream = rng.stream(5, rng.GA_EVALUATION, 0, i, e)
            total, steps = fresh._play(fresh.net.weights(masks[i]), stream)
            assert steps == ga.evaluation.steps[i, e]
    assert np.array_equal(ga.last_steps, ga.evaluation.steps.sum(axis=1))
    assert ga.evaluation.steps.shape == ga.evaluation.seconds.shape == (7, 3)
    assert np.all(ga.evaluation.ranks == 0) and np.all(ga.evaluation.seconds > 0)
    # CartPole pays 1 per step: each fitness is the mean of its episodes' lengths.
    fitness = ga.optimizer.fitness_history[0] + masks.mean(axis=1)
    assert np.allclose(fitness, ga.evaluation.steps.mean(axis=1))


def test_an_unchanged_elites_episodes_are_keyed_on_its_index_the_generation_before():
    # so they can be played before the generation's ranking puts it in its place
    ga = _tiny().train(generations=2)
    fresh = _tiny().train(generations=1)
    opt = fresh.optimizer
    masks = opt.ask()
    elites = np.flatnonzero(~opt.mutated & (opt.parents >= 0))
    assert len(elites) >= 1
    for i in range(7):
        for e in range(3):
            if i in elites:
                stream = rng.stream(5, rng.GA_ELITE_EVALUATION, 1, int(opt.parents[i]), e)
            else:
                stream = rng.stream(5, rng.GA_EVALUATION, 1, i, e)
            total, steps = fresh._play(fresh.net.weights(masks[i]), stream)
            assert steps == ga.evaluation.steps[i, e], (i, e)


def test_sure_elites_are_those_no_unfinished_individual_can_push_out():
    nan = np.nan
    f = np.array([5.0, nan, 7.0, 1.0, 7.0, nan])
    # finished, best first (ties: lower index): 2, 4, 0, 3; two unfinished
    assert list(sure_elites(f, 4)) == [2, 4]
    assert list(sure_elites(f, 2)) == []
    assert list(sure_elites(f, 6)) == [2, 4, 0, 3]
    assert list(sure_elites(np.full(3, nan), 2)) == []
    # every finished: the top k, exactly as PruningOptimizer.tell ranks them
    done = np.array([3.0, 9.0, 3.0, 9.0, 0.0])
    assert list(sure_elites(done, 3)) == list(np.lexsort((np.arange(5), -done))[:3])
    # a sure elite stays one whatever the others turn out to be
    rng_ = np.random.default_rng(0)
    for _ in range(200):
        f = rng_.integers(0, 4, 9).astype(float)
        hidden = rng_.random(9) < 0.4
        seen = np.where(hidden, nan, f)
        top = set(np.lexsort((np.arange(9), -f))[:4])
        assert set(sure_elites(seen, 4)) <= top


def test_the_order_units_are_played_in_changes_no_result():
    plain = _tiny().train(generations=3)
    backwards = _tiny()
    backwards.evaluation.units = lambda costs: longest_first(costs)[::-1]
    backwards.train(generations=3)
    odd_first = _tiny()
    odd_first.evaluation.units = lambda costs: np.r_[1 : len(costs) : 2, 0 : len(costs) : 2]
    odd_first.train(generations=3)
    for other in (backwards, odd_first):
        for key, value in _state(plain).items():
            assert np.array_equal(value, _state(other)[key]), key
        assert other.steps == plain.steps


def test_elites_are_predicted_at_their_longest_episode_and_children_no_lower_than_most():
    ga = _tiny().train(generations=1)
    seen = []
    plain = ga.evaluation.units
    opt = ga.optimizer
    ga.evaluation.units = lambda costs: (
        seen.append((costs, opt.mutated.copy(), opt.parents.copy())) or plain(costs)
    )
    longest = ga.evaluation.steps.max(axis=1)
    ga.train(generations=2)
    (costs, mutated, parents), *_ = seen
    assert costs.shape == (21,) and 0 < mutated.sum() < len(mutated) and (parents >= 0).all()
    assert not mutated[: mutated.argmin() + 1].any()  # the unchanged elites come first
    per_individual = costs.reshape(7, 3)
    assert (per_individual == per_individual[:, :1]).all()  # one prediction per individual
    known = longest[parents] + 1.0
    assert np.array_equal(per_individual[~mutated, 0], known[~mutated])
    floor = np.percentile(longest, 90) + 1.0
    assert np.array_equal(per_individual[mutated, 0], np.maximum(known, floor)[mutated])


def test_predict_costs_elites_at_their_parent_and_children_at_least_the_percentile():
    longest = np.array([100.0, 1600, 150, 120, 900])
    parents = np.array([1, 0, 1, 2, -1])
    mutated = np.array([False, False, True, True, True])
    floor = np.percentile(longest, 90)  # 1324
    got = predict(longest, parents, mutated)
    assert got.tolist() == [1601.0, 101.0, 1601.0, floor + 1, max(longest.mean(), floor) + 1]


def test_a_resumed_run_predicts_its_units_as_the_uninterrupted_one(tmp_path):
    whole = _tiny().train(generations=2, checkpoint_path=tmp_path / "ck.npz")
    resumed = PrunedGA.load(tmp_path / "ck.npz", quiet=True)
    orders = []
    for ga in (whole, resumed):
        plain = ga.evaluation.units
        ga.evaluation.units = lambda costs, plain=plain: orders.append(costs.copy()) or plain(costs)
        ga.train(generations=3)
    assert len(orders) == 2 and np.array_equal(orders[0], orders[1])
    assert orders[0].min() > 1.0  # steps were known: a resume that lost them predicts 1.0


def test_longest_first_orders_by_decreasing_cost_ties_lower_index_first():
    costs = np.array([2.0, 5, 5, 1, 3])
    assert longest_first(costs).tolist() == [1, 2, 4, 0, 3]


def test_one_rank_counter_hands_out_every_index_in_order_without_mpi():
    counter = mpi.shared_counter()
    assert list(counter.take(5)) == [0, 1, 2, 3, 4]
    assert list(counter.take(0)) == []


def test_an_episode_played_a_step_at_a_time_is_rollouts_episode():
    """pgmpi.ahead.Episode, which a waiting rank plays between tests of the barrier, takes
    the same steps as rollout.episode: the same return, steps and Hebbian activity."""
    net = SignedDAG((24, 8, 8, 4), discrete=False, seed=3)
    w = net.weights(np.random.default_rng(1).random(net.n_weights) < 0.8)
    trace = Trace(net.shapes, np.zeros(net.n_weights))
    act = lambda g: net.act(w, g.obs, trace)  # noqa: E731
    stream = np.random.default_rng(7)
    episode = Episode(Game("BipedalWalker-v3", 200), act, stream, trace)
    steps = 1
    while not episode.advance():
        steps += 1
    ret, n, seconds, per_step = episode.result()
    alone = Trace(net.shapes, np.zeros(net.n_weights))
    rewards, _ = rollout.episode(
        Game("BipedalWalker-v3", 200), lambda g: net.act(w, g.obs, alone), np.random.default_rng(7)
    )
    assert n == len(rewards) > 1 and steps == n + 1 and seconds > 0
    assert ret == pytest.approx(sum(rewards), abs=1e-9)
    assert np.array_equal(per_step, alone.mean(n)) and per_step.any()


def test_on_one_rank_there_is_nothing_to_play_ahead_and_every_claim_is_granted():
    ahead = Ahead(12)
    assert ahead.board is None and ahead.collect(12) == []
    assert ahead.claim(3, 0) and ahead.claim(3, 0)  # no board: the one rank plays every unit
    never = lambda x, e: pytest.fail("nothing is played ahead on one rank")  # noqa: E731
    assert not ahead.play(0, 3, lambda r: np.arange(4), never, 12)
    ahead.post(3, 1.0, 0)  # nowhere to post: nothing happens


def test_a_reused_bipedal_walker_env_does_not_always_replay_a_seeded_episode():
    """Why each unit plays in a new env: BipedalWalker's reset(seed) keeps some Box2D state
    from the episodes played before (here an episode differs from its first step after
    two others on the same env, with gymnasium 1.x). If this ever fails, one env per rank
    per generation might do, and save the env making (about 0.1-4 ms a unit)."""
    net = PrunedNetwork((24, 8, 8, 4), discrete=False)
    draw = np.random.default_rng(0)
    weights = [net.weights(draw.random(net.n_weights) < 0.7) for _ in range(6)]

    def play(game, w, seed):  # each episode's stream gives it the same env seed
        return rollout.episode(game, lambda g: net.act(w, g.obs), np.random.default_rng(seed))[0]

    alone = play(Game("BipedalWalker-v3", 1600), weights[3], 44)
    reused = Game("BipedalWalker-v3", 1600)
    play(reused, weights[5], 66)
    play(reused, weights[4], 55)
    assert play(reused, weights[3], 44) != alone
