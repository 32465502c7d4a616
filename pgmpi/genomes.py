"""PrunedGA's genomes: the networks whose connections a boolean mask keeps or prunes.

A genome is one flat boolean mask over every connection of a network (no biases), so a
population is a (P, n_weights) boolean array and learning only ever removes connections
(Rive Sunder's synaptolytic-learning project, github.com/riveSunder/synaptolytic-learning,
2019). The network says what a kept connection weighs:

* :class:`PrunedNetwork` ("ones"): every kept weight is 1, layers feed only the next one,
  tanh hidden layers, an argmax (discrete) or tanh (continuous) output. With no negative
  weight and tanh increasing, every continuous output is a non-decreasing function of every
  input, so such a network cannot, say, push a leg back when it leans forward.
* :class:`SignedDAG` ("signed-dag"): the benchmark's ``HebbianDAG``: signed weights drawn
  from a standard normal, every layer fed by every earlier layer (the input included), tanh
  on every layer, one output unit more than there are actions, and each connection's Hebbian
  activity recorded while it plays, so that pruning can spare the busy ones
  (:func:`pgmpi.optimizers.hebbian_prune_probabilities`). With ``synapses`` K > 1 (a screen's
  setting) each connection is K synapses, each its own signed draw kept or pruned on its own,
  and the connection weighs the sum of its kept ones: pruning one re-draws the connection's
  weight instead of removing it. With no bias, a network is an odd function of its input,
  ``act(-x) == -act(x)``.
"""

from __future__ import annotations

import math

import numpy as np

from pgmpi import rng

GENOMES = ("ones", "signed-dag")  # GAConfig.genome's values, in the order of make()'s classes


class PrunedNetwork:
    """Layer sizes and the forward pass of a network whose weights are all 1 or 0 (pruned).

    Hidden layers use tanh; the output is the argmax (discrete actions) or the tanh
    (continuous actions) of the last layer.

    Args:
        sizes: (n_inputs, hidden..., n_outputs).
        discrete: argmax output if True, tanh output if False.
    """

    description = "all-ones weights"
    hebbian = False  # act() records no activity
    synapses = 1  # a connection is one weight, kept or pruned

    def __init__(self, sizes: tuple[int, ...], discrete: bool):
        self.sizes = tuple(int(s) for s in sizes)
        self.discrete = discrete
        self.shapes = list(zip(self.sizes[:-1], self.sizes[1:], strict=False))
        self.n_weights = sum(a * b for a, b in self.shapes)

    def weights(self, mask: np.ndarray) -> list[np.ndarray]:
        """float32 weight matrices (n_in, n_out) for a flat boolean ``mask``, made once per
        individual so the per-step forward pass does not re-apply the mask."""
        out = []
        start = 0
        for a, b in self.shapes:
            out.append(mask[start : start + a * b].reshape(a, b).astype(np.float32))
            start += a * b
        return out

    def act(self, weights: list[np.ndarray], obs: np.ndarray):
        """The action for one observation: an int (discrete) or a float32 vector."""
        x = np.asarray(obs, dtype=np.float32)
        for w in weights[:-1]:
            x = np.tanh(matvec(x, w))
        y = matvec(x, weights[-1])
        return int(np.argmax(y)) if self.discrete else np.tanh(y)


class SignedDAG:
    """A layered DAG with signed weights that are kept or pruned, never changed.

    Layer k's pre-activation is the sum over every earlier layer j (the input is layer 0)
    of ``x_j @ W[k][j]``, and ``x_k = tanh(pre-activation)``. The output layer has
    ``n_outputs + 1`` units; the last is not an action, as in the original. A continuous
    action is the tanh of the first ``n_outputs``; a discrete one the argmax of their
    pre-activations (in the same order as their tanh, without the ties of a tanh that
    rounds to 1 in float32).

    Layer k's matrices are stacked into one (units of layers 0..k-1, units of k) matrix, so
    the pass is one product per layer with the concatenated earlier activations. The
    signed values are ONE float32 vector drawn once from ``rng.stream(seed, rng.INIT,
    rng.GA_VALUES)``: every rank draws the same, nothing is sent, and a checkpoint needs
    only the masks. Individuals thus differ only by their masks, a "supermask" search over
    one random signed network; the original drew weights for every individual instead.

    With ``synapses`` K > 1, the mask and the values are K blocks of one per connection (all
    connections' first synapse, then their second, ...), each value divided by sqrt(K), and
    a connection weighs the sum of its kept synapses' values, added in block order: with all
    K kept it is N(0, 1) again, and losing one of them changes its
    weight, where with K = 1 losing the one removes the connection.

    Args:
        sizes: (n_inputs, hidden..., n_outputs), n_outputs the actions.
        discrete: argmax over the actions if True, their tanh if False.
        seed: the run's root seed.
        synapses: K, synapses per connection (1, the default, draws the same values).

    Attributes:
        values: float32 (n_weights,), read-only: every synapse's value when kept.
        shapes: each layer's (n_in, n_out): n_in counts every earlier layer's units.
        connections: connections of the network; ``n_weights`` is K times as many synapses.
    """

    description = "DAG, signed N(0,1) weights, Hebbian pruning"
    hebbian = True  # act() can record each connection's activity

    def __init__(
        self,
        sizes: tuple[int, ...],
        discrete: bool,
        seed: int,
        synapses=1,
    ):
        self.sizes = tuple(int(s) for s in sizes)
        self.discrete = discrete
        self.shapes = dag_shapes(self.sizes)
        self.connections = sum(a * b for a, b in self.shapes)
        self.synapses = synapses
        self.n_weights = synapses * self.connections
        stream = rng.stream(seed, rng.INIT, rng.GA_VALUES)
        self.values = stream.standard_normal(self.n_weights, dtype=np.float32)
        self.values *= np.float32(1 / math.sqrt(synapses))  # K = 1: x 1, exact
        self.values.flags.writeable = False
        if synapses > 1:
            self.description += f", {synapses} synapses a connection"

    def weights(self, mask: np.ndarray) -> list[np.ndarray]:
        """float32 weight matrices, one (n_in, n_out) per layer, the values where ``mask``
        (flat bool) keeps a synapse and 0 elsewhere, a connection's synapses added in block
        order; made once per individual."""
        kept = np.where(mask, self.values, np.float32(0)).reshape(self.synapses, -1)
        total = kept[0]
        for block in kept[1:]:
            total = total + block
        out = []
        start = 0
        for a, b in self.shapes:
            out.append(total[start : start + a * b].reshape(a, b))
            start += a * b
        return out

    def act(self, weights: list[np.ndarray], obs: np.ndarray, activity: Trace | None = None):
        """The action for one observation: an int (discrete) or a float32 vector.

        With ``activity`` (a :class:`Trace`), record this step's units, from which it adds
        each connection's Hebbian term, ``|pre| * |post|`` (pre: the value of the unit it
        leaves, post: the tanh of the unit it enters). A kept or pruned connection alike:
        the optimizer reads only the kept ones.
        """
        x = np.asarray(obs, dtype=np.float32)
        for w in weights:
            pre = matvec(x, w)
            y = np.tanh(pre)
            x = np.concatenate([x, y])  # the next layer's inputs: every unit so far
        if activity is not None:
            activity.record(x)
        return int(np.argmax(pre[:-1])) if self.discrete else y[:-1]


