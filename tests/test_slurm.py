"""Tier slurm: the launcher paths of docs/cluster.md, under a real one-host Slurm.

``make tier-slurm`` starts munged, slurmctld and slurmd from ``tests/slurm/`` and runs the
tests marked ``slurm`` with SLURM_CONF set; without a reachable Slurm each skips, saying why.
The unmarked tests (tier 1) check what of examples/slurm/pong.sbatch runs without Slurm:
its directives, the launcher it picks for each MPI library (``PGMPI_DRY_RUN=1``) and the
SIGUSR1 it passes on to the launcher.
"""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

slurm = pytest.mark.slurm
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


@slurm
def test_sbatch_example_is_one_job_of_two_ranks(slurm_env, tmp_path):
    """The recipe's script as submitted, launcher chosen by itself (the mpich wheel: pmi2),
    to the end of its run and its checkpoint."""
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
    assert "pgmpi: MPICH Version:" in text and "launching with pmi2" in text, text[-3000:]
    assert (log_dir / "checkpoint.npz").stat().st_size > 0  # the run ended as it should


@slurm
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


@slurm
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


@slurm
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


def _submit_pong(slurm_env, tmp_path, *sbatch_flags, launch: str = "auto"):
    """Submit pong.sbatch for a run that goes on until a signal stops it (no checkpoint but
    the signal's); returns (job id, its output file, its checkpoint), once its ranks run.

    On this one-host Slurm, freshly started, MPICH's start under srun sometimes fails inside
    MPI_Init (UCX: "failed to unpack address, invalid bandwidth 0.00"; "Fatal error in
    internal_Init_thread"), before any pgmpi code runs, and then no more half a minute
    later: such a job is submitted again, up to twice, 15 s apart, after the queue has
    emptied. Anything else fails the test."""
    log_dir = tmp_path / "run"
    pong = [*PONG[1:], "--log-dir", str(log_dir)]
    pong[pong.index("--updates") + 1] = "100000"
    pong += ["--checkpoint-every", "100000"]
    for attempt in (1, 2, 3):
        if attempt > 1:
            time.sleep(15)
        assert _wait_for_the_end(None, slurm_env, 120), "the queue did not empty"
        out = tmp_path / f"job{attempt}.out"
        submit = _run(
            ["sbatch", "--parsable", *sbatch_flags, f"--output={out}", SCRIPT, *pong],
            env=dict(slurm_env, PGMPI_PYTHON=sys.executable, PGMPI_LAUNCH=launch),
        )  # fmt: skip
        assert submit.returncode == 0, submit.stderr
        job = submit.stdout.strip().split(";")[0]
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            text = out.read_text() if out.exists() else ""
            if _headers(text) or "internal_Init" in text:
                break
            time.sleep(0.5)
        if _headers(text):
            return job, out, log_dir / "checkpoint.npz"
        _run(["scancel", job], slurm_env)
        assert "internal_Init" in text and attempt < 3, f"the job never started: {text[-3000:]}"
    raise AssertionError("unreachable")


# The states a job never leaves (squeue -o %T). A job can show others than R while it runs:
# SIGNALING for a few milliseconds while slurmctld sends --signal's warning, so "ended" is
# "in one of these", never "not in the states of a running job".
FINAL = {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL",
         "DEADLINE", "OUT_OF_MEMORY", "REVOKED", "SPECIAL_EXIT"}  # fmt: skip


def _wait_for_the_end(job, slurm_env, seconds: float) -> bool:
    """Wait until ``job`` (None: every job) has ended, as squeue answers; whether it did in
    time. An squeue that fails (slurmctld busy) answers nothing."""
    deadline = time.monotonic() + seconds
    which = [] if job is None else ["-j", job]
    queue = ["squeue", "-h", "-t", "all", *which, "-o", "%T"]
    while time.monotonic() < deadline:
        answer = _run(queue, slurm_env)
        if answer.returncode == 0 and set(answer.stdout.split()) <= FINAL:
            return True
        time.sleep(0.5)
    return False


