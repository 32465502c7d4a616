"""The root stopped by SIGTERM inside a collective whose MPI call the other rank has already
entered: only MPI_Abort can end that rank, whatever the launcher does when the root exits.

    mpirun -disable-auto-cleanup -n 2 python tests/scripts/stop_in_collective.py --dir DIR

Rank 1 writes DIR/inside and enters the sum; the root, waiting for it at the same sum,
signals itself half a second later, when rank 1 is inside the MPI call.
"""

import argparse
import os
import signal
import time
from pathlib import Path

import numpy as np

from pgmpi import mpi

p = argparse.ArgumentParser()
p.add_argument("--dir", type=Path, required=True)
args = p.parse_args()
marker = args.dir / "inside"
mpi.init()


def stop_once_rank_1_is_inside() -> bool:
    if marker.exists():
        time.sleep(0.5)  # rank 1 passed the barrier the root already entered: it is in MPI
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(60)  # the handler ends the job during this sleep
    return False


if not mpi.is_root():
    time.sleep(0.5)  # the root waits at the barrier first
    marker.write_text("yes")
mpi.allreduce_sum_(np.zeros(1), meanwhile=stop_once_rank_1_is_inside if mpi.is_root() else None)
print("the sum returned", flush=True)  # never: the root stopped before its MPI call
