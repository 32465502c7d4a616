"""PrunedGA reaches CartPole-v1's maximum return, 500, only by pruning an all-ones network.

    python examples/cartpole_ga.py
    mpirun -n 2 python examples/cartpole_ga.py --seed 3

Synaptolysis: every weight starts at 1 and learning only removes connections. Training stops
once an individual's mean return over its episodes is 500 (every one of its episodes lasted
the full 500 steps); the best network then plays 100 new episodes. Prints "reached 500 in N
generations, S seconds; ..." (or "did not reach 500 ...") and exits 0 only if it got there.
Results depend on the seed, never on the number of ranks.
"""

import sys
import time
from dataclasses import replace

from pgmpi import PrunedGA, mpi
from pgmpi.cli import ArgumentParser, add_run_flags, add_settings, make_agent, positive_int
from pgmpi.config import GAConfig

TARGET = 500.0  # CartPole-v1's time limit: the highest return there is
SETTINGS = replace(GAConfig(), population_size=64)


def main() -> int:
    p = ArgumentParser(__doc__)
    p.add_argument(
        "--generations", type=positive_int, default=100, help="give up after this many (100)"
    )
    add_settings(p, SETTINGS)
    add_run_flags(p, "runs/cartpole_ga", "generation", PrunedGA.train)
    args = p.parse_args()
    mpi.set_deadline(args.deadline)

    start = time.perf_counter()
    ga = make_agent(PrunedGA, p, args, "CartPole-v1", SETTINGS)
    rows = []
    ga.train(
        generations=args.generations,
        target_return=TARGET,
        checkpoint_path=args.log_dir / "checkpoint.npz",
        checkpoint_every=args.checkpoint_every,
        callback=rows.append,
    )
    seconds = time.perf_counter() - start
    reached = bool(rows) and rows[-1]["charts/best_return"] >= TARGET
    replay = ga.evaluate(episodes=100)
    if mpi.is_root():
        kept, total = int(ga.optimizer.best_mask.sum()), ga.net.n_weights
        print(
            f"{'reached' if reached else 'did not reach'} {TARGET:.0f} in {ga.generation} "
            f"generation(s), {seconds:.1f} seconds; best network: {kept} of {total} connections"
            f", mean return {replay:.1f} over 100 new episodes",
            flush=True,
        )
    return 0 if reached else 1


if __name__ == "__main__":
    sys.exit(main())
