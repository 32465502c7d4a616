"""Tier 1: benchmarks/ga_gait.py's split of a walker's return: the ground, the torque and what
is left (a fall's 100, the hull's tilt) add up to the env's own return, episode by episode,
for the carried hour's walker that reaches the course's end and for new networks that fall or
stand."""

import math
import sys
from pathlib import Path

import pytest

from pgmpi import PrunedGA

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
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
