"""Pong from pixels, as in Karpathy's "Pong from Pixels" (2016).

Crop the 210x160 RGB frame to rows 35..194, keep every second row and column of the red
channel, erase the background colours (144, 109 and 0), set everything else to 1, and feed
the difference of consecutive frames: 80 x 80 = 6,400 inputs in {-1, 0, 1}. The policy's
two actions are paddle up and down, and a rally ends at every point scored, which is where
the post restarts the discounted return.

While training, a :class:`PongGame` reads the screen as ALE's palette indices (far cheaper
than RGB frames) and updates its preprocessed frame only where an index changed;
the red channel of each index, which the post's rule needs, is read from an RGB frame the
first time the index is seen, so the inputs are the post's, bit for bit (tested against
gymnasium's frames). Sticky actions (Machado et al., 2018) are applied here, from a stream
of pgmpi's own, so that a game saved mid-way goes on exactly.
"""

from __future__ import annotations

import numpy as np

from pgmpi.envs import PONG_ID, Game
from pgmpi.networks import dense, sparse

PONG_UP, PONG_DOWN = 2, 3  # ALE action numbers for Pong's paddle (RIGHT = up, LEFT = down)
PONG_NOOP = 0  # and the paddle left alone: the third action with ``noop``
STICKY = 0.25  # ALE v5's standard repeat_action_probability (Machado et al., 2018)


def protocol(sticky: bool, frame_skip: int | list) -> str:
    """How Pong is played, as run headers and evaluations name it: "sticky" or
    "deterministic", then the frame skip where it is not ALE v5's 4."""
    text = "sticky" if sticky else "deterministic"
    if frame_skip == 4:
        return text
    if isinstance(frame_skip, list):
        return f"{text}, frame skip {frame_skip[0]}-{frame_skip[1]}"
    return f"{text}, frame skip {frame_skip}"


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


