"""NOOP midway (``noop_from``): a two-action Pong policy takes Pong's NOOP on as a third action.

The two-action policy of the post starts fastest, and NOOP (a paddle that can stand still)
climbs higher later (docs/screens.md, "NOOP from 3 M agent steps"), so a run with
``noop_from`` (sticky Pong's default: 3 M) plays up and down until that many agent steps, then
grows its output layer once,
after the update that reaches them: the up/down logit z becomes the softmax's up and down
logits (z and 0: the same odds), and NOOP's logit starts at ``-a`` times the sum of the hidden
layer, ``a`` chosen so that NOOP takes ``SHARE`` of the median state of the rallies still open
(every rank's, so the same ``a`` on any rank count; a blank input, a game's first, says
nothing and is left out). The optimizer's state for the new columns
starts as the old column's second moment and no first moment; the running average grows the
same way. ``benchmarks/branch.py ... noop=true`` does the same to a checkpoint.
"""

from __future__ import annotations

import numpy as np

from pgmpi import mpi
from pgmpi.networks import TwoLayerPolicy
from pgmpi.optimizers import Adam

SHARE = 0.05  # NOOP's probability, when it joins, in the median state of the open rallies


def join_if_due(agent, row: dict) -> None:
    """Grow ``agent`` (a ParallelPG) to three actions if its ``noop_from`` steps are played and
    it has two, and say so in the update's ``row`` (its note, printed once). Collective, when
    it grows: one small allgather of the open rallies' states."""
    if agent.net.n_actions == 3 or not due(agent.config, agent.steps):
        return
    states = [x for inputs, _ in agent.open_rallies.steps.values() for x in inputs if len(x[0])]
    z, total = _logit_and_sum(agent.net, states)
    every = mpi.allgather_object((z, total))  # collective: every rank's open rallies
    grow(agent, -share_weight(*(np.concatenate(part) for part in zip(*every, strict=True))))
    row["_note"] = f"note: NOOP joins up and down after {agent.steps:,} agent steps (noop_from)"


def due(config: dict, steps: int) -> bool:
    """Whether a run with ``config`` plays NOOP after ``steps`` agent steps."""
    start = config.get("noop_from")
    return bool(config.get("noop")) or (start is not None and steps >= start)


def grow(agent, noop_weight: float) -> None:
    """Make ``agent``'s networks, optimizer state and games three-action, in place, with NOOP's
    logit ``noop_weight`` times the sum of the hidden layer (``load`` passes any: the
    checkpoint's weights replace it)."""
    h, value = agent.net.n_hidden, agent.net.n_outputs > agent.net.n_logits
    d = agent.net.n_inputs * h  # W1's size
    for name in ("net", "average"):
        old = getattr(agent, name)
        if old is not None:
            params = widen(old.params, d, h, 0.0, noop_weight)
            setattr(agent, name, TwoLayerPolicy(old.n_inputs, h, 3, value=value, params=params))
    opt = agent.optimizer
    if isinstance(opt, Adam):
        opt.m, opt.v = widen(opt.m, d, h, 0.0, 0.0), widen(opt.v, d, h)
    else:
        opt.cache = widen(opt.cache, d, h)
    for game in [agent.probe, *agent.games.values()]:
        game.add_noop()


def widen(flat: np.ndarray, d: int, h: int, down=None, noop=None) -> np.ndarray:
    """``flat`` laid out as a two-action policy's parameters (W1's ``d`` values, then W2 (h, 1
    [+ value])), laid out as the three-action one's: W2's columns (z [, value]) become (z,
    down, noop [, value]). ``down`` and ``noop`` None: z's own column for both (an
    optimizer's second moment)."""
    w2 = flat[d:].reshape(h, -1)
    down, noop = (w2[:, 0], w2[:, 0]) if down is None else (down, noop)
    new = [np.broadcast_to(np.float32(down), h), np.broadcast_to(np.float32(noop), h)]
    return np.concatenate([flat[:d], np.column_stack([w2[:, 0], *new, w2[:, 1:]]).ravel()])


def _logit_and_sum(net: TwoLayerPolicy, states: list) -> tuple[np.ndarray, np.ndarray]:
    """The up/down logit and the hidden layer's sum, float64, of each state (sparse inputs)."""
    if not states:
        return np.zeros(0), np.zeros(0)
    _, caches = net.forward(states)  # per row: the same bits however many share the call
    hidden = np.array([c[2] for c in caches], dtype=np.float32)
    z = (hidden * net.W2[:, 0]).sum(axis=1, dtype=np.float64)
    return z, hidden.sum(axis=1, dtype=np.float64)


def share_weight(z: np.ndarray, total: np.ndarray) -> float:
    """The a >= 0 at which NOOP, its logit -a * total, takes ``SHARE`` of the median state
    (bisected; 0 if no rally is open)."""
    if not len(z):
        return 0.0

    def share(a):
        return np.median(np.exp(-a * total) / (np.exp(z) + 1 + np.exp(-a * total)))

    lo, hi = 0.0, 1.0  # the share falls as a grows
    while share(hi) > SHARE:
        hi *= 2
    for _ in range(60):
        lo, hi = (lo, (lo + hi) / 2) if share((lo + hi) / 2) < SHARE else ((lo + hi) / 2, hi)
    return hi
