"""Environment helpers: making a gymnasium env, and everything Pong-specific.

gymnasium and ale-py are imported here, inside the functions that make an environment, so
``import pgmpi`` stays light. Pong follows Karpathy's "Pong from Pixels": crop the 210x160
RGB frame to rows 35..194, keep every second row and column of the red channel, erase the
two background colours (144 and 109), set everything else to 1, and feed the difference of
consecutive frames: 80 x 80 = 6,400 inputs in {-1, 0, 1}, stored as int8. The policy's two
actions are paddle up and down, and a rally ends at every point scored, which is where the
post restarts the discounted return.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

PONG_ID = "ALE/Pong-v5"
PONG_UP, PONG_DOWN = 2, 3  # ALE action numbers for Pong's paddle (RIGHT = up, LEFT = down)
STICKY = 0.25  # ALE v5's standard repeat_action_probability (Machado et al., 2018)


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


def pong_frame(frame: np.ndarray) -> np.ndarray:
    """Karpathy's preprocessing of one (210, 160, 3) uint8 frame: int8 (6400,) of 0 and 1."""
    x = frame[35:195:2, ::2, 0]
    return ((x != 144) & (x != 109) & (x != 0)).astype(np.int8).ravel()


class Game:
    """One persistent game (a "slot"): a gymnasium env seen as a policy-gradient task.

    Pong (``ALE/Pong-v5``) gets Karpathy's treatment: inputs are differences of preprocessed
    frames (int8, 6,400), action index 0/1 means paddle up/down, and a rally ends at every
    point. Any other env with a discrete action space and a 1-D box observation is used raw
    (float32), actions as is, and a rally is the whole episode.

    Args:
        env: a gymnasium id or a zero-argument factory.
        sticky: Pong only: ALE v5's sticky actions (``repeat_action_probability=0.25``).
            Their random stream is seeded at the first ``new_game`` and then runs on from
            game to game (a seeded reset costs 0.17 s); snapshots carry it.
        max_steps: end a game after this many agent steps (truncated, as a time limit
            would), or None for no cap. Envs without a time limit need one: a good policy
            could otherwise play one game forever.

    Attributes:
        n_inputs, n_actions, is_pong, env_id.
        x: the current input (the one to act on).
        score, length: return and agent steps of the game in progress so far.
        live: a game is in progress (False before the first ``new_game`` and after its end).
    """

    def __init__(self, env: str | Callable, sticky: bool = False, max_steps: int | None = None):
        import gymnasium as gym

        self.max_steps = max_steps

        self.env_id = env if isinstance(env, str) else None
        self.is_pong = self.env_id == PONG_ID
        extra = {"repeat_action_probability": STICKY} if sticky and self.is_pong else {}
        self.env = make_gym(env, **extra)
        self.env_id = self.env_id or getattr(self.env.spec, "id", "custom")
        self.sticky = bool(extra)
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
            self._screen = np.empty((210, 160, 3), dtype=np.uint8)

    def new_game(self, seed: int) -> None:
        """Start a game whose randomness is fixed by ``seed``."""
        if self.is_pong and self._seeded:
            obs, _ = self.env.reset()  # deterministic, or sticky with its stream running on
        else:
            obs, _ = self.env.reset(seed=seed)
            self._seeded = True
        self.x, self.score, self.length, self.live = self._input(obs, first=True), 0.0, 0, True

    def step(self, action: int) -> tuple[float, bool, bool]:
        """Take action index ``action``; return (reward, rally over, game over)."""
        if self.is_pong:
            # The calls gymnasium's AtariEnv.step makes, without its wrappers and with the
            # screen copied into one buffer: a tenth of the cost of a step outside the
            # emulator. tests/test_pg.py checks that both give the same game.
            ale, act = self._ale, self._ale_actions[action]
            reward = 0.0
            for _ in range(self._frameskip):
                reward += ale.act(act)
            ale.getScreenRGB(self._screen)
            obs = self._screen
            terminated, truncated = ale.game_over(with_truncation=False), ale.game_truncated()
        else:
            obs, reward, terminated, truncated, _ = self.env.step(action)
        self.length += 1
        capped = self.max_steps is not None and self.length >= self.max_steps
        over = bool(terminated or truncated or capped)
        self.x, self.score = self._input(obs), self.score + reward
        self.live = not over
        return float(reward), over or (self.is_pong and reward != 0), over

    def _input(self, obs: np.ndarray, first: bool = False) -> np.ndarray:
        if not self.is_pong:
            return np.asarray(obs, dtype=np.float32)
        cur = pong_frame(obs)
        x = cur - (cur if first else self._prev)
        self._prev = cur
        return x

    def snapshot(self) -> dict[str, np.ndarray]:
        """Everything needed to continue this game elsewhere: for a live Pong game, the
        emulator state (ALE's own serialisation, no pickle), the last frame and input; for a
        sticky-action game, the emulator's random stream even between games."""
        out = {"score": np.array([self.score, self.length, self.live], dtype=np.float64)}
        if self.live and not self.is_pong:  # games of other envs end with their rally
            raise ValueError(f"cannot snapshot a live {self.env_id} game")
        if self.live or (self.sticky and self._seeded):
            state = self.env.unwrapped.ale.cloneState(include_rng=self.sticky).serialize()
            out["ale"] = np.frombuffer(state, dtype=np.uint8)
        if self.live:
            out["prev"], out["x"] = self._prev, self.x
        return out

    def restore(self, snap: dict[str, np.ndarray], seed: int) -> None:
        """Continue the game that ``snapshot`` saved (``seed``: the env's first reset)."""
        score, length, live = snap["score"]
        if "ale" in snap:
            import ale_py

            self.new_game(seed)  # the env must have been reset once before restoring
            self.env.unwrapped.ale.restoreState(ale_py.ALEState(snap["ale"].tobytes()))
        if live:
            self._prev, self.x = snap["prev"].astype(np.int8), snap["x"].astype(np.int8)
        self.score, self.length, self.live = float(score), int(length), bool(live)

    def close(self) -> None:
        self.env.close()
