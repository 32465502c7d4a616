"""Playing games: pgmpi's one episode loop, :func:`run`, and what is built on it.

:func:`run` steps several games at once on one rank, so a policy's forward pass runs once
per step for all of them and Python's per-call overhead is paid once per batch, not once
per game. ParallelPG plays its persistent games (``envs.Game``) through :func:`play`;
PrunedGA's evaluations and ``pgmpi.play`` play one game through :func:`episode`. Each game
draws from its own stream, so what it plays does not depend on which other games share the
batch, or the rank. Checkpoints take the games in progress and their open rallies from
:func:`snapshots` and give them back with :func:`restore`, on any rank. :func:`make_games`
makes a rank's games.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from pgmpi import mpi, rng
from pgmpi.config import PONG_VALUE_BASELINE, memory_problem
from pgmpi.envs import PONG_ID, Game
from pgmpi.networks import TwoLayerPolicy
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


class Piece:
    """What one game played in one call of :func:`play`.

    Attributes:
        caches: per step, the network's cache (hand back to ``TwoLayerPolicy.gradient``).
        actions: per step, the action index taken.
        dlogits: per step, d log pi(action) / d logits, float32 (K,).
        rewards: per step, the reward; ends: per step, whether a rally (or episode) ended.
        finished: (score, length, counted) of every game that ended during the piece
            (counted: played under the run's protocol, see ``Game.counted``).
    """

    def __init__(self):
        self.caches, self.actions, self.dlogits, self.rewards, self.ends = [], [], [], [], []
        self.finished = []


def sample(p: np.ndarray, u: float) -> int:
    """The action whose cumulative-probability interval holds the uniform draw ``u``."""
    if len(p) == 2:  # Pong's up/down: the same answer without a cumulative sum
        return int(u >= p[0])
    return min(int((u >= np.cumsum(p)).sum()), len(p) - 1)


def run(
    games: list[Game],
    streams: list[np.random.Generator],
    choose: Callable,
    min_steps: int,
    whole_games: bool,
    frames: Callable | None = None,
) -> list[Piece]:
    """The one episode loop of pgmpi: step ``games`` together, each exactly ``min_steps``
    agent steps or, with ``whole_games``, at least ``min_steps`` and then on to the end of a
    game. ParallelPG's training and evaluation (:func:`play`), PrunedGA's evaluations and
    ``pgmpi.play`` (:func:`episode`) all play through it.

    A game that is not live is started first, seeded from its stream; one that ends before
    its piece does is started again. ``choose(games, streams)`` gives the actions of the games
    still playing, one per game, and what to keep of each step for learning (a list of
    ``(cache, action, dlogits)``), or None. ``frames(image) -> keep going?``, if given, sees
    each game's screen when it starts and after each step, and can stop it early. Returns one
    Piece per game. :func:`rounds` is the same loop, a step of every game at a time.
    """
    pieces = [Piece() for _ in games]
    for _ in rounds(games, streams, choose, min_steps, whole_games, frames, pieces):
        pass
    return pieces


def rounds(
    games: list[Game],
    streams: list[np.random.Generator],
    choose: Callable,
    min_steps: int,
    whole_games: bool,
    frames: Callable | None,
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
                piece.finished.append((game.score, game.length, game.counted))
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
    greedy: bool = False,
    learn: bool = True,
) -> list[Piece]:
    """ParallelPG's play: :func:`run` with the policy's forward pass once per step for all
    ``games``, each sampling its action from its own stream (``greedy``: the most likely
    action); ``learn=False`` keeps no caches (evaluation)."""

    def choose(todo: list[Game], todo_streams: list[np.random.Generator]):
        probs, caches = net.forward([game.x for game in todo])  # every game in one pass
        actions = [
            int(np.argmax(p)) if greedy else sample(p, stream.random())
            for p, stream in zip(probs, todo_streams, strict=True)
        ]
        if not learn:
            return actions, None
        return actions, list(zip(caches, net.dlogits(probs, actions), strict=True))

    return run(games, streams, choose, min_steps, whole_games)


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
    return rounds([game], [stream], lambda g, s: ([act(g[0])], None), 1, True, frames, [piece])


class Evaluation(float):
    """An evaluation's mean return, usable as a float, with what the papers report beside it.

    Attributes:
        ci95: (low, high), the mean's 95% confidence interval: mean +- 1.96 standard errors
            (sample standard deviation, ddof 1, over the square root of the episodes; NaN
            for one episode).
        returns: float64 (episodes,), every episode's return, in episode order.
        protocol: how the episodes were played, e.g. "sticky, sampled".
    """

    def __new__(cls, returns: np.ndarray, protocol: str):
        r = np.asarray(returns, dtype=np.float64)
        self = super().__new__(cls, float(r.mean()))
        n = len(r)
        half = 1.96 * float(r.std(ddof=1)) / float(np.sqrt(n)) if n > 1 else float("nan")
        self.ci95 = (float(self) - half, float(self) + half)
        self.returns = r
        self.protocol = protocol
        return self

    def __str__(self) -> str:
        half = (self.ci95[1] - self.ci95[0]) / 2
        n = len(self.returns)
        if n == 1:  # no interval from one episode
            return f"{float(self):+.2f} (1 episode, {self.protocol})"
        return f"{float(self):+.2f} \u00b1 {half:.2f} (95% CI, {n} episodes, {self.protocol})"

    __repr__ = __str__

    def __reduce__(self):  # pickled (mpi4py's object collectives) from what it is made of
        return Evaluation, (self.returns, self.protocol)


def evaluation_returns(
    episodes: int, seed: int, evaluation: int, play: Callable[[list], list[float]]
) -> np.ndarray:
    """float64 (episodes,): the return of each of ``episodes`` new episodes, shared out over
    ranks (episode e on rank e % n), each seeded from its own stream keyed on (seed,
    ``evaluation``, e), so the numbers do not depend on the rank count. ``play(streams)``
    gives this rank's returns, one per stream. Collective: every rank must call this."""
    mine = list(range(mpi.rank(), episodes, mpi.size()))
    returns = np.zeros(episodes)
    returns[mine] = play([rng.stream(seed, rng.EVALUATE, evaluation, e) for e in mine])
    return mpi.allreduce_sum_(returns)  # each return lives on one rank


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


class OpenRallies:
    """The steps of each game's rally still open at the end of an update.

    A rally's discounted return is known only once its point is scored, so its steps wait:
    their inputs and actions are kept here and join the next update's piece, where they
    are evaluated again with that update's network. Checkpoints save them, so a resumed run
    goes on exactly.
    """

    def __init__(self):
        self.steps: dict[int, tuple[list, list]] = {}  # game k: (inputs as (idx, vals), actions)

    def prepend(self, k: int, piece: Piece, net: TwoLayerPolicy) -> None:
        """Put game k's waiting steps before ``piece``'s, evaluated with ``net``."""
        inputs, actions = self.steps.pop(k, ([], []))
        if not inputs:
            return
        probs, caches = net.forward(inputs)
        piece.caches[:0], piece.actions[:0] = caches, actions
        piece.dlogits[:0] = list(net.dlogits(probs, actions))
        piece.rewards[:0], piece.ends[:0] = [0.0] * len(inputs), [False] * len(inputs)

    def keep(self, k: int, piece: Piece) -> int:
        """Keep the steps after ``piece``'s last rally end for later; return how many of its
        steps come before (those whose returns are known)."""
        cut = max((t + 1 for t, end in enumerate(piece.ends) if end), default=0)
        if cut < len(piece.ends):
            self.steps[k] = ([c[:2] for c in piece.caches[cut:]], piece.actions[cut:])
        return cut

    def arrays(self, k: int) -> dict[str, np.ndarray]:
        """Game k's waiting steps as flat arrays for a checkpoint ({} if none)."""
        inputs, actions = self.steps.get(k, ([], []))
        if not actions:
            return {}
        return {
            "open_idx": np.concatenate([i for i, _ in inputs]).astype(np.int64),
            "open_vals": np.concatenate([v for _, v in inputs]).astype(np.float32),
            "open_sizes": np.array([len(i) for i, _ in inputs], dtype=np.int64),
            "open_actions": np.array(actions, dtype=np.int64),
        }

    def restore(self, k: int, arrays: dict[str, np.ndarray]) -> None:
        """Take back game k's waiting steps from what :meth:`arrays` returned."""
        if len(arrays.get("open_actions", ())):
            splits = np.cumsum(arrays["open_sizes"])[:-1]
            # steps of blank difference frames have no non-zero input, and checkpoints
            # before ".present" left a game's empty arrays out (checkpoint.unpack_ragged)
            idx = arrays.get("open_idx", np.zeros(0, dtype=np.int64))
            vals = arrays.get("open_vals", np.zeros(0, dtype=np.float32))
            idx, vals = np.split(idx, splits), np.split(vals, splits)
            self.steps[k] = (list(zip(idx, vals, strict=True)), arrays["open_actions"].tolist())


def snapshots(games: dict[int, Game], rallies: OpenRallies) -> dict[int, dict[str, np.ndarray]]:
    """This rank's games in progress, each with its open rally, by slot, for a checkpoint."""
    return {k: game.snapshot() | rallies.arrays(k) for k, game in games.items()}


def restore(games: dict[int, Game], rallies: OpenRallies, snaps: dict, seed: int) -> None:
    """Continue each of ``games`` (by slot, on any rank) from its snapshot in ``snaps`` (as
    :func:`snapshots` made it); ``seed`` is the run's, for each env's first reset."""
    for k, game in games.items():
        game.restore(snaps[k], rng.env_seed(rng.stream(seed, rng.EPISODE, 0, k)))
        rallies.restore(k, snaps[k])


class Episode:
    """One episode played a step at a time (:meth:`advance`) in ``game`` (a new one: Box2D
    envs carry state from one episode into the next), taking ``act(game)`` each step and
    seeded from ``stream``; the same steps as :func:`episode`, whether played at once
    (:meth:`finish`) or between other work (PrunedGA's playing ahead). ``activity`` (float64
    zeros or None) is what ``act`` adds each step's Hebbian terms to. ``key``: what the
    caller calls it."""

    def __init__(self, game: Game, act: Callable[[Game], object], stream, activity=None):
        self.game = game
        self.activity = activity
        self.piece = Piece()
        self.steps = episode_rounds(game, act, stream, self.piece)
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

    def finish(self) -> tuple[float, int, float, np.ndarray | None]:
        """Play the rest of the episode; its :meth:`result`."""
        while not self.advance():
            pass
        return self.result()

    def result(self) -> tuple[float, int, float, np.ndarray | None]:
        """(return, steps, seconds, each connection's mean Hebbian term per step or None)."""
        rewards = self.piece.rewards
        if self.activity is not None:
            self.activity /= max(len(rewards), 1)
        total = 0.0
        for r in rewards:  # a running sum, step by step (sum() differs between Pythons)
            total += r
        return total, len(rewards), self.seconds, self.activity
