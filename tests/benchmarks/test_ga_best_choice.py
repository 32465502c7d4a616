"""Tier 1: benchmarks/ga_best_choice.py names, for each rule, the elite PrunedGA itself calls
its best: rule 1 is the top of the ranking (the carried hour's best mask, and what the
optimizer keeps), rule N the top-ranked elite that has played N / 2 generations, chosen from
the checkpoint's counts alone."""

import numpy as np
from ga_best_choice import choices

from pgmpi import PrunedGA
from tests.helpers.launch import ROOT

HOUR = ROOT / "benchmarks" / "recordings" / "ga-tts" / "seed0"


def test_rule_one_is_the_runs_own_best_and_rule_eight_an_elite_of_four_generations():
    agent = PrunedGA.load(HOUR / "checkpoint.npz", quiet=True)
    opt = agent.optimizer
    one, eight = choices(HOUR, [8])
    assert one["min_episodes"] == 1 and one["row"] == 0  # the top: the run's best mask
    assert np.array_equal(opt.population[0], opt.best_mask)
    assert one["generations"] == 1  # at the hour, a child on its first 2 episodes
    assert eight["generations"] >= 4 and eight["row"] > 0
    assert one["mean"] >= eight["mean"]  # the top of the ranking, on less evidence
    counts = opt.earlier_count[: opt.n_elites + 1]
    means = opt.earlier_sum[: len(counts)] / np.maximum(counts, 1)
    sure = [i for i in range(len(counts)) if counts[i] >= 4]
    assert eight["row"] == sure[int(np.argmax(means[sure]))]  # the best of those, by its mean


def test_save_writes_the_run_with_the_rules_network_as_its_best(tmp_path, monkeypatch):
    import ga_best_choice

    argv = ["ga_best_choice.py", str(HOUR), "--min-episodes", "8", "--episodes", "1"]
    monkeypatch.setattr("sys.argv", [*argv, "--save", str(tmp_path)])
    ga_best_choice.main()
    saved = PrunedGA.load(tmp_path / HOUR.name / "checkpoint.npz", quiet=True)
    row = choices(HOUR, [8])[1]["row"]
    assert np.array_equal(saved.optimizer.best_mask, saved.optimizer.population[row])
    assert saved.generation == PrunedGA.load(HOUR / "checkpoint.npz", quiet=True).generation


def test_every_elite_adds_each_unchosen_elite_once_in_ranked_order():
    rules = choices(HOUR, [8])
    every = choices(HOUR, [8], every=True)
    assert every[: len(rules)] == rules  # the rules first, as before
    rest = every[len(rules) :]
    chosen, added = {c["row"] for c in rules}, [c["row"] for c in rest]
    opt = PrunedGA.load(HOUR / "checkpoint.npz", quiet=True).optimizer
    assert len(set(added)) == len(added) and not chosen & set(added)  # no elite twice
    assert chosen | set(added) == set(np.flatnonzero(opt.earlier_count > 0))  # none left out
    assert all(c["min_episodes"] == 0 for c in rest)
    assert [c["mean"] for c in rest] == sorted((c["mean"] for c in rest), reverse=True)
