"""Playing games: pgmpi's one episode loop, :func:`run`, and the ways to play through it.

:func:`run` steps several games at once on one rank, so a policy's forward pass runs once
per step for all of them and Python's per-call overhead is paid once per batch, not once
per game. Each game draws from its own stream, so what it plays does not depend on which
other games share the batch, or the rank. Three players are built on it:

* :func:`play`: ParallelPG's persistent games (``envs.Game``), a piece of each per update;
* :func:`whole_games`: the same policy, whole new games without learning (its evaluation);
* :func:`episode`: one new game with any ``act(game)`` (PrunedGA's evaluations, ``pgmpi.play``).

Making games is :mod:`pgmpi.games`; sharing evaluation episodes over ranks is
:mod:`pgmpi.evaluation`; the rallies ParallelPG carries from one update to the next are
:mod:`pgmpi.rallies`.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from pgmpi import rng
from pgmpi.envs import Game
from pgmpi.networks import TwoLayerPolicy


class Piece:
    """What one game played in one call of :func:`run`.

    Attributes:
        caches: per step, the network's cache (hand back to ``TwoLayerPolicy.gradient``).
        actions: per step, the action index taken.
        dlogits: per step, d log pi(action) / d logits, float32 (K,).
        rewards: per step, the reward; ends: per step, whether a rally (or episode) ended.
        finished: (score, length) of every game that ended during the piece.
        fit: ParallelPG's, for its log: the baseline's fit to the returns it learned from
            (:func:`pgmpi.diagnostics.fit`), or None.
    """

    def __init__(self):
        self.caches, self.actions, self.dlogits, self.rewards, self.ends = [], [], [], [], []
        self.finished = []
        self.fit = None


def sample(probs: np.ndarray, draws: list[float]) -> list[int]:
    """Each row's action: the one whose cumulative-probability interval holds that row's
    uniform draw (compared in float32, as the probabilities are). One call for every game of a
    step: a call per game cost three actions' Pong a percent of its speed."""
    u = np.asarray(draws, dtype=np.float32)
    if probs.shape[1] == 2:  # Pong's up/down: the same answer without a cumulative sum
        return (u >= probs[:, 0]).astype(np.int64).tolist()
    below = (u[:, None] >= np.cumsum(probs, axis=1)).sum(axis=1)
    return np.minimum(below, probs.shape[1] - 1).tolist()


def run(
    games: list[Game],
    streams: list[np.random.Generator],
    choose: Callable,
    *,
    min_steps: int,
    whole_games: bool,
    frames: Callable | None = None,
) -> list[Piece]:
    """The one episode loop of pgmpi: step ``games`` together, each exactly ``min_steps``
    agent steps or, with ``whole_games``, at least ``min_steps`` and then on to the end of a
    game.

    A game that is not live is started first, seeded from its stream; one that ends before
    its piece does is started again. ``choose(games, streams)`` gives the actions of the games
    still playing, one per game, and what to keep of each step for learning (a list of
    ``(cache, dlogits)``), or None. ``frames(image) -> keep going?``, if given, sees
    each game's screen when it starts and after each step, and can stop it early. Returns one
    Piece per game. :func:`rounds` is the same loop, a step of every game at a time.
    """
    pieces = [Piece() for _ in games]
    steps = rounds(games, streams, choose, min_steps=min_steps, whole_games=whole_games,
                   frames=frames, pieces=pieces)  # fmt: skip
    for _ in steps:
        pass
    return pieces


def rounds(
    games: list[Game],
    streams: list[np.random.Generator],
    choose: Callable,
    *,
    min_steps: int,
    whole_games: bool,
    frames: Callable | None = None,
    pieces: list[Piece],
):
    """:func:`run`'s loop as a generator that fills ``pieces`` (one per game) and yields
    after each step of the games still playing: a caller can play a game a few steps at a
    time, between other work (PrunedGA's next units, played while the ranks wait)."""
    todo = list(range(len(games)))
    while todo:
        for i in todo:
            if not games[i].live:
                games[i].new_game(rng.env_seed(streams[i]))
                if frames is not None and not frames(games[i].screen()):
                    todo = [j for j in todo if j != i]
        if not todo:
            break
        actions, kept = choose([games[i] for i in todo], [streams[i] for i in todo])
        still = []
        for n, (a, i) in enumerate(zip(actions, todo, strict=True)):
            game = games[i]
            piece = pieces[i]
            if kept is not None:
                piece.caches.append(kept[n][0])
                piece.actions.append(a)
                piece.dlogits.append(kept[n][1])
            reward, rally_over, game_over = game.step(a)
            piece.rewards.append(reward)
            piece.ends.append(rally_over)
            if game_over:
                piece.finished.append((game.score, game.length))
            going = frames is None or frames(game.screen())
            if going and not ((game_over or not whole_games) and len(piece.rewards) >= min_steps):
                still.append(i)
        todo = still
        yield


