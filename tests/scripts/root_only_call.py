"""Make a public collective of ParallelPG or PrunedGA on the root only, while the other
ranks end the script: the misuse the watchdog names within seconds.

    mpirun -n 2 python tests/scripts/root_only_call.py --algorithm ga --call save --dir DIR
"""

import argparse
from pathlib import Path

from pgmpi import ParallelPG, PrunedGA, mpi

p = argparse.ArgumentParser()
p.add_argument("--algorithm", choices=("pg", "ga"), required=True)
p.add_argument("--call", choices=("save", "evaluate", "train"), required=True)
p.add_argument("--dir", type=Path, required=True)
args = p.parse_args()

if args.algorithm == "pg":
    agent = ParallelPG(env="CartPole-v1", hidden_size=4, slots=2, steps_per_slot=1, quiet=True,
                       blas_threads=1)  # fmt: skip
    agent.train(updates=1)
else:
    agent = PrunedGA(env="CartPole-v1", hidden_sizes=(4,), population_size=8, seed=3,
                     episodes_per_individual=1, quiet=True, blas_threads=1)  # fmt: skip
    agent.train(generations=1)
if mpi.is_root():  # the mistake: a collective on one rank
    if args.call == "save":
        agent.save(args.dir / "checkpoint.npz")
    elif args.call == "evaluate":
        agent.evaluate(episodes=4)
    else:
        agent.train(**{"updates" if args.algorithm == "pg" else "generations": 3})
