"""Helpers for tier-3 tests: run a script under ``mpirun -n N`` in a subprocess, bounded.

The ``mpirun`` next to this Python (the ``mpich`` wheel's, inside the venv) is preferred
over one on PATH; Open MPI's is told it may run as root and oversubscribe. Every launch has
a timeout, so a deadlock fails the test instead of hanging the suite.
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def mpirun() -> str:
    here = Path(sys.executable).parent / "mpirun"
    found = str(here) if here.exists() else shutil.which("mpirun")
    if found is None:
        raise RuntimeError("no mpirun found: pip install mpich (or use a system MPI)")
    return found


@functools.cache
def is_open_mpi(launcher: str) -> bool:
    """True if ``launcher`` is Open MPI's mpirun (its ``--version`` names Open MPI)."""
    out = subprocess.run([launcher, "--version"], capture_output=True, text=True, timeout=60)
    return "open mpi" in (out.stdout + out.stderr).lower()


def mpi_command(
    n: int, args: list[str], env: dict | None = None, options: tuple[str, ...] = ()
) -> tuple[list[str], dict]:
    """The command line and environment of ``mpirun OPTIONS -n n python ARGS``.

    Open MPI's mpirun refuses to run as root (CI containers are root) unless told twice, and
    refuses more ranks than cores (the tests start up to 8 on 2 cores) without
    ``--oversubscribe``; MPICH's ignores both variables and needs no flag.
    """
    launcher = mpirun()
    full_env = dict(
        os.environ,
        PYTHONUNBUFFERED="1",
        OMPI_ALLOW_RUN_AS_ROOT="1",
        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
        **(env or {}),
    )
    extra = ["--oversubscribe"] if is_open_mpi(launcher) else []
    return [launcher, *extra, *options, "-n", str(n), sys.executable, *args], full_env


def run_mpi(
    n: int, args: list[str], timeout: float = 300, env: dict | None = None, cwd: Path | str = ROOT
) -> subprocess.CompletedProcess:
    """Run ``mpirun -n n python ARGS`` and return the finished process with its seconds.

    The returned object has ``returncode``, ``stdout``, ``stderr`` (text) and ``seconds``.
    A run past ``timeout`` raises ``subprocess.TimeoutExpired`` after killing the job.
    """
    cmd, full_env = mpi_command(n, args, env)
    start = time.monotonic()
    proc = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        cwd=cwd,
        start_new_session=True,
    )
    proc.seconds = time.monotonic() - start
    return proc


@contextmanager
def started_mpi(n: int, args: list[str], cwd: Path | str = ROOT, options: tuple[str, ...] = ()):
    """``mpirun OPTIONS -n n python ARGS`` running in the background (text pipes); killed on
    exit."""
    cmd, env = mpi_command(n, args, options=options)
    job = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        yield job
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()


def wait_for(path: Path, job: subprocess.Popen, timeout: float = 120) -> None:
    """Wait until ``path`` exists, failing if ``job`` ends or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert job.poll() is None, f"job ended early: {job.stderr.read()[-3000:]}"
        assert time.monotonic() < deadline, f"no {path} after {timeout} s"
        time.sleep(0.1)


@contextmanager
def holding_log_dir(path: Path):
    """Another process holding the lock on log dir ``path`` (a pgmpi Logger), killed with
    SIGKILL on exit, so it leaves its lock file behind as a crashed run would."""
    code = (
        "import sys, time; from pgmpi.logger import Logger\n"
        "Logger(sys.argv[1]); print('locked', flush=True); time.sleep(300)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE,
                              text=True)  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "locked"
        yield holder
    finally:
        holder.kill()
        holder.wait()


def descendants(pid: int) -> list[int]:
    """The pids of every process below ``pid`` (children first), from ``/proc``."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop(0)
        try:
            tasks = Path(f"/proc/{parent}/task").iterdir()
            kids = [int(c) for t in tasks for c in (t / "children").read_text().split()]
        except OSError:  # ended meanwhile
            continue
        found += kids
        todo += kids
    return found


def rank_pids(job: subprocess.Popen, n: int, timeout: float = 120) -> list[int]:
    """The pids of the ``n`` Python ranks under launcher ``job`` (a ``started_mpi`` job),
    waiting until all have started."""
    deadline = time.monotonic() + timeout
    while True:
        ranks = []
        for pid in descendants(job.pid):
            try:
                exe = os.readlink(f"/proc/{pid}/exe")
            except OSError:
                continue
            if Path(exe).name.startswith("python"):
                ranks.append(pid)
        if len(ranks) >= n:
            return ranks
        assert job.poll() is None, f"job ended early: {job.stderr.read()[-3000:]}"
        assert time.monotonic() < deadline, f"{len(ranks)} of {n} ranks after {timeout} s"
        time.sleep(0.1)
