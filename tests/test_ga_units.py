"""Tier 1, single process: PrunedGA's units of work, one (individual, episode) each, and the
shared counter that hands them out (tests/test_ga_units_launch.py: the same over ranks)."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pgmpi import PrunedGA, mpi, rng, rollout
from pgmpi.ahead import Ahead, Episode
from pgmpi.envs import Game
from pgmpi.genomes import SignedDAG
from pgmpi.networks import PrunedNetwork
from pgmpi.schedule import balance, longest_first, predict, sure_elites

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
            assert steps == ga.unit_steps[i, e]
    assert np.array_equal(ga.last_steps, ga.unit_steps.sum(axis=1))
    assert ga.unit_steps.shape == ga.unit_seconds.shape == (7, 3)
    assert np.all(ga.unit_ranks == 0) and np.all(ga.unit_seconds > 0)
    # CartPole pays 1 per step: each fitness is the mean of its episodes' lengths.
    fitness = ga.optimizer.fitness_history[0] + masks.mean(axis=1)
    assert np.allclose(fitness, ga.unit_steps.mean(axis=1))


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
            assert steps == ga.unit_steps[i, e], (i, e)


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
    backwards._units = lambda costs: longest_first(costs)[::-1]
    backwards.train(generations=3)
    odd_first = _tiny()
    odd_first._units = lambda costs: np.r_[1 : len(costs) : 2, 0 : len(costs) : 2]
    odd_first.train(generations=3)
    for other in (backwards, odd_first):
        for key, value in _state(plain).items():
            assert np.array_equal(value, _state(other)[key]), key
        assert other.steps == plain.steps


def test_elites_are_predicted_at_their_longest_episode_and_children_no_lower_than_most():
    ga = _tiny().train(generations=1)
    seen = []
    plain = ga._units
    opt = ga.optimizer
    ga._units = lambda costs: (
        seen.append((costs, opt.mutated.copy(), opt.parents.copy())) or plain(costs)
    )
    longest = ga.unit_steps.max(axis=1)
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
        plain = ga._units
        ga._units = lambda costs, plain=plain: orders.append(costs.copy()) or plain(costs)
        ga.train(generations=3)
    assert len(orders) == 2 and np.array_equal(orders[0], orders[1])
    assert orders[0].min() > 1.0  # steps were known: a resume that lost them predicts 1.0


def test_longest_first_and_balance_over_units():
    costs = np.array([2.0, 5, 5, 1, 3])
    assert longest_first(costs).tolist() == [1, 2, 4, 0, 3]
    units = np.repeat(np.random.default_rng(1).integers(40, 1600, 138).astype(float), 8)
    loads = np.bincount(balance(units, 128), weights=units)
    assert loads.max() - loads.min() <= units.max()


def test_the_benchmarks_lower_bound_is_reached_when_it_can_be_and_never_beaten():
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from ga_scaling import dynamic_makespan, lower_bound_makespan, static_makespan

    # three equal units on two ranks: one rank plays two, whatever the order
    assert lower_bound_makespan(np.array([10.0, 10, 10]), 2) == 20.0
    assert lower_bound_makespan(np.array([10.0, 10, 1, 1]), 2) == 11.0  # the mean load
    gen = np.random.default_rng(3)
    for n in (2, 7, 63, 128):
        costs = np.where(gen.random(1104) < 0.2, 1600.0, gen.integers(40, 200, 1104))
        bound = lower_bound_makespan(costs, n)
        assert bound <= static_makespan(costs, costs, n) + 1e-9
        assert bound <= dynamic_makespan(gen.random(1104), costs, n, 0.0) + 1e-9


def test_the_benchmarks_idle_share_of_a_phase_weighs_each_generation_by_its_rank_time():
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from ga_scaling import idle_share, summarise

    # a short generation half idle and a long one 10% idle: 1 - 10 / 12, not their mean 30%
    assert idle_share([(1.0, 2.0), (9.0, 10.0)]) == pytest.approx(1 - 10 / 12)
    # rows as project() writes them: seconds, work, rank seconds, 1-rank seconds
    rows = [(1.0, 1.0, 2.0, 1.0), (5.0, 9.0, 10.0, 9.0), (0.0,) * 4]
    idle, speed_up, seconds = summarise({"dynamic": {2: rows}}, slice(0, 2))["dynamic"][2]
    assert idle == pytest.approx(1 - 10 / 12)
    assert speed_up == pytest.approx(10 / 6) and seconds == pytest.approx(3.0)


def test_the_benchmarks_signalled_order_plays_a_standing_individuals_episodes_next():
    """Two ranks; X and Y fall at once (1 s an episode), Z, predicted short, stands for
    1,600 steps (16 s). Its first episode, started at 1, signals at 2 (100 steps in), so the
    rank free at 2 takes Z's second episode (it ends at 18) before X's and Y's last ones, and
    the rank free at 17 plays Z's third: 33, against 35 in the predicted order."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from ga_scaling import SIGNAL_STEPS, dynamic_makespan, signalled_makespan

    assert SIGNAL_STEPS == 100
    predicted = np.array([5.0, 5.0, 1.0])
    cost = np.array([[1.0] * 3, [1.0] * 3, [16.0] * 3])
    steps = np.array([[10] * 3, [10] * 3, [1600] * 3])
    assert signalled_makespan(predicted, cost, steps, 2, 0.0) == pytest.approx(33.0)
    assert dynamic_makespan(np.repeat(predicted, 3), cost.ravel(), 2, 0.0) == pytest.approx(35.0)


