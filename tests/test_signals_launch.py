"""Tier 3: one stop signal is one request, whichever processes it reaches, and a signal
outside training still ends the job with 128 + its number.

``scancel`` under Slurm's mpirun fallback, ``pkill -f``, ``docker stop`` and a node's
shutdown signal mpirun and every rank together, and mpirun forwards its copy to the ranks:
each rank gets the signal twice, a moment apart. That must save the checkpoint and exit
143, as one ``kill`` of mpirun does. Each test waits for a progress row or a marker file,
never a fixed sleep, so it holds on a loaded machine.
"""

import csv
import os
import signal
import time

import pytest

from pgmpi import checkpoint
from tests.helpers.launch import is_open_mpi, mpirun, rank_pids, started_mpi, wait_for

pytestmark = pytest.mark.launcher


def _rows(path) -> int:
    return len(list(csv.DictReader(open(path)))) if path.exists() else 0


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGUSR1], ids=["SIGTERM", "SIGUSR1"])
def test_one_signal_to_mpirun_and_every_rank_saves_and_exits_128_plus_it(tmp_path, sig):
    ck, log = tmp_path / "checkpoint.npz", tmp_path / "progress.csv"
    args = ["tests/scripts/pg_run.py", "--updates", "1000000", "--checkpoint-every", "1000000",
            "--slots", "1000"]  # fmt: skip
    with started_mpi(2, [*args, "--log-dir", str(tmp_path)]) as job:
        ranks = rank_pids(job, 2)
        wait_for(log, job, timeout=300)
        while _rows(log) < 1:  # a few updates in: the ranks are in the training loop
            assert job.poll() is None, job.stderr.read()[-3000:]
            time.sleep(0.05)
        for pid in ranks:  # as scancel, pkill -f or docker stop do: every rank, and mpirun,
            os.kill(pid, sig)  # which forwards its copy: in the same update (of about 1 s)
        time.sleep(0.3)  # a moment apart, so that Python does not merge the two into one
        os.kill(job.pid, sig)
        out, err = job.communicate(timeout=240)
    assert job.returncode == 128 + sig, err[-3000:]
    assert "mismatch" not in err and "Traceback" not in err and "Abort" not in err, err
    update = checkpoint.load(ck, "ParallelPG")[1]["update"]
    assert update == _rows(log) >= 1  # saved at the update the signal stopped


def test_a_signal_after_train_returns_exits_128_plus_it(tmp_path):
    with started_mpi(2, ["tests/scripts/after_train.py", "--dir", str(tmp_path)]) as job:
        wait_for(tmp_path / "trained", job, timeout=300)
        os.kill(job.pid, signal.SIGTERM)  # mpirun forwards it to the ranks, mid-evaluation
        out, err = job.communicate(timeout=240)
    assert job.returncode == 143, err[-3000:]
    assert "stopped by SIGTERM (exit status 143)" in err, err
    assert "BAD TERMINATION" not in err and "Traceback" not in err, err


def test_a_root_stopped_inside_a_collective_ends_the_ranks_waiting_in_its_mpi_call(tmp_path):
    """Rank 1 is inside the MPI call of a sum when the root is stopped, between that sum's
    barrier and its MPI call: no Python runs on rank 1 to act on anything, so the root ends
    the job with MPI_Abort rather than relying on the launcher to end the others when it
    exits. Here the launcher is told not to (as srun without --kill-on-bad-exit never does,
    and MPICH's mpirun now and then did not, leaving rank 1 waiting forever)."""
    if is_open_mpi(mpirun()):
        pytest.skip("-disable-auto-cleanup is MPICH's mpirun option")
    args = ["tests/scripts/stop_in_collective.py", "--dir", str(tmp_path)]
    with started_mpi(2, args, options=("-disable-auto-cleanup",)) as job:
        out, err = job.communicate(timeout=120)
    assert job.returncode == 143, err[-3000:]
    assert "pgmpi: stopped by SIGTERM (exit status 143)" in err, err
    assert "the sum returned" not in out and "Traceback" not in err, out + err
