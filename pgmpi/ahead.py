"""Playing ahead: what a PrunedGA rank does while it waits for the others at a generation's end.

The next generation depends on this one's whole ranking, but not all of it: its elites are
kept unchanged, and an elite's next episodes are keyed on its index in this generation
(``rng.GA_ELITE_EVALUATION``), so they are the same whoever plays them and whenever. So a
rank that has run out of units reads the results the ranks post to a board on rank 0 as
each unit ends (:func:`pgmpi.mpi.unit_board`), and once an individual is sure to be an
elite whatever the units still running give (:func:`pgmpi.schedule.sure_elites`), it plays
that individual's next episodes, a step at a time between tests of the barrier, each
claimed on the board first so that no two ranks play it. When the ranks meet, it finishes
the one it was playing, and the next generation takes the results instead of playing those
units again: the run's results are those of a run that waited (docs/benchmarks.md,
"Playing ahead").

A board's stamps are an agent's number (``_AGENTS``, the same on every rank) shifted left
by 24 bits, plus a generation: nothing on the board is ever reset, and the stamps of two
agents of one process never meet.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable

import numpy as np

from pgmpi import mpi, rollout
from pgmpi.envs import Game
from pgmpi.rollout import Piece

_AGENTS = itertools.count(1)  # numbers the agents of a process alike on every rank
LOOK_S = 0.002  # how often a rank with nothing to play reads which units have ended


class Episode:
    """One episode played a step at a time (:meth:`advance`) in ``game`` (a new one: Box2D
    envs carry state from one episode into the next), taking ``act(game)`` each step and
    seeded from ``stream``; the same steps as :func:`pgmpi.rollout.episode`, whether played
    at once or between other work. ``activity`` (float64 zeros or None) is what ``act``
    adds each step's Hebbian terms to. ``key``: what the caller calls it."""

    def __init__(self, game: Game, act: Callable[[Game], object], stream, activity=None):
        self.game = game
        self.activity = activity
        self.piece = Piece()
        self.steps = rollout.episode_rounds(game, act, stream, self.piece)
        self.seconds = 0.0
        self.key = None

    def advance(self) -> bool:
        """Play one step; whether the episode has ended."""
        t = time.perf_counter()
        over = next(self.steps, True) is True
        self.seconds += time.perf_counter() - t
        if over:
            self.game.close()
        return over

    def result(self) -> tuple[float, int, float, np.ndarray | None]:
        """(return, steps, seconds, each connection's mean Hebbian term per step or None)."""
        rewards = self.piece.rewards
        if self.activity is not None:
            self.activity /= max(len(rewards), 1)
        total = 0.0
        for r in rewards:  # a running sum, step by step (sum() differs between Pythons)
            total += r
        return total, len(rewards), self.seconds, self.activity


class Ahead:
    """One agent's units played ahead, and the board it shares with the other ranks.

    A unit of generation g is (individual, episode) as ``individual * E + episode``; an
    unchanged elite's is counted by its index in generation g - 1. Collective: every rank
    must construct it, at the same point.
    """

    def __init__(self, units: int):
        self.board = mpi.unit_board(units)  # collective; None with 1 rank: nothing to play
        self.epoch = next(_AGENTS) << 24
        self.played: dict[tuple[int, int], tuple] = {}  # (index, episode) -> result
        self.playing: Episode | None = None
        self.look_at = 0.0

    def collect(self, units: int) -> list[tuple[tuple[int, int], tuple]]:
        """At a generation's start: the units of it this rank played ahead, the one it was
        playing when the ranks met finished first, as ((index in the generation before,
        episode), (return, steps, seconds, activity)), sorted. If another agent of this
        process has since replaced the board with a larger one (``units`` slots), what was
        claimed on the old one is dropped, to be played again. Collective."""
        board = mpi.unit_board(units)  # collective
        if board is not self.board:
            self.board, self.played, self.playing = board, {}, None
        if self.playing is not None:
            self._keep_playing(to_the_end=True)
        played, self.played = sorted(self.played.items()), {}
        return played

    def post(self, unit: int, value: float, g: int) -> None:
        """Tell the other ranks that ``unit`` of generation g returned ``value``."""
        if self.board is not None:
            self.board.post(unit, value, self.epoch + g)

    def claim(self, unit: int, g: int) -> bool:
        """Whether this rank is the first to take ``unit`` (index in generation g - 1 x E +
        episode) of an unchanged elite of generation g (always, alone)."""
        return self.board is None or self.board.claim(unit, self.epoch + g)

    def play(
        self,
        g: int,
        E: int,
        sure: Callable[[np.ndarray], np.ndarray],
        episode: Callable[[int, int], Episode],
        units: int,
    ) -> bool:
        """Work for a rank waiting at generation g's end: a step of the unit it is playing
        ahead, or else, every ``LOOK_S``, a new one, claimed first: the next episode of the
        first individual in ``sure(returns)`` (the individuals sure to be elites, best first,
        given the returns posted so far, float64 (units / E, E), NaN for those not posted)
        that nobody has taken, made by ``episode(individual, episode)``. Whether it did
        anything."""
        if self.playing is not None:
            self._keep_playing(to_the_end=False)
            return True
        if self.board is None or time.perf_counter() < self.look_at:
            return False
        self.look_at = time.perf_counter() + LOOK_S
        returns = self.board.read(units, self.epoch + g).reshape(-1, E)
        for x in sure(returns):
            for e in range(E):
                if (int(x), e) not in self.played and self.claim(int(x) * E + e, g + 1):
                    self.playing = episode(int(x), e)
                    self.playing.key = (int(x), e)
                    return True
        return False

    def _keep_playing(self, to_the_end: bool) -> None:
        """A step (or all the rest) of the unit being played ahead; kept when it ends."""
        while not self.playing.advance():
            if not to_the_end:
                return
        self.played[self.playing.key] = self.playing.result()
        self.playing = None