def test_the_benchmarks_ahead_schedule_plays_sure_elites_next_units_while_ranks_wait():
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from ga_scaling import ahead_schedule

    # 3 ranks, 3 individuals of 1 episode: 0 and 1 end at 1 s, 2 at 3 s; 0 and 1 are the
    # elites (0 first), placed at 0 and 1 in generation 1. At 1 s one individual is still
    # playing, so 0 is sure (no one can pass it into 3rd place) and 1 is not: one rank
    # plays generation 1's unit 0 ahead, from 1 s, and the other waits to the end.
    predicted = [np.array([3.0, 2.0, 1.0]), np.array([3.0, 2.0, 1.0])]
    elites = [[(0, 0), (1, 1)], []]
    fits = [np.array([1.0, 1.0, 3.0]), np.array([2.0, 2.0, 2.0])]
    run = ahead_schedule(predicted, fits, elites, 1, 3, 0.0, 0.0)
    assert run == [(0.0, 3.0, 7.0, 0), (3.0, 5.0, 4.0, 1)]  # unit 0 played ahead
    # a unit played ahead that outlasts the generation is paused and finished first
    longer = [fits[0], np.array([4.0, 2.0, 2.0])]
    assert ahead_schedule(predicted, longer, elites, 1, 3, 0.0, 0.5) == [
        (0.0, 3.0, 7.0, 0), (3.5, 5.5, 6.0, 1)]  # fmt: skip
    # every unit is played once, ahead or not: the windows' work adds up to the recording's
    costs = dict(
        np.load(
            Path(__file__).resolve().parents[1] / "docs/figures/ga_scaling_signedrun1_costs.npz"
        )
    )
    from ga_scaling import predictions, run_elites

    G, P, E = costs["steps"].shape
    preds = [np.repeat(predictions(costs, g)[0], E) for g in range(G)]
    units = [costs["seconds"][g].ravel() for g in range(G)]
    ranked = [run_elites(costs, g, P, E) for g in range(G)]
    for n in (2, 63, 128):
        run = ahead_schedule(preds, units, ranked, E, n, 0.0, 0.0)
        assert np.isclose(sum(busy for *_, busy, _ in run), costs["seconds"].sum())
        assert run[0][3] == 0 and (n == 2 or sum(played for *_, played in run) > 0)
        assert all(last - start >= busy / n - 1e-9 for start, last, busy, _ in run)


def test_one_rank_counter_hands_out_every_index_in_order_without_mpi():
    counter = mpi.shared_counter()
    assert list(counter.take(5)) == [0, 1, 2, 3, 4]
    assert list(counter.take(0)) == []


