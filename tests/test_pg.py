"""Tier 1, single process: ParallelPG against independent computations: discounted returns,
learning, save and load, the presets, evaluation, and its argument checks."""

import pickle

import numpy as np
import pytest

from pgmpi import ConfigError, NonFiniteError, ParallelPG, rollout
from pgmpi.networks import sparse
from pgmpi.pg import discounted_returns, standardise
from pgmpi.presets import PRESETS
from tests.helpers.checkpoints import assert_refused_unchanged, with_config


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


def _cartpole(**kw):
    base = dict(
        env="CartPole-v1",
        hidden_size=16,
        learning_rate=1e-2,
        optimizer="rmsprop",
    )  # as examples/cartpole.py
    base |= dict(slots=4, steps_per_slot=1, whole_games=True, seed=3, quiet=True)
    return ParallelPG(**(base | kw))


def _pong(**kw):
    base = dict(hidden_size=8, slots=3, steps_per_slot=40, seed=2, quiet=True)
    return ParallelPG(**(base | kw))


@pytest.mark.parametrize("n_actions", [2, 3, 6])
def test_each_game_samples_the_action_whose_interval_holds_its_draw(n_actions):
    """One call for every game of a step: each row's action is the one whose cumulative
    probability interval holds its draw, compared in float32 as a draw on the edge shows."""
    rng = np.random.default_rng(7)
    logits = rng.standard_normal((40, n_actions))
    probs = (np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)).astype(np.float32)
    edges = np.cumsum(probs, axis=1)
    draws, expected = [], []
    for edge in edges:
        j = int(rng.integers(n_actions - 1))
        # just under an edge in float64, the edge itself in float32: the next action
        draws.append(np.nextafter(float(edge[j]), 0.0))
        expected.append(j + 1)
        assert np.float32(draws[-1]) == edge[j] and draws[-1] < edge[j]
    u = rng.random(40).tolist()
    draws += u
    expected += [min(int(np.searchsorted(e, np.float32(x), side="right")), n_actions - 1)
                 for e, x in zip(edges, u, strict=True)]  # fmt: skip
    assert rollout.sample(np.concatenate([probs, probs]), draws) == expected


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


def test_noop_plays_pong_with_a_softmax_over_up_down_and_noop(tmp_path):
    """With ``noop`` the policy is a softmax over three logits (up, down, NOOP), not one
    up/down logit; every one of the three is played, and a saved run goes on exactly."""
    two, three = _pong(), _pong(noop=True)
    assert (two.net.n_logits, three.net.n_logits) == (1, 3)
    assert three.net.n_inputs == 6400
    assert three.probe.n_actions == 3 and three.config["noop"] is True
    rows = []
    three.train(updates=2, callback=rows.append)  # rallies still open: their actions
    played = {a for _, actions in three.open_rallies.steps.values() for a in actions}
    assert played == {0, 1, 2}, played
    assert 0 < rows[-1]["diagnostics/entropy"] <= np.log(3)  # a 3-way policy's entropy
    back = ParallelPG.load(three.save(tmp_path / "ck.npz"), quiet=True)
    assert back.config["noop"] is True and back.net.n_logits == 3
    three.train(updates=3), back.train(updates=3)
    np.testing.assert_array_equal(back.net.params, three.net.params)


def test_karpathy_preset_is_the_posts_update(monkeypatch):
    """One update of the preset equals the post's formula, recomputed densely in float64 from
    the recorded games: the sum over 10 whole games of each game's gradient, with returns
    restarting at every point and standardised per game, then one RMSProp step."""
    assert PRESETS["karpathy"].slots == 10 and PRESETS["karpathy"].whole_games
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


