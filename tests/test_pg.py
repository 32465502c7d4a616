"""Tier 1, single process: the pieces of ParallelPG against independent computations."""

import math
import subprocess
import sys

import numpy as np
import pytest

from pgmpi import ConfigError, NonFiniteError, ParallelPG, optimizers, rollout
from pgmpi.envs import make_gym
from pgmpi.networks import TwoLayerPolicy, dense, sparse
from pgmpi.optimizers import Adam, RMSProp
from pgmpi.pg import PRESETS, discounted_returns, standardise
from pgmpi.pong import PONG_DOWN, PONG_UP, PongGame, pong_frame


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


def test_batched_forward_gives_each_game_the_bits_it_gets_alone():
    rng = np.random.default_rng(4)
    net = TwoLayerPolicy(50, 8, 2, rng, bernoulli=True)
    xs = [(rng.integers(-1, 2, 50) * (rng.random(50) < 0.2)).astype(np.int8) for _ in range(5)]
    xs[2][:] = 0  # a first frame: no pixel set
    xs = [sparse(x) for x in xs]
    together, caches = net.forward(xs)
    for x, row, cache in zip(xs, together, caches, strict=True):
        alone, (single,) = net.forward([x])
        assert alone[0].tobytes() == row.tobytes()
        assert single[2].tobytes() == cache[2].tobytes()


def test_discounted_returns_plain_and_with_pong_reset():
    r = np.array([0.0, 0.0, 1.0, 0.0, -1.0])
    g = 0.5
    episode_end = np.array([0, 0, 0, 0, 1], dtype=bool)
    np.testing.assert_allclose(
        discounted_returns(r, g, episode_end), [0.1875, 0.375, 0.75, -0.5, -1.0]
    )
    np.testing.assert_allclose(discounted_returns(r, g, r != 0), [0.25, 0.5, 1.0, -0.5, -1.0])
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


def test_adam_step_by_hand():
    opt = Adam(2, learning_rate=0.1, beta1=0.9, beta2=0.999, eps=1e-8)
    params = np.array([1.0, -1.0], dtype=np.float32)
    g1, g2 = np.array([2.0, -0.5], np.float32), np.array([1.0, 0.5], np.float32)
    opt.step(params, g1), opt.step(params, g2)
    m, v, expected = np.zeros(2), np.zeros(2), np.array([1.0, -1.0])
    for t, g in ((1, g1), (2, g2)):
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g.astype(np.float64) ** 2
        expected += 0.1 * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    np.testing.assert_allclose(params, expected, rtol=1e-5)
    assert opt.t == 2


def test_optimizer_steps_taken_a_chunk_at_a_time_equal_whole_vector_steps():
    """Pong's 1.28 M parameters span many chunks: each element gets the textbook step once,
    with the same float32 bits as the step on the whole vector at once."""
    n = 2 * optimizers.CHUNK + 7  # two whole chunks and a short one
    covered = np.concatenate([np.arange(n)[part] for part in optimizers.chunks(n)])
    assert np.array_equal(covered, np.arange(n))
    rng = np.random.default_rng(0)
    start = rng.standard_normal(n).astype(np.float32)
    adam, rms = Adam(n, learning_rate=2e-3), RMSProp(n, learning_rate=1e-4, decay_rate=0.99)
    p_adam, p_rms, want_adam, want_rms = (start.copy() for _ in range(4))
    m, v, cache = (np.zeros(n, np.float32) for _ in range(3))
    for t in (1, 2):
        g = rng.standard_normal(n).astype(np.float32) * 1e-3
        adam.step(p_adam, g)
        rms.step(p_rms, g)
        # The same steps on whole vectors.
        m *= 0.9
        m += (1.0 - 0.9) * g
        v *= 0.999
        v += (1.0 - 0.999) * np.square(g)
        lr = 2e-3 * math.sqrt(1.0 - 0.999**t) / (1.0 - 0.9**t)
        want_adam += np.float32(lr) * m / (np.sqrt(v) + np.float32(1e-8))
        cache *= 0.99
        cache += (1.0 - 0.99) * np.square(g)
        want_rms += 1e-4 * g / (np.sqrt(cache) + 1e-5)
    pairs = [(p_adam, want_adam), (adam.m, m), (adam.v, v), (p_rms, want_rms), (rms.cache, cache)]
    for got, want in pairs:
        assert np.array_equal(got.view(np.int32), want.view(np.int32))


