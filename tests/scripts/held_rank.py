"""The root broadcasts in a loop; one rank stops itself (SIGSTOP) inside one broadcast.

    mpirun -n 4 python tests/scripts/held_rank.py --rank 2 --at 20 --dir DIR

The stopped rank has passed that broadcast's barrier but not yet made its MPI call: it
stands for a host stopped or cut off in the middle of a collective. In MPICH's binomial
tree over 4 ranks, rank 2 passes the root's data on to rank 3, so rank 3 stays in that
broadcast, waiting for rank 2 and still answering the root, while the root and rank 1
finish it and wait at the next. Before stopping, the rank writes the time to DIR/stop_at.
Prints ``DONE`` on the root if every broadcast completes.
"""

import argparse
import os
import signal
import time
from pathlib import Path

import numpy as np

from pgmpi import mpi
from pgmpi.mpi import comm

p = argparse.ArgumentParser()
p.add_argument("--rank", type=int, required=True)
p.add_argument("--at", type=int, default=20)
p.add_argument("--rounds", type=int, default=40)
p.add_argument("--dir", type=Path, required=True)
args = p.parse_args()


def stop_after_barrier(confirm):
    """The watchdog's check after the barrier, then a stop on the chosen broadcast."""

    def confirm_then_stop():
        confirm()
        if comm.watch.count == target:
            (args.dir / "stop_at").write_text(repr(time.time()))
            os.kill(os.getpid(), signal.SIGSTOP)

    return confirm_then_stop


target = -1
for i in range(args.rounds):
    if i == 1 and mpi.rank() == args.rank:  # the watchdog exists from the first collective
        target = comm.watch.count + args.at
        comm.watch.confirm = stop_after_barrier(comm.watch.confirm)
    buf = np.full(3, float(i)) if mpi.is_root() else np.zeros(3)
    assert mpi.broadcast_(buf)[0] == i
    time.sleep(0.01)
if mpi.is_root():
    print("DONE", flush=True)
