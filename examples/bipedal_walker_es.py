"""ParallelES on BipedalWalker-v3 (Salimans et al., 2017); checkpointed, resumable.

    python examples/bipedal_walker_es.py --generations 2
    mpirun -n 2 python examples/bipedal_walker_es.py --minutes 60
    mpirun -n 4 python examples/bipedal_walker_es.py --resume --minutes 30

Two hidden layers of 64 tanh units, 128 perturbations a generation in antithetic pairs,
sigma 0.02, Adam 0.01, weight decay 0.005, observations normalised by running statistics
(pgmpi.presets.ES_PRESETS["paper"] holds the paper's own sizes). Theta, Adam's state and the
statistics are saved to LOG_DIR/checkpoint.npz every --checkpoint-every generations and
when training stops (Ctrl-C too: at the end of the generation under way); --resume
continues from that file, with its settings, exactly as an uninterrupted run would, on any
number of ranks. --generations counts from the start of the run; --minutes bounds this
invocation. At the end the current network plays 10 new episodes.
"""

import sys
from dataclasses import replace

from pgmpi import ParallelES, mpi
from pgmpi.cli import (
    ArgumentParser,
    add_run_flags,
    add_settings,
    make_agent,
    positive_float,
    positive_int,
)
from pgmpi.config import ESConfig

ENV = "BipedalWalker-v3"
SETTINGS = replace(ESConfig(), hidden_sizes=[64, 64], population_size=128)


def main() -> int:
    p = ArgumentParser(__doc__)
    p.add_argument("--generations", type=positive_int, help="total generations (no limit)")
    p.add_argument("--minutes", type=positive_float, help="stop after this many minutes")
    p.add_argument("--target-return", type=float, help="stop once the current return reaches this")
    add_settings(p, SETTINGS)
    add_run_flags(p, "runs/bipedal_walker_es", "generation", ParallelES.train)
    args = p.parse_args()
    mpi.set_deadline(args.deadline)

    checkpoint = args.log_dir / "checkpoint.npz"
    es = make_agent(ParallelES, p, args, ENV, SETTINGS)
    es.train(
        generations=args.generations,
        minutes=args.minutes,
        target_return=args.target_return,
        checkpoint_path=checkpoint,
        checkpoint_every=args.checkpoint_every,
    )
    replay = es.evaluate(episodes=10)
    if mpi.is_root():
        print(
            f"generation {es.generation}, {es.steps} env steps: current network's mean return "
            f"{replay:.1f} over 10 new episodes; saved {checkpoint}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
