"""Tier 3: a collective called on some ranks only ends the job within seconds, both call
sites named, instead of hanging until the watchdog's deadline (300 s at least)."""

import pytest

from tests.helpers.launch import run_mpi

pytestmark = pytest.mark.launcher
SCRIPT = "tests/scripts/root_only_save.py"
TEXT = "pgmpi: collective mismatch: "
ADVICE = "Every rank must make the same collective calls in the same order"
LINES = open(SCRIPT).read().splitlines()
SAVE_LINE = next(i for i, t in enumerate(LINES, 1) if "agent.save(" in t)
TRAIN_LINE = next(i for i, t in enumerate(LINES, 1) if "agent.train(updates=4)" in t)


def _run(tmp_path, *args: str):
    # Before the fix this hangs until the deadline: the 90-s timeout fails it quickly.
    return run_mpi(2, [SCRIPT, "--dir", str(tmp_path), *args], timeout=90)


def test_a_root_only_save_while_the_others_train_names_both_sites(tmp_path):
    proc = _run(tmp_path, "--then", "train")
    assert proc.returncode != 0 and "DONE" not in proc.stdout
    assert proc.seconds < 60, proc.seconds
    assert proc.stderr.count(TEXT) == 1, proc.stderr
    line = next(t for t in proc.stderr.splitlines() if TEXT in t)
    print(line)
    assert "is mpi.gather_object in ParallelPG.save (pgmpi/pg_run.py:" in line
    assert f"called from {SCRIPT}:{SAVE_LINE}" in line
    assert "rank 1's collective" in line and "in train (pgmpi/loop.py:" in line
    assert f"called from {SCRIPT}:{TRAIN_LINE}" in line
    assert ADVICE in line and "collective (such as a save) called on some ranks only" in line


def test_a_root_only_save_at_the_end_of_the_script_names_the_end(tmp_path):
    proc = _run(tmp_path, "--then", "exit")
    assert proc.returncode != 0 and "DONE" not in proc.stdout
    assert proc.seconds < 60, proc.seconds
    assert proc.stderr.count(TEXT) == 1, proc.stderr
    assert "rank 0 waits in collective" in proc.stderr
    assert "ParallelPG.save (pgmpi/pg_run.py:" in proc.stderr
    assert "rank 1 reached the end of the script (MPI_Finalize)" in proc.stderr
    assert ADVICE in proc.stderr


def test_the_same_calls_on_every_rank_are_no_mismatch(tmp_path):
    proc = _run(tmp_path, "--every-rank")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "DONE" in proc.stdout and "mismatch" not in proc.stderr
    assert (tmp_path / "checkpoint.npz").exists()