class PongGame(Game):
    """One persistent game of Pong from pixels (``ALE/Pong-v5``), stepped through ALE.

    Inputs are differences of preprocessed frames (6,400), action index 0/1 means paddle
    up/down (2: NOOP, with ``noop``), and a rally ends at every point.

    Args:
        sticky: ALE v5's sticky actions: at every emulator frame, with probability 0.25 the
            action applied at the frame before is applied again (Machado et al., 2018).
            Done here rather than by ALE, whose saved states leave out the action applied
            last, so a game resumed from a snapshot could differ. Their random stream is
            seeded at the first ``new_game`` and runs on from game to game; snapshots carry
            it and the action applied last.
        max_steps: as for :class:`~pgmpi.envs.Game`.
        frame_skip: emulator frames per agent step: an int (4, ALE v5's), or ``[low, high]``:
            drawn uniformly from low..high at every step, before that step's sticky draws and
            from the same stream (``[2, 4]``: gym's Pong-v0, the post's game).
        noop: a third action, NOOP, after up and down (the post has only those two).
    """

    is_pong = True

    def __init__(
        self,
        sticky: bool = False,
        max_steps: int | None = None,
        frame_skip=4,
        noop=False,
    ):
        self.actions = (PONG_UP, PONG_DOWN, PONG_NOOP) if noop else (PONG_UP, PONG_DOWN)
        super().__init__(PONG_ID, max_steps)  # without ALE's sticky actions: see _advance()
        self.sticky = bool(sticky)
        drawn = isinstance(frame_skip, (list, tuple))
        self._skips = (int(frame_skip[0]), int(frame_skip[1]) + 1) if drawn else None
        self._frameskip = None if drawn else int(frame_skip)
        # The game's own stream for sticky actions and drawn frame skips: made at the first
        # new_game, then runs on from game to game.
        self._sticky_rng: np.random.Generator | None = None
        self._seeded = False
        self._ale = self.env.unwrapped.ale
        self._ale_actions = self._ale_actions_of(self.actions)
        self._screen = np.empty((210, 160), dtype=np.uint8)  # palette indices
        # The last frame seen, as palette indices (255: none, never a palette index) and as
        # the post's 0/1 foreground, both flat (6400,).
        self._seen = np.full(6400, 255, dtype=np.uint8)
        self._prev = np.zeros(6400, dtype=np.int8)

    def _sizes(self, obs_space, n_actions: int) -> tuple[int, int]:
        return 80 * 80, len(self.actions)

    def add_noop(self) -> None:
        """NOOP joins up and down as the third action, from the next step on (``noop_from``)."""
        self.actions = (PONG_UP, PONG_DOWN, PONG_NOOP)
        self._ale_actions = self._ale_actions_of(self.actions)
        self.n_actions = len(self.actions)

    def _ale_actions_of(self, actions: tuple) -> list:
        """ALE's action for each of ``actions`` (indices into the env's action set)."""
        return [self.env.unwrapped._action_set[a] for a in actions]

    def new_game(self, seed: int) -> None:
        """Start a game whose randomness is fixed by ``seed``."""
        if self._seeded:
            # Pong's emulator is deterministic, so every game starts from the same state:
            # restored, where a reset emulates 70 frames. The screen is not
            # part of the state; the start's preprocessed frame is kept instead.
            self._ale.restoreState(self._start[0])
            self._seen[:], self._prev[:] = self._start[1:]
        else:
            self.env.reset(seed=seed)
            self._seeded = True
            if self.sticky or self._skips is not None:
                self._sticky_rng = np.random.Generator(np.random.PCG64(seed))
            self._seen[...] = 255  # every pixel counts as changed, so that
            self._pong_input()  # the last frame becomes this one
            self._start = self._ale.cloneState(), self._seen.copy(), self._prev.copy()
        # the first input is zero; ALE's reset applied NOOP last
        self.x = PongGame._NONE
        self._applied = type(self._ale_actions[0]).NOOP
        self.score, self.length, self.live = 0.0, 0, True

    def _advance(self, action: int) -> tuple[float, bool, bool]:
        # The calls gymnasium's AtariEnv.step makes, without its wrappers and with the screen
        # copied into one buffer, which saves most of the cost outside the emulator. The
        # tests check that both give the same game.
        ale = self._ale
        act = self._ale_actions[action]
        reward = 0.0
        frames = self._frameskip
        if self._skips is not None:  # Pong-v0's: 2, 3 or 4 frames, uniformly
            frames = int(self._sticky_rng.integers(*self._skips))
        self.frames = frames
        if self.sticky:  # each frame, with probability 0.25, the frame before's action again
            for u in self._sticky_rng.random(frames).tolist():  # one call: the same draws
                if u >= STICKY:
                    self._applied = act
                reward += ale.act(self._applied)
        else:
            for _ in range(frames):
                reward += ale.act(act)
        terminated = ale.game_over(with_truncation=False)
        truncated = ale.game_truncated()
        self.x = self._pong_input()
        return reward, terminated, truncated

    def _rally_over(self, reward: float) -> bool:
        return reward != 0  # a point was scored

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
            return PongGame._NONE
        new = cur[changed]
        fg = PongGame._FOREGROUND[new]
        if fg.min() < 0:  # an index not seen before: read its colour from an RGB frame
            PongGame._FOREGROUND[cur] = pong_frame(self._ale.getScreenRGB())
            fg = PongGame._FOREGROUND[new]
        step = fg - self._prev[changed]
        self._prev[changed], self._seen[changed] = fg, new
        keep = step.nonzero()[0]
        return changed[keep], step[keep].astype(np.float32)

    def outside_input(self, observation: np.ndarray, prev: np.ndarray | None) -> tuple:
        """The input for a raw (210, 160, 3) frame from outside a game: the difference of its
        :func:`pong_frame` from ``prev``, the last frame's (None on an episode's first
        frame), and this frame's, to pass as ``prev`` next time.

        Raises:
            ValueError: if the frame's shape is not (210, 160, 3) or it holds NaN or inf.
        """
        self._checked(observation, (210, 160, 3))
        cur = pong_frame(observation)
        last = cur if prev is None else prev
        return sparse(cur - last), cur

    def env_action(self, a: int) -> int:
        return self.actions[a]

    def screen(self) -> np.ndarray:
        return self._ale.getScreenRGB()

    def snapshot(self) -> dict[str, np.ndarray]:
        """Everything needed to continue this game elsewhere: for a live game, the emulator
        state (ALE's own serialisation, no pickle), the last frame and input; with sticky
        actions, their random stream and the action applied last."""
        out = {"score": np.array([self.score, self.length, self.live], dtype=np.float64)}
        if self.live:
            state = self._ale.cloneState().serialize()
            out["ale"] = np.frombuffer(state, dtype=np.uint8)
            out["prev"] = self._prev.copy()
            out["x"] = dense(self.x, self.n_inputs).astype(np.int8)
        if self._sticky_rng is not None:
            words = [*_pcg64_words(self._sticky_rng), self._applied.value]
            out["sticky"] = np.array(words, dtype=np.uint64)
        return out

    def restore(self, snap: dict[str, np.ndarray], seed: int) -> None:
        score, length, live = snap["score"]
        if "ale" in snap or "sticky" in snap:
            import ale_py

            self.new_game(seed)  # the env must have been reset once before restoring
        if "ale" in snap:
            self._ale.restoreState(ale_py.ALEState(snap["ale"].tobytes()))
        if "sticky" in snap:
            words = snap["sticky"]
            self._sticky_rng = _pcg64_from_words(words[:-1])
            self._applied = ale_py.Action(int(words[-1]))
        if live:
            # The palette indices of the last frame are not saved: mark them unknown, so the
            # next step compares every pixel's foreground with the saved one.
            self._prev[:], self._seen[...] = snap["prev"], 255
            self.x = sparse(snap["x"])
        self.score, self.length, self.live = float(score), int(length), bool(live)
