"""Tier 1: Pong (pgmpi/pong.py) on the real ALE: the post's preprocessing, the direct
ALE step against gymnasium's, sticky actions, snapshot and restore, the rally rule."""

import numpy as np

from pgmpi.envs import make_gym
from pgmpi.networks import dense
from pgmpi.pong import PONG_DOWN, PONG_NOOP, PONG_UP, PongGame, pong_frame


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


def test_noop_is_a_third_action_that_lets_the_paddle_stand_still():
    """With ``noop``, action 2 sends ALE's NOOP: after the paddle's last move has run out (2
    to 3 agent steps) its columns (70-71) drop out of the frame difference, and come back at
    the next move; without it there are two actions, up and down."""
    assert PongGame().n_actions == 2 and PongGame().env_action(1) == PONG_DOWN
    game = PongGame(noop=True)
    assert game.n_actions == 3 and [game.env_action(a) for a in range(3)] == [
        PONG_UP, PONG_DOWN, PONG_NOOP]  # fmt: skip
    game.new_game(seed=0)
    game._ale = spy = _RecordingALE(game._ale)
    paddle = []
    for a in [1] * 3 + [2] * 8 + [0] * 3 + [2] * 8:
        game.step(a)
        paddle.append(bool(set((game.x[0] % 80).tolist()) & {70, 71}))
    assert spy.sent[3 * 4 : 11 * 4] == [game.env.unwrapped._action_set[PONG_NOOP]] * 32
    assert all(paddle[:3]) and not any(paddle[6:11])  # moved, then still
    assert all(paddle[11:14]) and not any(paddle[17:])  # up, then still again


def test_pong_v0_frame_skips_are_uniform_over_2_3_4_from_the_games_stream():
    """gym's Pong-v0: 2, 3 or 4 emulator frames per agent step, each a third of the time
    (3,000 steps: a share's standard error is 0.0086, the bound 0.05 is 5.8 of them)."""
    game = PongGame(sticky=True, frame_skip=[2, 4])
    game.new_game(seed=4)
    skips = []
    for t in range(3000):
        before = game._ale.getEpisodeFrameNumber()
        game.step(t % 2)
        if game.live:  # the emulator's own frame count agrees with the draw
            assert game._ale.getEpisodeFrameNumber() - before == game.frames
        skips.append(game.frames)
        if not game.live:
            game.new_game(seed=4)
    shares = np.bincount(skips, minlength=5)[2:] / len(skips)
    assert set(skips) == {2, 3, 4} and np.all(abs(shares - 1 / 3) < 0.05), shares
    again = PongGame(sticky=True, frame_skip=[2, 4])
    again.new_game(seed=4)
    for t in range(200):  # the same seed draws the same skips
        again.step(t % 2)
        assert again.frames == skips[t]


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