def test_a_learned_baseline_update_is_the_textbook_one(monkeypatch):
    """The second update with a value output (the first leaves its weights non-zero), recomputed
    densely in float64 from the recorded games: advantages are the returns less the values,
    standardised per game, and the value output climbs -c (G - v)^2 / 2 through the same
    hidden layer; then one RMSProp step on the sum over the games."""
    c = 0.5
    agent = ParallelPG.from_preset("karpathy", hidden_size=6, slots=2, seed=1, quiet=True,
                                   value_baseline=c)  # fmt: skip
    assert agent.net.W2.shape == (6, 2) and not agent.net.W2[:, 1].any()  # starts at zero
    agent.train(updates=1)
    recorded, play = [], rollout.play
    monkeypatch.setattr(rollout, "play", lambda *a, **k: recorded.extend(play(*a, **k)) or recorded)
    W1, W2 = agent.net.W1.astype(np.float64), agent.net.W2.astype(np.float64)
    assert W2[:, 1].any()
    cache = agent.optimizer.cache.astype(np.float64)
    agent.train(updates=2)
    assert len(recorded) == 2

    def update(baseline: bool) -> np.ndarray:
        g1, g2 = np.zeros_like(W1), np.zeros_like(W2)
        for piece in recorded:
            X = np.zeros((len(piece.rewards), 6400))
            for t, (idx, vals, _) in enumerate(piece.caches):
                X[t, idx] = vals
            up = np.array([d[0] > 0 for d in piece.dlogits])
            h = np.maximum(X @ W1, 0)
            p_up, v = 1 / (1 + np.exp(-(h @ W2[:, 0]))), h @ W2[:, 1] * baseline
            r = np.array(piece.rewards)
            G = discounted_returns(r, 0.99, r != 0)
            A = (G - v - (G - v).mean()) / (G - v).std()
            d = np.stack([(up - p_up) * A, c * (G - v) * baseline], axis=1)
            g2 += h.T @ d
            g1 += X.T @ ((d @ W2.T) * (h > 0))
        g = np.concatenate([g1.ravel(), g2.ravel()])
        rms = 0.99 * cache + 0.01 * g**2
        return np.concatenate([W1.ravel(), W2.ravel()]) + 1e-4 * g / (np.sqrt(rms) + 1e-5)

    np.testing.assert_allclose(agent.net.params, update(True), rtol=2e-4, atol=1e-7)
    assert not np.allclose(agent.net.params, update(False), rtol=2e-4, atol=1e-7)


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
    agent = _pong(sticky_actions=False)
    plain = [agent.evaluate(episodes=2, greedy=True) for _ in range(2)]
    sticky = agent.evaluate(episodes=2, greedy=True, sticky=True)
    assert plain[0] == plain[1] == -21.0  # greedy and deterministic: the same game twice
    lengths = agent.evaluation_returns
    assert sticky <= -19 and lengths.shape == (2,)
    assert "deterministic" in plain[0].protocol and "sticky" in sticky.protocol


def test_evaluate_defaults_to_the_protocol_trained_on():
    sticky, plain = _pong(), _pong(sticky_actions=False)
    assert sticky.config["sticky_actions"]  # the default
    assert sticky.evaluate(episodes=1).protocol == "sticky, sampled"
    assert plain.evaluate(episodes=1, greedy=True).protocol == "deterministic, greedy"
    assert sticky.evaluate(episodes=1, sticky=False).protocol == "deterministic, sampled"


def test_evaluation_is_the_mean_with_its_95_percent_confidence_interval():
    agent = _cartpole().train(episodes=4)
    e = agent.evaluate(episodes=5)
    r = agent.evaluation_returns
    assert isinstance(e, float) and float(e) == r.mean() and np.array_equal(e.returns, r)
    half = 1.96 * r.std(ddof=1) / np.sqrt(5)
    assert e.ci95 == (r.mean() - half, r.mean() + half) and half > 0
    assert str(e).startswith(f"{r.mean():+.2f} \u00b1 {half:.2f} (95% CI, 5 episodes")
    back = pickle.loads(pickle.dumps(e))  # as mpi4py's object collectives send it
    assert float(back) == float(e) and back.ci95 == e.ci95 and back.protocol == e.protocol


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
        (dict(entropy_bonus=-0.1), "entropy_bonus must be None or a number >= 0, got -0.1"),
        (dict(entropy_final=-0.1), "entropy_final must be None or a number >= 0, got -0.1"),
        (dict(entropy_steps=0), "entropy_steps must be an int >= 1, got 0"),
        (dict(decay_rate=1.0), "decay_rate must be in [0, 1), got 1.0"),
        (dict(hidden_size=0), "hidden_size must be an int >= 1, got 0"),
        (dict(seed=-2), "seed must be an int >= 0, got -2"),
        (dict(blas_threads=0), "blas_threads must be None or an int >= 1, got 0"),
        (dict(env="NoSuchEnv-v0"), "cannot make env 'NoSuchEnv-v0'"),
        (dict(env="Pendulum-v1"), "is not Discrete"),
        (dict(env="ALE/Breakout-v5"), "is not a 1-D Box"),
        (dict(noop=True), "noop=True adds Pong's NOOP; other envs keep their actions"),
        (dict(noop=1), "noop must be True or False, got 1"),
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
    with pytest.raises(NonFiniteError, match="update 1: .*; no checkpoint was saved yet"):
        agent.train(episodes=100, checkpoint_path=tmp_path / "ck.npz")
    assert not (tmp_path / "ck.npz").exists()


