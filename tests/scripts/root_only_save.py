"""Train a tiny ParallelPG, then save on the root only: the misuse the watchdog names.

    mpirun -n 2 python tests/scripts/root_only_save.py --dir DIR --then train|exit|nothing

``--then train``: rank 0 saves while the others train on (two different collectives);
``--then exit``: rank 0 saves while the others end the script; ``--every-rank``: the
correct program, the save on every rank, then four more updates. Prints ``DONE`` on the
root if it gets to the end.
"""

import argparse
from pathlib import Path

from pgmpi import ParallelPG, mpi

p = argparse.ArgumentParser()
p.add_argument("--dir", type=Path, required=True)
p.add_argument("--then", choices=("train", "exit"), default="train")
p.add_argument("--every-rank", action="store_true")
args = p.parse_args()

agent = ParallelPG(env="CartPole-v1", hidden_size=4, slots=2, steps_per_slot=1, quiet=True,
                   blas_threads=1)  # fmt: skip
agent.train(updates=2)
if args.every_rank or mpi.is_root():
    agent.save(args.dir / "checkpoint.npz")
if args.then == "train":
    agent.train(updates=4)
if mpi.is_root():
    print("DONE", flush=True)
