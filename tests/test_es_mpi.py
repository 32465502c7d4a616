"""Tier 2, rank-aware ParallelES tests: run under ``mpirun -n 2`` (and plain, as -n 1).

Every collective call comes first; the ranks then agree on a pass flag and assert last, so a
failed check on one rank cannot leave the other waiting in a collective.
"""

import hashlib
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

from pgmpi import ConfigError, ParallelES, mpi

pytestmark = pytest.mark.mpi
SMALL = dict(env="CartPole-v1", hidden_sizes=[4], population_size=6, noise_table_size=20_000)


def _all_ranks_ok(ok: bool) -> bool:
    return bool(mpi.allreduce_sum_(np.array([0 if ok else 1]))[0] == 0)


def _digest(*arrays) -> str:
    return hashlib.sha256(b"".join(np.ascontiguousarray(a).tobytes() for a in arrays)).hexdigest()


def test_the_noise_table_is_the_same_on_every_rank():
    es = ParallelES(**SMALL, seed=3, quiet=True)
    digests = mpi.allgather_object(_digest(es.noise.noise))
    assert _all_ranks_ok(len(set(digests)) == 1)


def test_every_rank_holds_the_same_parameters_after_each_generation():
    es = ParallelES(**SMALL, seed=11, quiet=True)
    digests = []
    es.train(generations=3, callback=lambda row: digests.append(_digest(es.net.params)))
    state = (digests, es.steps, _digest(es.obs_stats, es.optimizer.m, es.optimizer.v))
    everyone = mpi.allgather_object(state)
    assert _all_ranks_ok(len(digests) == 3 and all(e == everyone[0] for e in everyone))


def test_evaluate_and_checkpoint_agree_on_every_rank():
    folder = mpi.broadcast_object(tempfile.mkdtemp() if mpi.is_root() else None)
    path = Path(folder) / "es.npz"
    es = ParallelES(**SMALL, seed=2, quiet=True).train(generations=2, checkpoint_path=path)
    score = es.evaluate(5)
    loaded = ParallelES.load(path, quiet=True)
    reports = mpi.allgather_object((float(score), _digest(loaded.net.params), loaded.generation))
    ok = all(r == reports[0] for r in reports) and reports[0][1] == _digest(es.net.params)
    if mpi.is_root():
        shutil.rmtree(folder)
    assert _all_ranks_ok(ok)


@pytest.mark.parametrize(
    "bad, text",
    [
        (dict(population_size=5), "population_size must be an even int >= 2"),
        (dict(noise_std=-0.02), "noise_std must be a number > 0, got -0.02"),
        (dict(noise_table_size=29), "noise_table_size must be at least a perturbation: 30"),
    ],
)
def test_bad_settings_raise_the_same_error_on_every_rank(bad, text):
    message = None
    try:
        ParallelES(**(SMALL | bad), quiet=True)
    except ConfigError as e:
        message = str(e)
    messages = mpi.allgather_object(message)
    ok = message is not None and text in message and len(set(messages)) == 1
    assert _all_ranks_ok(ok)
