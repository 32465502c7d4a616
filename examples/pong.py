"""Pong from pixels with Karpathy's policy gradient, on as many MPI ranks as you start.

    python examples/pong.py                        # one process
    mpirun -n 2 python examples/pong.py --minutes 30
    mpirun -n 128 python examples/pong.py          # a cluster allocation: 128 games at once
    mpirun -n 2 python examples/pong.py --preset karpathy   # the post's algorithm, exactly
    mpirun -n 2 python examples/pong.py --resume   # continue from runs/pong/checkpoint.npz

The default preset, "fast", is the setting that beat Pong fastest on our 2-core machine (see
README, "Time to score"): 16 games at once (or one per rank, if more ranks), each playing
exactly 512 agent steps per update (a rally still open carries over to the next update),
Adam with learning rate 2e-3 on the mean gradient. "karpathy" is the post's: 10 whole games
per update, summed gradient, RMSProp 1e-4. Any flag given replaces the preset's value.
Runs until stopped (Ctrl-C) or a limit; saves LOG_DIR/checkpoint.npz every
--checkpoint-every updates, at the end, and on Ctrl-C (at the end of the update under way;
press it twice to stop at once), and writes LOG_DIR/progress.csv (plot it with
``python -m pgmpi.plot LOG_DIR``); --trace adds LOG_DIR/trace.csv, each rank's time per
update (draw it with ``python -m pgmpi.plot --timeline LOG_DIR``). One run at a time may use
a log dir. --resume continues only a Pong checkpoint, with its settings: the settings flags
it ignores are named.
"""

from pathlib import Path

from pgmpi import ParallelPG, mpi
from pgmpi.cli import ArgumentParser, positive_float, positive_int, warn_ignored_on_resume
from pgmpi.pg import PRESETS


def main() -> None:
    p = ArgumentParser(__doc__)
    p.add_argument("--preset", choices=sorted(PRESETS), default="fast", help="settings (fast)")
    p.add_argument("--updates", type=positive_int, help="stop after this many updates in total")
    p.add_argument("--episodes", type=positive_int, help="stop after this many games in total")
    p.add_argument("--minutes", type=positive_float, help="stop after this many minutes")
    p.add_argument("--target-return", type=float, help="stop once the 100-game mean reaches it")
    p.add_argument("--hidden-size", type=positive_int, help="hidden units (200)")
    p.add_argument("--optimizer", choices=["adam", "rmsprop"], help="the preset's by default")
    p.add_argument("--learning-rate", type=positive_float, help="step size (the preset's)")
    p.add_argument("--slots", type=positive_int, help="games played at once, over all ranks")
    p.add_argument("--steps-per-slot", type=positive_int, help="agent steps per game per update")
    p.add_argument(
        "--sticky-actions",
        action="store_true",
        help="train with ALE v5's sticky actions (repeat probability 0.25)",
    )
    p.add_argument("--seed", type=int, default=0, help="root seed of the run (0)")
    p.add_argument(
        "--trace",
        action="store_true",
        help="write LOG_DIR/trace.csv: each rank's seconds playing, computing gradients, "
        "waiting at the Allreduce and updating, per update (python -m pgmpi.plot --timeline)",
    )
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
        help="continue from LOG_DIR/checkpoint.npz (a Pong one): its settings win over the "
        "flags (those ignored are named); the limits and --checkpoint-every apply",
    )
    args = p.parse_args()
    mpi.set_deadline(args.deadline)

    checkpoint = args.log_dir / "checkpoint.npz"
    flags = ("hidden_size", "optimizer", "learning_rate", "slots", "steps_per_slot")
    if args.resume:
        agent = ParallelPG.load(
            checkpoint, env="ALE/Pong-v5", log_dir=args.log_dir, trace=args.trace
        )
        settings = {*flags, "preset", "sticky_actions", "seed"}
        warn_ignored_on_resume(args, p.given() & settings, agent.config)
    else:
        given = {k: getattr(args, k) for k in flags if getattr(args, k) is not None}
        agent = ParallelPG.from_preset(
            args.preset,
            env="ALE/Pong-v5",
            sticky_actions=args.sticky_actions,
            seed=args.seed,
            log_dir=args.log_dir,
            trace=args.trace,
            **given,
        )
    agent.train(
        updates=args.updates,
        episodes=args.episodes,
        minutes=args.minutes,
        target_return=args.target_return,
        checkpoint_path=checkpoint,
        checkpoint_every=args.checkpoint_every,
    )


if __name__ == "__main__":
    main()
