"""Karpathy's "Pong from Pixels" policy gradient, on as many MPI ranks as you start.

    python examples/pong.py                        # one process
    mpirun -n 2 python examples/pong.py --minutes 5
    mpirun -n 128 python examples/pong.py          # a cluster allocation
    mpirun -n 2 python examples/pong.py --resume   # continue from runs/pong/checkpoint.npz

Defaults are the post's: 200 hidden units, batch of 10 episodes, RMSProp with learning rate
1e-4 and decay 0.99, gamma 0.99. Runs until stopped (Ctrl-C) or an --episodes / --minutes
limit; saves runs/pong/checkpoint.npz every --checkpoint-every updates and at the end, and
writes runs/pong/progress.csv (plot it with ``python -m pgmpi.plot runs/pong``).
"""

from pathlib import Path

from pgmpi import ParallelPG
from pgmpi.cli import ArgumentParser, positive_float, positive_int


def main() -> None:
    p = ArgumentParser(__doc__)
    p.add_argument("--episodes", type=positive_int, help="stop after this many episodes in total")
    p.add_argument("--minutes", type=positive_float, help="stop after this many minutes")
    p.add_argument("--hidden-size", type=positive_int, default=200, help="hidden units (200)")
    p.add_argument("--learning-rate", type=positive_float, default=1e-4, help="RMSProp step (1e-4)")
    p.add_argument(
        "--batch-size",
        type=positive_int,
        default=10,
        help="episodes per update, over all ranks (10)",
    )
    p.add_argument("--seed", type=int, default=0, help="root seed of the run (0)")
    p.add_argument(
        "--log-dir",
        type=Path,
        default=Path("runs/pong"),
        help="folder for progress.csv and checkpoint.npz (runs/pong)",
    )
    p.add_argument(
        "--checkpoint-every",
        type=positive_int,
        default=10,
        help="save a checkpoint every this many updates (10)",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue from LOG_DIR/checkpoint.npz; its settings win over the flags",
    )
    args = p.parse_args()

    checkpoint = args.log_dir / "checkpoint.npz"
    if args.resume:
        agent = ParallelPG.load(checkpoint, log_dir=args.log_dir)
    else:
        agent = ParallelPG(
            env="ALE/Pong-v5",
            hidden_size=args.hidden_size,
            learning_rate=args.learning_rate,
            batch_size=args.batch_size,
            seed=args.seed,
            log_dir=args.log_dir,
        )
    agent.train(
        episodes=args.episodes,
        minutes=args.minutes,
        checkpoint_path=checkpoint,
        checkpoint_every=args.checkpoint_every,
    )


if __name__ == "__main__":
    main()