class Trace:
    """A :class:`SignedDAG`'s Hebbian activity over one episode: each step, each
    connection's ``|pre| * |post|``, pre and post read from the step's units (every unit's
    value, the input first), summed over the steps; :meth:`mean` writes the mean per step
    into ``activity`` (float64, laid out as the weights).

    With K synapses a connection (``activity`` K times the connections' size), each synapse
    gets its connection's term: they join the same two units.

    :meth:`record` only keeps the step's units. Many steps' terms are then made at once, a
    layer at a time, and added one step after another in the order played, so each
    connection's sum has the bits of a step-by-step ``activity += outer(|pre|, |post|)``
    (float32 products are exact in float64) for one numpy add a layer and step, not several.
    """

    def __init__(self, shapes: list[tuple[int, int]], activity: np.ndarray):
        self.shapes, self.activity, self.units = shapes, activity, []
        self.sums = np.zeros(sum(a * b for a, b in shapes))  # a connection's, once
        self.batch = max(1, 2**19 // self.sums.size)  # steps held: at most 4 MB of terms

    def record(self, units: np.ndarray) -> None:
        """Keep one step's units (float32, every unit's value, the input first)."""
        self.units.append(units)
        if len(self.units) >= self.batch:
            self._add()

    def _add(self) -> None:
        """Add the kept steps' terms to ``sums``, one step after another."""
        if not self.units:
            return
        z = np.abs(np.array(self.units)).astype(np.float64)  # (steps, units)
        self.units, start = [], 0
        for a, b in self.shapes:  # a layer's pre units are the first a, its post the next b
            sums = self.sums[start : start + a * b]
            for terms in (z[:, :a, None] * z[:, None, a : a + b]).reshape(len(z), -1):
                sums += terms
            start += a * b

    def mean(self, steps: int) -> np.ndarray:
        """``activity``, each connection's mean term per step over ``steps`` steps."""
        self._add()
        self.activity.reshape(-1, self.sums.size)[:] = self.sums / max(steps, 1)  # each synapse
        return self.activity


def dag_shapes(sizes: tuple[int, ...]) -> list[tuple[int, int]]:
    """:class:`SignedDAG`'s layers, each (n_in, n_out): every layer fed by every earlier one,
    one output more than ``sizes`` gives."""
    units = [*sizes[:-1], sizes[-1] + 1]
    return [(sum(units[:k]), units[k]) for k in range(1, len(units))]


def matvec(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``x @ w`` for a vector ``x``, summed row after row in a fixed order: BLAS's ``@`` picks
    a kernel for the CPU, and kernels add in different orders, so results would differ in
    the last bits between hosts (an AVX-512 Xeon and an AMD EPYC did)."""
    return (x[:, None] * w).sum(axis=0)


def receiving_units(net) -> np.ndarray:
    """int64 (n_weights,): the unit each of ``net``'s weights enters, numbered over the
    network's non-input units (layer by layer); a connection's synapses enter the same one.
    What :class:`~pgmpi.optimizers.PruningOptimizer`'s crossover takes whole from a parent."""
    units, first = [], 0
    for a, b in net.shapes:
        units.append(np.tile(np.arange(first, first + b), a))  # row-major (n_in, n_out)
        first += b
    return np.tile(np.concatenate(units), getattr(net, "synapses", 1))


def make(genome: str, sizes: tuple[int, ...], discrete: bool, seed: int, synapses=1):
    """The network of ``genome`` (one of :data:`GENOMES`) with these layer sizes
    (``synapses``: the signed genome's, see :class:`SignedDAG`)."""
    if genome == "signed-dag":
        return SignedDAG(sizes, discrete, seed, synapses)
    return PrunedNetwork(sizes, discrete)
