"""Train ParallelPG for a number of updates and print a hash of its state.

    mpirun -n 3 python tests/scripts/pg_run.py --updates 6 --log-dir DIR [--resume] [--env ID]

CartPole by default (10 slots of one episode each); with --env ALE/Pong-v5 a small network
plays --slots persistent Pong games of 40 steps per update.

Prints ``HASH <sha256>`` (parameters and optimizer state) on the root. With --checkpoint-every
it saves DIR/checkpoint.npz; with --resume it starts from that file. --pid-file writes each
rank's pid to DIR/pid.<rank> (for the SIGKILL test); --raise-on-rank R raises on rank R only
after the first update; --max-episode-steps caps each game; --frame-skip 2-4 plays Pong with
Pong-v0's drawn frame skips; --value-baseline C adds a learned baseline of that weight;
--standardise-over game standardises each game's advantages alone (the post's; the default
is the library's, over every game of an update); --noop-from N takes Pong's NOOP on after N
agent steps;
--evaluate N then prints ``EVAL <evaluation>`` of N games.
"""

import argparse
import hashlib
import time
from pathlib import Path

from pgmpi import ParallelPG, mpi

p = argparse.ArgumentParser()
p.add_argument("--updates", type=int, default=6)
p.add_argument("--log-dir", type=Path, required=True)
p.add_argument("--resume", action="store_true")
p.add_argument("--checkpoint-every", type=int, default=1)
p.add_argument("--exact", type=int, default=1)
p.add_argument("--env", default="CartPole-v1")
p.add_argument("--pid-file", action="store_true")
p.add_argument("--raise-on-rank", type=int, default=-1)
p.add_argument("--slots", type=int, default=10)
p.add_argument("--max-episode-steps", type=int, default=27_000)
p.add_argument("--frame-skip", default="4")
p.add_argument("--evaluate", type=int, default=0)
p.add_argument("--value-baseline", type=float, default=0.0)
p.add_argument("--standardise-over", default=None)
p.add_argument("--noop-from", type=int, default=None)
args = p.parse_args()

ck = args.log_dir / "checkpoint.npz"
if args.pid_file:
    args.log_dir.mkdir(parents=True, exist_ok=True)
    (args.log_dir / f"pid.{mpi.rank()}").write_text(str(__import__("os").getpid()))
if args.resume:
    agent = ParallelPG.load(ck, log_dir=args.log_dir, quiet=True)
else:
    pong = args.env == "ALE/Pong-v5"
    agent = ParallelPG(
        env=args.env,
        hidden_size=8 if pong else 24,
        learning_rate=1e-3 if pong else 1e-2,
        slots=args.slots,
        steps_per_slot=40 if pong else 1,
        whole_games=not pong,
        max_episode_steps=args.max_episode_steps,
        frame_skip=[int(x) for x in args.frame_skip.split("-")] if "-" in args.frame_skip else 4,
        value_baseline=args.value_baseline,
        standardise_over=args.standardise_over,
        noop_from=args.noop_from,
        seed=5,
        exact_reduction=bool(args.exact),
        log_dir=args.log_dir,
        quiet=True,
    )


def maybe_raise(row):
    if mpi.rank() == args.raise_on_rank:
        (args.log_dir / "raised_at").write_text(repr(time.time()))
        raise RuntimeError(f"deliberate failure on rank {args.raise_on_rank}")


agent.train(
    updates=args.updates,
    checkpoint_path=ck,
    checkpoint_every=args.checkpoint_every,
    callback=maybe_raise,
)
state = agent.net.params.tobytes() + agent.optimizer.m.tobytes()
evaluation = agent.evaluate(args.evaluate) if args.evaluate else None
if mpi.is_root():
    print("HASH", hashlib.sha256(state).hexdigest(), flush=True)
    if evaluation is not None:
        print("EVAL", evaluation, *evaluation.returns, flush=True)
