"""Environment helpers: making a gymnasium env, and everything Pong-specific.

gymnasium and ale-py are imported here, inside the functions that make an environment, so
``import pgmpi`` stays light. Pong follows Karpathy's "Pong from Pixels": crop the 210x160
RGB frame to rows 35..194, keep every second row and column of the red channel, erase the
two background colours (144 and 109), set everything else to 1, and feed the difference of
consecutive frames: 80 x 80 = 6,400 inputs in {-1, 0, 1}. The policy's two actions are
paddle up and down, and a rally ends at every point scored, which is where the post
restarts the discounted return.

Inputs are handed to the network sparse, as (indices, float32 values) of the non-zero
entries: a Pong frame difference has a few dozen of them. While training, a Game reads the
screen as ALE's palette indices (a twentieth of the cost of RGB frames) and updates its
preprocessed frame only where an index changed; the red channel of each index, which the
post's rule needs, is read from an RGB frame the first time the index is seen, so the
inputs are the post's, bit for bit (tested against gymnasium's frames).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pgmpi.networks import dense, sparse

PONG_ID = "ALE/Pong-v5"
PONG_UP, PONG_DOWN = 2, 3  # ALE action numbers for Pong's paddle (RIGHT = up, LEFT = down)
STICKY = 0.25  # ALE v5's standard repeat_action_probability (Machado et al., 2018)
# ALE v5's own limit, 108,000 frames at frameskip 4, so Pong is unchanged; for envs without
# a time limit it stops a good policy playing one game (and filling memory) forever.
MAX_EPISODE_STEPS = 27_000


def make_gym(env: str | Callable, **kwargs):
    """A gymnasium env from an id (ALE ids register ale-py first) or a zero-argument factory.

    Pong is made with ``repeat_action_probability=0`` unless told otherwise: the emulator is
    then deterministic given the actions, so all randomness comes from pgmpi's own streams
    and a game never needs ALE's costly reseeding (0.1 s per ``reset(seed=...)``).
    """
    import gymnasium as gym

    if callable(env):
        return env()
    if env.startswith("ALE/"):
        import ale_py

        gym.register_envs(ale_py)
        if env == PONG_ID:
            kwargs.setdefault("repeat_action_probability", 0.0)
    return gym.make(env, **kwargs)


def make_games(
    env: str | Callable, slots: list[int], sticky: bool, max_steps: int, whole_games: bool | None
) -> tuple[dict[int, Game], Game | None, bool | None, str | None]:
    """ParallelPG's games, and what they say about its settings.

    Returns:
        Game k for each of ``slots``; one game to read the env's sizes from (made even
        where ``slots`` is empty, so that every rank checks the env); ``whole_games``, with
        None made False for Pong and True for other envs (their games cannot be saved
        mid-game); and why the env cannot be made or play ``whole_games=False``, or None.
        If the env cannot be made: ``{}``, None, ``whole_games`` as given, the problem.
    """
    try:
        games = {k: Game(env, sticky, max_steps) for k in slots or [-1]}
    except Exception as e:  # any failure to make the env is the user's input
        return {}, None, whole_games, f"cannot make env {env!r}: {type(e).__name__}: {e}"
    probe = next(iter(games.values()))
    games.pop(-1, None)
    problem = None
    if whole_games is None:
        whole_games = not probe.is_pong
    elif not whole_games and not probe.is_pong:
        problem = (
            f"env {probe.env_id!r}: only Pong games can stop mid-game between updates "
            "(ALE saves their state); pass whole_games=True"
        )
    return games, probe, whole_games, problem


def pong_frame(frame: np.ndarray) -> np.ndarray:
    """Karpathy's preprocessing of one (210, 160, 3) uint8 frame: int8 (6400,) of 0 and 1
    (1 where the red channel is not one of the post's background colours 144, 109, 0)."""
    red = frame[35:195:2, ::2, 0]
    return ((red != 144) & (red != 109) & (red != 0)).astype(np.int8).ravel()


def _pcg64_words(gen: np.random.Generator) -> list[int]:
    """A PCG64 generator's whole state as six unsigned 64-bit words (no pickle)."""
    s = gen.bit_generator.state
    big = [w >> shift & (2**64 - 1) for w in (s["state"]["state"], s["state"]["inc"])
           for shift in (0, 64)]  # fmt: skip
    return [*big, s["has_uint32"], s["uinteger"]]


def _pcg64_from_words(words: np.ndarray) -> np.random.Generator:
    """The generator that :func:`_pcg64_words` described."""
    w = [int(x) for x in words]
    bits = np.random.PCG64()
    bits.state = {
        "bit_generator": "PCG64",
        "state": {"state": w[0] | w[1] << 64, "inc": w[2] | w[3] << 64},
        "has_uint32": w[4],
        "uinteger": w[5],
    }
    return np.random.Generator(bits)


class Game:
    """One persistent game (a "slot"): a gymnasium env seen as a policy-gradient task.

    Pong (``ALE/Pong-v5``) gets Karpathy's treatment: inputs are differences of preprocessed
    frames (int8, 6,400), action index 0/1 means paddle up/down, and a rally ends at every
    point. Any other env with a discrete action space and a 1-D box observation is used raw
    (float32), actions as is, and a rally is the whole episode.

    Args:
        env: a gymnasium id or a zero-argument factory.
        sticky: Pong only: ALE v5's sticky actions: at every emulator frame, with
            probability 0.25 the action applied at the frame before is applied again
            (Machado et al., 2018). Done here rather than by ALE, whose saved states leave
            out the action applied last, so a game resumed from a snapshot could differ.
            Their random stream is seeded at the first ``new_game`` and runs on from game
            to game; snapshots carry it and the action applied last.
        max_steps: end a game after this many agent steps (truncated, as a time limit
            would), or None for no cap. Envs without a time limit need one: a good policy
            could otherwise play one game forever.

    Attributes:
        n_inputs, n_actions, is_pong, env_id.
        x: the current input (the one to act on), sparse: (indices, float32 values).
        score, length: return and agent steps of the game in progress so far.
        live: a game is in progress (False before the first ``new_game`` and after its end).
    """

    def __init__(self, env: str | Callable, sticky: bool = False, max_steps: int | None = None):
        import gymnasium as gym

        self.max_steps = max_steps

        self.env_id = env if isinstance(env, str) else None
        self.is_pong = self.env_id == PONG_ID
        self.env = make_gym(env)  # Pong without ALE's sticky actions: see step()
        self.env_id = self.env_id or getattr(self.env.spec, "id", "custom")
        self.sticky = bool(sticky and self.is_pong)
        self._sticky_rng: np.random.Generator | None = None  # made at the first new_game
        obs_space, act_space = self.env.observation_space, self.env.action_space
        if not isinstance(act_space, gym.spaces.Discrete):
            raise ValueError(f"env {self.env_id!r}: action space {act_space} is not Discrete")
        if self.is_pong:
            self.n_inputs, self.n_actions = 80 * 80, 2
        elif isinstance(obs_space, gym.spaces.Box) and len(obs_space.shape) == 1:
            self.n_inputs, self.n_actions = int(obs_space.shape[0]), int(act_space.n)
        else:
            raise ValueError(
                f"env {self.env_id!r}: observation space {obs_space} is not a 1-D Box "
                "(only Pong is preprocessed from pixels)"
            )
        self.x, self.score, self.length, self.live = None, 0.0, 0, False
        self._prev, self._seeded = None, False
        if self.is_pong:  # stepped through ALE directly: see step()
            atari = self.env.unwrapped
            self._ale, self._frameskip = atari.ale, atari._frameskip
            self._ale_actions = [atari._action_set[a] for a in (PONG_UP, PONG_DOWN)]
            self._screen = np.empty((210, 160), dtype=np.uint8)  # palette indices
            # The last frame seen, as palette indices (255: none, never a palette index)
            # and as the post's 0/1 foreground, both flat (6400,).
            self._seen = np.full(6400, 255, dtype=np.uint8)
            self._prev = np.zeros(6400, dtype=np.int8)

    def new_game(self, seed: int) -> None:
        """Start a game whose randomness is fixed by ``seed``."""
        if self.is_pong and self._seeded:
            # Pong's emulator is deterministic, so every game starts from the same state:
            # restored in 0.1 ms, where a reset emulates 70 frames (7 ms). The screen is not
            # part of the state; the start's preprocessed frame is kept instead.
            self._ale.restoreState(self._start[0])
            self._seen[:], self._prev[:] = self._start[1:]
        else:
            obs, _ = self.env.reset(seed=seed)
            self._seeded = True
            if self.sticky:
                self._sticky_rng = np.random.Generator(np.random.PCG64(seed))
            if self.is_pong:
                self._seen[...] = 255  # every pixel counts as changed, so that
                self._pong_input()  # the last frame becomes this one
                self._start = self._ale.cloneState(), self._seen.copy(), self._prev.copy()
        if self.is_pong:  # the first input is zero; ALE's reset applied NOOP last
            self.x, self._applied = Game._NONE, type(self._ale_actions[0]).NOOP
        else:
            self.x = sparse(np.asarray(obs, dtype=np.float32))
        self.score, self.length, self.live = 0.0, 0, True

    def step(self, action: int) -> tuple[float, bool, bool]:
        """Take action index ``action``; return (reward, rally over, game over)."""
        if self.is_pong:
            # The calls gymnasium's AtariEnv.step makes, without its wrappers and with the
            # screen copied into one buffer: a tenth of the cost of a step outside the
            # emulator. tests/test_pg.py checks that both give the same game.
            ale, act = self._ale, self._ale_actions[action]
            reward = 0.0
            for _ in range(self._frameskip):
                if self.sticky:  # with probability 0.25, the frame before's action again
                    if self._sticky_rng.random() >= STICKY:
                        self._applied = act
                    reward += ale.act(self._applied)
                else:
                    reward += ale.act(act)
            terminated, truncated = ale.game_over(with_truncation=False), ale.game_truncated()
            self.x = self._pong_input()
        else:
            obs, reward, terminated, truncated, _ = self.env.step(action)
            self.x = sparse(np.asarray(obs, dtype=np.float32))
        self.length += 1
        capped = self.max_steps is not None and self.length >= self.max_steps
        over = bool(terminated or truncated or capped)
        self.score, self.live = self.score + reward, not over
        return float(reward), over or (self.is_pong and reward != 0), over

    # The post's 0/1 foreground of each palette index, learnt from RGB frames (-1: not seen
    # yet). ALE's palette is fixed, so one table serves every game of the process.
    _FOREGROUND = np.full(256, -1, dtype=np.int8)
    _NONE = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32))

    def _pong_input(self) -> tuple[np.ndarray, np.ndarray]:
        """The difference of this frame and the last, from the pixels whose index changed."""
        self._ale.getScreen(self._screen)
        cur = self._screen[35:195:2, ::2].ravel()  # (6400,) palette indices, a copy
        changed = (cur != self._seen).nonzero()[0]
        if not len(changed):
            return Game._NONE
        new = cur[changed]
        fg = Game._FOREGROUND[new]
        if fg.min() < 0:  # an index not seen before: read its colour from an RGB frame
            Game._FOREGROUND[cur] = pong_frame(self._ale.getScreenRGB())
            fg = Game._FOREGROUND[new]
        step = fg - self._prev[changed]
        self._prev[changed], self._seen[changed] = fg, new
        keep = step.nonzero()[0]
        return changed[keep], step[keep].astype(np.float32)

    def outside_input(self, observation: np.ndarray, prev: np.ndarray | None) -> tuple:
        """The network input for a raw observation from outside a game (``ParallelPG.act``),
        sparse, and the ``prev`` to pass with the next observation. For Pong: the difference
        from ``prev``, the last frame's :func:`pong_frame` (None on an episode's first frame).

        Raises:
            ValueError: if the observation's shape is not the env's ((210, 160, 3) for Pong)
                or it holds NaN or inf.
        """
        x = np.asarray(observation, dtype=np.float32)
        shape = (210, 160, 3) if self.is_pong else (self.n_inputs,)
        if x.shape != shape or not np.all(np.isfinite(x)):
            what = f"shape {x.shape}" if x.shape != shape else "NaN or inf"
            raise ValueError(f"act() needs an observation of shape {shape}, finite; got {what}")
        if not self.is_pong:
            return sparse(x), None
        cur = pong_frame(observation)
        return sparse(cur - (cur if prev is None else prev)), cur

    def env_action(self, a: int) -> int:
        """The env's action number for the policy's action index ``a``."""
        return (PONG_UP if a == 0 else PONG_DOWN) if self.is_pong else a

    def snapshot(self) -> dict[str, np.ndarray]:
        """Everything needed to continue this game elsewhere: for a live Pong game, the
        emulator state (ALE's own serialisation, no pickle), the last frame and input; for a
        sticky-action game, its random stream and the action applied last."""
        out = {"score": np.array([self.score, self.length, self.live], dtype=np.float64)}
        if self.live and not self.is_pong:  # games of other envs end with their rally
            raise ValueError(f"cannot snapshot a live {self.env_id} game")
        if self.live:
            state = self.env.unwrapped.ale.cloneState().serialize()
            out["ale"] = np.frombuffer(state, dtype=np.uint8)
            out["prev"], out["x"] = self._prev.copy(), dense(self.x, 6400).astype(np.int8)
        if self._sticky_rng is not None:
            out["sticky"] = np.array([*_pcg64_words(self._sticky_rng), self._applied.value],
                                     dtype=np.uint64)  # fmt: skip
        return out

    def restore(self, snap: dict[str, np.ndarray], seed: int) -> None:
        """Continue the game that ``snapshot`` saved (``seed``: the env's first reset)."""
        score, length, live = snap["score"]
        if "ale" in snap or "sticky" in snap:  # Pong only: ale-py is there
            import ale_py

            self.new_game(seed)  # the env must have been reset once before restoring
        if "ale" in snap:
            self.env.unwrapped.ale.restoreState(ale_py.ALEState(snap["ale"].tobytes()))
        if "sticky" in snap:
            self._sticky_rng = _pcg64_from_words(snap["sticky"][:-1])
            self._applied = ale_py.Action(int(snap["sticky"][-1]))
        if live:
            # The palette indices of the last frame are not saved: mark them unknown, so the
            # next step compares every pixel's foreground with the saved one.
            self._prev[:], self._seen[...] = snap["prev"], 255
            self.x = sparse(snap["x"])
        self.score, self.length, self.live = float(score), int(length), bool(live)

    def close(self) -> None:
        self.env.close()
