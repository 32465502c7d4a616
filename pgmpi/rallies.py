"""ParallelPG's games between updates: the rallies still open, and checkpoints of both.

With ``whole_games=False`` (Pong's default) each game plays ``steps_per_slot`` steps an update
and goes on in the next, so its last rally is usually still open when the update ends. A
rally's discounted return is known only once its point is scored, so :class:`OpenRallies`
keeps its steps (inputs and actions) and hands them to the next update, where they come
first, evaluated again with that update's network. With whole games every piece ends with a
game, and nothing waits. A checkpoint keeps every game in progress with its open rally
(:func:`snapshots`), and :func:`restore` gives them back on any rank count, so a resumed run
goes on exactly.
"""

from __future__ import annotations

import numpy as np

from pgmpi import rng
from pgmpi.envs import Game
from pgmpi.networks import TwoLayerPolicy
from pgmpi.rollout import Piece


class OpenRallies:
    """The steps of each game's rally still open at the end of an update, by slot."""

    def __init__(self):
        self.steps: dict[int, tuple[list, list]] = {}  # game k: (inputs as (idx, vals), actions)

    def known(self, k: int, piece: Piece, net: TwoLayerPolicy) -> Piece | None:
        """Game k's steps whose returns are known, as a new Piece: the steps that waited from
        the last update (evaluated again with ``net``, today's network), then ``piece``'s, up
        to its last rally end. The steps after it wait for the next update. None if no rally
        ended."""
        inputs, actions = self.steps.pop(k, ([], []))
        steps = Piece()
        if inputs:
            probs, steps.caches = net.forward(inputs)
            steps.actions, steps.dlogits = list(actions), list(net.dlogits(probs, actions))
            steps.rewards, steps.ends = [0.0] * len(inputs), [False] * len(inputs)
        steps.caches += piece.caches
        steps.actions += piece.actions
        steps.dlogits += piece.dlogits
        steps.rewards += piece.rewards
        steps.ends += piece.ends
        cut = max((t + 1 for t, end in enumerate(steps.ends) if end), default=0)
        if cut < len(steps.ends):  # the open rally's inputs (idx, vals) and actions wait
            self.steps[k] = ([c[:2] for c in steps.caches[cut:]], steps.actions[cut:])
        if cut == 0:
            return None
        for name in ("caches", "actions", "dlogits", "rewards", "ends"):
            del getattr(steps, name)[cut:]
        return steps

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