def test_an_episode_played_a_step_at_a_time_is_rollouts_episode():
    """pgmpi.ahead.Episode, which a waiting rank plays between tests of the barrier, takes
    the same steps as rollout.episode: the same return, steps and Hebbian activity."""
    net = SignedDAG((24, 8, 8, 4), discrete=False, seed=3)
    w = net.weights(np.random.default_rng(1).random(net.n_weights) < 0.8)
    activity = np.zeros(net.n_weights)
    act = lambda g: net.act(w, g.obs, activity)  # noqa: E731
    stream = np.random.default_rng(7)
    episode = Episode(Game("BipedalWalker-v3", 200), act, stream, activity)
    steps = 1
    while not episode.advance():
        steps += 1
    ret, n, seconds, per_step = episode.result()
    alone = np.zeros(net.n_weights)
    rewards, _ = rollout.episode(
        Game("BipedalWalker-v3", 200), lambda g: net.act(w, g.obs, alone), np.random.default_rng(7)
    )
    assert n == len(rewards) > 1 and steps == n + 1 and seconds > 0
    assert ret == pytest.approx(sum(rewards), abs=1e-9)
    assert np.allclose(per_step * n, alone, rtol=1e-12, atol=0) and alone.any()


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


def test_the_benchmarks_phases_split_a_kept_recording_and_weigh_back_to_the_whole(tmp_path):
    # Re-projects the kept signed-dag run in two asked-for parts: the whole run's idle share
    # is the parts' weighted by their rank time, so it lies between them, and each part's
    # share lies within the spread of its single generations.
    root = Path(__file__).resolve().parents[1]
    args = ["--costs", "docs/figures/ga_scaling_signedrun_costs.npz", "--tag", "_test_phase"]
    args += ["--phase", "0-11", "--phase", "12-36", "--out", str(tmp_path / "f.png")]
    proc = subprocess.run(
        [sys.executable, "benchmarks/ga_scaling.py", *args],
        cwd=root, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    written = root / "benchmarks" / "results" / "ga_scaling_test_phase.json"
    result = json.loads(written.read_text())
    written.unlink()
    phases = result["projection"]["138x8"]
    assert set(phases) >= {"all (0-36)", "0-11", "12-36"}
    for n in ("63", "128"):
        before, after, whole = (phases[p]["dynamic"][n][0] for p in ("0-11", "12-36", "all (0-36)"))
        assert after < whole < before
    spread = [line for line in proc.stdout.splitlines() if "single generations of 12-36" in line]
    low, high = (float(x) for x in spread[0].split("63 ranks ")[1].split("%")[0].split("-"))
    assert low <= 100 * phases["12-36"]["ahead"]["63"][0] <= high
    # PrunedGA, playing ahead, meets the targets over this run, and without it does not
    whole = phases["all (0-36)"]
    assert whole["ahead"]["63"][0] < 0.05 < whole["dynamic"]["63"][0]
    assert whole["ahead"]["128"][0] < 0.10 < whole["dynamic"]["128"][0]
    # Starting the next generation early, where the guess holds, only ever fills idle time:
    # never above PrunedGA's own order, and below it over this run, where it holds at times.
    ways = result["predictors"]
    ours = ways[next(k for k in ways if k.startswith("PrunedGA (elites"))]
    early = ways[next(k for k in ways if "next generation started" in k)]
    for ph in ours:
        for n in ("63", "128"):
            assert 0 <= early[ph][n] <= ours[ph][n], (ph, n)
    assert early["all (0-36)"]["63"] < ours["all (0-36)"]["63"]
    # No schedule that keeps the results, playing ahead or not, beats the floor of the
    # mutated children: it lies under the floor of any order and under PrunedGA's share
    floor = ways[next(k for k in ways if k.startswith("no order"))]
    anything = ways[next(k for k in ways if k.startswith("no schedule"))]
    ahead = ways[next(k for k in ways if k.startswith("PrunedGA's, playing ahead"))]
    for ph in ours:
        for n in ("63", "128"):
            assert 0 <= anything[ph][n] <= floor[ph][n], (ph, n)
    for n in ("63", "128"):
        assert anything["all (0-36)"][n] <= ahead["all (0-36)"][n]
    assert anything["0-11"]["128"] > 0


def test_the_benchmarks_figure_by_generation_draws_each_generations_share(tmp_path):
    # Seed 1's kept run, one panel: a share per generation, each in [0, 1), lower on average
    # with playing ahead, and weighted by rank time they give the whole run's share; the
    # run so far is the share of its first generations.
    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root / "benchmarks"))
    import ga_scaling

    costs = dict(np.load(root / "docs" / "figures" / "ga_scaling_signedrun1_costs.npz"))
    out = tmp_path / "by_generation.png"
    shares = ga_scaling.plot_generations({"seed 1": [costs]}, out)
    assert out.stat().st_size > 10_000
    idle = shares["seed 1"]
    G = len(costs["steps"])
    for split in ("dynamic", "ahead"):
        for n in (63, 128):
            assert idle[split][n].shape == (G,)
            assert np.all((idle[split][n] >= 0) & (idle[split][n] < 1))
    costs = dict(costs, fetch_s=float(costs["fetch_s"]))
    proj = ga_scaling.project(costs, 138, 8, float(np.median(costs["select"])), [128])
    whole = ga_scaling.idle_share([row[1:3] for row in proj["ahead"][128]])
    rank_s = np.array([row[2] for row in proj["ahead"][128]])
    assert np.sum(idle["ahead"][128] * rank_s) / rank_s.sum() == pytest.approx(whole)
    # the run so far: the share of its first k generations, ending at the whole run's
    rows = proj["ahead"][128]
    for k in (1, G // 2, G):
        first_k = ga_scaling.idle_share([row[1:3] for row in rows[:k]])
        assert idle["so far"][128][k - 1] == pytest.approx(first_k)
    assert idle["so far"][128][-1] == pytest.approx(whole)
    assert np.mean(idle["ahead"][128]) < np.mean(idle["dynamic"][128])


def test_where_a_runs_share_so_far_stays_under_a_target():
    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root / "benchmarks"))
    import ga_scaling

    under = ga_scaling.under_from
    run = np.array([0.3, 0.12, 0.09, 0.08])
    assert under(run, 0.10, np.arange(4)) == 2
    assert under(run, 0.10, np.array([0, 1, 45, 46])) == 45
    assert under(np.array([0.05, 0.12, 0.09, 0.11]), 0.10, np.arange(4)) is None
    assert under(np.array([0.05, 0.04]), 0.10, np.arange(2)) == 0
    assert under(np.array([0.3]), 0.10, np.arange(1)) is None


