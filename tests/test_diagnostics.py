"""Tier 1: ParallelPG's diagnostics (pgmpi.diagnostics) against numbers worked by hand, and
the columns of its logged row against the steps it played."""

import math

import numpy as np
import pytest

from pgmpi import ParallelPG, rollout
from pgmpi.diagnostics import (
    COLUMNS,
    ENTROPY,
    EXPLAINED_VARIANCE,
    GRADIENT_NORM,
    RALLY_SHARE,
    entropy,
    explained_variance,
    fit,
    game_sums,
    norm,
    row,
)
from pgmpi.networks import TwoLayerPolicy
from tests.test_tensorboard import read_scalars


def _h(*p):
    return -sum(x * math.log(x) for x in p if x > 0)


def test_the_entropy_of_known_distributions_from_what_the_policy_keeps():
    """From d log pi / d logits and the action, as ParallelPG keeps them for every step."""
    pong = TwoLayerPolicy(4, 3, 2, np.random.default_rng(0), bernoulli=True)
    probs = np.array([[0.5, 0.5], [0.9, 0.1], [0.2, 0.8], [1.0, 0.0]], dtype=np.float32)
    actions = [0, 1, 1, 0]
    expected = [math.log(2), _h(0.9, 0.1), _h(0.2, 0.8), 0.0]
    np.testing.assert_allclose(entropy(pong.dlogits(probs, actions), actions), expected, atol=1e-6)
    three = TwoLayerPolicy(4, 3, 3, np.random.default_rng(0))
    probs = np.array([[1 / 3] * 3, [0.5, 0.5, 0.0], [0.7, 0.2, 0.1]], dtype=np.float32)
    actions = [2, 0, 1]
    expected = [math.log(3), math.log(2), _h(0.7, 0.2, 0.1)]
    np.testing.assert_allclose(entropy(three.dlogits(probs, actions), actions), expected, atol=1e-6)


def test_explained_variance_on_known_numbers():
    g = np.array([1.0, 2.0, 3.0, 4.0])
    assert explained_variance([fit(g, g)]) == 1.0  # every return predicted
    assert explained_variance([fit(g, np.zeros(4))]) == 0.0  # no better than their mean
    assert explained_variance([fit(g, np.full(4, 10.0))]) == 0.0  # a constant is no better
    # e = G - v = (0, 1, 0, 1): Var(e) = 0.25 against Var(G) = 1.25
    assert explained_variance([fit(g, [1.0, 1.0, 3.0, 3.0])]) == pytest.approx(0.8, abs=1e-15)
    # split over two games, the same steps
    assert explained_variance([fit(g[:1], [1.0]), fit(g[1:], [1.0, 3.0, 3.0])]) == 0.8
    assert explained_variance([fit(g, 2 * g)]) == 0.0  # v = 2G: e = -G
    assert explained_variance([fit(g, -g)]) == -3.0  # worse than none: Var(2G) = 4 Var(G)
    assert math.isnan(explained_variance([fit(np.ones(3), np.zeros(3))]))  # Var(G) = 0
    assert math.isnan(explained_variance([]))


def test_the_norm_of_known_and_of_many_numbers():
    assert norm(np.array([3.0, 0.0, 4.0], dtype=np.float32)) == 5.0
    x = np.random.default_rng(1).standard_normal(1_000_001).astype(np.float32)
    exact = math.sqrt(math.fsum(np.square(x, dtype=np.float64).tolist()))
    assert norm(x) == pytest.approx(exact, rel=1e-7)  # squares rounded to float32


def _piece(rewards, probs, actions, fit=None):
    piece = rollout.Piece()
    net = TwoLayerPolicy(4, 3, 2, np.random.default_rng(0), bernoulli=True)
    piece.rewards, piece.actions, piece.fit = list(rewards), list(actions), fit
    piece.dlogits = list(net.dlogits(np.array([[p, 1 - p] for p in probs], np.float32), actions))
    return piece


