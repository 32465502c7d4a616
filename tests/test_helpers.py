"""Tier 1: the small modules (BLAS cap, RNG streams, logger, plot, command-line types)."""

import argparse
import csv
import os

import numpy as np
import pytest

from pgmpi import ConfigError, ParallelPG, PrunedGA, cli, mpi, rng, threads
from pgmpi.logger import Logger, run_header


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


@pytest.mark.parametrize(
    "environ, started",
    [
        ({"SLURM_STEP_NUM_TASKS": "2", "SLURM_NTASKS": "2"}, 2),  # plain srun -n 2
        ({"PMI_SIZE": "4", "SLURM_STEP_NUM_TASKS": "4"}, 4),  # MPICH's PMI, MPI not using it
        ({"OMPI_COMM_WORLD_SIZE": "3"}, 3),  # Open MPI's mpirun, mpi4py built for MPICH
        ({"SLURM_NTASKS": "2"}, None),  # one process in a batch script: the user's choice
        ({"SLURM_STEP_NUM_TASKS": "1", "PMI_SIZE": "1"}, None),
        ({"PMI_SIZE": "2", "SLURM_STEP_NUM_TASKS": "1"}, "mpirun"),  # mpirun in an allocation
        ({}, None),
    ],
)
def test_launcher_mismatch_is_found_in_the_environment(environ, started):
    if started == "mpirun":  # the launcher's 2 ranks are MPI's 2 ranks: nothing wrong
        assert mpi.launcher_problem(environ, ranks=2) is None
        return
    problem = mpi.launcher_problem(environ, ranks=1)
    if started is None:
        assert problem is None
        return
    assert f"the launcher started {started} processes" in problem
    assert "srun --mpi=pmi2" in problem and "srun --mpi=list" in problem
    assert f"mpirun -n {started}" in problem
    assert mpi.launcher_problem(environ, ranks=started) is None


def test_launcher_mismatch_stops_both_algorithms_before_writing(tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_STEP_NUM_TASKS", "2")
    for make in (
        lambda d: ParallelPG(env="CartPole-v1", whole_games=True, log_dir=d),
        lambda d: PrunedGA(env="CartPole-v1", hidden_sizes=[4], population_size=8, log_dir=d),
    ):
        with pytest.raises(ConfigError, match="the launcher started 2 processes"):
            make(tmp_path / "run")
        assert not (tmp_path / "run").exists()


def test_library_version_is_one_clean_line():
    version = mpi.library_version()
    assert version and "\0" not in version and "\n" not in version


def test_streams_are_keyed_by_purpose_not_by_order():
    a = rng.stream(7, rng.EPISODE, 3, 4).random(5)
    assert np.array_equal(a, rng.stream(7, rng.EPISODE, 3, 4).random(5))
    others = [
        rng.stream(7, rng.EPISODE, 4, 3),
        rng.stream(7, rng.EPISODE, 3, 5),
        rng.stream(8, rng.EPISODE, 3, 4),
        rng.stream(7, rng.EVALUATE, 3, 4),
    ]
    assert all(not np.array_equal(a, g.random(5)) for g in others)
    assert 0 <= rng.env_seed(rng.stream(0, 0)) < 2**31


def test_logger_writes_csv_and_truncates_on_resume(tmp_path, capsys):
    log = Logger(tmp_path)
    for i in range(4):
        log.log({"update": i, "charts/x": i * 0.5}, f"line {i}")
    assert "line 3" in capsys.readouterr().out
    Logger(tmp_path, resume=True).truncate(2)
    resumed = Logger(tmp_path, resume=True, quiet=True)
    resumed.log({"update": 9, "charts/x": 1.0}, "not printed")
    rows = list(csv.DictReader(open(tmp_path / "progress.csv")))
    assert [r["update"] for r in rows] == ["0", "1", "9"]
    assert "not printed" not in capsys.readouterr().out
    Logger(tmp_path)  # a new run starts a new file
    assert not (tmp_path / "progress.csv").exists()


def test_plot_draws_every_chart(tmp_path):
    from pgmpi import ParallelPG
    from pgmpi.plot import plot

    ParallelPG(
        env="CartPole-v1", hidden_size=8, slots=2, steps_per_slot=1, log_dir=tmp_path, quiet=True
    ).train(episodes=6)
    out = plot(tmp_path)
    assert out == tmp_path / "progress.png" and out.read_bytes()[:4] == b"\x89PNG"
    assert out.stat().st_size > 10_000  # panels of lines, not an empty canvas


@pytest.mark.parametrize(
    "parse, text, ok",
    [
        (cli.positive_int, "3", 3),
        (cli.positive_int, "0", None),
        (cli.positive_int, "x", None),
        (cli.positive_float, "0.5", 0.5),
        (cli.positive_float, "-1", None),
        (cli.positive_float, "inf", None),
        (cli.fraction, "0", 0.0),
        (cli.fraction, "1", None),
    ],
)
def test_command_line_types(parse, text, ok):
    if ok is None:
        with pytest.raises(argparse.ArgumentTypeError):
            parse(text)
    else:
        assert parse(text) == ok