def test_the_benchmarks_figure_joins_stretches_of_one_run_recorded_one_after_another(tmp_path):
    # Seed 1's kept run cut in two as a --start recording would hold it (the second knows
    # the steps of the generation before it), and again with generations 8-9 not recorded
    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root / "benchmarks"))
    import ga_scaling

    costs = dict(np.load(root / "docs" / "figures" / "ga_scaling_signedrun1_costs.npz"))
    G = len(costs["steps"])

    def stretch(a, b):
        part = {k: v[a:b] if np.ndim(v) and len(v) == G else v for k, v in costs.items()}
        return part | dict(first_generation=a, steps_before=costs["steps"][a - 1] if a else 0)

    whole = ga_scaling.by_generation([costs])
    cut = ga_scaling.by_generation([stretch(0, 8), stretch(8, G)])
    gap = ga_scaling.by_generation([stretch(0, 8), stretch(10, G)])
    assert np.array_equal(cut["generation"], np.arange(G))
    assert np.array_equal(gap["generation"], np.r_[0:8, 10:G])
    for n in (63, 128):  # without playing ahead, generations do not depend on each other
        assert cut["dynamic"][n] == pytest.approx(whole["dynamic"][n])
        assert gap["dynamic"][n] == pytest.approx(np.r_[whole["dynamic"][n][:8],
                                                        whole["dynamic"][n][10:]])  # fmt: skip
        # playing ahead: the same before the cut, where nothing is played across it
        assert cut["ahead"][n][:7] == pytest.approx(whole["ahead"][n][:7])
        assert np.all((cut["ahead"][n] >= 0) & (cut["ahead"][n] < 1))
        rank_s = cut["rank_s"]["ahead"][n]
        work = (1 - cut["ahead"][n]) * rank_s
        assert cut["so far"][n][-1] == pytest.approx(1 - work.sum() / rank_s.sum())
    lines = ga_scaling.run_summary(gap)
    assert lines[1].startswith(f"all (0-{G - 1}, {G - 2} recorded)")
    assert any(line.startswith("the run so far at 128 ranks") for line in lines)
    out = tmp_path / "stretches.png"
    ga_scaling.plot_generations({"seed 1, cut": [stretch(0, 8), stretch(10, G)]}, out)
    assert out.stat().st_size > 10_000
