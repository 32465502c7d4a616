"""Optimizers on flat float32 parameter vectors.

RMSProp as in Karpathy's "Pong from Pixels" (after Tieleman & Hinton, 2012, lecture 6.5):
``cache = decay * cache + (1 - decay) * g**2``; ``params += lr * g / (sqrt(cache) + eps)``.
It *ascends*: ``g`` is the gradient of the expected return.
"""

from __future__ import annotations

import numpy as np


class RMSProp:
    """RMSProp ascent on one flat vector, state in one flat ``cache`` of the same shape."""

    def __init__(self, n: int, learning_rate: float, decay_rate: float, eps: float = 1e-5):
        self.learning_rate, self.decay_rate, self.eps = learning_rate, decay_rate, eps
        self.cache = np.zeros(n, dtype=np.float32)

    def step(self, params: np.ndarray, grad: np.ndarray) -> None:
        """Update ``params`` in place with ``grad`` (both float32, same shape as ``cache``)."""
        self.cache *= self.decay_rate
        self.cache += (1.0 - self.decay_rate) * np.square(grad)
        params += self.learning_rate * grad / (np.sqrt(self.cache) + self.eps)