@slurm
@pytest.mark.parametrize(
    "how",
    [["scancel", "--batch", "--signal=USR1"], ["scancel"]],
    ids=["time-limit-warning-USR1", "scancel-TERM"],
)
def test_a_signalled_job_saves_a_checkpoint_and_ends(slurm_env, tmp_path, how):
    """SIGUSR1 to the batch shell (what --signal=B:USR1@120 sends), passed on to the ranks,
    and scancel's SIGTERM to every step: the ranks save at the next update and end."""
    job, out, checkpoint = _submit_pong(slurm_env, tmp_path, "--time=5")
    try:
        sent = time.time()
        assert _run([*how, job], slurm_env).returncode == 0
        assert _wait_for_the_end(job, slurm_env, 60), out.read_text()[-3000:]
        text = out.read_text()
        name = "SIGUSR1" if "--signal=USR1" in how else "SIGTERM"
        assert f"{name}: saved {checkpoint}" in text, text[-3000:]
        assert checkpoint.stat().st_mtime >= sent
    finally:
        _run(["scancel", job], slurm_env)


@slurm
def test_scancel_under_the_mpirun_fallback_saves_a_checkpoint_and_exits_143(slurm_env, tmp_path):
    """The launcher the sbatch picks where Slurm lacks the PMI plugin: scancel's SIGTERM
    reaches mpirun, which forwards it, and every rank, so each rank gets it twice, a moment
    apart: one request to stop, so the ranks save at the next update and exit 143."""
    job, out, checkpoint = _submit_pong(slurm_env, tmp_path, "--time=5", launch="mpirun")
    try:
        sent = time.time()
        assert _run(["scancel", job], slurm_env).returncode == 0
        assert _wait_for_the_end(job, slurm_env, 60), out.read_text()[-3000:]
        text = out.read_text()
        assert f"SIGTERM: saved {checkpoint}" in text, text[-3000:]
        assert "pgmpi: stopped by SIGTERM (exit status 143)" in text, text[-3000:]
        assert "mismatch" not in text, text[-3000:]
        assert checkpoint.stat().st_mtime >= sent
    finally:
        _run(["scancel", job], slurm_env)


@slurm
def test_a_job_at_its_time_limit_leaves_a_checkpoint_of_its_last_minutes(slurm_env, tmp_path):
    """A 2-minute job that asks for SIGUSR1 a minute before its limit (Slurm may send it up
    to a minute early) saves and ends before the limit kills it."""
    job, out, checkpoint = _submit_pong(slurm_env, tmp_path, "--time=2", "--signal=B:USR1@60")
    try:
        assert _wait_for_the_end(job, slurm_env, 240), out.read_text()[-3000:]
        text = out.read_text()
        assert "SIGUSR1, the time limit is near: passing it to the ranks" in text, text[-3000:]
        assert f"SIGUSR1: saved {checkpoint}" in text, text[-3000:]
        assert "DUE TO TIME LIMIT" not in text, text[-3000:]
    finally:
        _run(["scancel", job], slurm_env)


# ------------------------------------------------ tier 1: the script without Slurm


def _sbatch_dry_run(tmp_path, python, plugins, launch=None):
    """Run the script with PGMPI_DRY_RUN=1, PGMPI_PYTHON=python and, first on PATH, an
    ``srun`` whose ``--mpi=list`` offers ``plugins`` as Slurm 22.05 prints them."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    listing = "".join(f"srun: {name}\\n" for name in ["none", *plugins])
    _script(bin_dir / "srun", f'echo "srun: MPI types are..." >&2; printf "{listing}" >&2')
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", PGMPI_DRY_RUN="1")
    env["PGMPI_PYTHON"] = str(python)
    env.pop("PGMPI_LAUNCH", None)
    if launch:
        env["PGMPI_LAUNCH"] = launch
    return _run(["bash", SCRIPT, "--minutes", "1"], env=env, timeout=120)


def _script(path, body):
    path.write_text("#!/bin/bash\n" + body + "\n")
    path.chmod(0o755)
    return path


def _open_mpi_python(tmp_path):
    """A stand-in Python whose mpi4py reports Debian's Open MPI."""
    return _script(tmp_path / "ompi-python", 'echo "Open MPI v4.1.4, package: Debian OpenMPI"')


