"""Tier 1, single process: PrunedGA's genomes (pgmpi/genomes.py) and Hebbian-guided pruning:
why the all-ones network cannot balance a walker and the signed one can turn an output
down, the signed values fixed by the seed, pruning that never adds or changes a weight,
busy connections spared, the ones genome's bits unchanged, and the same bits under any BLAS
kernel."""

import hashlib
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pgmpi import ConfigError, PrunedGA, genomes, rng
from pgmpi.genomes import PrunedNetwork, SignedDAG, Trace, matvec
from pgmpi.optimizers import PruningOptimizer, hebbian_prune_probabilities

SIZES = (6, 5, 5, 3)
TINY = dict(hidden_sizes=[4], population_size=6, episodes_per_individual=2, seed=5, quiet=True)
# PrunedGA(env, **TINY, max_episode_steps=steps).train(generations=3): a hash of the
# optimizer's state. On commit 79b8b0c, before the signed genome existed, it was 5c1f0aac78f2c031
# and 3fb8250c62415519 (its x @ w then went through BLAS; BipedalWalker's is what OpenBLAS's
# SSE3 kernel gave there, and what genomes.matvec gives on every CPU), unchanged by the signed
# genome; the values below are those of 2026-11-27, when an unchanged elite's episodes came to
# be keyed on its index in the generation before (rng.GA_ELITE_EVALUATION), a new draw.
BEFORE = {("CartPole-v1", 500): "fc3b454f26f8c271", ("BipedalWalker-v3", 60): "2a02f561175e36f5"}


def _digest(state: dict) -> str:
    return hashlib.sha256(b"".join(state[k].tobytes() for k in sorted(state))).hexdigest()[:16]


def _decreases(net, trials: int = 300) -> int:
    """Trials in which raising one input lowered some continuous output."""
    g = np.random.default_rng(0)
    count = 0
    for _ in range(trials):
        weights = net.weights(g.random(net.n_weights) < 0.7)
        x = g.uniform(-2, 2, net.sizes[0]).astype(np.float32)
        up = x.copy()
        up[g.integers(net.sizes[0])] += np.float32(g.uniform(0.01, 2))
        count += bool(np.any(net.act(weights, up) < net.act(weights, x)))
    return count


# ---------------------------------------------------------------- what each genome can do
def test_all_ones_outputs_never_decrease_when_an_input_increases():
    assert _decreases(PrunedNetwork(SIZES, discrete=False)) == 0


def test_signed_dag_outputs_can_decrease_when_an_input_increases():
    assert _decreases(SignedDAG(SIZES, discrete=False, seed=0)) > 0


def test_signed_dag_is_a_dag_with_one_spare_output():
    net = SignedDAG(SIZES, discrete=False, seed=0)
    assert net.shapes == [(6, 5), (11, 5), (16, 4)]
    assert net.n_weights == 6 * 5 + 11 * 5 + 16 * 4
    weights = net.weights(np.ones(net.n_weights, dtype=bool))
    x = np.linspace(-1, 1, 6, dtype=np.float32)
    h1 = np.tanh(_rows(x, weights[0]))
    h2 = np.tanh(_rows(np.concatenate([x, h1]), weights[1]))
    out = np.tanh(_rows(np.concatenate([x, h1, h2]), weights[2]))
    assert np.array_equal(net.act(weights, x), out[:3])
    discrete = SignedDAG(SIZES, discrete=True, seed=0)
    assert discrete.act(weights, x) == int(
        np.argmax(_rows(np.concatenate([x, h1, h2]), weights[2])[:3])
    )


