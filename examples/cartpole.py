"""ParallelPG solves CartPole-v1: mean return >= 475 over 100 consecutive episodes.

    python examples/cartpole.py
    mpirun -n 2 python examples/cartpole.py --seed 3

The same policy gradient as examples/pong.py, on a 4-number observation with a softmax over
the two actions; a bigger learning rate and a small network make it take seconds. Prints
"solved in N episodes, S seconds" (or "not solved ...") and exits 0 only if solved.
"""

import sys
import time
from pathlib import Path

from pgmpi import ParallelPG, mpi
from pgmpi.cli import ArgumentParser, positive_float, positive_int

SOLVED = 475.0  # CartPole-v1's threshold, over the last 100 episodes


def main() -> int:
    p = ArgumentParser(__doc__)
    p.add_argument(
        "--episodes",
        type=positive_int,
        default=5000,
        help="give up after this many episodes (5000)",
    )
    p.add_argument("--hidden-size", type=positive_int, default=32, help="hidden units (32)")
    p.add_argument("--learning-rate", type=positive_float, default=1e-2, help="RMSProp step (1e-2)")
    p.add_argument(
        "--slots",
        type=positive_int,
        default=10,
        help="episodes per update, over all ranks (10)",
    )
    p.add_argument("--seed", type=int, default=0, help="root seed of the run (0)")
    p.add_argument(
        "--log-dir",
        type=Path,
        default=Path("runs/cartpole"),
        help="folder for progress.csv and checkpoint.npz (runs/cartpole)",
    )
    p.add_argument("--quiet", action="store_true", help="print only the final line")
    p.add_argument(
        "--trace",
        action="store_true",
        help="write LOG_DIR/trace.csv: each rank's seconds per update "
        "(python -m pgmpi.plot --timeline LOG_DIR)",
    )
    args = p.parse_args()
    mpi.set_deadline(args.deadline)

    start = time.perf_counter()
    agent = ParallelPG(
        env="CartPole-v1",
        hidden_size=args.hidden_size,
        optimizer="rmsprop",
        learning_rate=args.learning_rate,
        slots=args.slots,
        steps_per_slot=1,  # with whole games (the default off Pong): one episode per slot
        seed=args.seed,
        log_dir=args.log_dir,
        quiet=args.quiet,
        trace=args.trace,
    )
    agent.train(
        episodes=args.episodes,
        target_return=SOLVED,
        checkpoint_path=args.log_dir / "checkpoint.npz",
    )
    seconds = time.perf_counter() - start
    mean100 = sum(agent.recent_returns) / max(len(agent.recent_returns), 1)
    solved = len(agent.recent_returns) == 100 and mean100 >= SOLVED
    if mpi.is_root():
        print(
            f"{'solved' if solved else 'not solved'} in {agent.episodes} episodes, "
            f"{seconds:.1f} seconds (mean of last 100: {mean100:.1f})",
            flush=True,
        )
    return 0 if solved else 1


if __name__ == "__main__":
    sys.exit(main())
