"""Tier slurm: the launcher paths of README's "On a cluster", under a real one-host Slurm.

``make tier-slurm`` starts munged, slurmctld and slurmd from ``tests/slurm/`` and runs these
with SLURM_CONF set; without a reachable Slurm each test skips, saying why.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slurm
ROOT = Path(__file__).resolve().parents[1]
PONG = ["examples/pong.py", "--updates", "1", "--steps-per-slot", "16", "--hidden-size", "8"]
# --time=5 (minutes): Slurm itself ends a job that a timed-out test left behind.
SBATCH = ["sbatch", "--wait", "--time=5"]
SCRIPT = "examples/slurm/pong.sbatch"
REFUSED = "the launcher started 2 processes (SLURM_STEP_NUM_TASKS=2), but MPI gives each 1 rank"


@pytest.fixture(scope="module")
def slurm_env():
    """The environment for Slurm's commands, or a skip naming what is missing."""
    if shutil.which("srun") is None or shutil.which("sbatch") is None:
        pytest.skip("no srun/sbatch on PATH (make tier-slurm installs and starts Slurm)")
    if not os.environ.get("SLURM_CONF"):
        pytest.skip("SLURM_CONF is not set (make tier-slurm starts a Slurm and sets it)")
    # Nothing from a surrounding job or the user's thread settings may leak into the steps.
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "PMI", "OMPI_"))}
    env = dict(keep, SLURM_CONF=os.environ["SLURM_CONF"], PYTHONUNBUFFERED="1")
    env.pop("OMP_NUM_THREADS", None)
    up = subprocess.run(["sinfo", "-h", "-o", "%a %t"], capture_output=True, text=True, env=env)
    if up.returncode != 0 or "up" not in up.stdout:
        pytest.skip(f"Slurm does not answer: {up.stdout}{up.stderr}".strip())
    return env


def _run(cmd, env, timeout=300):
    """Run ``cmd`` from the repository root, bounded by ``timeout`` seconds."""
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def _headers(text):
    return [line for line in text.splitlines() if line.startswith("pgmpi ")]


def _csv_headers(log_dir):
    lines = (log_dir / "progress.csv").read_text().splitlines()
    return sum(line.startswith("episodes,") for line in lines), len(lines) - 1


def test_sbatch_example_is_one_job_of_two_ranks(slurm_env, tmp_path):
    out = tmp_path / "job.out"
    log_dir = tmp_path / "run"
    proc = _run(
        [*SBATCH, f"--output={out}", SCRIPT, *PONG[1:], "--log-dir", str(log_dir)],
        env=dict(slurm_env, PGMPI_PYTHON=sys.executable),
    )  # fmt: skip
    text = out.read_text() if out.exists() else ""
    assert proc.returncode == 0, proc.stdout + proc.stderr + text[-3000:]
    headers = _headers(text)
    assert len(headers) == 1 and " ranks 2 " in headers[0], text[-3000:]
    assert "1 thread/rank from SLURM_CPUS_PER_TASK" in headers[0]  # the script's --cpus-per-task
    assert _csv_headers(log_dir) == (1, 1)  # one job: one CSV header, one update


@pytest.mark.parametrize("how", ["sbatch-mpirun", "srun-pmi2"])
def test_mpirun_in_the_allocation_and_srun_pmi2_give_two_ranks(slurm_env, tmp_path, how):
    log_dir, out = tmp_path / "run", tmp_path / "job.out"
    args = [sys.executable, *PONG, "--log-dir", str(log_dir)]
    if how == "srun-pmi2":
        proc = _run(["srun", "--mpi=pmi2", "-n", "2", "--time=5", *args], slurm_env)
        text = proc.stdout
    else:
        proc = _run(
            [*SBATCH, f"--output={out}", SCRIPT, *PONG[1:], "--log-dir", str(log_dir)],
            env=dict(slurm_env, PGMPI_PYTHON=sys.executable, PGMPI_LAUNCH="mpirun"),
        )  # fmt: skip
        text = out.read_text() if out.exists() else ""
    assert proc.returncode == 0, proc.stdout + proc.stderr + text[-3000:]
    headers = _headers(text)
    assert len(headers) == 1 and " ranks 2 " in headers[0], text[-3000:]
    assert _csv_headers(log_dir) == (1, 1)


@pytest.mark.parametrize("mpi_flag", [[], ["--mpi=none"]])
def test_srun_without_pmi_is_refused_before_writing(slurm_env, tmp_path, mpi_flag):
    log_dir = tmp_path / "run"
    cmd = ["srun", *mpi_flag, "-n", "2", "--time=5", sys.executable, *PONG]
    proc = _run([*cmd, "--log-dir", str(log_dir)], slurm_env)
    assert proc.returncode != 0, proc.stdout
    # Each process is a lone rank 0, so each prints the one-line error once.
    assert proc.stderr.count("pgmpi: error: ConfigError: " + REFUSED) == 2, proc.stderr[-3000:]
    assert "srun --mpi=pmi2" in proc.stderr and "Traceback" not in proc.stderr
    assert not _headers(proc.stdout)
    assert not log_dir.exists()


def test_blas_cap_follows_cpus_per_task(slurm_env, tmp_path):
    base = ["srun", "--mpi=pmi2", "-n", "1", "--time=5"]
    args = [sys.executable, *PONG, "--log-dir", str(tmp_path / "run")]
    capped = _run([*base, "--cpus-per-task=1", *args], slurm_env)
    assert capped.returncode == 0, capped.stderr[-3000:]
    (header,) = _headers(capped.stdout)
    assert "ranks 1 " in header and "1 thread/rank from SLURM_CPUS_PER_TASK" in header, header
    # Without it, one rank on this node would get every core: the cap really came from Slurm.
    if (os.cpu_count() or 1) > 1 and len(os.sched_getaffinity(0)) > 1:
        args[-1] = str(tmp_path / "run2")
        free = _run([*base, *args], slurm_env)
        assert free.returncode == 0, free.stderr[-3000:]
        assert "from SLURM_CPUS_PER_TASK" not in _headers(free.stdout)[0]
