"""What an update of ParallelPG says about its learning: the diagnostics of issue 48 (why
some seeds of sticky Pong stall), logged in every update's row (``progress.csv``, and
TensorBoard when on), as PPO's implementations log them (OpenAI Baselines, CleanRL's
``losses/entropy`` and ``losses/explained_variance``). Each asks a stalled run a question:

* ``diagnostics/entropy``: has the policy settled? Its mean entropy in nats over the steps
  played in the update, at the parameters that played them (Pong's up or down: ln 2 = 0.693
  is a coin flip, 0 a certain move). For a distribution p over actions, H = -sum p log p.
* ``diagnostics/explained_variance``: does the learned baseline help? 1 - Var(G - v) / Var(G)
  over the steps the update learned from (G their discounted returns, v the baseline's
  values before the step): 1 predicts every return, 0 no better than their mean, below 0
  worse. Empty without a baseline (or if no rally ended in the update).
* ``diagnostics/gradient_norm``: how large is the step asked for? The Euclidean norm of the
  gradient the optimizer is given (every game's, summed; over the slots with
  ``batch_gradient='mean'``), entropy bonus and baseline fit included.
* ``diagnostics/rally_share``: does it win anything? The share of the update's points (Pong's
  rallies) that the agent won: of the rewards that are not 0, the share above 0. Empty if no
  point was scored.

Every rank count logs the same bits with ``slots`` fixed, without a collective of its own:
a game's sums (:func:`game_sums`) come from its own steps, the same bits on whichever rank
plays it; they ride to every rank on the update's allgather of the games that ended, and are
added there with :func:`math.fsum`, which rounds once from the exact sum, in any order. The
gradient is the same bits on every rank already (the exact Allreduce), and so is its norm
(:func:`norm`).
"""

from __future__ import annotations

import math

import numpy as np

ENTROPY = "diagnostics/entropy"
EXPLAINED_VARIANCE = "diagnostics/explained_variance"
GRADIENT_NORM = "diagnostics/gradient_norm"
RALLY_SHARE = "diagnostics/rally_share"
COLUMNS = (ENTROPY, EXPLAINED_VARIANCE, GRADIENT_NORM, RALLY_SHARE)


def entropy(dlogits: np.ndarray, actions) -> np.ndarray:
    """Each step's policy entropy in nats, float64 (S,), from d log pi(action) / d logits
    (float32 (S, K), as ``TwoLayerPolicy.dlogits`` gave them) and the actions taken: the
    probabilities are ``y - dlogits`` (K = 1: the sigmoid's p of action 0; else softmax)."""
    dlogits = np.concatenate(dlogits).astype(np.float64).reshape(len(actions), -1)  # rows
    actions = np.asarray(actions)
    if dlogits.shape[1] == 1:
        p = (actions == 0) - dlogits[:, 0]
        p = np.stack([p, 1 - p], axis=1)
    else:
        p = -dlogits
        p[np.arange(len(actions)), actions] += 1.0
    p = np.clip(p, 0.0, 1.0)
    logp = np.log(np.where(p > 0, p, 1.0))  # 0 log 0 = 0
    return -(p * logp).sum(axis=1)


def fit(returns: np.ndarray, values: np.ndarray) -> tuple[float, ...]:
    """One game's sums for the explained variance: (steps, sum G, sum G^2, sum e, sum e^2)
    with e = G - v, each added exactly (:func:`math.fsum`)."""
    g = np.asarray(returns, dtype=np.float64)
    e = g - np.asarray(values, dtype=np.float64)
    sums = (math.fsum(v.tolist()) for v in (g, g * g, e, e * e))  # tolist: 15x faster
    return (float(len(g)), *sums)


def game_sums(piece) -> tuple:
    """One game's part of the update, from its ``rollout.Piece`` (whose ``fit`` ParallelPG
    set if it learned from the game with a baseline): (steps, sum of entropies, points won,
    points lost, its :func:`fit` or None)."""
    rewards = np.asarray(piece.rewards, dtype=np.float64)
    h = math.fsum(entropy(piece.dlogits, piece.actions).tolist()) if piece.actions else 0.0
    won, lost = int((rewards > 0).sum()), int((rewards < 0).sum())
    return (len(piece.actions), h, won, lost, piece.fit)


def row(ranks: list[list[tuple]], gradient: np.ndarray) -> dict:
    """The update's diagnostics columns from every rank's :func:`game_sums` (``ranks``, in
    any order) and the gradient the optimizer was given. A column with nothing to say is
    None (an empty cell): the explained variance without a baseline (or a rally that ended),
    the rally share without a point; the explained variance is NaN if all returns were equal."""
    games = [g for r in ranks for g in r]
    steps = sum(g[0] for g in games)
    won, lost = sum(g[2] for g in games), sum(g[3] for g in games)
    fits = [g[4] for g in games if g[4] is not None]
    return {
        ENTROPY: math.fsum(g[1] for g in games) / steps if steps else math.nan,
        EXPLAINED_VARIANCE: explained_variance(fits) if fits else None,
        GRADIENT_NORM: norm(gradient),
        RALLY_SHARE: won / (won + lost) if won + lost else None,
    }


def norm(x: np.ndarray) -> float:
    """The Euclidean norm of float32 ``x``: its squares added in float64 by numpy's own
    pairwise sum, in an order fixed by the length alone, not BLAS's: every rank holds the
    same gradient, so every rank count gives the same bits. (An exact sum, :func:`math.fsum`,
    would cost 0.13 s an update for Pong's 1.3 M parameters, this about 2 ms.)"""
    return math.sqrt(float(np.square(x).sum(dtype=np.float64)))


def explained_variance(fits: list[tuple]) -> float:
    """1 - Var(G - v) / Var(G) over every step of ``fits`` (:func:`fit`'s sums of each game);
    NaN if there is no step or Var(G) is 0."""
    n, g, g2, e, e2 = (math.fsum(f[i] for f in fits) for i in range(5))
    var_g = g2 / n - (g / n) ** 2 if n else 0.0
    return 1.0 - (e2 / n - (e / n) ** 2) / var_g if var_g > 0 else math.nan
