"""Ranks sum a small buffer in a loop; one rank sleeps once, before one of the sums.

    mpirun -n 3 python tests/scripts/late_rank.py --rank 1 --at 20 --sleep 60 --dir DIR

Before sleeping, the late rank writes the time to DIR/late_at. Prints ``DONE`` on the root
if every sum completes (each must equal the rank count).
"""

import argparse
import time
from pathlib import Path

import numpy as np

from pgmpi import mpi

p = argparse.ArgumentParser()
p.add_argument("--rank", type=int, required=True)
p.add_argument("--at", type=int, default=20)
p.add_argument("--sleep", type=float, default=60)
p.add_argument("--sums", type=int, default=40)
p.add_argument("--dir", type=Path, required=True)
args = p.parse_args()

for i in range(args.sums):
    if mpi.rank() == args.rank and i == args.at:
        (args.dir / "late_at").write_text(repr(time.time()))
        time.sleep(args.sleep)
    assert mpi.allreduce_sum_(np.ones(3))[0] == mpi.size()
    time.sleep(0.01)  # a little work between sums: the intervals the adaptive rule learns
if mpi.is_root():
    print("DONE", flush=True)
