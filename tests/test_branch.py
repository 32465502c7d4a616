"""Tier 1: benchmarks/branch.py, a run's copy that goes on with other learning settings: it is
its parent up to the checkpoint, changes only what it names, and refuses what may not change;
a ParallelPG run's and a PrunedGA run's."""

import csv
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from pgmpi import ParallelPG, PrunedGA

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from branch import branch  # noqa: E402


def _parent(tmp_path):
    """A CartPole run of 3 updates with its log dir and checkpoint, and its next 3 updates."""
    kw = dict(env="CartPole-v1", hidden_size=16, learning_rate=1e-2, optimizer="rmsprop",
              slots=2, steps_per_slot=20, seed=3, quiet=True)  # fmt: skip
    run = tmp_path / "parent"
    ParallelPG(log_dir=run, **kw).train(updates=3, checkpoint_path=run / "checkpoint.npz")
    whole = ParallelPG(**kw).train(updates=6)
    return run, whole


def test_a_branch_is_its_parent_until_it_changes_and_then_changes_only_what_it_names(tmp_path):
    run, whole = _parent(tmp_path)
    same = branch(run, tmp_path / "same", {"learning_rate": 1e-2})  # the parent's value
    other = branch(run, tmp_path / "other", {"learning_rate": 5e-3, "entropy_bonus": 0.0})
    for child in (same, other):
        rows = list(csv.DictReader(open(child / "progress.csv")))
        assert [r["update"] for r in rows] == ["1", "2", "3"]
    a = ParallelPG.load(same / "checkpoint.npz", quiet=True, log_dir=same)
    b = ParallelPG.load(other / "checkpoint.npz", quiet=True, log_dir=other)
    np.testing.assert_array_equal(a.net.params, b.net.params)  # the shared point
    assert (b.config["learning_rate"], b.config["entropy_bonus"]) == (5e-3, 0.0)
    assert {k: v for k, v in b.config.items() if k not in ("learning_rate", "entropy_bonus")} == {
        k: v for k, v in a.config.items() if k not in ("learning_rate", "entropy_bonus")
    }
    assert json.loads((other / "config.json").read_text())["learning_rate"] == 5e-3
    a.train(updates=6), b.train(updates=6)
    np.testing.assert_array_equal(a.net.params, whole.net.params)  # unchanged: the parent
    assert not np.array_equal(b.net.params, whole.net.params)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"hidden_size": 32}, "cannot branch on \\['hidden_size'\\]"),
        ({"slots": 4}, "cannot branch on \\['slots'\\]"),
        ({"learning_rate": -1.0}, "learning_rate must be > 0, got -1.0"),
    ],
)
def test_a_setting_that_may_not_change_or_a_bad_value_writes_nothing(tmp_path, changes, message):
    run, _ = _parent(tmp_path)
    with pytest.raises(ValueError, match=message):
        branch(run, tmp_path / "child", changes)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["parent"]


def test_a_pruned_ga_branch_takes_its_new_mutation_rate_from_the_next_generation_on(tmp_path):
    kw = dict(env="CartPole-v1", hidden_sizes=(4,), population_size=12, episodes_per_individual=2,
              mutation_rate=0.2, seed=3, quiet=True)  # fmt: skip
    run = tmp_path / "parent"
    PrunedGA(log_dir=run, **kw).train(generations=2, checkpoint_path=run / "checkpoint.npz")
    whole = PrunedGA(**kw).train(generations=4)
    same = branch(run, tmp_path / "same", {"mutation_rate": 0.2})
    other = branch(run, tmp_path / "other", {"mutation_rate": 0.02})
    rows = list(csv.DictReader(open(other / "progress.csv")))
    assert [r["generation"] for r in rows] == ["0", "1"]
    a = PrunedGA.load(same / "checkpoint.npz", quiet=True, log_dir=same)
    b = PrunedGA.load(other / "checkpoint.npz", quiet=True, log_dir=other)
    np.testing.assert_array_equal(a.optimizer.population, b.optimizer.population)
    assert b.config["mutation_rate"] == 0.02
    assert json.loads((other / "config.json").read_text())["mutation_rate"] == 0.02
    a.train(generations=4), b.train(generations=4)
    np.testing.assert_array_equal(a.optimizer.population, whole.optimizer.population)
    assert b.optimizer.mutation_rate == 0.02
    assert not np.array_equal(b.optimizer.population, whole.optimizer.population)
    short = branch(run, tmp_path / "short", {"max_episode_steps": 5})  # episodes end at 5 steps
    c = PrunedGA.load(short / "checkpoint.npz", quiet=True, log_dir=short)
    before = c.steps
    c.train(generations=4)
    assert c.steps - before == 2 * 12 * 2 * 5  # 2 generations of 12 x 2 episodes, 5 steps each
    assert whole.steps - before > c.steps - before
    more = branch(run, tmp_path / "more", {"max_episode_steps": 5, "episodes_per_individual": 3})
    d = PrunedGA.load(more / "checkpoint.npz", quiet=True, log_dir=more)
    parent = PrunedGA.load(run / "checkpoint.npz", quiet=True)
    np.testing.assert_array_equal(d.optimizer.population, parent.optimizer.population)
    d.train(generations=4)
    assert d.steps - before == 2 * 12 * 3 * 5  # now 3 episodes each
    with pytest.raises(ValueError, match="cannot branch on \\['population_size'\\]"):
        branch(run, tmp_path / "bigger", {"population_size": 24})


def _pong_branch(tmp_path, changes, **settings):
    """A small Pong run of 2 updates (with ``settings``), and its branch with ``changes``:
    (the parent loaded, the branch loaded, the branch's log dir)."""
    kw = dict(env="ALE/Pong-v5", hidden_size=8, slots=2, steps_per_slot=64, seed=3, quiet=True,
              **settings)  # fmt: skip
    run = tmp_path / "parent"
    ParallelPG(log_dir=run, **kw).train(updates=2, checkpoint_path=run / "checkpoint.npz")
    child = branch(run, tmp_path / "child", changes)
    a = ParallelPG.load(run / "checkpoint.npz", quiet=True)
    return a, ParallelPG.load(child / "checkpoint.npz", quiet=True, log_dir=child), child


def test_a_two_action_pong_branch_takes_noop_on_with_the_same_up_down_odds(tmp_path):
    a, b, child = _pong_branch(tmp_path, {"noop": True})
    assert (a.config["noop"], b.config["noop"], b.net.n_logits) == (False, True, 3)
    steps = [s for k in b.mine for s in b.open_rallies.steps[k][0] if len(s[0])]
    assert steps  # the open rallies' inputs, on which NOOP's share was set
    p, q = a.net.forward(steps)[0], b.net.forward(steps)[0]
    np.testing.assert_allclose(q[:, 0] / q[:, 1], p[:, 0] / p[:, 1], rtol=1e-4)  # up : down kept
    assert abs(np.median(q[:, 2]) - 0.05) < 1e-3  # NOOP's share of the median state
    b.train(updates=3)
    assert b.net.params.shape == (6400 * 8 + 8 * 4,) and np.isfinite(b.net.params).all()
    with pytest.raises(ValueError, match="NOOP on \\(noop=true\\), not off"):
        branch(child, tmp_path / "off", {"noop": False})
    cart, _ = _parent(tmp_path / "cart")
    with pytest.raises(ValueError, match="a two-action Pong run"):
        branch(cart, tmp_path / "cart-noop", {"noop": True})
