"""Tier 1, single process: the pieces of ParallelPG against independent computations."""

import subprocess
import sys

import numpy as np
import pytest

from pgmpi import ConfigError, NonFiniteError, ParallelPG
from pgmpi.envs import EpisodeEnv, pong_frame
from pgmpi.networks import TwoLayerPolicy
from pgmpi.optimizers import RMSProp
from pgmpi.pg import discounted_returns, standardise


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
    inputs, hs, dls, actions = [], [], [], []
    for t in range(T):
        idx, h, p = net.forward(X[t])
        a = int(rng.integers(n_actions))
        inputs.append((idx, X[t, idx]))
        hs.append(h), dls.append(net.dlogits(p, a) * adv[t]), actions.append(a)
    grad = net.gradient(inputs, np.array(hs), np.array(dls, dtype=np.float32))
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


def test_discounted_returns_plain_and_with_pong_reset():
    r = np.array([0.0, 0.0, 1.0, 0.0, -1.0])
    g = 0.5
    np.testing.assert_allclose(discounted_returns(r, g, False), [0.1875, 0.375, 0.75, -0.5, -1.0])
    np.testing.assert_allclose(discounted_returns(r, g, True), [0.25, 0.5, 1.0, -0.5, -1.0])
    s = standardise(np.array([1.0, 2.0, 3.0]))
    assert abs(s.mean()) < 1e-12 and abs(s.std() - 1) < 1e-12
    assert np.all(standardise(np.ones(4)) == 0)


def test_rmsprop_step_by_hand():
    opt = RMSProp(3, learning_rate=0.1, decay_rate=0.9, eps=1e-5)
    params = np.array([1.0, -1.0, 0.0], dtype=np.float32)
    g = np.array([2.0, -0.5, 0.0], dtype=np.float32)
    opt.step(params, g)
    cache = 0.1 * g.astype(np.float64) ** 2
    expected = np.array([1.0, -1.0, 0.0]) + 0.1 * g / (np.sqrt(cache) + 1e-5)
    np.testing.assert_allclose(params, expected, rtol=1e-6)
    np.testing.assert_allclose(opt.cache, cache, rtol=1e-6)


def test_pong_preprocessing_on_real_ale_frames():
    env = EpisodeEnv("ALE/Pong-v5")
    first = env.reset(seed=0)
    assert first.shape == (6400,) and first.dtype == np.int8 and not first.any()
    counts = []
    for t in range(60):
        d, reward, done = env.step(t % 2)
        assert d.dtype == np.int8 and set(np.unique(d)) <= {-1, 0, 1}
        counts.append(np.count_nonzero(d))
    x = pong_frame(env.env.unwrapped.ale.getScreenRGB()).reshape(80, 80)
    assert set(np.unique(x)) <= {0, 1}
    # Background erased: what is left is both paddles (columns 8-9 and 70-71) and the ball.
    columns = set(np.nonzero(x)[1].tolist())
    assert {8, 9, 70, 71} <= columns and len(columns) <= 6, columns
    assert 20 < x.sum() < 60, x.sum()
    # Frame differences are sparse: moving ball and paddles only.
    assert 0 < max(counts) < 200 and np.mean(counts) < 100
    env.close()


def _cartpole(**kw):
    kw = (
        dict(
            env="CartPole-v1", hidden_size=16, learning_rate=1e-2, batch_size=4, seed=3, quiet=True
        )
        | kw
    )
    return ParallelPG(**kw)


def test_cartpole_learns_in_a_few_updates():
    means = []
    agent = _cartpole(hidden_size=32, batch_size=10, seed=0)
    agent.train(episodes=200, callback=lambda row: means.append(row["charts/mean_return"]))
    assert len(means) == 20
    # A random policy balances about 20 steps; 20 updates of 10 episodes multiply that.
    assert means[0] < 50 and np.mean(means[-3:]) > 4 * means[0], means