def test_steps_count_the_agent_steps_played_not_the_open_rallies_carried_over():
    agent = ParallelPG(hidden_size=8, slots=2, steps_per_slot=40, quiet=True, blas_threads=1)
    rows = []
    agent.train(updates=3, callback=rows.append)
    assert [r["steps"] for r in rows] == [80, 160, 240] and agent.steps == 240
    assert agent.open_rallies.steps  # rallies were open, so the check could fail


def test_the_header_names_the_default_bonus_baseline_and_decay_and_the_posts_preset_has_none():
    default = ParallelPG(hidden_size=4, slots=1, quiet=True).describe().text
    assert (", entropy bonus 0.03 to 0.01 over 3,000,000 agent steps, learned baseline 0.05, "
            "lr and bonus decayed past 7,500,000 agent steps (halved 1,250,000 later), "
            "NOOP from 3,000,000 agent steps |") in default  # fmt: skip
    post = ParallelPG.from_preset("karpathy", hidden_size=4, slots=1, quiet=True).describe().text
    assert not any(word in post for word in ("entropy", "baseline", "decay", "NOOP"))
    no_bonus = ParallelPG(hidden_size=4, slots=1, quiet=True, entropy_bonus=0.0,
                          entropy_final=None).describe().text  # fmt: skip
    assert ", learned baseline 0.05, lr decayed past 7,500,000" in no_bonus  # no bonus to decay
    valued = ParallelPG(hidden_size=4, slots=1, quiet=True, value_baseline=0.5, lr_decay_steps=None)
    assert (
        ", entropy bonus 0.03 to 0.01 over 3,000,000 agent steps, learned baseline 0.5, "
        "NOOP from" in valued.describe().text
    )  # no decay; fmt: skip


def test_the_default_entropy_schedule_is_sticky_pongs_and_others_keep_a_constant_bonus():
    """entropy_bonus None: sticky Pong moves from 0.03 to 0.01 (or to entropy_final, given);
    deterministic Pong and other envs keep 0.01 throughout, the default before the schedule
    (same bits as passing it)."""
    sticky = ParallelPG(hidden_size=4, slots=1, quiet=True).config
    assert (sticky["entropy_bonus"], sticky["entropy_final"]) == (0.03, 0.01)
    to = ParallelPG(hidden_size=4, slots=1, quiet=True, entropy_final=0.005).config
    assert (to["entropy_bonus"], to["entropy_final"]) == (0.03, 0.005)
    given = ParallelPG(hidden_size=4, slots=1, quiet=True, entropy_bonus=0.02).config
    assert (given["entropy_bonus"], given["entropy_final"]) == (0.02, None)
    plain = ParallelPG(hidden_size=4, slots=1, quiet=True, sticky_actions=False).config
    assert (plain["entropy_bonus"], plain["entropy_final"]) == (0.01, None)
    cartpole = _cartpole().train(updates=2)
    assert (cartpole.config["entropy_bonus"], cartpole.config["entropy_final"]) == (0.01, None)
    pinned = _cartpole(entropy_bonus=0.01, entropy_final=None).train(updates=2)
    np.testing.assert_array_equal(cartpole.net.params, pinned.net.params)