def test_sbatch_asks_for_a_warning_before_the_time_limit():
    directives = []
    for line in (ROOT / SCRIPT).read_text().splitlines()[1:]:
        if line and not line.startswith("#"):
            break  # sbatch reads #SBATCH lines only up to the first command
        if line.startswith("#SBATCH "):
            directives.append(line.split()[1])
    assert "--signal=B:USR1@120" in directives, directives


WHEEL_MPIRUN = f"{Path(sys.executable).parent / 'mpirun'} -n 2"  # the mpich wheel's
KILL = "--kill-on-bad-exit=1"  # a rank that fails ends the step


@pytest.mark.parametrize(
    "library, plugins, launch, expected",
    [
        ("mpich", ["pmi2", "pmix"], None, f"srun --mpi=pmi2 {KILL}"),  # the mpich wheel
        ("openmpi", ["pmi2", "pmix", "pmix_v4"], None, f"srun --mpi=pmix {KILL}"),
        ("openmpi", ["pmi2"], None, "mpirun -n 2"),  # a Slurm without pmix: Open MPI's mpirun
        ("mpich", ["pmix"], None, WHEEL_MPIRUN),  # no pmi2: the mpirun next to PGMPI_PYTHON
        ("mpich", ["pmi2", "pmix"], "mpirun", WHEEL_MPIRUN),
        ("openmpi", ["pmi2", "pmix"], "pmi2", f"srun --mpi=pmi2 {KILL}"),  # the user's word wins
    ],
)
def test_sbatch_picks_the_launcher_for_the_mpi_library(
    tmp_path, library, plugins, launch, expected
):
    python = sys.executable if library == "mpich" else _open_mpi_python(tmp_path)
    proc = _sbatch_dry_run(tmp_path, python, plugins, launch)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"{expected} {python} examples/pong.py --minutes 1\n", proc.stdout
    if launch is None:  # the job's log says what was chosen, and from which library
        name = "MPICH Version:" if library == "mpich" else "Open MPI v4.1.4"
        assert f"pgmpi: {name}" in proc.stderr and "launching with" in proc.stderr


def test_sbatch_refuses_an_unknown_launcher(tmp_path):
    proc = _sbatch_dry_run(tmp_path, sys.executable, ["pmi2"], launch="pmi3")
    assert proc.returncode == 2 and "got 'pmi3'" in proc.stderr, proc.stderr


def test_sbatch_passes_sigusr1_to_the_launcher(tmp_path):
    """What Slurm's --signal=B:USR1 sends the batch shell reaches the launcher (here a
    stand-in mpirun next to PGMPI_PYTHON), and the job's status is the launcher's."""
    started, python = tmp_path / "started", tmp_path / "venv" / "python"
    python.parent.mkdir()
    _script(python, "exit 1")
    _script(
        python.parent / "mpirun",
        f"""trap 'echo "launcher: USR1"; exit 0' USR1
touch {started}
for _ in $(seq 600); do sleep 0.1; done
exit 1""",
    )
    env = dict(os.environ, PGMPI_PYTHON=str(python), PGMPI_LAUNCH="mpirun")
    proc = subprocess.Popen(
        ["bash", SCRIPT], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert started.exists(), "the stand-in mpirun never started"
        proc.send_signal(signal.SIGUSR1)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, out + err
    assert "launcher: USR1" in out and "passing it to the ranks" in err, out + err
