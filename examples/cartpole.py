"""ParallelPG solves CartPole-v1: mean return >= 475 over 100 consecutive episodes.

    python examples/cartpole.py
    mpirun -n 2 python examples/cartpole.py --seed 3

The same policy gradient as examples/pong.py, on a 4-number observation with a softmax over
the two actions; a bigger learning rate and a small network make it take seconds. Prints
"solved in N episodes, S seconds" (or "not solved ...") and exits 0 only if solved.
"""

import sys
import time
from dataclasses import replace

from pgmpi import ParallelPG, mpi
from pgmpi.cli import ArgumentParser, add_run_flags, add_settings, make_agent, positive_int
from pgmpi.config import PGConfig

SOLVED = 475.0  # CartPole-v1's threshold, over the last 100 episodes
# A small network, RMSProp with a big step, one whole episode per slot (whole games are the
# default off Pong), the default entropy bonus off sticky Pong (0.01, constant): seconds to
# solve.
SETTINGS = replace(PGConfig(), hidden_size=32, optimizer="rmsprop", learning_rate=1e-2, slots=10,
                   steps_per_slot=1)  # fmt: skip


def main() -> int:
    p = ArgumentParser(__doc__)
    p.add_argument(
        "--episodes",
        type=positive_int,
        default=5000,
        help="give up after this many episodes in total (5000)",
    )
    add_settings(p, SETTINGS)
    add_run_flags(p, "runs/cartpole", "update", ParallelPG.train)
    args = p.parse_args()
    mpi.set_deadline(args.deadline)

    start = time.perf_counter()
    agent = make_agent(ParallelPG, p, args, "CartPole-v1", SETTINGS)
    agent.train(
        episodes=args.episodes,
        target_return=SOLVED,
        checkpoint_path=args.log_dir / "checkpoint.npz",
        checkpoint_every=args.checkpoint_every,
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