def test_save_load_round_trip(tmp_path):
    agent = _cartpole().train(episodes=8)
    path = agent.save(tmp_path / "ck.npz")
    back = ParallelPG.load(path, quiet=True)
    np.testing.assert_array_equal(back.net.params, agent.net.params)
    np.testing.assert_array_equal(back.optimizer.cache, agent.optimizer.cache)
    assert (back.update, back.episodes, back.steps) == (2, 8, agent.steps)
    assert back.running_reward == agent.running_reward
    assert list(back.recent_returns) == list(agent.recent_returns)
    # Training on from the loaded copy gives what training on the original gives.
    agent.train(episodes=16), back.train(episodes=16)
    np.testing.assert_array_equal(back.net.params, agent.net.params)


def test_exact_and_float_reductions_agree_closely():
    exact = _cartpole().train(episodes=12)
    plain = _cartpole(exact_reduction=False).train(episodes=12)
    np.testing.assert_allclose(exact.net.params, plain.net.params, rtol=1e-4, atol=1e-5)


def test_results_do_not_depend_on_blas_threads():
    # Pong, where the per-step product (about 30 x 200) is big enough for BLAS to thread.
    def run(threads):
        agent = ParallelPG(
            env="ALE/Pong-v5", batch_size=1, seed=2, blas_threads=threads, quiet=True
        )
        return agent.train(episodes=2).net.params.copy()

    np.testing.assert_array_equal(run(1), run(2))


def test_act_and_evaluate():
    agent = _cartpole().train(episodes=4)
    obs = np.array([0.0, 0.1, 0.02, -0.1], dtype=np.float32)
    assert agent.act(obs) in (0, 1)
    score = agent.evaluate(episodes=3)
    assert 8 <= score <= 500


@pytest.mark.parametrize(
    "kw, text",
    [
        (dict(batch_size=0), "batch_size must be an int >= 1, got 0"),
        (dict(gamma=1.5), "gamma must be in (0, 1], got 1.5"),
        (dict(gamma=0.0), "gamma must be in (0, 1], got 0.0"),
        (dict(learning_rate=-1.0), "learning_rate must be > 0, got -1.0"),
        (dict(decay_rate=1.0), "decay_rate must be in [0, 1), got 1.0"),
        (dict(hidden_size=0), "hidden_size must be an int >= 1, got 0"),
        (dict(seed=-2), "seed must be an int >= 0, got -2"),
        (dict(blas_threads=0), "blas_threads must be None or an int >= 1, got 0"),
        (dict(env="NoSuchEnv-v0"), "cannot make env 'NoSuchEnv-v0'"),
        (dict(env="Pendulum-v1"), "is not Discrete"),
        (dict(env="ALE/Breakout-v5"), "is not a 1-D Box"),
    ],
)
def test_bad_arguments_name_the_value(kw, text):
    with pytest.raises(ConfigError) as err:
        _cartpole(**kw)
    assert text in str(err.value)
    assert isinstance(err.value, ValueError)


def test_bad_checkpoint_every_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="checkpoint_every must be an int >= 1, got 0"):
        _cartpole().train(episodes=4, checkpoint_path=tmp_path / "ck.npz", checkpoint_every=0)


def _nan_reward_cartpole():
    import gymnasium as gym

    class NaNReward(gym.RewardWrapper):
        def reward(self, reward):
            return float("nan")

    return NaNReward(gym.make("CartPole-v1"))


def test_non_finite_returns_stop_training_before_saving(tmp_path):
    agent = _cartpole(env=_nan_reward_cartpole)
    with pytest.raises(NonFiniteError, match="update 0"):
        agent.train(episodes=100, checkpoint_path=tmp_path / "ck.npz")
    assert not (tmp_path / "ck.npz").exists()


def test_import_pgmpi_is_light():
    code = (
        "import sys, pgmpi; bad = [m for m in ('gymnasium', 'ale_py', 'matplotlib') "
        "if m in sys.modules]; assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
