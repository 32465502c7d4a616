"""Tier 1: the BLAS thread cap (pgmpi/threads.py): the argument, OMP_NUM_THREADS and
SLURM_CPUS_PER_TASK, and the run header that reports it."""

import os

import pytest

from pgmpi import threads
from pgmpi.logger import run_header


def test_blas_cap_sets_the_thread_count(monkeypatch):
    before = threads.blas_info()["threads"]
    try:
        assert threads.cap_blas_threads(1)["threads"] == 1
        monkeypatch.setenv("OMP_NUM_THREADS", "3")
        assert threads.default_threads() == (3, "OMP_NUM_THREADS")
        monkeypatch.delenv("OMP_NUM_THREADS")
        monkeypatch.delenv("SLURM_CPUS_PER_TASK", raising=False)
        assert threads.default_threads()[0] >= 1
        assert threads.cap_blas_threads(1)["source"] == "blas_threads argument"
    finally:
        threads.cap_blas_threads(before)
    with pytest.raises(ValueError, match="blas_threads must be >= 1"):
        threads.cap_blas_threads(0)


def test_blas_cap_follows_slurm_cpus_per_task():
    bound = len(os.sched_getaffinity(0))
    assert threads.default_threads({"SLURM_CPUS_PER_TASK": "1"}) == (1, "SLURM_CPUS_PER_TASK")
    # The user's OMP_NUM_THREADS wins over the allocation's figure.
    both = {"SLURM_CPUS_PER_TASK": "1", "OMP_NUM_THREADS": "2"}
    assert threads.default_threads(both) == (2, "OMP_NUM_THREADS")
    # More cores asked for than this process is bound to: the mask (or node share) wins.
    threads_, source = threads.default_threads({"SLURM_CPUS_PER_TASK": str(bound + 1)})
    assert threads_ <= bound and source in ("affinity mask", "cores/ranks per node")
    assert threads.default_threads({"SLURM_CPUS_PER_TASK": "x"})[1] != "SLURM_CPUS_PER_TASK"
    before = threads.blas_info()["threads"]
    try:
        header = run_header("PG", "CartPole-v1", threads.cap_blas_threads(1), "details")
        assert "1 thread/rank from blas_threads argument | details" in header
    finally:
        threads.cap_blas_threads(before)
