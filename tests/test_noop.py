"""Tier 1: ``noop_from``, a two-action Pong run that takes NOOP on midway (pgmpi/noop.py): the
same run up to the update that reaches it, then the same up/down odds with NOOP at its share,
and a run that goes on, evaluates and checkpoints with three actions; benchmarks/branch.py's
``noop=true`` grows a checkpoint the same way."""

import sys
from pathlib import Path

import numpy as np
import pytest

from pgmpi import ConfigError, ParallelPG, noop
from pgmpi.config import NOOP_FROM

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from branch import branch  # noqa: E402

SMALL = dict(env="ALE/Pong-v5", hidden_size=8, slots=2, steps_per_slot=64, seed=3, quiet=True)


@pytest.mark.parametrize("value_baseline", [None, 0.0])  # Pong's 0.05, and none
def test_noop_joins_after_the_update_that_reaches_noop_from_with_the_up_down_odds(
    value_baseline, capsys
):
    kw = dict(SMALL, value_baseline=value_baseline)
    a = ParallelPG(**kw).train(updates=2)
    b = ParallelPG(noop_from=200, **dict(kw, quiet=False)).train(updates=1)
    header = capsys.readouterr().out
    assert ", NOOP from 200 agent steps |" in header and "joins" not in header  # 128: not yet
    assert b.net.n_actions == 2
    b.train(updates=2)  # 256 >= 200: NOOP joins after this update, and the run says so
    said = [ln for ln in capsys.readouterr().out.splitlines() if "joins" in ln]
    assert said == ["note: NOOP joins up and down after 256 agent steps (noop_from)"]
    assert b.steps == a.steps == 256 and b.net.n_logits == b.average.n_logits == 3
    assert all(g.n_actions == 3 for g in [b.probe, *b.games.values()])
    k = a.net.n_logits + (a.net.n_outputs > a.net.n_logits)  # W2's columns before
    np.testing.assert_array_equal(b.net.W1, a.net.W1)
    np.testing.assert_array_equal(b.net.W2[:, [0, *range(3, k + 2)]], a.net.W2)
    assert not b.optimizer.m[6400 * 8 :].reshape(8, -1)[:, 1:3].any()  # no first moment yet
    steps = [s for k in b.mine for s in b.open_rallies.steps[k][0] if len(s[0])]
    assert steps  # the open rallies' inputs, on which NOOP's share was set
    p, q = a.net.forward(steps)[0], b.net.forward(steps)[0]
    np.testing.assert_allclose(q[:, 0] / q[:, 1], p[:, 0] / p[:, 1], rtol=1e-4)  # up : down kept
    assert abs(np.median(q[:, 2]) - noop.SHARE) < 1e-3  # NOOP's share of the median state
    b.train(updates=4)
    assert b.net.n_logits == 3 and np.isfinite(b.net.params).all()
    assert len(b.evaluate(episodes=1).returns) == 1  # evaluation plays three actions too


def test_noop_from_checkpoints_and_loads_grown_and_matches_a_branch_of_its_parent(tmp_path):
    run = tmp_path / "run"
    b = ParallelPG(noop_from=256, log_dir=run, **SMALL)
    b.train(updates=2, checkpoint_path=run / "checkpoint.npz")
    loaded = ParallelPG.load(run / "checkpoint.npz", quiet=True)
    assert loaded.net.n_logits == 3 and loaded.games[0].n_actions == 3
    np.testing.assert_array_equal(loaded.net.params, b.net.params)
    np.testing.assert_array_equal(loaded.optimizer.v, b.optimizer.v)
    parent = tmp_path / "parent"  # the same run without noop_from, branched at the same update
    ParallelPG(log_dir=parent, **SMALL).train(updates=2, checkpoint_path=parent / "checkpoint.npz")
    grown = branch(parent, tmp_path / "child", {"noop": True})
    child = ParallelPG.load(grown / "checkpoint.npz", quiet=True)
    d = 6400 * 8  # the same growth but for the rounding of NOOP's weight (BLAS sums there)
    np.testing.assert_array_equal(child.net.params[:d], b.net.params[:d])
    np.testing.assert_allclose(child.net.params[d:], b.net.params[d:], rtol=1e-5)
    np.testing.assert_array_equal(child.optimizer.v, b.optimizer.v)


def test_noop_from_is_for_a_two_action_pong_run():
    with pytest.raises(ConfigError, match="noop_from takes Pong's NOOP on midway"):
        ParallelPG(env="CartPole-v1", noop_from=100, quiet=True)
    with pytest.raises(ConfigError, match="noop=True: noop_from takes Pong's NOOP on midway"):
        ParallelPG(noop=True, noop_from=100, **SMALL)
    with pytest.raises(ConfigError, match="noop_from"):
        ParallelPG(noop_from=0, **SMALL)


def test_the_default_noop_from_is_sticky_two_action_pongs_alone():
    """The default (3 M agent steps) joins NOOP in sticky two-action Pong; other envs,
    deterministic Pong and a run with NOOP from the start resolve it to None, so their runs
    are what they were; None turns it off in sticky Pong."""
    assert ParallelPG(**SMALL).config["noop_from"] == NOOP_FROM == 3_000_000
    assert ParallelPG(env="CartPole-v1", quiet=True).config["noop_from"] is None
    assert ParallelPG(**dict(SMALL, sticky_actions=False)).config["noop_from"] is None
    assert ParallelPG(noop=True, **SMALL).config["noop_from"] is None
    assert ParallelPG(noop_from=None, **SMALL).config["noop_from"] is None
    assert ParallelPG(noop_from=NOOP_FROM + 1, **SMALL).config["noop_from"] == NOOP_FROM + 1


def test_a_branch_with_a_later_noop_from_is_the_run_that_had_it_from_the_start(tmp_path):
    parent = tmp_path / "parent"  # 1 update: 128 agent steps
    ParallelPG(log_dir=parent, **SMALL).train(updates=1, checkpoint_path=parent / "checkpoint.npz")
    child = branch(parent, tmp_path / "child", {"noop_from": 256})
    b = ParallelPG.load(child / "checkpoint.npz", quiet=True).train(updates=3)
    whole = ParallelPG(noop_from=256, **SMALL).train(updates=3)
    assert b.net.n_logits == 3
    np.testing.assert_array_equal(b.net.params, whole.net.params)
    np.testing.assert_array_equal(b.optimizer.v, whole.optimizer.v)
    with pytest.raises(ValueError, match="the run has played 128 agent steps"):
        branch(parent, tmp_path / "late", {"noop_from": 128})
    b.save(tmp_path / "grown" / "checkpoint.npz")  # past its noop_from: three actions already
    (tmp_path / "grown" / "progress.csv").write_bytes((child / "progress.csv").read_bytes())
    with pytest.raises(ValueError, match="noop_from branches a two-action Pong run"):
        branch(tmp_path / "grown", tmp_path / "again", {"noop_from": 10**6})
