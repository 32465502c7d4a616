"""Pong from pixels with Karpathy's policy gradient, on as many MPI ranks as you start.

    python examples/pong.py                        # one process
    mpirun -n 2 python examples/pong.py --minutes 30
    mpirun -n 128 python examples/pong.py          # a cluster allocation: 128 games at once
    mpirun -n 2 python examples/pong.py --preset karpathy   # the post's algorithm, exactly
    mpirun -n 2 python examples/pong.py --resume   # continue from runs/pong/checkpoint.npz

Pong is played as the field scores it since Machado et al. (2018): with ALE v5's sticky
actions (each emulator frame repeats the previous frame's action with probability 0.25);
--deterministic plays the deterministic emulator instead (with --preset karpathy, add
--frame-skip 4). The run header says which.
The default preset, "fast", is the setting that beat sticky-action Pong fastest on our
2-core machine (docs/screens.md, docs/benchmarks.md "Time to score"): the default slot count
of games at once (16 on 2 ranks; the rule is in README.md, Glossary), each playing exactly
512 agent steps per update (a rally still open carries over), Adam with learning rate 4e-3
on the mean gradient, an entropy bonus (with sticky actions 0.03 at the start, moved linearly
to 0.01 over the first 3 M agent steps; deterministic, 0.01 throughout) and a learned
baseline of weight 0.05 (a value output), the advantages standardised over all the games of
an update (deterministic, over each game alone), with sticky actions NOOP (a paddle that
stands still) joining up and down after 3 M agent steps, both the step size and the bonus
decayed from 7.5 M agent steps on (halved 1.25 M later); the policy it plays when evaluated
is the running average of its parameters (half-life 200 updates).
"karpathy" is the post's algorithm in the post's game: 10 whole games per update, summed
gradient, RMSProp 1e-4, no bonus, baseline, NOOP or decay, each game's advantages standardised
alone, the live parameters, on Pong-v0's dynamics (a frame skip drawn from 2, 3, 4 at
every step, and sticky actions). Any flag given replaces the preset's value.
Runs until stopped (Ctrl-C) or a limit; saves LOG_DIR/checkpoint.npz every
--checkpoint-every updates, at the end, and on Ctrl-C (at the end of the update under way;
again, 3 s or more later, to stop at once), and writes LOG_DIR/progress.csv (plot it with
``python -m pgmpi.plot LOG_DIR``), and at the end prints the mean of the last 100 games and
the protocol it was scored under; --trace adds LOG_DIR/trace.csv, each rank's time per
update (draw it with ``python -m pgmpi.plot --timeline LOG_DIR``). One run at a time may use
a log dir. --resume continues only a Pong checkpoint, with its settings: the settings flags
it ignores are named.
"""

import argparse

from pgmpi import ParallelPG, mpi
from pgmpi.cli import (
    ArgumentParser,
    add_run_flags,
    add_settings,
    make_agent,
    positive_float,
    positive_int,
)
from pgmpi.pong import protocol
from pgmpi.presets import PRESETS


def main() -> None:
    p = ArgumentParser(__doc__)
    p.add_argument("--preset", choices=sorted(PRESETS), default="fast", help="settings (fast)")
    p.add_argument("--updates", type=positive_int, help="stop after this many updates in total")
    p.add_argument("--episodes", type=positive_int, help="stop after this many games in total")
    p.add_argument("--minutes", type=positive_float, help="stop after this many minutes")
    p.add_argument("--target-return", type=float, help="stop once the 100-game mean reaches it")
    add_settings(p, PRESETS["fast"], label="fast preset: ")
    p.add_argument(
        "--deterministic",
        dest="sticky_actions",
        action="store_false",
        default=argparse.SUPPRESS,
        help="play without sticky actions (as --no-sticky-actions): the deterministic "
        "emulator at frame skip 4 (with --preset karpathy, add --frame-skip 4)",
    )
    add_run_flags(p, "runs/pong", "update", ParallelPG.train)
    args = p.parse_args()
    mpi.set_deadline(args.deadline)

    agent = make_agent(ParallelPG, p, args, "ALE/Pong-v5", PRESETS[args.preset])
    agent.train(
        updates=args.updates,
        episodes=args.episodes,
        minutes=args.minutes,
        target_return=args.target_return,
        checkpoint_path=args.log_dir / "checkpoint.npz",
        checkpoint_every=args.checkpoint_every,
    )
    if mpi.is_root() and not args.quiet:  # the score reached, and under which protocol
        scores, c = list(agent.recent_returns), agent.config
        mean = f"{sum(scores) / len(scores):+.2f}" if scores else "none yet"
        played = protocol(c["sticky_actions"], c["frame_skip"])
        print(f"score: {mean} (mean of the last {len(scores)} games); protocol: {played}")


if __name__ == "__main__":
    main()
