"""PrunedGA on BipedalWalker-v3 with the synaptolytic-learning settings; checkpointed, resumable.

    python examples/bipedal_walker.py --generations 2
    mpirun -n 4 python examples/bipedal_walker.py
    mpirun -n 4 python examples/bipedal_walker.py --resume --minutes 30

Hidden layers of 8 and 8 tanh units, 138 individuals, 8 episodes each, 200 generations. The
population, best network, mutation rate and fitness history are saved to
LOG_DIR/checkpoint.npz every --checkpoint-every generations and when training stops
(Ctrl-C too: at the end of the generation under way; twice to stop at once); --resume
continues from that file (a BipedalWalker one), with its settings, exactly as an
uninterrupted run would, naming the settings flags it ignores.
--generations counts from the start of the run (resumes included); --minutes bounds this
invocation. At the end the best network plays 10 new episodes. A generation costs up to
138 x 8 x 1,600 steps once walkers stop falling over: use every core you have.
"""

import sys
from pathlib import Path

from pgmpi import PrunedGA, mpi
from pgmpi.cli import (
    ArgumentParser,
    fraction,
    positive_float,
    positive_int,
    warn_ignored_on_resume,
)

ENV = "BipedalWalker-v3"


def main() -> int:
    p = ArgumentParser(__doc__)
    p.add_argument("--generations", type=positive_int, default=200, help="total generations (200)")
    p.add_argument("--minutes", type=positive_float, help="stop after this many minutes")
    p.add_argument("--target-return", type=float, help="stop once a mean return reaches this")
    p.add_argument(
        "--hidden-sizes", type=positive_int, nargs="+", default=[8, 8], help="hidden layers (8 8)"
    )
    p.add_argument("--population-size", type=positive_int, default=138, help="individuals (138)")
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
        default=Path("runs/bipedal_walker"),
        help="folder for progress.csv and checkpoint.npz (runs/bipedal_walker)",
    )
    p.add_argument(
        "--checkpoint-every", type=positive_int, default=5, help="generations between saves (5)"
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue from LOG_DIR/checkpoint.npz (a BipedalWalker one): its settings win over"
        " the flags (those ignored are named); the limits and --checkpoint-every apply",
    )
    p.add_argument("--quiet", action="store_true", help="print only the final line")
    p.add_argument(
        "--trace",
        action="store_true",
        help="write LOG_DIR/trace.csv: each rank's seconds per generation "
        "(python -m pgmpi.plot --timeline LOG_DIR)",
    )
    args = p.parse_args()
    mpi.set_deadline(args.deadline)

    checkpoint = args.log_dir / "checkpoint.npz"
    if args.resume:
        ga = PrunedGA.load(
            checkpoint, env=ENV, log_dir=args.log_dir, quiet=args.quiet, trace=args.trace
        )
        settings = {"hidden_sizes", "population_size", "episodes_per_individual", "seed",
                    "elite_fraction", "prune_rate", "complexity_weight"}  # fmt: skip
        warn_ignored_on_resume(args, p.given() & settings, ga.config)
    else:
        ga = PrunedGA(
            env=ENV,
            hidden_sizes=args.hidden_sizes,
            population_size=args.population_size,
            episodes_per_individual=args.episodes_per_individual,
            elite_fraction=args.elite_fraction,
            prune_rate=args.prune_rate,
            complexity_weight=args.complexity_weight,
            seed=args.seed,
            log_dir=args.log_dir,
            quiet=args.quiet,
            trace=args.trace,
        )
    ga.train(
        generations=args.generations,
        minutes=args.minutes,
        target_return=args.target_return,
        checkpoint_path=checkpoint,
        checkpoint_every=args.checkpoint_every,
    )
    replay = ga.evaluate(episodes=10)
    if mpi.is_root():
        best = ga.optimizer.best_fitness
        print(
            f"generation {ga.generation}, {ga.steps} env steps: best fitness {best:.1f} with "
            f"{int(ga.optimizer.best_mask.sum())} of {ga.net.n_weights} connections, mean "
            f"return {replay:.1f} over 10 new episodes; saved {checkpoint}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