def test_advantages_are_standardised_over_the_update_but_in_deterministic_pong():
    """standardise_over None: over every game of the update for sticky Pong and other envs;
    each game alone for deterministic Pong (the default before, the same bits as passing it)."""
    assert ParallelPG(hidden_size=4, slots=1, quiet=True).config["standardise_over"] == "update"
    plain = ParallelPG(hidden_size=4, slots=1, quiet=True, sticky_actions=False).config
    assert plain["standardise_over"] == "game"
    assert _cartpole().config["standardise_over"] == "update"
    given = ParallelPG(hidden_size=4, slots=1, quiet=True, standardise_over="game").config
    assert given["standardise_over"] == "game"


def test_the_default_baseline_is_pongs_and_other_envs_get_none():
    """value_baseline None: 0.05 for Pong, whose returns lie in [-1, 1]; none for CartPole,
    whose unscaled returns would swamp the standardised advantages (it then fails to learn)."""
    pong = ParallelPG(hidden_size=4, slots=1, quiet=True)
    cartpole = ParallelPG(env="CartPole-v1", hidden_size=4, slots=1, quiet=True)
    assert pong.config["value_baseline"] == 0.05 and pong.net.n_outputs == 2  # up, value
    assert cartpole.config["value_baseline"] == 0.0 and cartpole.net.n_outputs == 2  # 2 actions
    assert "baseline" not in cartpole.describe().text


def test_the_run_header_says_which_pong_protocol_is_in_force():
    for sticky, words in ((True, "| sticky actions (0.25)"), (False, "| deterministic")):
        agent = ParallelPG(hidden_size=4, slots=1, sticky_actions=sticky, quiet=True)
        assert agent.describe().text.endswith(words)
    assert ParallelPG(hidden_size=4, slots=1, quiet=True).describe().text.endswith("(0.25)")
    v0 = ParallelPG.from_preset("karpathy", hidden_size=4, slots=1, quiet=True)
    assert v0.describe().text.endswith("| sticky actions (0.25), frame skip 2-4")
    assert "sticky" not in ParallelPG(env="CartPole-v1", hidden_size=4, slots=1).describe().text