def _rows(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """x @ w added one row of w after another (the order the genomes promise)."""
    return sum((x[i] * w[i] for i in range(len(x))), start=np.zeros(w.shape[1], w.dtype))


# ---------------------------------------------------------------- the signed values
def test_signed_values_come_from_the_seed_and_cannot_be_changed():
    a, b, c = (SignedDAG(SIZES, False, seed) for seed in (3, 3, 4))
    assert a.values.dtype == np.float32 and a.values.shape == (a.n_weights,)
    assert np.array_equal(a.values, b.values) and not np.array_equal(a.values, c.values)
    assert (a.values < 0).any() and (a.values > 0).any()
    with pytest.raises(ValueError):
        a.values[0] = 1.0


def test_synapses_sum_to_a_connection_and_losing_one_changes_its_weight_not_removes_it():
    one, two = SignedDAG(SIZES, False, 3), SignedDAG(SIZES, False, 3, synapses=2)
    C = one.connections
    assert two.n_weights == 2 * C == 2 * one.n_weights and two.connections == C
    drawn = rng.stream(3, rng.INIT, rng.GA_VALUES).standard_normal(2 * C, dtype=np.float32)
    assert two.values.tobytes() == (drawn * np.float32(1 / np.sqrt(2))).tobytes()
    flat = lambda net, mask: np.concatenate([w.ravel() for w in net.weights(mask)])  # noqa: E731
    both = np.ones(2 * C, bool)
    assert np.array_equal(flat(two, both), two.values[:C] + two.values[C:])
    first = both.copy()
    first[C:] = False  # every connection's second synapse lost: each weighs its first's value
    assert np.array_equal(flat(two, first), two.values[:C])
    assert np.all(flat(two, first) != 0) and not np.array_equal(flat(two, first), flat(two, both))
    assert np.all(flat(two, np.zeros(2 * C, bool)) == 0)  # both lost: the connection is gone
    assert "2 synapses a connection" in two.description and "synapses" not in one.description


def test_a_connections_synapses_share_its_hebbian_activity():
    net = SignedDAG(SIZES, False, 3, synapses=3)
    activity = np.zeros(net.n_weights)
    trace, x = Trace(net.shapes, activity), np.random.default_rng(0).normal(size=SIZES[0])
    net.act(net.weights(np.ones(net.n_weights, bool)), x, trace)
    per = trace.mean(1)[: net.connections]
    assert (per > 0).all() and np.array_equal(activity, np.tile(per, 3))


def test_synapses_train_save_and_load_and_are_refused_where_they_mean_nothing(tmp_path):
    ga = PrunedGA(env="Pendulum-v1", synapses=2, **dict(TINY, max_episode_steps=20))
    ga.train(generations=2).save(tmp_path / "ga.npz")
    back = PrunedGA.load(tmp_path / "ga.npz", quiet=True)
    assert back.config["synapses"] == 2
    assert back.optimizer.population.shape == (6, 2 * 26)  # 26 connections: 3 x 4 + 7 x 2
    assert back.evaluate(2) == ga.evaluate(2)
    for settings, message in [
        (dict(synapses=0), "synapses must be an int >= 1, got 0"),
        (dict(synapses=2), "synapses must be 1 with genome 'ones'"),  # CartPole's
    ]:
        with pytest.raises(ConfigError, match=re.escape(message)):
            PrunedGA(env="CartPole-v1", **dict(TINY, **settings))


def test_the_values_are_the_streams_draws_and_a_network_is_odd():
    plain = SignedDAG(SIZES, False, 4)
    assert (
        plain.values.tobytes()
        == rng.stream(4, rng.INIT, rng.GA_VALUES)
        .standard_normal(plain.n_weights, dtype=np.float32)
        .tobytes()
    )
    x = np.random.default_rng(2).uniform(-2, 2, SIZES[0]).astype(np.float32)
    w = plain.weights(np.ones(plain.n_weights, bool))
    assert np.array_equal(plain.act(w, -x), -plain.act(w, x))  # tanh and no bias: odd
    assert np.any(plain.act(w, x) != 0)


def test_weights_are_the_values_where_the_mask_keeps_them():
    net = SignedDAG(SIZES, False, seed=1)
    mask = np.random.default_rng(1).random(net.n_weights) < 0.5
    flat = np.concatenate([w.ravel() for w in net.weights(mask)])
    assert flat.dtype == np.float32
    assert np.array_equal(flat, np.where(mask, net.values, 0))


def test_signed_values_are_the_same_after_save_and_load(tmp_path):
    ga = PrunedGA(env="CartPole-v1", genome="signed-dag", **TINY).train(generations=2)
    ga.save(tmp_path / "ga.npz")
    with np.load(tmp_path / "ga.npz", allow_pickle=False) as data:
        assert "values" not in data and data["best_activity"].shape == (ga.net.n_weights,)
    back = PrunedGA.load(tmp_path / "ga.npz", quiet=True)
    assert isinstance(back.net, SignedDAG)
    assert np.array_equal(back.net.values, ga.net.values)
    assert np.array_equal(back.optimizer.best_activity, ga.optimizer.best_activity)


def test_pruning_never_adds_or_changes_a_weight():
    ga = PrunedGA(env="CartPole-v1", genome="signed-dag", **TINY)
    values = ga.net.values.copy()
    seen = []
    opt = ga.optimizer
    ga.train(
        generations=4,
        callback=lambda row: seen.append((opt.population.copy(), opt.parents, opt.best_mask)),
    )
    before = PruningOptimizer(ga.net.n_weights, population_size=6, seed=5).population
    for population, parents, best in seen:
        for child, parent in zip(population, parents, strict=True):
            source = before[parent] if parent >= 0 else best  # -1: the best ever
            assert not np.any(child & ~source)  # a subset of its parent's connections
        before = population
    assert np.array_equal(ga.net.values, values)


# ---------------------------------------------------------------- Hebbian-guided pruning
def test_idle_connections_are_pruned_more_often():
    W = 2000
    busy = np.arange(W) % 2 == 0  # even connections busy, odd ones idle
    activity = np.where(busy, 10.0, 0.0)
    probabilities = hebbian_prune_probabilities(np.ones((1, W), bool), activity[None], 0.1)
    # w = 1 / (1 + a / mean(a)): 1/3 when busy, 1 when idle; their mean 2/3
    assert np.allclose(probabilities[0, busy], 0.05) and np.allclose(probabilities[0, ~busy], 0.15)
    assert probabilities.mean() == pytest.approx(0.1)
    dead = np.ones((1, W), bool)
    dead[0, :10] = False
    assert np.all(hebbian_prune_probabilities(dead, activity[None], 0.1)[0, :10] == 0)
    # many draws through the optimizer: one elite, 199 children of it
    opt = PruningOptimizer(W, population_size=200, elite_fraction=0.005, prune_rate=0.2, seed=0)
    parent = opt.population[0].copy()
    fitness = np.zeros(200)
    fitness[0] = 1.0
    opt.tell(fitness, np.tile(activity, (200, 1)))
    pruned = parent & ~opt.population[1:]
    assert pruned[:, busy].sum() * 2 < pruned[:, ~busy].sum()


def test_uniform_activity_prunes_as_no_activity_does():
    def run(activity):
        opt = PruningOptimizer(50, population_size=10, seed=2)
        for g in range(4):
            fitness = np.random.default_rng(g).random(10)
            opt.tell(fitness, None if activity is None else np.full((10, 50), activity))
        return opt.population

    assert np.array_equal(run(None), run(3.0)) and np.array_equal(run(None), run(0.0))


def test_activity_must_be_one_finite_value_per_connection():
    opt = PruningOptimizer(5, population_size=4, seed=0)
    for bad in (np.zeros((4, 4)), np.full((4, 5), -1.0), np.full((4, 5), np.nan)):
        with pytest.raises(ValueError, match="activity must be"):
            opt.tell(np.arange(4.0), bad)


def test_the_signed_genome_records_each_units_mean_activity():
    net = SignedDAG((4, 3, 2), False, seed=0)
    weights = net.weights(np.ones(net.n_weights, bool))
    x = np.array([1.0, -2.0, 0.5, 0.0], np.float32)
    activity = np.zeros(net.n_weights)
    trace = Trace(net.shapes, activity)
    net.act(weights, x, trace)
    assert not activity.any()  # the step is kept until the activity is read
    assert trace.mean(1) is activity
    h = np.tanh(x @ weights[0])
    y = np.tanh(np.concatenate([x, h]) @ weights[1])
    first = np.outer(np.abs(x), np.abs(h)).ravel()
    second = np.outer(np.abs(np.concatenate([x, h])), np.abs(y)).ravel()
    assert np.allclose(activity, np.concatenate([first, second]))
    assert np.all(activity[:12].reshape(4, 3)[3] == 0)  # a zero input is never active


@pytest.mark.parametrize("sizes", [(24, 8, 8, 4), (3, 1), (6, 40, 2)])
def test_a_trace_sums_the_bits_of_adding_each_steps_terms_in_turn(sizes):
    """Trace adds many steps' terms at once; each connection's sum must still be the
    step-by-step ``activity += outer(|pre|, |post|)``, bit for bit, over episodes shorter
    and longer than its batch and one of exactly a batch."""
    net = SignedDAG(sizes, False, seed=1)
    rng = np.random.default_rng(2)
    weights = net.weights(rng.random(net.n_weights) < 0.6)
    for steps in (1, 37, Trace(net.shapes, np.zeros(net.n_weights)).batch, 700):
        obs = (rng.standard_normal((steps, sizes[0])) * 3).astype(np.float32)
        by_step, trace = np.zeros(net.n_weights), Trace(net.shapes, np.zeros(net.n_weights))
        for o in obs:
            x, start = o, 0
            for w in weights:
                y = np.tanh(matvec(x, w))
                terms = np.multiply.outer(np.abs(x).astype(np.float64), np.abs(y))
                by_step[start : start + w.size] += terms.ravel()
                x, start = np.concatenate([x, y]), start + w.size
            net.act(weights, o, trace)
        assert np.array_equal(trace.mean(steps), by_step / steps), steps


# ---------------------------------------------------------------- PrunedGA with each genome
def test_the_ones_genome_gives_the_bits_recorded_for_it():
    for (env, steps), digest in BEFORE.items():
        ga = PrunedGA(env=env, genome="ones", max_episode_steps=steps, **TINY)
        ga.train(generations=3)
        assert "best_activity" not in ga.optimizer.state()
        assert _digest(ga.optimizer.state()) == digest, env


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86 BLAS kernels")
def test_a_ga_run_gives_the_same_bits_whichever_blas_kernel_the_cpu_gets():
    # OpenBLAS picks a kernel for the CPU, and its kernels add x @ w in different orders:
    # before genomes.matvec, an AVX-512 Xeon and an AMD EPYC gave different populations.
    run = (
        "import sys; sys.path.insert(0, 'tests'); from test_genomes import TINY, _digest; "
        "from pgmpi import PrunedGA; "
        "ga = PrunedGA(env='BipedalWalker-v3', genome=sys.argv[1], max_episode_steps=60, **TINY); "
        "ga.train(generations=3); print(_digest(ga.optimizer.state()))"
    )
    root = Path(__file__).resolve().parent.parent
    for genome in ("ones", "signed-dag"):
        digests = {
            subprocess.run(
                [sys.executable, "-c", run, genome],
                cwd=root,
                env=dict(os.environ, OPENBLAS_CORETYPE=kernel),  # SSE3 only; AVX
                capture_output=True,
                text=True,
                timeout=300,
                check=True,
            ).stdout.split()[-1]
            for kernel in ("Prescott", "Sandybridge")
        }
        assert len(digests) == 1, (genome, digests)


def test_the_header_names_the_genome():
    ones = PrunedGA(env="CartPole-v1", **TINY)
    signed = PrunedGA(env="CartPole-v1", genome="signed-dag", **TINY)
    assert ones.describe().text.startswith("genome ones (all-ones weights), layers (4, 4, 2)")
    assert signed.describe().text.startswith(
        "genome signed-dag (DAG, signed N(0,1) weights, Hebbian"
    )
    assert signed.net.n_weights == 4 * 4 + 8 * 3


def test_the_default_genome_is_signed_for_continuous_actions_and_ones_for_discrete():
    walker = PrunedGA(env="BipedalWalker-v3", **TINY)
    cartpole = PrunedGA(env="CartPole-v1", **TINY)
    assert walker.config["genome"] == "signed-dag" and isinstance(walker.net, SignedDAG)
    assert cartpole.config["genome"] == "ones" and type(cartpole.net) is PrunedNetwork


def test_an_unknown_genome_is_a_config_error():
    match = "genome must be None, 'ones' or 'signed-dag', got 'twos'"
    with pytest.raises(ConfigError, match=match):
        PrunedGA(env="CartPole-v1", genome="twos", **TINY)


@pytest.mark.parametrize("env", ["CartPole-v1", "BipedalWalker-v3"])
def test_the_signed_genome_resumes_exactly(tmp_path, env):
    settings = dict(env=env, genome="signed-dag", max_episode_steps=60, **TINY)
    whole = PrunedGA(**settings).train(generations=3)
    ck = tmp_path / "ga.npz"
    PrunedGA(**settings).train(generations=2, checkpoint_path=ck)
    resumed = PrunedGA.load(ck, quiet=True).train(generations=3)
    a, b = whole.optimizer.state(), resumed.optimizer.state()
    assert sorted(a) == sorted(b) and "best_activity" in a
    for key in a:
        assert np.array_equal(a[key], b[key]), key


def test_receiving_units_name_the_unit_each_weight_enters():
    net = genomes.make("signed-dag", (3, 2, 1), False, seed=0, synapses=2)
    units = genomes.receiving_units(net)
    assert units.shape == (net.n_weights,)
    mask = units == 2  # the output layer's first unit (units 0, 1: the hidden layer's)
    weights = net.weights(mask)  # only the synapses that enter unit 2 kept
    assert not weights[0].any() and weights[1][:, 0].all() and not weights[1][:, 1].any()
