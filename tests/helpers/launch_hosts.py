"""Helpers for the ``hosts`` tier: jobs on two "hosts" made of Linux namespaces, over TCP.

``tests/hosts/twohosts.sh`` makes the hosts (network + UTS namespaces joined by a bridge)
and is hydra's ``ssh`` for them. UCX would see that both hosts share one kernel and use
shared memory between them, so ``UCX_TLS=tcp,self`` keeps it on TCP, as between real
machines; MPICH's own shared memory still joins ranks on the same host.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from tests.helpers.launch import ROOT, mpirun

SCRIPT = ROOT / "tests" / "hosts" / "twohosts.sh"
# The script's defaults; PGMPI_HOSTS_PREFIX and PGMPI_HOSTS_NET move both, so two checkouts
# can run this tier at once.
PREFIX = os.environ.get("PGMPI_HOSTS_PREFIX", "pgmpi-h")
HOSTS = (f"{PREFIX}1", f"{PREFIX}2")
BRIDGE_IP = os.environ.get("PGMPI_HOSTS_NET", "10.77.0") + ".1"
TCP_ENV = {"UCX_TLS": "tcp,self"}


def unavailable() -> str | None:
    """Why two hosts cannot be made here, or None if they can."""
    if sys.platform != "linux":
        return "not Linux"
    try:
        proc = subprocess.run(["bash", str(SCRIPT), "check"], capture_output=True, text=True)
    except OSError as e:
        return f"cannot run {SCRIPT.name}: {e}"
    return None if proc.returncode == 0 else (proc.stdout + proc.stderr).strip() or "check failed"


@contextmanager
def two_hosts():
    """Hosts pgmpi-h1 and pgmpi-h2 exist inside the block; removed after."""
    subprocess.run(["bash", str(SCRIPT), "up", "2"], check=True, capture_output=True)
    try:
        yield HOSTS
    finally:
        subprocess.run(["bash", str(SCRIPT), "down"], capture_output=True)


def command(ranks_per_host: dict[str, int], args: list[str]) -> list[str]:
    """``mpiexec`` over the namespace hosts: ``{"pgmpi-h1": 2, ...}`` ranks on each."""
    hosts = ",".join(f"{h}:{k}" for h, k in ranks_per_host.items())
    n = sum(ranks_per_host.values())
    launcher = ["-launcher", "ssh", "-launcher-exec", str(SCRIPT), "-localhost", BRIDGE_IP]
    return [mpirun(), *launcher, "-hosts", hosts, "-n", str(n), sys.executable, *args]


def _env(env: dict | None) -> dict:
    return dict(os.environ, PYTHONUNBUFFERED="1", **TCP_ENV, **(env or {}))


def run_hosts(
    ranks_per_host: dict[str, int], args: list[str], timeout: float = 300, env: dict | None = None
) -> subprocess.CompletedProcess:
    """Run the job to its end (bounded); the result has ``seconds`` as well."""
    start = time.monotonic()
    proc = subprocess.run(
        command(ranks_per_host, args),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=_env(env),
        cwd=ROOT,
        start_new_session=True,
    )
    proc.seconds = time.monotonic() - start
    return proc


def start_hosts(ranks_per_host: dict[str, int], args: list[str], env: dict | None = None):
    """The job started in the background (text pipes). The caller kills it if still running."""
    return subprocess.Popen(
        command(ranks_per_host, args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(env),
        cwd=ROOT,
        start_new_session=True,
    )


def link_bytes(host: str) -> int:
    """Bytes through ``host``'s link so far (received and sent, seen from the bridge)."""
    stats = Path(f"/sys/class/net/{host}v/statistics")
    return int((stats / "rx_bytes").read_text()) + int((stats / "tx_bytes").read_text())
