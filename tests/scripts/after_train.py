"""Train a tiny ParallelPG for one update, then evaluate it for a long time: a stop signal
that comes after ``train`` returns.

    mpirun -n 2 python tests/scripts/after_train.py --dir DIR

Writes DIR/trained (the root) once training has returned, then plays evaluation games
until stopped.
"""

import argparse
from pathlib import Path

from pgmpi import ParallelPG, mpi

p = argparse.ArgumentParser()
p.add_argument("--dir", type=Path, required=True)
args = p.parse_args()

agent = ParallelPG(env="CartPole-v1", hidden_size=4, slots=2, steps_per_slot=1, quiet=True,
                   blas_threads=1)  # fmt: skip
agent.train(updates=1)
if mpi.is_root():
    args.dir.mkdir(parents=True, exist_ok=True)
    (args.dir / "trained").write_text("yes")
for _ in range(100_000):
    agent.evaluate(episodes=4)
