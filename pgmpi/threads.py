"""Caps the BLAS threads of each rank, so N ranks on a node never start N x cores threads.

Oversubscription is the classic slowdown of MPI + numpy: every rank's OpenBLAS starts one
thread per core, and 18 ranks on an 18-core node ran slower than 8. pgmpi's per-step work is
small (a matrix-vector product per step), so BLAS threads buy little and cost a lot.
"""

from __future__ import annotations

import os

from threadpoolctl import threadpool_info, threadpool_limits

from pgmpi import mpi


def default_threads(environ=None) -> tuple[int, str]:
    """Cores this rank may use, and where that figure comes from.

    In order: the user's ``OMP_NUM_THREADS``; Slurm's ``SLURM_CPUS_PER_TASK`` (what the job
    asked for: a Slurm without task binding does not enforce it); the CPU affinity mask, if
    the launcher bound this process to fewer cores than the node has (``mpirun --bind-to``,
    Slurm's task/affinity), and never more than it; else cores per node / ranks per node.

    Returns:
        ``(threads, source)``, e.g. ``(1, "SLURM_CPUS_PER_TASK")``.

    Collective: every rank must call this.
    """
    environ = os.environ if environ is None else environ
    per_node = mpi.ranks_on_node()
    node_cores = os.cpu_count() or 1
    bound = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else node_cores
    for name in ("OMP_NUM_THREADS", "SLURM_CPUS_PER_TASK"):
        value = environ.get(name, "")
        if value.isdigit() and int(value) > 0:
            if name == "SLURM_CPUS_PER_TASK" and bound < int(value):
                break  # bound to fewer cores than asked for: the mask is the limit
            return int(value), name
    if bound < node_cores:
        return max(1, bound), "affinity mask"
    return max(1, node_cores // per_node), "cores/ranks per node"


def cap_blas_threads(threads: int | None = None) -> dict:
    """Limit BLAS to ``threads`` threads in this process (default: :func:`default_threads`).

    Returns:
        ``{"blas": library name and version, "threads": thread count now in force,
        "source": where the limit came from}``.

    Collective: every rank must call this.
    """
    limit, source = default_threads() if threads is None else (threads, "blas_threads argument")
    if limit < 1:
        raise ValueError(f"blas_threads must be >= 1, got {threads!r}")
    threadpool_limits(limits=limit, user_api="blas")
    return dict(blas_info(), source=source)


def blas_info() -> dict:
    """The BLAS library numpy uses and its current thread count."""
    pools = [p for p in threadpool_info() if p.get("user_api") == "blas"]
    if not pools:
        return {"blas": "unknown", "threads": 1}
    pool = pools[0]
    return {"blas": f"{pool['internal_api']} {pool.get('version')}", "threads": pool["num_threads"]}
