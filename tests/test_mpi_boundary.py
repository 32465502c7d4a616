"""Tier 1: the MPI boundary (pgmpi/mpi/comm.py) in one process: a launcher that started more
processes than MPI ranks is found and stops both algorithms, and the MPI library version is
one line. (Its watchdog: test_deadline.py; its collectives on two ranks: test_pg_mpi.py.)"""

import pytest

from pgmpi import ConfigError, ParallelPG, PrunedGA, mpi


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
