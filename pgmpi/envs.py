"""Environments: making a gymnasium env, and a game seen as a policy-gradient task.

gymnasium and ale-py are imported here, inside the functions that make an environment, so
``import pgmpi`` stays light. :class:`Game` is any env with a discrete action space and a
1-D box observation, used raw; :class:`pgmpi.pong.PongGame` is Pong from pixels, as in
Karpathy's post. Inputs are handed to the network sparse, as (indices, float32 values) of
the non-zero entries.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pgmpi.networks import sparse

PONG_ID = "ALE/Pong-v5"


def make_gym(env: str | Callable, **kwargs):
    """A gymnasium env from an id (ALE ids register ale-py first) or a zero-argument factory.

    Pong is made with ``repeat_action_probability=0`` unless told otherwise: the emulator is
    then deterministic given the actions, so all randomness comes from pgmpi's own streams
    and a game never needs ALE's costly reseeding (a ``reset(seed=...)``).
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


def factory_name(factory: Callable, env) -> str:
    """The name a run gives an env made by ``factory``: its registered id, else
    ``custom:MODULE.FUNCTION``, so that two factories' runs never take each other's
    checkpoints (``custom:`` says that ``load`` needs the factory again)."""
    spec_id = getattr(env.spec, "id", None)
    if spec_id:
        return spec_id
    where = getattr(factory, "__module__", None) or "?"
    return f"custom:{where}.{getattr(factory, '__qualname__', type(factory).__name__)}"


