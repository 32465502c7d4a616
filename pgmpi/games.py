"""Making games: the game an env id makes, and ParallelPG's games.

:func:`make_game` picks the class: :class:`~pgmpi.pong.PongGame` for Pong's id, else
:class:`~pgmpi.envs.Game`. It sits above both (``pong`` builds on ``envs``), so that no
module imports one that imports it back. :func:`probe_game` makes ParallelPG's first game (its
sizes fill in the settings that depend on the env: :meth:`pgmpi.config.PGConfig.resolved`)
and :func:`make_games` a rank's persistent games.
"""

from __future__ import annotations

from collections.abc import Callable

from pgmpi.envs import PONG_ID, Game
from pgmpi.pong import PongGame


def make_game(
    env: str | Callable,
    sticky: bool = False,
    max_steps: int | None = None,
    frame_skip=4,
    noop: bool = False,
) -> Game:
    """A :class:`~pgmpi.pong.PongGame` for Pong's id (``sticky``: with sticky actions;
    ``frame_skip``: 4, or [low, high] drawn at every step; ``noop``: NOOP a third action),
    else a :class:`~pgmpi.envs.Game` of ``env``."""
    if env == PONG_ID:
        return PongGame(sticky, max_steps, frame_skip, noop)
    return Game(env, max_steps)


def probe_game(env: str | Callable, cfg) -> tuple[Game | None, str | None]:
    """One of ParallelPG's games (``cfg``, a PGConfig), made first to read the env's sizes
    (every rank makes one, so every rank checks the env), and why the env cannot be made, or
    None. If it cannot: None and the problem."""
    try:
        return _game(env, cfg), None
    except Exception as e:  # any failure to make the env is the user's input
        return None, f"cannot make env {env!r}: {type(e).__name__}: {e}"


def make_games(env: str | Callable, mine: list[int], cfg, probe: Game) -> dict[int, Game]:
    """ParallelPG's games on this rank: game k for each k of ``mine`` (``cfg``, a PGConfig),
    the first of them the ``probe`` that :func:`probe_game` made."""
    return {k: probe if i == 0 else _game(env, cfg) for i, k in enumerate(mine)}


def _game(env, cfg) -> Game:
    return make_game(env, cfg.sticky_actions, cfg.max_episode_steps, cfg.frame_skip, cfg.noop)
