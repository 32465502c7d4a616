"""Caps the BLAS threads of each rank, so N ranks on a node never start N x cores threads.

Oversubscription is the classic slowdown of MPI + numpy: every rank's OpenBLAS starts one
thread per core, and 18 ranks on an 18-core node ran slower than 8. pgmpi's per-step work is
small (a matrix-vector product per step), so BLAS threads buy little and cost a lot.
"""

from __future__ import annotations

import os

from threadpoolctl import threadpool_info, threadpool_limits

from pgmpi import mpi


def default_threads() -> int:
    """Cores this rank may use: the user's OMP_NUM_THREADS if set, else cores / ranks per node.

    If the launcher bound this process to fewer cores than the node has (SLURM's
    ``--cpus-per-task``, ``mpirun --bind-to``), those bound cores are this rank's own.
    Collective: every rank must call this.
    """
    per_node = mpi.ranks_on_node()
    user = os.environ.get("OMP_NUM_THREADS", "")
    if user.isdigit() and int(user) > 0:
        return int(user)
    node_cores = os.cpu_count() or 1
    bound = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else node_cores
    if bound < node_cores:
        return max(1, bound)
    return max(1, node_cores // per_node)


def cap_blas_threads(threads: int | None = None) -> dict:
    """Limit BLAS to ``threads`` threads in this process (default: :func:`default_threads`).

    Returns:
        ``{"blas": library name and version, "threads": thread count now in force}``.

    Collective: every rank must call this.
    """
    limit = default_threads() if threads is None else threads
    if limit < 1:
        raise ValueError(f"blas_threads must be >= 1, got {threads!r}")
    threadpool_limits(limits=limit, user_api="blas")
    return blas_info()


def blas_info() -> dict:
    """The BLAS library numpy uses and its current thread count."""
    pools = [p for p in threadpool_info() if p.get("user_api") == "blas"]
    if not pools:
        return {"blas": "unknown", "threads": 1}
    pool = pools[0]
    return {"blas": f"{pool['internal_api']} {pool.get('version')}", "threads": pool["num_threads"]}
