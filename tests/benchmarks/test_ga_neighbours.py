"""Tier 1: benchmarks/ga_neighbours.py's local search: every neighbour is the network with one
kept connection pruned, each network plays as the gait benchmark plays it, and a round moves
only to a neighbour that beat the current network on the round's episodes, scoring it on the
100 test episodes (written as JSON)."""

import json

import ga_neighbours
import gymnasium as gym
import numpy as np
import pytest
from ga_gait import gait

from pgmpi import PrunedGA


def test_neighbours_prune_each_kept_connection_once():
    mask = np.array([True, False, True, True, False])
    near = ga_neighbours.neighbours(mask)
    assert len(near) == 3 and all(m.sum() == 2 and not (m & ~mask).any() for m in near)
    assert [int(np.flatnonzero(mask & ~m)[0]) for m in near] == [0, 2, 3]
    assert mask.sum() == 3  # the start is left as it was


@pytest.fixture(scope="module")
def falling_run(tmp_path_factory):  # a new network that falls: short episodes, a quick search
    run = tmp_path_factory.mktemp("ga") / "new"
    kw = dict(hidden_sizes=(4,), population_size=4, episodes_per_individual=1, quiet=True)
    ga = PrunedGA(env="BipedalWalker-v3", seed=3, log_dir=run, elite_averaging=True, **kw)
    ga.train(generations=1, checkpoint_path=run / "checkpoint.npz")
    return run


def test_a_network_plays_as_the_gait_benchmark_plays_it(falling_run):
    agent = PrunedGA.load(falling_run / "checkpoint.npz", quiet=True)
    env = gym.make(agent.config["env"])
    (ret,) = ga_neighbours.returns(agent, env, agent.optimizer.best_mask, [10_000])
    env.close()
    assert ret == pytest.approx(gait(falling_run, episodes=1)["rows"][0]["ret"])


def test_a_round_moves_to_a_better_neighbour_and_scores_it_on_the_test_episodes(
    falling_run, tmp_path, monkeypatch
):
    out = tmp_path / "neighbours.json"
    argv = ["ga_neighbours.py", str(falling_run), "--episodes", "1", "--rounds", "1"]
    monkeypatch.setattr("sys.argv", [*argv, "--min-episodes", "1", "--json", str(out)])
    ga_neighbours.main()
    (run,) = json.loads(out.read_text())["runs"]
    start, step = run["steps"]  # this falling network gains from one pruning: it moves
    assert start["round"] is None and start["kept"] > 100 and start["above_300"] == 0
    assert step["round"] == 0 and step["chosen"] > step["here"]
    assert step["kept"] == start["kept"] - 1
    assert step["ci95"][0] <= step["test"] <= step["ci95"][1]
