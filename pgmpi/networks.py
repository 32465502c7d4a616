"""Numpy networks: Karpathy's two-layer policy (the GA's networks are in pgmpi/genomes.py).

* :class:`TwoLayerPolicy` is the policy of Karpathy's "Deep Reinforcement Learning: Pong from
  Pixels" (2016): ``h = relu(x @ W1)``, ``logits = h @ W2``, with a sigmoid over two actions
  (Pong's up/down) or a softmax over n actions. No biases, as in the post. All parameters
  live in one flat float32 vector, so averaging gradients over ranks is one buffer.
  Inputs are sparse: Pong's frame difference has about 20-40 non-zero pixels out of 6,400,
  so the first layer only touches the rows of ``W1`` for those pixels.
* :class:`MLP` is ParallelES's: tanh hidden layers with biases, all parameters one flat
  float32 vector, so a perturbation is one slice of the shared noise table.
* :class:`PrunedNetwork`, the GA's all-ones network, moved to :mod:`pgmpi.genomes` and is
  still importable from here.
"""

from __future__ import annotations

import numpy as np

from pgmpi.genomes import PrunedNetwork, matvec  # noqa: F401 (PrunedNetwork's old home)


def sparse(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(int64 indices, float32 values) of the non-zero entries of a 1-D input."""
    x = np.asarray(x).ravel()
    idx = np.flatnonzero(x)
    return idx, x[idx].astype(np.float32)


def dense(x: tuple[np.ndarray, np.ndarray], n: int) -> np.ndarray:
    """The float32 (n,) vector of a sparse input."""
    out = np.zeros(n, dtype=np.float32)
    out[x[0]] = x[1]
    return out


class TwoLayerPolicy:
    """``h = relu(x @ W1)``, ``logits = h @ W2``; sigmoid if one logit, else softmax.

    Args:
        n_inputs: D, length of the observation vector.
        n_hidden: H, hidden units (200 for Pong).
        n_actions: A >= 2. With ``bernoulli=True`` A must be 2 and there is one logit,
            the log-odds of action 0 (Karpathy's Pong policy); otherwise A logits.
        rng: draws the initial weights, ``randn / sqrt(fan_in)`` as in the post.
        value: add one more output, a learned baseline ``v = h @ W2[:, -1]`` (the value of
            the state: the expected discounted return), its weights starting at zero, so the
            policy's initial weights are the same draws as without it.
        params: the flat parameter vector to start from (copied), in place of ``rng``'s draws.

    Attributes:
        params: float32 (D*H + H*K,), the flat parameter vector; ``W1`` (D, H) and ``W2``
            (H, K) are views into it (K = 1 or A, plus 1 with ``value``).
    """

    def __init__(
        self,
        n_inputs: int,
        n_hidden: int,
        n_actions: int,
        rng: np.random.Generator | None = None,
        bernoulli: bool = False,
        value: bool = False,
        params: np.ndarray | None = None,
    ):
        self.n_inputs, self.n_hidden, self.n_actions = n_inputs, n_hidden, n_actions
        self.n_logits = k = 1 if bernoulli else n_actions
        self.n_outputs = k + int(value)  # the logits, then the value if any
        d, h = n_inputs, n_hidden
        self.params = np.zeros(d * h + h * self.n_outputs, dtype=np.float32)
        self.W1 = self.params[: d * h].reshape(d, h)
        self.W2 = self.params[d * h :].reshape(h, self.n_outputs)
        if params is not None:
            self.params[:] = params
            return
        self.W1[:] = rng.standard_normal((d, h)) / np.sqrt(d)
        self.W2[:, :k] = rng.standard_normal((h, k)) / np.sqrt(h)

    def values(self, caches: list) -> np.ndarray:
        """The baseline's value of each step of a game, float64 (T,), from its caches (at
        today's weights); zeros without a value output."""
        if self.n_outputs == self.n_logits:
            return np.zeros(len(caches))
        h = np.array([c[2] for c in caches], dtype=np.float32).reshape(-1, self.n_hidden)
        return (h * self.W2[:, -1]).sum(axis=1, dtype=np.float64)  # per row: no BLAS

    def forward(self, xs: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, list]:
        """One step of S games at once: action probabilities and one cache per game.

        Args:
            xs: S inputs, each sparse: (int indices, float32 values) of its non-zero
                entries (:func:`sparse` makes one from a vector).

        Returns:
            (probs float32 (S, A), caches): hand a game's caches, one per step, back to
            :meth:`gradient`. Each row depends only on its own input, so a game's figures
            are the same bits however many games share the call.
        """
        S = len(xs)
        idx = np.concatenate([i for i, _ in xs])
        vals = np.concatenate([v for _, v in xs]).astype(np.float32, copy=False)
        ends = np.fromiter(map(len, (i for i, _ in xs)), dtype=np.int64, count=S).cumsum()
        starts = np.zeros_like(ends)
        starts[1:] = ends[:-1]
        h = np.zeros((S, self.n_hidden), dtype=np.float32)
        if len(idx):
            # Only the ~30 rows of W1 for each game's non-zero pixels, summed per game
            # (numpy's own loop, not BLAS: same bits whatever the BLAS build or threads).
            rows = self.W1.take(idx, axis=0)
            rows *= vals[:, None]
            some = ends > starts  # games with an input (a game's first input is zero)
            if some.all():
                np.add.reduceat(rows, starts, axis=0, out=h)
            else:
                h[some] = np.add.reduceat(rows, starts[some], axis=0)
        np.maximum(h, 0.0, out=h)
        logits = self._logits(h)
        if self.n_logits == 1:
            probs = np.empty((S, 2), dtype=np.float32)
            with np.errstate(over="ignore"):  # a logit below -88: exp is inf, p is 0, as meant
                probs[:, 0] = 1.0 / (1.0 + np.exp(-logits[:, 0]))
            probs[:, 1] = 1.0 - probs[:, 0]
        else:
            e = np.exp(logits - logits.max(axis=1, keepdims=True))
            probs = e / e.sum(axis=1, keepdims=True)
        bounds = zip(starts.tolist(), ends.tolist(), h, strict=True)
        caches = [(idx[s:e], vals[s:e], hs) for s, e, hs in bounds]
        return probs, caches

    def _logits(self, h: np.ndarray) -> np.ndarray:
        """float32 (S, K): each row of ``h`` times W2's logit columns, summed in a fixed
        order that does not depend on S (no BLAS)."""
        k = self.n_logits
        if k == 1:  # a pairwise sum over the contiguous last axis
            return (h[:, None, :] * self.W2.T[None, :1, :]).sum(axis=-1)
        # Summed in hidden-unit order, one (S, K) slab at a time: the bits of the (S, K, H)
        # product summed over its last axis (numpy lays that product out K-fastest and sums it
        # in the same order), at a third of the time.
        prod = np.empty((self.n_hidden, len(h), k), dtype=np.float32)
        np.multiply(h.T[:, :, None], self.W2[:, None, :k], out=prod)
        return prod.sum(axis=0)

    def dlogits(self, probs: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """d log pi(action) / d logits for S steps: ``y - p`` (sigmoid), ``onehot - probs``.

        Args:
            probs: float32 (S, A) from :meth:`forward`; actions: int (S,).

        Returns:
            float32 (S, K).
        """
        actions = np.asarray(actions)
        if self.n_logits == 1:
            return ((actions == 0).astype(np.float32) - probs[:, 0])[:, None]
        onehot = np.zeros(probs.shape, dtype=np.float32)
        onehot[np.arange(len(actions)), actions] = 1.0
        return onehot - probs

    def entropy_dlogits(self, dlogits: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """d H(pi) / d logits for S steps, from what :meth:`dlogits` gave for them (the
        probabilities are ``y - dlogits``): ``p (1 - p) (log(1 - p) - log p)`` for the sigmoid,
        ``-p_j (log p_j + H)`` for the softmax. float32 (S, K)."""
        actions = np.asarray(actions)
        tiny = np.float32(1e-7)
        if self.n_logits == 1:
            p = np.clip((actions == 0).astype(np.float32) - dlogits[:, 0], tiny, 1 - tiny)
            return (p * (1 - p) * (np.log1p(-p) - np.log(p)))[:, None]
        onehot = np.zeros(dlogits.shape, dtype=np.float32)
        onehot[np.arange(len(actions)), actions] = 1.0
        p = np.clip(onehot - dlogits, tiny, 1)
        logp = np.log(p)
        entropy = -(p * logp).sum(axis=1, keepdims=True)
        return -p * (logp + entropy)

    def gradient(self, caches: list, dlogits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Gradient of sum_t dlogits_t . logits_t w.r.t. the parameters, as the rows it
        touches: ``params`` seen as (D + K, H) rows (W1's D rows, then W2's H*K values).

        Pass ``dlogits`` already multiplied by the advantages: this is then the REINFORCE
        gradient of one game's piece. With a value output, ``dlogits`` has one more column,
        the value's (what to add to it, times the baseline's weight). Only the rows of W1
        for inputs that were ever non-zero are touched (a few thousand of Pong's 6,400), so
        the gradient of a game is kept and summed at those rows only. No BLAS call is made
        (numpy's own loops, in a fixed order), so the result does not depend on the BLAS
        thread count.

        Args:
            caches: one per step t, as returned by :meth:`forward` for this game.
            dlogits: float32 (T, K) (K counts the value output, if any).

        Returns:
            (rows int64 (R,), increasing; float32 (R, H)): the flat gradient is zero but
            for ``grad.reshape(-1, H)[rows] = block`` (see :meth:`flat`).
        """
        d, k = self.n_inputs, self.n_outputs
        h = np.array([c[2] for c in caches], dtype=np.float32).reshape(-1, self.n_hidden)
        touched = np.unique(np.concatenate([c[0] for c in caches] + [np.zeros(0, np.int64)]))
        rows = np.concatenate([touched, np.arange(d, d + k)])
        block = np.zeros((len(rows), self.n_hidden), dtype=np.float32)
        block[len(touched) :] = np.einsum("th,tk->hk", h, dlogits).reshape(k, -1)
        dh = np.einsum("tk,hk->th", dlogits, self.W2)
        dh[h <= 0] = 0.0
        # dW1[j] += x_t[j] * dh_t for the few non-zero j of each step: about 30 rows of W1
        # per Pong step, 5x faster than a sort-and-reduce over the piece and no extra memory.
        where = np.empty(d, dtype=np.int64)
        where[touched] = np.arange(len(touched))
        for (idx, vals, _), g in zip(caches, dh, strict=True):
            block[where[idx]] += np.multiply.outer(vals, g)
        return rows, block

    def flat(self, rows: np.ndarray, block: np.ndarray) -> np.ndarray:
        """The float32 flat vector, laid out like ``params``, of a :meth:`gradient`."""
        grad = np.zeros_like(self.params)
        grad.reshape(-1, self.n_hidden)[rows] = block
        return grad


def mlp_shapes(sizes) -> list[tuple[int, int]]:
    """Each layer's (n_in + 1, n_out) block of an :class:`MLP` with these ``sizes``: its
    weights and, as the last row, its biases."""
    return [(a + 1, b) for a, b in zip(sizes[:-1], sizes[1:], strict=False)]


class MLP:
    """``x_k = tanh(x_{k-1} @ W_k + b_k)``; the output is the argmax of the last layer's
    pre-activation (discrete actions) or its tanh (continuous ones).

    Every parameter lives in one flat float32 vector, layer after layer, each layer an
    (n_in + 1, n_out) block whose last row is the bias, so ParallelES perturbs a network by
    adding one slice of its noise table. Weights start as in Salimans et al.'s code: each
    column normal, scaled to norm 1 (0.01 for the output layer), biases 0.

    Args:
        sizes: (n_inputs, hidden..., n_actions).
        discrete: argmax output if True, tanh if False.
        rng: draws the initial weights.

    Attributes:
        params: float32 (n_params,), the flat vector (:meth:`layers` views any such vector).
    """

    def __init__(self, sizes: tuple[int, ...], discrete: bool, rng: np.random.Generator):
        self.sizes = tuple(int(s) for s in sizes)
        self.discrete = discrete
        self.shapes = mlp_shapes(self.sizes)
        self.n_params = sum(a * b for a, b in self.shapes)
        self.params = np.zeros(self.n_params, dtype=np.float32)
        for k, w in enumerate(self.layers(self.params)):
            scale = 0.01 if k == len(self.shapes) - 1 else 1.0
            draw = rng.standard_normal(w[:-1].shape)
            w[:-1] = draw * scale / np.sqrt(np.square(draw).sum(axis=0, keepdims=True))

    def layers(self, params: np.ndarray) -> list[np.ndarray]:
        """Views of flat ``params`` as each layer's (n_in + 1, n_out) block."""
        out, start = [], 0
        for a, b in self.shapes:
            out.append(params[start : start + a * b].reshape(a, b))
            start += a * b
        return out

    def act(self, layers: list[np.ndarray], x: np.ndarray):
        """The action for one float32 input: an int (discrete) or a float32 vector. Sums run
        in a fixed order (:func:`pgmpi.genomes.matvec`), so no BLAS kernel changes a bit."""
        for w in layers[:-1]:
            x = np.tanh(matvec(x, w[:-1]) + w[-1])
        y = matvec(x, layers[-1][:-1]) + layers[-1][-1]
        return int(np.argmax(y)) if self.discrete else np.tanh(y)
