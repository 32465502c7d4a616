"""Environment helpers: making a gymnasium env, Pong preprocessing, seeding episodes.

gymnasium and ale-py are imported here, inside the functions that make an environment, so
``import pgmpi`` stays light. Pong preprocessing follows Karpathy's "Pong from Pixels": crop
the 210x160 RGB frame to rows 35..194, keep every second row and column of the red channel,
erase the two background colours (144 and 109), set everything else to 1, and feed the
difference of consecutive frames: 80 x 80 = 6,400 inputs in {-1, 0, 1}, stored as int8.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

PONG_ID = "ALE/Pong-v5"
PONG_UP, PONG_DOWN = 2, 3  # ALE action numbers for Pong's paddle (RIGHT = up, LEFT = down)


def make_gym(env: str | Callable, **kwargs):
    """A gymnasium env from an id (ALE ids register ale-py first) or a zero-argument factory.

    Pong is made with ``repeat_action_probability=0``: the emulator is then deterministic
    given the actions, so all randomness comes from pgmpi's per-episode streams and an
    episode never needs ALE's costly reseeding (0.1 s per ``reset(seed=...)``).
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


class EpisodeEnv:
    """One gymnasium env seen as a policy-gradient task: vector observations, action indices.

    Pong (``ALE/Pong-v5``) gets Karpathy's treatment: inputs are differences of preprocessed
    frames (int8, 6,400), and action index 0/1 means paddle up/down. Any other env with a
    discrete action space and a 1-D box observation is used raw (float32), actions as is.

    Attributes:
        n_inputs, n_actions, is_pong.
    """

    def __init__(self, env: str | Callable):
        import gymnasium as gym

        self.env = make_gym(env)
        self.env_id = env if isinstance(env, str) else getattr(self.env.spec, "id", "custom")
        self.is_pong = self.env_id == PONG_ID
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
        self._prev = None

    def reset(self, seed: int) -> np.ndarray:
        """Start an episode whose randomness is fixed by ``seed``; return the first input."""
        if self.is_pong and self._prev is not None:
            obs, _ = self.env.reset()  # no sticky actions: nothing random to reseed
        else:
            obs, _ = self.env.reset(seed=seed)
        return self._input(obs, first=True)

    def step(self, action: int) -> tuple[np.ndarray, float, bool]:
        """Take action index ``action``; return (next input, reward, episode over)."""
        if self.is_pong:
            action = PONG_UP if action == 0 else PONG_DOWN
        obs, reward, terminated, truncated, _ = self.env.step(action)
        return self._input(obs), float(reward), bool(terminated or truncated)

    def _input(self, obs: np.ndarray, first: bool = False) -> np.ndarray:
        if not self.is_pong:
            return np.asarray(obs, dtype=np.float32)
        cur = pong_frame(obs)
        x = cur - (cur if first else self._prev)
        self._prev = cur
        return x

    def close(self) -> None:
        self.env.close()
