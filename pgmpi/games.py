"""Making games: the game an env id makes, and ParallelPG's games with what they say about its
settings.

:func:`make_game` picks the class: :class:`~pgmpi.pong.PongGame` for Pong's id, else
:class:`~pgmpi.envs.Game`. It sits above both (``pong`` builds on ``envs``), so that no
module imports one that imports it back. :func:`make_games` makes a rank's persistent games
and fills in the settings that depend on the env (``whole_games``, ``value_baseline``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from pgmpi.config import PONG_VALUE_BASELINE, memory_problem
from pgmpi.envs import PONG_ID, Game
from pgmpi.pong import PongGame


def make_game(
    env: str | Callable,
    sticky: bool = False,
    max_steps: int | None = None,
    frame_skip=4,
    deterministic_games: float = 0.0,
) -> Game:
    """A :class:`~pgmpi.pong.PongGame` for Pong's id (``sticky``: with sticky actions;
    ``frame_skip``: 4, or [low, high] drawn at every step; ``deterministic_games``: the
    share of games played without sticky actions), else a :class:`~pgmpi.envs.Game` of
    ``env``."""
    if env == PONG_ID:
        return PongGame(sticky, max_steps, frame_skip, deterministic_games)
    return Game(env, max_steps)


def make_games(env: str | Callable, slots: list[int], cfg) -> tuple[dict, Game | None, object]:
    """ParallelPG's games, and what they say about its settings ``cfg`` (a PGConfig).

    Returns:
        Game k for each of ``slots``; one game to read the env's sizes from (made even
        where ``slots`` is empty, so that every rank checks the env); ``cfg`` with
        ``whole_games`` None made False for Pong and True for other envs (their games
        cannot be saved mid-game) and ``value_baseline`` None made 0.05 for Pong and 0 for
        other envs; and why the env cannot be made, play
        ``whole_games=False`` or fit in memory, or None. If the env cannot be made: ``{}``,
        None, ``cfg`` as given, the problem.
    """
    try:
        games = {
            k: make_game(
                env,
                cfg.sticky_actions,
                cfg.max_episode_steps,
                cfg.frame_skip,
                cfg.deterministic_games,
            )
            for k in slots or [-1]
        }
    except Exception as e:  # any failure to make the env is the user's input
        return {}, None, cfg, f"cannot make env {env!r}: {type(e).__name__}: {e}"
    probe = next(iter(games.values()))
    games.pop(-1, None)
    problem = None
    if not probe.discrete:
        problem = f"env {probe.env_id!r}: action space {probe.action_space} is not Discrete"
    if cfg.value_baseline is None:
        cfg = replace(cfg, value_baseline=PONG_VALUE_BASELINE if probe.is_pong else 0.0)
    if cfg.whole_games is None:
        cfg = replace(cfg, whole_games=not probe.is_pong)
    elif not cfg.whole_games and not probe.is_pong:
        problem = (
            f"env {probe.env_id!r}: only Pong games can stop mid-game between updates "
            "(ALE saves their state); pass whole_games=True"
        )
    problem = problem or memory_problem(probe.n_inputs, probe.n_actions, cfg, len(slots))
    return games, probe, cfg, problem