def test_the_row_pools_every_game_of_every_rank_in_any_order():
    g, v = np.array([1.0, -1.0, 0.5]), np.array([0.5, -0.5, 0.0])
    a = game_sums(_piece([0, 1, 0, -1], [0.5] * 4, [0, 1, 0, 1], fit(g[:2], v[:2])))
    b = game_sums(_piece([-1, 0], [0.9, 0.9], [0, 0], fit(g[2:], v[2:])))
    c = game_sums(_piece([0], [0.2], [1]))  # no rally ended: no fit
    out = row([[a, b], [c]], np.array([0, 3, 4], dtype=np.float32))
    assert list(out) == list(COLUMNS)
    assert out[ENTROPY] == pytest.approx((4 * math.log(2) + 2 * _h(0.9, 0.1) + _h(0.2, 0.8)) / 7)
    assert out[RALLY_SHARE] == 1 / 3  # points 1-2
    assert out[GRADIENT_NORM] == 5.0
    assert out[EXPLAINED_VARIANCE] == explained_variance([fit(g, v)])
    for ranks in ([[c], [b], [a]], [[b, c, a]], [[], [a], [c, b]]):  # bit for bit
        assert row(ranks, np.array([4, 0, 3], dtype=np.float32)) == out
    quiet = row([[c]], np.zeros(3, dtype=np.float32))  # no point, no baseline fit
    assert quiet[RALLY_SHARE] is None and quiet[EXPLAINED_VARIANCE] is None


def _pong(**kw):
    base = dict(hidden_size=8, slots=3, steps_per_slot=150, seed=2, quiet=True)
    return ParallelPG(**(base | kw))


def test_the_logged_columns_are_those_of_the_steps_played(monkeypatch):
    """Each update's entropy and points against the pieces rollout.play returned, entropy
    recomputed from the network that played them; the norm against the gradient the
    optimizer got."""
    agent = _pong()
    played, given = [], []
    real_play, real_step = rollout.play, agent.optimizer.step

    def play(net, *args, **kw):
        pieces = real_play(net, *args, **kw)
        probs = np.concatenate([net.forward([c[:2] for c in p.caches])[0] for p in pieces])
        rewards = np.concatenate([p.rewards for p in pieces])
        h = -(probs * np.log(probs)).sum(axis=1)
        played.append((h.mean(), (rewards > 0).sum(), (rewards != 0).sum()))
        return pieces

    def step(params, grad, rate):
        given.append(np.linalg.norm(grad.astype(np.float64)))
        return real_step(params, grad, rate)

    monkeypatch.setattr(rollout, "play", play)
    monkeypatch.setattr(agent.optimizer, "step", step)
    rows = []
    agent.train(updates=3, callback=rows.append)
    assert len(rows) == len(played) == len(given) == 3
    for r, (h, won, points), g in zip(rows, played, given, strict=True):
        assert 0 < r[ENTROPY] <= math.log(2) and r[ENTROPY] == pytest.approx(h, rel=1e-5)
        assert r[RALLY_SHARE] == (won / points if points else None)
        assert r[GRADIENT_NORM] == pytest.approx(g, rel=1e-7) and g > 0
    assert sum(p for *_, p in played) > 0  # points were scored, so the share was checked
    # the baseline starts at zero, so its first fit explains nothing, exactly
    assert rows[0][EXPLAINED_VARIANCE] == 0.0
    assert all(r[EXPLAINED_VARIANCE] is not None for r in rows)


def test_without_a_baseline_the_explained_variance_is_empty(tmp_path):
    """In the CSV an empty cell; TensorBoard gets the other three at every update."""
    agent = _pong(value_baseline=0.0, log_dir=tmp_path, tensorboard=True)
    agent.train(updates=2)
    header, *lines = (tmp_path / "progress.csv").read_text().splitlines()
    names = header.split(",")
    assert all(c in names for c in COLUMNS)
    at = names.index(EXPLAINED_VARIANCE)
    assert [line.split(",")[at] for line in lines] == ["", ""]
    assert all(float(line.split(",")[names.index(ENTROPY)]) > 0 for line in lines)
    tags = [tag for tag, _, _ in read_scalars(tmp_path)[1]]
    assert all(tags.count(c) == 2 for c in (ENTROPY, GRADIENT_NORM)), tags
    assert EXPLAINED_VARIANCE not in tags
