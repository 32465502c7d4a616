"""Tier 3: nothing lost through a real launcher: stop signals, reruns, full disks, idle ranks.

SIGTERM (``kill``, ``timeout``, ``scancel``, a time limit) and SIGUSR1 (Slurm's early
warning) save a checkpoint at the next update boundary and end the job with 128 + the
signal's number, as Ctrl-C does with 130; a rerun in a used log dir is refused without
``--overwrite``; a full disk is one line; idle and oversubscribed ranks are named.
"""

import csv
import os
import signal
import subprocess
import time

import pytest

from pgmpi import ParallelPG, checkpoint
from tests.helpers.launch import mpi_command, run_mpi, started_mpi, wait_for

pytestmark = pytest.mark.launcher
PONG = ["examples/pong.py", "--preset", "karpathy", "--slots", "2", "--hidden-size", "8"]


def _rows(path) -> int:
    return len(list(csv.DictReader(open(path)))) if path.exists() else 0


def _stopped_by(job, sig: int, ck, log) -> tuple[str, str, int]:
    """Send ``sig`` to the launcher alone (as ``kill`` or a batch system does) once the job
    has saved a checkpoint and logged an update past it; returns (stdout, stderr, periodic
    checkpoint's update)."""
    wait_for(ck, job, timeout=300)
    periodic = checkpoint.load(ck, "ParallelPG")[1]["update"]
    deadline = time.monotonic() + 120
    while _rows(log) <= periodic:
        assert job.poll() is None and time.monotonic() < deadline
        time.sleep(0.1)
    os.kill(job.pid, sig)
    out, err = job.communicate(timeout=120)
    return out, err, periodic


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGUSR1], ids=["SIGTERM", "SIGUSR1"])
def test_a_stop_signal_to_mpirun_saves_at_the_next_update_and_exits_128_plus_it(tmp_path, sig):
    ck, log = tmp_path / "checkpoint.npz", tmp_path / "progress.csv"
    with started_mpi(2, [*PONG, "--checkpoint-every", "3", "--log-dir", str(tmp_path)]) as job:
        out, err, periodic = _stopped_by(job, sig, ck, log)
    name = signal.Signals(sig).name
    assert job.returncode == 128 + sig, err[-3000:]
    assert "Traceback" not in err and "MPI_Abort" not in err, err
    saved = [line for line in out.splitlines() if line.startswith(f"{name}: saved")]
    assert len(saved) == 1, out
    update = int(saved[0].rsplit(" ", 1)[1])
    agent = ParallelPG.load(ck, quiet=True)
    assert update > periodic and agent.update == update == _rows(log)


def test_timeout_ending_the_job_leaves_a_checkpoint_of_its_last_update(tmp_path):
    cmd, env = mpi_command(2, [*PONG, "--checkpoint-every", "1000", "--log-dir", str(tmp_path)])
    proc = subprocess.run(["timeout", "25", *cmd], capture_output=True, text=True, env=env,
                          timeout=150, start_new_session=True)  # fmt: skip
    assert proc.returncode == 124, proc.stderr[-3000:]  # timeout's own status: it ended it
    saved = [line for line in proc.stdout.splitlines() if line.startswith("SIGTERM: saved")]
    assert len(saved) == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert ParallelPG.load(tmp_path / "checkpoint.npz").update == _rows(tmp_path / "progress.csv")


def test_a_rerun_in_a_used_log_dir_is_refused_and_overwrite_replaces_it(tmp_path):
    run = ["examples/cartpole.py", "--episodes", "20", "--log-dir", str(tmp_path)]
    first = run_mpi(2, run, timeout=120)
    assert first.returncode == 1, first.stderr  # 20 episodes do not solve it: exit 1
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    again = run_mpi(2, run, timeout=120)
    assert again.returncode == 1
    assert again.stderr.count("holds an earlier run") == 1, again.stderr
    assert "--resume" in again.stderr and "--overwrite" in again.stderr
    assert "Traceback" not in again.stderr
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before
    told = run_mpi(2, [*run, "--overwrite"], timeout=120)
    assert "holds an earlier run" not in told.stderr and _rows(tmp_path / "progress.csv") == 2


def test_idle_ranks_of_the_ga_are_named_on_a_line_of_their_own(tmp_path):
    args = ["examples/cartpole_ga.py", "--population-size", "2", "--episodes-per-individual",
            "1", "--generations", "1", "--log-dir", str(tmp_path)]  # fmt: skip
    proc = run_mpi(4, args, timeout=180)
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("pgmpi ") and lines[0].endswith("generation 0"), proc.stdout
    assert ("warning: 2 of 4 ranks idle (2 episodes: 2 individuals x 1 each): use "
            "population_size x episodes_per_individual >= 4") in lines  # fmt: skip
    assert any(line.startswith("warning: 4 ranks on ") and "oversubscribed" in line
               for line in lines) == (len(os.sched_getaffinity(0)) < 4)  # fmt: skip


def test_a_ga_with_few_episodes_a_rank_says_that_ranks_will_wait(tmp_path):
    def header(population: int, folder: str) -> list[str]:
        args = ["examples/cartpole_ga.py", "--population-size", str(population),
                "--episodes-per-individual", "2", "--generations", "1", "--log-dir",
                str(tmp_path / folder)]  # fmt: skip
        proc = run_mpi(2, args, timeout=180)  # exit 1: 500 not reached in a generation
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
        return proc.stdout.splitlines()

    few = header(4, "few")  # 8 episodes over 2 ranks: 4 each, under 8
    assert ("warning: 4.0 units a rank (8 episodes: 4 individuals x 2 each, 2 ranks): ranks "
            "wait for the longest episodes; population_size x episodes_per_individual >= 16 "
            "(8 a rank) keeps them busy") in few, few  # fmt: skip
    assert not any("units a rank" in line for line in header(8, "enough"))  # 16: 8 each


def test_a_full_disk_under_mpirun_is_one_line_and_loses_nothing(tmp_path):
    disk = tmp_path / "full"
    disk.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)],
                          capture_output=True, text=True)  # fmt: skip
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
    try:
        proc = run_mpi(2, ["examples/pong.py", "--updates", "1", "--log-dir", str(disk)],
                       timeout=300)  # fmt: skip
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
    assert proc.returncode == 1, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if "pgmpi: error" in line]
    assert len(errors) == 1, proc.stderr
    assert "No space left on device (errno 28); none was there" in errors[0]
    assert "Traceback" not in proc.stderr