def test_pong_preprocessing_on_real_ale_frames():
    env = PongGame()
    env.new_game(seed=0)
    assert len(env.x[0]) == 0  # the first input: no difference yet
    counts = []
    for t in range(60):
        env.step(t % 2)
        idx, vals = env.x
        assert idx.dtype == np.int64 and vals.dtype == np.float32
        assert set(np.unique(vals)) <= {-1.0, 1.0} and np.all(np.diff(idx) > 0)
        counts.append(len(idx))
    x = pong_frame(env.env.unwrapped.ale.getScreenRGB()).reshape(80, 80)
    assert set(np.unique(x)) <= {0, 1}
    # Background erased: what is left is both paddles (columns 8-9 and 70-71) and the ball.
    columns = set(np.nonzero(x)[1].tolist())
    assert {8, 9, 70, 71} <= columns and len(columns) <= 6, columns
    assert 20 < x.sum() < 60, x.sum()
    # Frame differences are sparse: moving ball and paddles only.
    assert 0 < max(counts) < 200 and np.mean(counts) < 100
    env.close()


def test_direct_ale_step_is_gymnasiums_step():
    # The Game reads palette indices and updates its frame where they change; gymnasium
    # gives RGB frames. Both must give the post's inputs, bit for bit, over whole games.
    PongGame._FOREGROUND[:] = -1  # learn the palette's colours afresh
    game, env = PongGame(), make_gym("ALE/Pong-v5")
    game.new_game(seed=0)
    prev, games = pong_frame(env.reset(seed=0)[0]), 0
    for t in range(2500):
        a = (t // 7) % 2
        reward, _, over = game.step(a)
        obs, r, terminated, truncated, _ = env.step(PONG_UP if a == 0 else PONG_DOWN)
        cur = pong_frame(obs)
        assert np.array_equal(dense(game.x, 6400), cur - prev) and reward == r
        assert np.array_equal(game._prev, cur)
        assert over == (terminated or truncated)
        prev = cur
        if over:
            game.new_game(seed=0)
            prev = pong_frame(env.reset()[0])
            games += 1
    assert games >= 2  # and so new games started by Game's restore of the start state


class _RecordingALE:
    """The real ALE, with every action it is sent written down (a spy, not a stand-in)."""

    def __init__(self, ale):
        self.ale, self.sent = ale, []

    def act(self, action):
        self.sent.append(action)
        return self.ale.act(action)

    def __getattr__(self, name):
        return getattr(self.ale, name)


def test_sticky_actions_repeat_the_frame_befores_action_a_quarter_of_the_time():
    game = PongGame(sticky=True)
    game.new_game(seed=4)
    game._ale = spy = _RecordingALE(game._ale)
    wanted = []
    for t in range(2000):  # up, down, up, ...: a repeat shows as the other action
        game.step(t % 2)
        wanted += [game._ale_actions[t % 2]] * 4
        if not game.live:
            game.new_game(seed=4)
    late = np.mean([a != w for a, w in zip(spy.sent, wanted, strict=True)])
    # Frame f of a step still applies the last step's action with probability 0.25**f.
    assert abs(late - sum(0.25**f for f in range(1, 5)) / 4) < 0.015, late


def test_sticky_game_continues_exactly_after_snapshot_and_restore():
    """Moved to a new Game every 100 steps and at every game's end, a sticky game plays on
    exactly as one never moved (its stream and the action applied last go with it)."""
    actions = np.random.default_rng(0).integers(0, 2, 2500)

    def play(game, move):
        seen = []
        for t, a in enumerate(actions):
            if move and (t % 100 == 0 or not game.live):
                back = PongGame(sticky=True)
                back.restore(game.snapshot(), seed=9)
                assert back.live == game.live
                game = back
            if not game.live:
                game.new_game(seed=9)
            reward, _, over = game.step(int(a))
            seen.append((reward, game.x[0].tolist(), game.x[1].tolist()))
        return seen

    games = [PongGame(sticky=True) for _ in range(2)]
    for game in games:
        game.new_game(seed=9)
    moved, stayed = play(games[0], True), play(games[1], False)
    assert sum(r != 0 for r, _, _ in stayed) >= 21  # a whole game at least
    assert moved == stayed


def test_rally_rule_ends_a_rally_at_every_point():
    game = PongGame()
    game.new_game(seed=0)
    rallies = games = 0
    while not games:
        reward, rally_over, game_over = game.step(0)
        assert rally_over == (reward != 0 or game_over)
        rallies, games = rallies + rally_over, games + game_over
    assert rallies == 21 and game.score == -21.0 and not game.live  # always up: lost 0-21


def _cartpole(**kw):
    base = dict(env="CartPole-v1", hidden_size=16, learning_rate=1e-2, optimizer="rmsprop")
    base |= dict(slots=4, steps_per_slot=1, whole_games=True, seed=3, quiet=True)
    return ParallelPG(**(base | kw))


def _pong(**kw):
    base = dict(hidden_size=8, slots=3, steps_per_slot=40, seed=2, quiet=True)
    return ParallelPG(**(base | kw))


def test_cartpole_learns_in_a_few_updates():
    means = []
    agent = _cartpole(hidden_size=32, slots=10, seed=0)
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


@pytest.mark.parametrize("sticky", [False, True])
def test_pong_games_in_progress_survive_save_and_load(tmp_path, sticky):
    rows = {"a": [], "b": []}
    agent = _pong(sticky_actions=sticky).train(episodes=1)  # games carried over updates
    assert any(g.live for g in agent.games.values()) and agent.open_rallies.steps
    back = ParallelPG.load(agent.save(tmp_path / "ck.npz"), quiet=True)
    assert back.open_rallies.steps.keys() == agent.open_rallies.steps.keys()
    for k, game in agent.games.items():
        assert back.games[k].live == game.live and back.games[k].score == game.score
    agent.train(episodes=3, callback=rows["a"].append)
    back.train(episodes=3, callback=rows["b"].append)
    np.testing.assert_array_equal(back.net.params, agent.net.params)
    np.testing.assert_array_equal(back.optimizer.m, agent.optimizer.m)
    learned = [[r["charts/running_reward"], r["steps"]] for r in rows["a"]]
    assert learned == [[r["charts/running_reward"], r["steps"]] for r in rows["b"]]


def test_karpathy_preset_is_the_posts_update(monkeypatch):
    """One update of the preset equals the post's formula, recomputed densely in float64 from
    the recorded games: the sum over 10 whole games of each game's gradient, with returns
    restarting at every point and standardised per game, then one RMSProp step."""
    assert PRESETS["karpathy"]["slots"] == 10 and PRESETS["karpathy"]["whole_games"]
    agent = ParallelPG.from_preset("karpathy", hidden_size=6, seed=1, quiet=True)
    recorded, play = [], rollout.play  # keep what the real games played
    monkeypatch.setattr(rollout, "play", lambda *a, **k: recorded.extend(play(*a, **k)) or recorded)
    W1, W2 = agent.net.W1.astype(np.float64), agent.net.W2[:, 0].astype(np.float64)
    agent.train(episodes=10)
    assert agent.update == 1 and len(recorded) == 10
    g1, g2 = np.zeros_like(W1), np.zeros_like(W2)
    for piece in recorded:
        assert len(piece.finished) == 1 and piece.ends[-1]  # one whole game, no more
        X = np.zeros((len(piece.rewards), 6400))
        for t, (idx, vals, _) in enumerate(piece.caches):
            X[t, idx] = vals
        up = np.array([d[0] > 0 for d in piece.dlogits])  # dlogit = [a == up] - p(up)
        h = np.maximum(X @ W1, 0)
        p_up = 1 / (1 + np.exp(-(h @ W2)))
        r, G, running = np.array(piece.rewards), np.zeros(len(piece.rewards)), 0.0
        for t in reversed(range(len(r))):
            running = 0.0 if r[t] != 0 else running * 0.99
            running += r[t]
            G[t] = running
        G = (G - G.mean()) / G.std()
        d = (up - p_up) * G
        g2 += h.T @ d
        g1 += X.T @ (np.outer(d, W2) * (h > 0))
    g = np.concatenate([g1.ravel(), g2])
    expected = np.concatenate([W1.ravel(), W2]) + 1e-4 * g / (np.sqrt(0.01 * g**2) + 1e-5)
    # float32 against float64: RMSProp magnifies rounding where a gradient is near eps
    np.testing.assert_allclose(agent.net.params, expected, rtol=2e-4, atol=1e-7)


def test_exact_and_float_reductions_agree_closely():
    exact = _cartpole().train(episodes=12)
    plain = _cartpole(exact_reduction=False).train(episodes=12)
    np.testing.assert_allclose(exact.net.params, plain.net.params, rtol=1e-4, atol=1e-5)


def test_results_do_not_depend_on_blas_threads():
    # Pong, where the per-step product (about 30 x 200) is big enough for BLAS to thread.
    def run(threads):
        agent = ParallelPG(slots=2, steps_per_slot=100, seed=2, blas_threads=threads, quiet=True)
        agent.train(episodes=1)
        return agent.net.params.copy()

    np.testing.assert_array_equal(run(1), run(2))


def test_act_and_evaluate():
    agent = _cartpole().train(episodes=4)
    obs = np.array([0.0, 0.1, 0.02, -0.1], dtype=np.float32)
    assert agent.act(obs) in (0, 1)
    score = agent.evaluate(episodes=3)
    assert 8 <= score <= 500 and len(agent.evaluation_returns) == 3
    assert agent.evaluate(episodes=3, greedy=True) >= 8


def test_evaluation_plays_the_env_a_factory_makes():
    import gymnasium as gym

    short = lambda: gym.wrappers.TimeLimit(gym.make("CartPole-v1"), 5)  # noqa: E731
    agent = _cartpole(env=short)
    assert agent.evaluate(episodes=3) == 5.0  # every episode cut at 5 steps, as trained


def test_sticky_evaluation_differs_from_deterministic_pong():
    agent = _pong()
    plain = [agent.evaluate(episodes=2, greedy=True) for _ in range(2)]
    sticky = agent.evaluate(episodes=2, greedy=True, sticky=True)
    assert plain[0] == plain[1] == -21.0  # greedy and deterministic: the same game twice
    lengths = agent.evaluation_returns
    assert sticky <= -19 and lengths.shape == (2,)


@pytest.mark.parametrize(
    "kw, text",
    [
        (dict(slots=0), "slots must be None or an int >= 1, got 0"),
        (dict(steps_per_slot=0), "steps_per_slot must be an int >= 1, got 0"),
        (dict(optimizer="sgd"), "optimizer must be 'adam' or 'rmsprop', got 'sgd'"),
        (dict(batch_gradient="avg"), "batch_gradient must be 'mean' or 'sum', got 'avg'"),
        (dict(whole_games="no"), "whole_games must be None, True or False, got 'no'"),
        (dict(whole_games=False), "only Pong games can stop mid-game between updates"),
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


def test_unknown_preset_names_the_presets():
    with pytest.raises(ConfigError, match="no preset 'fastest'; presets: fast, karpathy"):
        ParallelPG.from_preset("fastest", env="CartPole-v1")


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
