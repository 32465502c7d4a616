"""Tier 1: benchmarks/ga_gait.py's split of a walker's return: the ground, the torque and what
is left (a fall's 100, the hull's tilt) add up to the env's own return, episode by episode,
for the carried hour's walker that reaches the course's end and for new networks that fall or
stand. The run's own rule picks the network; a gain or a scale of 0 stills its motors."""

import math
import sys
from pathlib import Path

import pytest

from pgmpi import PrunedGA

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from ga_best_choice import choices  # noqa: E402
from ga_gait import gait  # noqa: E402


def _rests(g):
    return [r["ret"] - r["forward"] + r["torque"] for r in g["rows"]]


def test_the_hours_walker_reaches_the_end_and_its_torque_is_what_it_misses():
    g = gait(ROOT / "benchmarks" / "recordings" / "ga-tts" / "seed1", episodes=1)
    (row,) = g["rows"]
    assert row["end"] and not row["fell"] and row["steps"] < 1600
    assert row["forward"] == pytest.approx(364, abs=2)  # the whole course's ground
    assert row["torque"] > 20  # a walker spends torque
    assert abs(_rests(g)[0]) < 5  # no fall: only the hull's tilt at the end is left


@pytest.mark.parametrize("seed, falls", [(3, True), (5, False)])  # new networks: fall, stand
def test_a_fall_costs_100_and_the_hulls_tilt_the_rest(tmp_path, seed, falls):
    run = tmp_path / "new"
    kw = dict(hidden_sizes=(4,), population_size=4, episodes_per_individual=1, quiet=True)
    ga = PrunedGA(env="BipedalWalker-v3", seed=seed, log_dir=run, **kw)
    ga.train(generations=1, checkpoint_path=run / "checkpoint.npz")
    g = gait(run, episodes=3)
    assert g["episodes"] == 3 and g["env"] == "BipedalWalker-v3" and g["reached_end"] == 0
    assert [r["fell"] for r in g["rows"]] == [falls] * 3
    for rest in _rests(g):  # a fall's 100 (replacing that step's reward), the tilt's 5 x angle
        assert (-100 - 5 * math.pi - 2 < rest < -98) if falls else (-5 * math.pi < rest <= 0)
    assert g["fell"] == 3 * falls
    assert g["mean_return"] == pytest.approx(sum(r["ret"] for r in g["rows"]) / 3)


def test_min_episodes_plays_the_network_the_runs_rule_calls_the_best():
    run = ROOT / "benchmarks" / "recordings" / "ga-tts" / "seed1"
    agent = PrunedGA.load(run / "checkpoint.npz", quiet=True)
    chosen = agent.optimizer.population[choices(run, [8])[-1]["row"]]
    assert (chosen != agent.optimizer.best_mask).any()  # the two rules differ on this run
    g, top = gait(run, 1, min_episodes=8), gait(run, 1)
    assert g["kept"] == chosen.sum() and top["kept"] == agent.optimizer.best_mask.sum()
    assert g["rows"] != top["rows"]


def test_a_zero_gain_or_scale_stills_the_motors_a_full_running_mean_holds_them(tmp_path):
    run = tmp_path / "new"
    kw = dict(hidden_sizes=(4,), population_size=4, episodes_per_individual=1, quiet=True)
    PrunedGA(env="BipedalWalker-v3", seed=3, log_dir=run, **kw).train(
        generations=1, checkpoint_path=run / "checkpoint.npz"
    )
    plain = gait(run, episodes=2)
    assert plain["torque"] > 0
    assert gait(run, episodes=2, gain=1.0, scale=1.0)["rows"] == plain["rows"]
    for still in (dict(gain=0.0), dict(scale=0.0)):
        g = gait(run, episodes=2, **still)
        assert g["torque"] == 0 and g["effort"] == [0.0] * 4 and g["rows"] != plain["rows"]
    held = gait(run, episodes=2, alpha=1.0)  # the first action, sent for ever: no sign flips
    assert held["flips"] == [0.0] * 4 and held["rows"] != plain["rows"]
    assert all(0 <= f <= 1 for f in plain["flips"]) and any(f > 0 for f in plain["flips"])


def test_row_plays_that_network_and_first_seed_names_the_episodes(tmp_path):
    run = tmp_path / "new"
    kw = dict(hidden_sizes=(4,), population_size=4, episodes_per_individual=1, quiet=True)
    ga = PrunedGA(env="BipedalWalker-v3", seed=3, log_dir=run, **kw)
    ga.train(generations=2, checkpoint_path=run / "checkpoint.npz")
    population = PrunedGA.load(run / "checkpoint.npz", quiet=True).optimizer.population
    assert len({m.sum() for m in population}) > 1  # rows that differ
    for r, mask in enumerate(population):
        g = gait(run, 1, row=r)
        assert g["kept"] == mask.sum() and g["row"] == r and g["first_seed"] == 10_000
    two, second = gait(run, 2, row=1, first=500), gait(run, 1, row=1, first=501)
    assert two["rows"][1] == second["rows"][0] and two["first_seed"] == 500
    assert gait(run, 1, row=1)["rows"][0] != second["rows"][0]
