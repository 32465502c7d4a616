"""Tier 1: benchmarks/seed_sweep.py's reading of runs: steps to each level within the budget,
and the median and worst over seeds with a seed that never got there."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from seed_sweep import median_and_worst, median_seed, reached  # noqa: E402


def rows(*pairs):
    return [{"episodes": g, "steps": s, "mean100": m, "minutes": 0} for g, s, m in pairs]


def test_a_level_counts_from_100_games_and_only_within_the_budget():
    run = rows((50, 8192, 1.0), (120, 16384, -3.0), (200, 24576, 0.5), (300, 32768, 12.0))
    assert reached(run, budget=32768) == {0: 24576, 10: 32768, 15: None}
    assert reached(run, budget=30000) == {0: 24576, 10: None, 15: None}


def test_a_seed_that_never_reached_a_level_is_the_worst_and_can_be_the_median():
    assert median_and_worst([3, 1, None, 2, 5]) == (3, None)
    assert median_and_worst([3, 1, None, None, None]) == (None, None)
    assert median_and_worst([4, 1, 2, 3]) == (2.5, 4)


def test_the_median_seed_ranks_by_steps_to_0_then_by_the_final_mean():
    seeds = {
        "0": {"reached": {"0": 2}, "final_mean100": 1.0},
        "1": {"reached": {"0": None}, "final_mean100": -4.0},
        "2": {"reached": {"0": None}, "final_mean100": -2.0},
    }
    assert median_seed(seeds) == "2"
    seeds["1"]["reached"]["0"] = 1
    assert median_seed(seeds) == "0"
