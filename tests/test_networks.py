"""Tier 1: the numpy policy network (pgmpi/networks.py): its gradient against finite
differences, and batched forward passes against one game at a time."""

import warnings

import numpy as np
import pytest

from pgmpi.networks import TwoLayerPolicy, sparse


def _logp_objective(W1, W2, X, actions, adv, bernoulli):
    """sum_t adv_t * log pi(a_t | x_t) in float64, written independently of networks.py."""
    h = np.maximum(X @ W1, 0.0)
    logits = h @ W2
    if bernoulli:
        p_up = 1.0 / (1.0 + np.exp(-logits[:, 0]))
        logp = np.where(actions == 0, np.log(p_up), np.log(1.0 - p_up))
    else:
        z = logits - logits.max(axis=1, keepdims=True)
        logp = z[np.arange(len(actions)), actions] - np.log(np.exp(z).sum(axis=1))
    return float((adv * logp).sum())


@pytest.mark.parametrize("bernoulli", [True, False])
def test_gradient_matches_finite_differences(bernoulli):
    rng = np.random.default_rng(1)
    n_actions = 2 if bernoulli else 3
    net = TwoLayerPolicy(7, 5, n_actions, rng, bernoulli=bernoulli)
    T = 9
    X = rng.standard_normal((T, 7)).astype(np.float32) * (rng.random((T, 7)) < 0.5)
    adv = rng.standard_normal(T)
    caches, dls, actions = [], [], []
    for t in range(T):
        probs, (cache,) = net.forward([sparse(X[t])])
        a = int(rng.integers(n_actions))
        caches.append(cache), dls.append(net.dlogits(probs, [a])[0] * adv[t]), actions.append(a)
    grad = net.flat(*net.gradient(caches, np.array(dls, dtype=np.float32)))
    theta = net.params.astype(np.float64)
    d, hdim, k = 7, 5, net.n_logits

    def f(th):
        return _logp_objective(
            th[: d * hdim].reshape(d, hdim),
            th[d * hdim :].reshape(hdim, k),
            X.astype(np.float64),
            np.array(actions),
            adv,
            bernoulli,
        )

    eps = 1e-6
    numeric = np.array(
        [(f(theta + eps * e) - f(theta - eps * e)) / (2 * eps) for e in np.eye(theta.size)]
    )
    np.testing.assert_allclose(grad, numeric, rtol=2e-3, atol=2e-4)


@pytest.mark.parametrize("n_actions", [2, 3])
def test_batched_forward_gives_each_game_the_bits_it_gets_alone(n_actions):
    rng = np.random.default_rng(4)
    net = TwoLayerPolicy(50, 8, n_actions, rng, bernoulli=n_actions == 2, value=True)
    xs = [(rng.integers(-1, 2, 50) * (rng.random(50) < 0.2)).astype(np.int8) for _ in range(5)]
    xs[2][:] = 0  # a first frame: no pixel set
    xs = [sparse(x) for x in xs]
    together, caches = net.forward(xs)
    for x, row, cache in zip(xs, together, caches, strict=True):
        alone, (single,) = net.forward([x])
        assert alone[0].tobytes() == row.tobytes()
        assert single[2].tobytes() == cache[2].tobytes()


def test_three_logits_are_summed_in_hidden_unit_order():
    """The softmax's logits are each row's products summed one hidden unit after another, in
    float32: the bits runs with NOOP have always had, now made slab by slab."""
    rng = np.random.default_rng(6)
    net = TwoLayerPolicy(300, 200, 3, rng, value=True)
    net.W2[:] = rng.standard_normal(net.W2.shape).astype(np.float32) * 3
    xs = [sparse((rng.integers(-1, 2, 300) * (rng.random(300) < 0.1)).astype(np.int8))
          for _ in range(16)]  # fmt: skip
    probs, caches = net.forward(xs)
    h = np.array([c[2] for c in caches])
    in_order = np.zeros((16, 3), dtype=np.float32)
    for j in range(200):
        in_order += h[:, j : j + 1] * net.W2[j, :3]
    e = np.exp(in_order - in_order.max(axis=1, keepdims=True))
    assert probs.tobytes() == (e / e.sum(axis=1, keepdims=True)).tobytes()
    pairwise = (h * net.W2[:, 0]).sum(axis=1)  # numpy's pairwise sum: other bits, so it tells
    assert not np.array_equal(pairwise, in_order[:, 0])


def test_a_policy_certain_to_the_last_bit_gives_probabilities_0_and_1_without_a_warning():
    rng = np.random.default_rng(5)
    net = TwoLayerPolicy(50, 8, 2, rng, bernoulli=True)
    net.W1[:] = 1.0
    x = sparse(np.ones(50, dtype=np.int8))
    for sign, up in ((-1, 0.0), (1, 1.0)):  # logits of -400 and +400
        net.W2[:] = sign
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # an overflow in exp would raise here
            probs, _ = net.forward([x])
        assert probs.tolist() == [[up, 1.0 - up]]


def _entropy(logits: np.ndarray, bernoulli: bool) -> np.ndarray:
    """The policy's entropy per step from its logits, in float64, independently of networks.py."""
    if bernoulli:
        p = 1.0 / (1.0 + np.exp(-logits[:, 0]))
        return -(p * np.log(p) + (1 - p) * np.log(1 - p))
    z = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    return -(p * np.log(p)).sum(axis=1)


@pytest.mark.parametrize("bernoulli", [True, False])
def test_entropy_dlogits_match_finite_differences(bernoulli):
    rng = np.random.default_rng(2)
    net = TwoLayerPolicy(7, 5, 2 if bernoulli else 3, rng, bernoulli=bernoulli)
    X = rng.standard_normal((6, 7)).astype(np.float32)
    probs, _ = net.forward([sparse(x) for x in X])
    actions = rng.integers(0, probs.shape[1], 6)
    got = net.entropy_dlogits(net.dlogits(probs, actions), actions)
    eps = 1e-6
    # logits that give these probabilities (a softmax's up to a constant, which H ignores)
    base = np.log(probs[:, :1] / (1 - probs[:, :1])) if bernoulli else np.log(probs)
    for k in range(got.shape[1]):
        up, down = base.astype(np.float64).copy(), base.astype(np.float64).copy()
        up[:, k] += eps
        down[:, k] -= eps
        numeric = (_entropy(up, bernoulli) - _entropy(down, bernoulli)) / (2 * eps)
        assert np.allclose(got[:, k], numeric, atol=1e-4), (k, got[:, k], numeric)
