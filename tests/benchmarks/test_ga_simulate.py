"""Tier 1: the PrunedGA projection (benchmarks/ga_simulate.py) and its figures
(benchmarks/ga_figures.py), on small cases and on the kept recordings."""

import ga_figures
import ga_simulate
import numpy as np
import pytest
from ga_figures import recording
from ga_simulate import (
    ahead_schedule,
    balance,
    dynamic_makespan,
    idle_share,
    lower_bound_makespan,
    predictions,
    run_elites,
    static_makespan,
    summarise,
)


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


def test_balance_over_units_leaves_loads_within_one_unit():
    units = np.repeat(np.random.default_rng(1).integers(40, 1600, 138).astype(float), 8)
    loads = np.bincount(balance(units, 128), weights=units)
    assert loads.max() - loads.min() <= units.max()


def test_the_benchmarks_lower_bound_is_reached_when_it_can_be_and_never_beaten():

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

    # a short generation half idle and a long one 10% idle: 1 - 10 / 12, not their mean 30%
    assert idle_share([(1.0, 2.0), (9.0, 10.0)]) == pytest.approx(1 - 10 / 12)
    # rows as project() writes them: seconds, work, rank seconds, 1-rank seconds
    rows = [(1.0, 1.0, 2.0, 1.0), (5.0, 9.0, 10.0, 9.0), (0.0,) * 4]
    idle, speed_up, seconds = summarise({"dynamic": {2: rows}}, slice(0, 2))["dynamic"][2]
    assert idle == pytest.approx(1 - 10 / 12)
    assert speed_up == pytest.approx(10 / 6) and seconds == pytest.approx(3.0)


def test_the_benchmarks_ahead_schedule_plays_sure_elites_next_units_while_ranks_wait():

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
    costs = dict(np.load(recording("signedrun1")))

    G, P, E = costs["steps"].shape
    preds = [np.repeat(predictions(costs, g)[0], E) for g in range(G)]
    units = [costs["seconds"][g].ravel() for g in range(G)]
    ranked = [run_elites(costs, g, P, E) for g in range(G)]
    for n in (2, 63, 128):
        run = ahead_schedule(preds, units, ranked, E, n, 0.0, 0.0)
        assert np.isclose(sum(busy for *_, busy, _ in run), costs["seconds"].sum())
        assert run[0][3] == 0 and (n == 2 or sum(played for *_, played in run) > 0)
        assert all(last - start >= busy / n - 1e-9 for start, last, busy, _ in run)


def test_where_a_runs_share_so_far_stays_under_a_target():

    under = ga_simulate.under_from
    run = np.array([0.3, 0.12, 0.09, 0.08])
    assert under(run, 0.10, np.arange(4)) == 2
    assert under(run, 0.10, np.array([0, 1, 45, 46])) == 45
    assert under(np.array([0.05, 0.12, 0.09, 0.11]), 0.10, np.arange(4)) is None
    assert under(np.array([0.05, 0.04]), 0.10, np.arange(2)) == 0
    assert under(np.array([0.3]), 0.10, np.arange(1)) is None


def test_the_benchmarks_figure_by_generation_draws_each_generations_share(tmp_path):
    # Seed 1's kept run, one panel: a share per generation, each in [0, 1), lower on average
    # with playing ahead, and weighted by rank time they give the whole run's share; the
    # run so far is the share of its first generations.

    costs = dict(np.load(recording("signedrun1")))
    out = tmp_path / "by_generation.png"
    shares = ga_figures.plot_generations({"seed 1": [costs]}, out)
    assert out.stat().st_size > 10_000
    idle = shares["seed 1"]
    G = len(costs["steps"])
    for split in ("dynamic", "ahead"):
        for n in (63, 128):
            assert idle[split][n].shape == (G,)
            assert np.all((idle[split][n] >= 0) & (idle[split][n] < 1))
    costs = dict(costs, fetch_s=float(costs["fetch_s"]))
    proj = ga_simulate.project(costs, 138, 8, float(np.median(costs["select"])), [128])
    whole = ga_simulate.idle_share([row[1:3] for row in proj["ahead"][128]])
    rank_s = np.array([row[2] for row in proj["ahead"][128]])
    assert np.sum(idle["ahead"][128] * rank_s) / rank_s.sum() == pytest.approx(whole)
    # the run so far: the share of its first k generations, ending at the whole run's
    rows = proj["ahead"][128]
    for k in (1, G // 2, G):
        first_k = ga_simulate.idle_share([row[1:3] for row in rows[:k]])
        assert idle["so far"][128][k - 1] == pytest.approx(first_k)
    assert idle["so far"][128][-1] == pytest.approx(whole)
    assert np.mean(idle["ahead"][128]) < np.mean(idle["dynamic"][128])


def test_the_benchmarks_figure_joins_stretches_of_one_run_recorded_one_after_another(tmp_path):
    # Seed 1's kept run cut in two as a --start recording would hold it (the second knows
    # the steps of the generation before it), and again with generations 8-9 not recorded

    costs = dict(np.load(recording("signedrun1")))
    G = len(costs["steps"])

    def stretch(a, b):
        part = {k: v[a:b] if np.ndim(v) and len(v) == G else v for k, v in costs.items()}
        return part | dict(first_generation=a, steps_before=costs["steps"][a - 1] if a else 0)

    whole = ga_simulate.by_generation([costs])
    cut = ga_simulate.by_generation([stretch(0, 8), stretch(8, G)])
    gap = ga_simulate.by_generation([stretch(0, 8), stretch(10, G)])
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
    lines = ga_figures.run_summary(gap)
    assert lines[1].startswith(f"all (0-{G - 1}, {G - 2} recorded)")
    assert any(line.startswith("the run so far at 128 ranks") for line in lines)
    out = tmp_path / "stretches.png"
    ga_figures.plot_generations({"seed 1, cut": [stretch(0, 8), stretch(10, G)]}, out)
    assert out.stat().st_size > 10_000