def play(
    net: TwoLayerPolicy,
    games: list[Game],
    streams: list[np.random.Generator],
    min_steps: int,
    whole_games: bool,
    *,
    greedy: bool = False,
    learn: bool = True,
) -> list[Piece]:
    """ParallelPG's play: :func:`run` with the policy's forward pass once per step for all
    ``games``, each sampling its action from its own stream (``greedy``: the most likely
    action); ``learn=False`` keeps no caches (evaluation)."""

    def choose(todo: list[Game], todo_streams: list[np.random.Generator]):
        probs, caches = net.forward([game.x for game in todo])  # every game in one pass
        if greedy:  # the most likely action; no draws
            actions = probs.argmax(axis=1).tolist()
        else:
            actions = sample(probs, [stream.random() for stream in todo_streams])
        if not learn:
            return actions, None
        return actions, list(zip(caches, net.dlogits(probs, actions), strict=True))

    return run(games, streams, choose, min_steps=min_steps, whole_games=whole_games)


def whole_games(
    net: TwoLayerPolicy,
    new_game: Callable[[], Game],
    streams: list[np.random.Generator],
    greedy: bool = False,
) -> list[float]:
    """The score of one whole game per stream, played without learning, 32 at a time (so
    memory stays bounded however many are asked for)."""
    scores = []
    for i in range(0, len(streams), 32):
        games = [new_game() for _ in streams[i : i + 32]]
        pieces = play(net, games, streams[i : i + 32], 1, True, greedy=greedy, learn=False)
        scores += [piece.finished[0][0] for piece in pieces]
        for game in games:
            game.close()
    return scores


def episode(
    game: Game,
    act: Callable[[Game], object],
    stream: np.random.Generator,
    frames: Callable | None = None,
) -> tuple[list[float], bool]:
    """Play one new game of ``game``, seeded from ``stream``, taking ``act(game)`` at each
    step (:func:`run` with one game, which must not be live): PrunedGA's evaluations and
    ``pgmpi.play``. Returns (every step's reward, whether the game ended; not if ``frames``
    stopped it)."""
    piece = Piece()
    for _ in episode_rounds(game, act, stream, piece, frames):
        pass
    return piece.rewards, bool(piece.finished)


def episode_rounds(game: Game, act: Callable[[Game], object], stream, piece: Piece, frames=None):
    """:func:`episode` a step at a time: a generator that fills ``piece`` and yields after
    each step, for a caller that plays it between other work."""

    def choose(todo: list[Game], _streams) -> tuple[list, None]:
        return [act(todo[0])], None  # one game; nothing kept for learning

    return rounds([game], [stream], choose, min_steps=1, whole_games=True, frames=frames,
                  pieces=[piece])  # fmt: skip


class Episode:
    """One episode played a step at a time (:meth:`advance`) in ``game`` (a new one: Box2D
    envs carry state from one episode into the next), taking ``act(game)`` each step and
    seeded from ``stream``; the same steps as :func:`episode`, whether played at once
    (:meth:`finish`) or between other work (PrunedGA's playing ahead). ``activity`` (a
    :class:`pgmpi.genomes.Trace`, or None) is what ``act`` records each step's Hebbian
    terms in; :meth:`result` gives their mean per step. ``key``: what the caller calls it.
    ``finish_bonus`` B (PrunedGA's training episodes): an episode the env ends on a reward
    above -100 (BipedalWalker: at the course's end, not in a fall) adds B to its return for
    each step it had left of its limit (the game's cap or the env's own, the lower)."""

    def __init__(self, game: Game, act: Callable[[Game], object], stream, activity=None,
                 finish_bonus: float = 0.0):  # fmt: skip
        self.game = game
        self.finish_bonus = finish_bonus
        self.activity = activity
        self.piece = Piece()
        self.steps = episode_rounds(game, act, stream, self.piece)
        self.seconds = 0.0
        self.key = None
        self.total = 0.0

    def advance(self) -> bool:
        """Play one step; whether the episode has ended."""
        t = time.perf_counter()
        over = next(self.steps, True) is True  # else a step was played: its reward is the last
        if not over:  # the return so far, a running sum step by step (sum() differs by Python)
            self.total += self.piece.rewards[-1]
        self.seconds += time.perf_counter() - t
        if over:
            self.game.close()
            if self.finish_bonus:
                self.total += self.finish_bonus * self._steps_left()
        return over

    def _steps_left(self) -> int:
        """Steps of its limit the ended episode had left when the env ended it on a reward
        above -100 (after a fall, a cap or a time limit: 0)."""
        rewards = self.piece.rewards
        if not (self.piece.finished and rewards[-1] > -100):
            return 0
        spec = getattr(self.game.env, "spec", None)
        limits = (self.game.max_steps, getattr(spec, "max_episode_steps", None))
        return min(x for x in limits if x) - len(rewards)

    def finish(self) -> tuple[float, int, float, np.ndarray | None]:
        """Play the rest of the episode; its :meth:`result`."""
        while not self.advance():
            pass
        return self.result()

    def result(self) -> tuple[float, int, float, np.ndarray | None]:
        """(return, steps, seconds, each connection's mean Hebbian term per step or None)."""
        steps = len(self.piece.rewards)
        activity = None if self.activity is None else self.activity.mean(steps)
        return self.total, steps, self.seconds, activity
