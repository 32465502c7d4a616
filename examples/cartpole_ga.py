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
from pathlib import Path

from pgmpi import PrunedGA, mpi
from pgmpi.cli import ArgumentParser, fraction, positive_int

TARGET = 500.0  # CartPole-v1's time limit: the highest return there is


def main() -> int:
    p = ArgumentParser(__doc__)
    p.add_argument(
        "--generations", type=positive_int, default=100, help="give up after this many (100)"
    )
    p.add_argument(
        "--hidden-sizes", type=positive_int, nargs="+", default=[32], help="hidden layers (32)"
    )
    p.add_argument("--population-size", type=positive_int, default=64, help="individuals (64)")
    p.add_argument(
        "--episodes-per-individual",
        type=positive_int,
        default=8,
        help="episodes averaged into each fitness (8)",
    )
    p.add_argument(
        "--elite-fraction", type=fraction, default=0.125, help="share kept unchanged (0.125)"
    )
    p.add_argument(
        "--prune-rate", type=fraction, default=0.25, help="pruning probability, generation 0 (0.25)"
    )
    p.add_argument(
        "--complexity-weight",
        type=float,
        default=1.0,
        help="fitness penalty per fraction of connections kept (1)",
    )
    p.add_argument("--seed", type=int, default=0, help="root seed of the run (0)")
    p.add_argument(
        "--log-dir",
        type=Path,
        default=Path("runs/cartpole_ga"),
        help="folder for progress.csv and checkpoint.npz (runs/cartpole_ga)",
    )
    p.add_argument("--quiet", action="store_true", help="print only the final line")
    args = p.parse_args()
    mpi.set_deadline(args.deadline)

    start = time.perf_counter()
    ga = PrunedGA(
        env="CartPole-v1",
        hidden_sizes=args.hidden_sizes,
        population_size=args.population_size,
        episodes_per_individual=args.episodes_per_individual,
        elite_fraction=args.elite_fraction,
        prune_rate=args.prune_rate,
        complexity_weight=args.complexity_weight,
        seed=args.seed,
        log_dir=args.log_dir,
        quiet=args.quiet,
    )
    rows = []
    ga.train(
        generations=args.generations,
        target_return=TARGET,
        checkpoint_path=args.log_dir / "checkpoint.npz",
        callback=rows.append,
    )
    seconds = time.perf_counter() - start
    reached = rows[-1]["charts/best_return"] >= TARGET
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