class Game:
    """One persistent game (a "slot"): a gymnasium env seen as a policy-gradient task.

    Any env with a 1-D box observation and a discrete or a bounded 1-D box action space:
    inputs are the observations (float32), actions are the env's, and a rally is the whole
    episode. (ParallelPG needs a discrete one; PrunedGA takes both.)

    Args:
        env: a gymnasium id or a zero-argument factory.
        max_steps: end a game after this many agent steps (truncated, as a time limit
            would), or None for no cap. Envs without a time limit need one: a good policy
            could otherwise play one game forever.

    Attributes:
        n_inputs, n_actions, is_pong, env_id.
        discrete: the action space is Discrete (else a bounded 1-D Box of n_actions).
        x: the current input (the one to act on), sparse: (indices, float32 values).
        obs: the current observation as the env gave it.
        score, length: return and agent steps of the game in progress so far.
        live: a game is in progress (False before the first ``new_game`` and after its end).
    """

    is_pong = False

    def __init__(self, env: str | Callable, max_steps: int | None = None):
        import gymnasium as gym

        self.max_steps = max_steps
        self.env_id = env if isinstance(env, str) else None
        self.env = self._make(env)
        self.env_id = self.env_id or factory_name(env, self.env)
        act = self.action_space = self.env.action_space
        self.discrete = isinstance(act, gym.spaces.Discrete)
        if not (
            self.discrete
            or (isinstance(act, gym.spaces.Box) and len(act.shape) == 1 and act.is_bounded())
        ):
            raise ValueError(
                f"env {self.env_id!r}: action space {act} is neither Discrete nor a bounded 1-D Box"
            )
        n_actions = int(act.n) if self.discrete else act.shape[0]
        self.n_inputs, self.n_actions = self._sizes(self.env.observation_space, n_actions)
        unit = self.discrete or (np.all(act.low == -1) and np.all(act.high == 1))
        self.bounds = None if unit else (act.low, act.high)  # a box to stretch tanh onto
        self.x, self.obs, self.score, self.length, self.live = None, None, 0.0, 0, False

    @property
    def x(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The current input, sparse, made from ``obs`` when first read: PrunedGA and
        ParallelES act on ``obs`` and never pay for it."""
        if self._x is None and self.obs is not None:
            self._x = sparse(np.asarray(self.obs, dtype=np.float32))
        return self._x

    @x.setter
    def x(self, value: tuple[np.ndarray, np.ndarray] | None) -> None:
        self._x = value

    def _make(self, env: str | Callable):
        return make_gym(env)

    def _sizes(self, obs_space, n_actions: int) -> tuple[int, int]:
        """(inputs, actions) of the network that plays this env."""
        import gymnasium as gym

        if not (isinstance(obs_space, gym.spaces.Box) and len(obs_space.shape) == 1):
            raise ValueError(
                f"env {self.env_id!r}: observation space {obs_space} is not a 1-D Box "
                "(only Pong is preprocessed from pixels)"
            )
        return int(obs_space.shape[0]), n_actions

    def new_game(self, seed: int) -> None:
        """Start a game whose randomness is fixed by ``seed``."""
        self.obs, _ = self.env.reset(seed=seed)
        self.x = None  # made from obs when read
        self.score, self.length, self.live = 0.0, 0, True

    def _advance(self, action) -> tuple[float, bool, bool]:
        """Step the env with ``action`` and set ``obs`` (``x`` follows from it): (reward,
        terminated, truncated)."""
        self.obs, reward, terminated, truncated, _ = self.env.step(action)
        self.x = None
        return reward, terminated, truncated

    def _rally_over(self, reward: float) -> bool:
        """Whether a rally ends at this reward although the game goes on (never, here)."""
        return False

    def step(self, action) -> tuple[float, bool, bool]:
        """Take ``action`` (an action index, or a vector for a Box action space); return
        (reward, rally over, game over)."""
        reward, terminated, truncated = self._advance(action)
        self.length += 1
        capped = self.max_steps is not None and self.length >= self.max_steps
        over = bool(terminated or truncated or capped)
        self.score, self.live = self.score + reward, not over
        return float(reward), over or self._rally_over(reward), over

    def outside_input(self, observation: np.ndarray, prev: np.ndarray | None) -> tuple:
        """The network input for a raw observation from outside a game (``ParallelPG.act``),
        sparse, and the ``prev`` to pass with the next observation (None here).

        Raises:
            ValueError: if the observation's shape is not the env's or it holds NaN or inf.
        """
        return sparse(self._checked(observation, (self.n_inputs,))), None

    @staticmethod
    def _checked(observation: np.ndarray, shape: tuple) -> np.ndarray:
        x = np.asarray(observation, dtype=np.float32)
        if x.shape != shape or not np.all(np.isfinite(x)):
            what = f"shape {x.shape}" if x.shape != shape else "NaN or inf"
            raise ValueError(f"act() needs an observation of shape {shape}, finite; got {what}")
        return x

    def stretched(self, a):
        """A tanh output, in (-1, 1), stretched onto the env's action box (unchanged if the
        box is [-1, 1] or the actions are discrete)."""
        if self.bounds is None:
            return a
        low, high = self.bounds
        return low + (a + 1) * (high - low) / 2

    def env_action(self, a: int) -> int:
        """The env's action number for the policy's action index ``a``."""
        return a

    def snapshot(self) -> dict[str, np.ndarray]:
        """What a checkpoint keeps of this game: its score, length and whether it is live
        (games of these envs end with their rally, so a live one cannot be saved)."""
        if self.live:
            raise ValueError(f"cannot snapshot a live {self.env_id} game")
        return {"score": np.array([self.score, self.length, self.live], dtype=np.float64)}

    def restore(self, snap: dict[str, np.ndarray], seed: int) -> None:
        """Continue the game that ``snapshot`` saved (``seed``: the env's first reset)."""
        score, length, live = snap["score"]
        self.score, self.length, self.live = float(score), int(length), bool(live)

    def screen(self) -> np.ndarray:
        """The picture of the game now, RGB (an env made with ``render_mode="rgb_array"``)."""
        return self.env.render()

    def close(self) -> None:
        self.env.close()


def probe_env(env: str | Callable) -> tuple[Game | None, str | None]:
    """A :class:`Game` of ``env``, made and closed at once to read its sizes and action box,
    and None; or, if it cannot be made (any exception is the user's input), None and why."""
    try:
        probe = Game(env)
        probe.close()
        return probe, None
    except Exception as e:
        return None, f"cannot make env {env!r}: {type(e).__name__}: {e}"
