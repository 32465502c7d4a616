"""Tier 2, rank-aware: run under ``mpirun -n 2`` (and plain, as -n 1).

Every collective call comes first; the ranks then agree on a pass flag and assert last, so a
failed check on one rank cannot leave the other waiting in a collective.
"""

import hashlib
from functools import partial

import numpy as np
import pytest

from pgmpi import ConfigError, ParallelPG, mpi, rng, rollout
from pgmpi.evaluation import Evaluation
from pgmpi.games import make_game

pytestmark = pytest.mark.mpi


def _all_ranks_ok(ok: bool) -> bool:
    return bool(mpi.allreduce_sum_(np.array([0 if ok else 1]))[0] == 0)


def _digest(a: np.ndarray) -> str:
    return hashlib.sha256(a.tobytes()).hexdigest()


def test_allreduce_mean_matches_numpy():
    n = mpi.size()
    inputs = [np.random.default_rng(r).standard_normal(1001) for r in range(n)]
    buf = inputs[mpi.rank()].copy()
    mpi.allreduce_mean_(buf)
    ints = mpi.allreduce_sum_(np.arange(5, dtype=np.int64) * (mpi.rank() + 1))
    stats = mpi.global_stats(inputs[mpi.rank()])
    pooled = np.concatenate(inputs)
    ok = (
        np.allclose(buf, np.mean(inputs, axis=0), rtol=1e-12, atol=1e-12)
        and np.array_equal(ints, np.arange(5) * n * (n + 1) // 2)
        and np.allclose(stats, [pooled.mean(), pooled.std(), pooled.min(), pooled.max()])
    )
    assert _all_ranks_ok(ok)


def test_broadcast_copies_the_root_buffer():
    buf = np.full(7, float(mpi.rank()))
    mpi.broadcast_(buf)
    assert _all_ranks_ok(bool(np.all(buf == 0.0)))


@pytest.mark.parametrize("exact", [True, False])
def test_parameters_identical_on_every_rank_after_updates(exact):
    agent = ParallelPG(
        env="CartPole-v1",
        hidden_size=16,
        learning_rate=1e-2,
        slots=5,
        steps_per_slot=1,
        seed=7,
        exact_reduction=exact,
        quiet=True,
    )
    digests = []
    for _ in range(3):
        agent.train(episodes=agent.episodes + 5)
        digests.append(_digest(agent.net.params) + _digest(agent.optimizer.m))
    everyone = mpi.allgather_object(digests)
    assert _all_ranks_ok(all(d == everyone[0] for d in everyone))


def test_same_seed_twice_gives_identical_parameters():
    runs = [
        ParallelPG(
            env="CartPole-v1", hidden_size=16, slots=4, steps_per_slot=1, seed=11, quiet=True
        ).train(episodes=12)
        for _ in range(2)
    ]
    assert _all_ranks_ok(np.array_equal(runs[0].net.params, runs[1].net.params))


def test_mismatched_settings_raise_on_every_rank():
    message = ""
    try:
        ParallelPG(env="CartPole-v1", seed=mpi.rank() if mpi.size() > 1 else -1, quiet=True)
    except ConfigError as e:
        message = str(e)
    expected = "differs between ranks" if mpi.size() > 1 else "seed must be"
    assert _all_ranks_ok(expected in message)


def test_exact_sum_matches_numpy_and_counts_bad_terms():
    n, me = mpi.size(), mpi.rank()
    terms = [np.random.default_rng(t).standard_normal(50).astype(np.float32) for t in range(5)]
    total = mpi.ExactSum(50, terms=6)
    for t in range(me, 5, n):  # term t on rank t % n, as games are
        total.add(terms[t])
    if me == 0:
        total.add(np.full(50, np.nan, dtype=np.float32))
    summed, bad = total.allreduce(divide_by=3)
    fixed = sum(np.rint(t.astype(np.float64) * 2**32) for t in terms) / 2**32 / 3
    ok = bad == 1 and summed.dtype == np.float32
    ok = ok and np.array_equal(summed, fixed.astype(np.float32))  # rounded once, from the exact sum
    ok = ok and np.allclose(summed, sum(terms) / 3, atol=1e-6)
    assert _all_ranks_ok(bool(ok))


def test_every_rank_gets_the_same_logged_row():
    rows = []
    agent = ParallelPG(hidden_size=8, slots=3, steps_per_slot=30, seed=1, quiet=True)
    agent.train(episodes=1, callback=rows.append)
    learned = [{k: v for k, v in r.items() if not k.startswith("time/")} for r in rows]
    everyone = mpi.allgather_object(repr(learned))
    assert _all_ranks_ok(all(e == everyone[0] for e in everyone))


def test_evaluation_is_the_same_mean_and_interval_on_any_rank_count():
    """evaluate() shares 3 games of Pong (sticky, as trained) out over the ranks, each keyed on
    its index; all 3 played on this rank alone, as one rank plays them, give the same returns,
    mean and interval."""
    agent = ParallelPG(hidden_size=8, slots=2, steps_per_slot=30, seed=3, quiet=True)
    score = agent.evaluate(episodes=3)
    everyone = mpi.allgather_object(str(score))
    c = agent.config
    streams = [rng.stream(c["seed"], rng.EVALUATE, 1, e) for e in range(3)]  # evaluation 1
    new_game = partial(make_game, c["env"], True, c["max_episode_steps"], c["frame_skip"])
    alone = Evaluation(rollout.whole_games(agent.net, new_game, streams), "sticky, sampled")
    ok = all(e == everyone[0] for e in everyone) and str(score) == str(alone)
    ok = ok and np.array_equal(score.returns, alone.returns) and score.ci95 == alone.ci95
    assert _all_ranks_ok(ok and "(95% CI, 3 episodes, sticky, sampled)" in str(score))