def test_a_checkpoint_older_than_a_setting_resumes_as_it_ran(tmp_path):
    """A checkpoint written before entropy_bonus, decay_from, standardise_over and the
    screens' settings (entropy_final, entropy_steps) existed lacks them (rewritten here
    without them): it resumes with the values in force then (no bonus, a decay from the first
    step, each game standardised alone), not today's defaults, into the same log dir, exactly
    as a run never stopped."""
    import json

    ck = tmp_path / "ck.npz"
    then = dict(entropy_bonus=0.0, lr_decay_steps=100, decay_from=0, standardise_over="game")
    whole = _cartpole(**then).train(episodes=16)
    _cartpole(**then).train(episodes=8).save(ck)
    with np.load(ck) as data:
        arrays = dict(data)
    meta = json.loads(arrays["__meta__"].tobytes().decode())
    for name in ("entropy_bonus", "decay_from", "entropy_final", "entropy_steps",
                 "standardise_over", "noop"):  # fmt: skip
        del meta["config"][name]
    arrays["__meta__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    np.savez(ck, **arrays)
    back = ParallelPG.load(ck, quiet=True)
    assert back.config["entropy_bonus"] == 0.0 and back.config["decay_from"] == 0
    assert back.config["entropy_final"] is None and back.config["standardise_over"] == "game"
    assert back.config["noop"] is False
    back.train(episodes=16, checkpoint_path=ck)  # writes over its own checkpoint
    assert np.array_equal(back.net.params, whole.net.params)


def test_a_checkpoint_with_a_removed_setting_resumes_at_its_value_and_is_refused_at_another(
    tmp_path,
):
    """Settings screened and removed (retired.PG_RETIRED: PPO's passes and clip, GAE's lambda,
    the baseline's own step size, deterministic games, a frame stack, the paddle's column)
    stay in the checkpoints written before: at the value played today the run resumes
    exactly, into the same log dir; at another, one clear error, and the file is left as it
    was."""
    ck = tmp_path / "ck.npz"
    whole = _cartpole().train(episodes=16)
    _cartpole().train(episodes=8).save(ck)
    with_config(ck, gae_lambda=None, value_lr_scale=1.0, epochs=1, clip=0.2,
                 deterministic_games=0.0, frame_stack=0, paddle_column=False)  # fmt: skip
    back = ParallelPG.load(ck, quiet=True)
    assert "epochs" not in back.config and "gae_lambda" not in back.config
    back.train(episodes=16, checkpoint_path=ck)  # writes over its own checkpoint
    assert np.array_equal(back.net.params, whole.net.params)
    with_config(ck, epochs=3, gae_lambda=0.9)
    assert_refused_unchanged(
        ParallelPG.load,
        ck,
        r"trained with gae_lambda=0.9, epochs=3: "
        r"settings screened and removed \(docs/screens.md",
    )


def test_the_late_decay_divides_the_step_size_by_one_plus_steps_past_decay_from_over_h(tmp_path):
    rates = []
    agent = _cartpole(lr_decay_steps=100, decay_from=40)
    before = [0]
    agent.train(
        episodes=16,
        callback=lambda row: (
            rates.append((before[0], row["charts/learning_rate"]))
            or before.__setitem__(0, row["steps"])
        ),
    )
    assert len(rates) == 4 and rates[0][0] <= 40 < rates[-1][0]  # constant, then decayed
    lr = agent.learning_rate
    for steps, rate in rates:  # each update's rate, from the steps played before it
        assert rate == (lr if steps <= 40 else lr / (1 + (steps - 40) / 100))
    constant = _cartpole(lr_decay_steps=None).train(episodes=16)
    assert not np.array_equal(constant.net.params, agent.net.params)
    # a decay that has not started yet changes nothing, bit for bit
    later = _cartpole(lr_decay_steps=100, decay_from=10**9).train(episodes=16)
    np.testing.assert_array_equal(later.net.params, constant.net.params)
    # a resumed run decays from where it stopped, bit for bit
    half = _cartpole(lr_decay_steps=100, decay_from=40).train(episodes=8)
    back = ParallelPG.load(half.save(tmp_path / "ck.npz"), quiet=True).train(episodes=16)
    np.testing.assert_array_equal(back.net.params, agent.net.params)


def test_the_late_decay_divides_the_entropy_bonus_too():
    """Twice the bonus and step, both halved by the decay, is the same update as the halves
    undecayed (each a division by 2: exact in floating point)."""
    decayed = _cartpole(entropy_bonus=0.02, lr_decay_steps=100, decay_from=50)
    decayed.steps = 150  # 1 + (150 - 50) / 100 = 2
    plain = _cartpole(entropy_bonus=0.01, learning_rate=decayed.learning_rate / 2,
                      lr_decay_steps=None)  # fmt: skip
    assert decayed.decay() == 2.0 and plain.decay() == 1.0
    decayed.train(updates=1)
    plain.train(updates=1)
    np.testing.assert_array_equal(decayed.net.params, plain.net.params)
    undecayed = _cartpole(entropy_bonus=0.02, learning_rate=decayed.learning_rate / 2,
                          lr_decay_steps=None).train(updates=1)  # fmt: skip
    assert not np.array_equal(undecayed.net.params, plain.net.params)  # the bonus counts


def test_an_entropy_schedule_moves_the_bonus_linearly_then_keeps_it():
    agent = _cartpole(entropy_bonus=0.02, entropy_final=0.005, entropy_steps=100)
    for steps, beta in [(0, 0.02), (50, 0.0125), (100, 0.005), (10**6, 0.005)]:
        agent.steps = steps
        assert agent.entropy_weight() == pytest.approx(beta, rel=1e-12), steps
    assert "entropy bonus 0.02 to 0.005 over 100 agent steps" in agent.describe().text
    decayed = _cartpole(entropy_bonus=0.02, entropy_final=0.005, entropy_steps=100,
                        lr_decay_steps=100, decay_from=50)  # fmt: skip
    decayed.steps = 150  # the schedule's end, divided by 1 + (150 - 50) / 100
    assert decayed.entropy_weight() == pytest.approx(0.0025, rel=1e-12)
    # None changes nothing, whatever entropy_steps; nor a schedule that stays where it starts
    plain = _cartpole(entropy_bonus=0.01).train(updates=3)
    for kw in (dict(entropy_steps=7), dict(entropy_final=0.01, entropy_steps=7)):
        same = _cartpole(entropy_bonus=0.01, **kw).train(updates=3)
        np.testing.assert_array_equal(same.net.params, plain.net.params)
    moved = _cartpole(entropy_bonus=0.01, entropy_final=1.0, entropy_steps=7).train(updates=3)
    assert not np.array_equal(moved.net.params, plain.net.params)


def test_an_entropy_bonus_keeps_the_policy_less_certain():
    plain = _cartpole(entropy_bonus=0.0).train(updates=15)
    bonus = _cartpole(entropy_bonus=1.0).train(updates=15)
    observations = np.random.default_rng(0).normal(0, 0.5, (64, 4)).astype(np.float32)

    def entropy(agent):
        probs, _ = agent.net.forward([sparse(x) for x in observations])
        return float(-(probs * np.log(probs)).sum(axis=1).mean())

    assert not np.array_equal(plain.net.params, bonus.net.params)
    assert entropy(bonus) > entropy(plain)
    assert "entropy bonus 1" in bonus.describe().text and "entropy" not in plain.describe().text


def test_the_played_policy_is_a_running_average_of_the_parameters(tmp_path):
    agent = _cartpole(average_half_life=2.0)
    expected = agent.net.params.copy()
    after = []
    agent.train(episodes=16, callback=lambda row: after.append(agent.net.params.copy()))
    keep = np.float32(0.5 ** (1 / 2.0))
    for params in after:  # one update each, in float32
        expected *= keep
        expected += (1 - keep) * params
    assert len(after) == 4 and np.array_equal(agent.policy.params, expected)
    assert not np.array_equal(agent.policy.params, agent.net.params)
    # it is never fed back: the same training without it, and no average then
    live = _cartpole(average_half_life=0.0).train(episodes=16)
    assert np.array_equal(live.net.params, agent.net.params) and live.policy is live.net
    # a checkpoint keeps it: a resumed run's average is the uninterrupted one's, bit for bit
    ck = _cartpole(average_half_life=2.0).train(episodes=8).save(tmp_path / "ck.npz")
    back = ParallelPG.load(ck, quiet=True).train(episodes=16)
    assert np.array_equal(back.policy.params, agent.policy.params)
    # evaluate plays the average unless told live: the same games as a copy whose average
    # was set to its live parameters
    plays = [ParallelPG.load(ck, quiet=True) for _ in range(3)]
    plays[1].average.params[:] = plays[1].net.params
    returns = [
        p.evaluate(6, live=live) and p.evaluation_returns
        for p, live in zip(plays, (False, False, True), strict=True)
    ]
    assert np.array_equal(returns[1], returns[2])
    assert not np.array_equal(returns[0], returns[2])


def test_advantages_standardised_per_game_or_over_the_whole_update():
    """'game': each game's advantages have mean 0 and std 1; 'update': only all of them
    together do (the same mean and std for every game); with one game the two agree."""
    rng = np.random.default_rng(3)
    games = [(None, None, None, rng.normal(2.0 * k, 1.0 + k, size=50 + 10 * k)) for k in range(3)]
    per_game = _cartpole(slots=3, standardise_over="game")._standardised(games)
    pooled = _cartpole(slots=3, standardise_over="update")._standardised(games)
    for (*_, a), b in zip(games, per_game, strict=True):
        np.testing.assert_allclose(b[3], standardise(a), rtol=1e-6)
    for adv in [b[3] for b in per_game]:
        assert abs(adv.mean()) < 1e-5 and adv.std() == pytest.approx(1, rel=1e-5)
    whole = np.concatenate([c[3] for c in pooled])
    assert abs(whole.mean()) < 1e-5 and whole.std() == pytest.approx(1, rel=1e-5)
    assert pooled[0][3].mean() < -0.5 < 0.5 < pooled[2][3].mean()  # not re-centred per game
    one = _cartpole(slots=3, standardise_over="update")._standardised(games[:1])
    np.testing.assert_allclose(one[0][3], per_game[0][3], rtol=1e-5, atol=1e-6)
