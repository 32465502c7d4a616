"""Tier 2, rank-aware PrunedGA tests: run under ``mpirun -n 2`` (and plain, as -n 1).

Every collective call comes first; the ranks then agree on a pass flag and assert last, so a
failed check on one rank cannot leave the other waiting in a collective.
"""

import hashlib
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

from pgmpi import ConfigError, PrunedGA, mpi

pytestmark = pytest.mark.mpi
SMALL = dict(env="CartPole-v1", hidden_sizes=(4,), population_size=10, episodes_per_individual=2)


def _all_ranks_ok(ok: bool) -> bool:
    return bool(mpi.allreduce_sum_(np.array([0 if ok else 1]))[0] == 0)


def _digest(ga: PrunedGA) -> str:
    arrays = ga.optimizer.state().values()
    return hashlib.sha256(b"".join(np.ascontiguousarray(a).tobytes() for a in arrays)).hexdigest()


def test_every_rank_holds_the_same_population_after_each_generation():
    ga = PrunedGA(**SMALL, seed=11, quiet=True)
    digests = []
    ga.train(generations=4, callback=lambda row: digests.append(_digest(ga)))
    everyone = mpi.allgather_object((digests, ga.steps, ga.last_steps.tolist()))
    ok = len(digests) == 4 and all(e == everyone[0] for e in everyone)
    assert _all_ranks_ok(ok)


def test_time_limit_stops_every_rank_after_the_same_generation():
    ga = PrunedGA(**SMALL, seed=1, quiet=True)
    ga.train(minutes=1e-9, generations=10)
    gens = mpi.allgather_object(ga.generation)
    assert _all_ranks_ok(gens == [1] * mpi.size())


def test_evaluate_and_checkpoint_agree_on_every_rank():
    folder = mpi.broadcast_object(tempfile.mkdtemp() if mpi.is_root() else None)
    path = Path(folder) / "ga.npz"  # the root writes and reads it; the others are sent it
    ga = PrunedGA(**SMALL, seed=2, quiet=True).train(generations=2, checkpoint_path=path)
    score = ga.evaluate(5)
    loaded = PrunedGA.load(path, quiet=True)
    reports = mpi.allgather_object((score, _digest(loaded), loaded.generation))
    ok = all(r == reports[0] for r in reports) and reports[0][1] == _digest(ga)
    if mpi.is_root():
        shutil.rmtree(folder)
    assert _all_ranks_ok(ok)


def test_bad_argument_raises_the_same_error_on_every_rank():
    message = None
    try:
        PrunedGA(**dict(SMALL, population_size=1), quiet=True)
    except ConfigError as e:
        message = str(e)
    messages = mpi.allgather_object(message)
    ok = messages[0] is not None and "population_size" in messages[0]
    assert _all_ranks_ok(ok and all(m == messages[0] for m in messages))
