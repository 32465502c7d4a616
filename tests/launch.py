"""Helpers for tier-3 tests: run a script under ``mpirun -n N`` in a subprocess, bounded.

The ``mpirun`` next to this Python (the ``mpich`` wheel's, inside the venv) is preferred
over one on PATH. Every launch has a timeout, so a deadlock fails the test instead of
hanging the suite.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def mpirun() -> str:
    here = Path(sys.executable).parent / "mpirun"
    found = str(here) if here.exists() else shutil.which("mpirun")
    if found is None:
        raise RuntimeError("no mpirun found: pip install mpich (or use a system MPI)")
    return found


def run_mpi(
    n: int, args: list[str], timeout: float = 300, env: dict | None = None, cwd: Path | str = ROOT
) -> subprocess.CompletedProcess:
    """Run ``mpirun -n n python ARGS`` and return the finished process with its seconds.

    The returned object has ``returncode``, ``stdout``, ``stderr`` (text) and ``seconds``.
    A run past ``timeout`` raises ``subprocess.TimeoutExpired`` after killing the job.
    """
    full_env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
    cmd = [mpirun(), "-n", str(n), sys.executable, *args]
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
def started_mpi(n: int, args: list[str], cwd: Path | str = ROOT):
    """``mpirun -n n python ARGS`` running in the background (text pipes); killed on exit."""
    cmd = [mpirun(), "-n", str(n), sys.executable, *args]
    job = subprocess.Popen(
        cmd,
        cwd=cwd,
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
