"""Tier 2, rank-aware: misuse is one error on every rank, and Ctrl-C on one rank stops all
of them at the same update (run under ``mpirun -n 2``, and plain, as -n 1).

Every collective call comes first; the ranks then agree on a pass flag and assert last.
"""

import os
import signal
from pathlib import Path

import numpy as np
import pytest

from pgmpi import ConfigError, ParallelPG, mpi

pytestmark = pytest.mark.mpi


def _all_ranks_ok(ok: bool) -> bool:
    return bool(mpi.allreduce_sum_(np.array([0 if ok else 1]))[0] == 0)


def _cartpole(**kw):
    base = dict(env="CartPole-v1", hidden_size=8, slots=4, steps_per_slot=1, seed=3, quiet=True)
    return ParallelPG(**(base | kw))


def _shared_dir(tmp_path: Path) -> Path:
    return Path(mpi.broadcast_object(str(tmp_path)))  # the root's: one folder for the job


def test_ctrl_c_on_one_rank_stops_every_rank_at_the_same_update_and_saves(tmp_path):
    ck = _shared_dir(tmp_path) / "ck.npz"
    agent, caught = _cartpole(), False

    def ctrl_c_on_last_rank(row):
        if row["update"] == 2 and mpi.rank() == mpi.size() - 1:
            os.kill(os.getpid(), signal.SIGINT)

    try:
        agent.train(updates=50, checkpoint_path=ck, checkpoint_every=20,
                    callback=ctrl_c_on_last_rank)  # fmt: skip
    except KeyboardInterrupt:
        caught = True
    saved = ParallelPG.load(ck, quiet=True)  # collective: after every rank stopped
    assert _all_ranks_ok(caught and agent.update == 2 and saved.update == 2)


def test_a_log_dir_that_is_a_file_is_the_same_error_on_every_rank(tmp_path):
    path = _shared_dir(tmp_path) / "file"
    if mpi.is_root():
        path.write_text("precious")
    mpi.barrier()
    message = ""
    try:
        _cartpole(log_dir=path).train(updates=1)
    except ConfigError as e:
        message = str(e)
    ok = "exists and is not a folder" in message and path.read_text() == "precious"
    assert _all_ranks_ok(ok)


def test_limits_that_differ_between_ranks_are_an_error_on_every_rank():
    agent, message = _cartpole(), ""
    try:
        agent.train(updates=1 + mpi.rank(), minutes=-1.0 if mpi.size() == 1 else None)
    except ConfigError as e:
        message = str(e)
    expected = "'updates' differs between ranks" if mpi.size() > 1 else "minutes must be"
    assert _all_ranks_ok(expected in message and agent.update == 0)


def test_bad_evaluate_episodes_are_an_error_on_every_rank():
    agent, message = _cartpole(), ""
    try:
        agent.evaluate(episodes=-1)
    except ConfigError as e:
        message = str(e)
    assert _all_ranks_ok("episodes must be an int >= 1, got -1" in message)
