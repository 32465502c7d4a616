"""Screen: does a running average of the parameters play better than the live policy?

    mpirun -n 2 python benchmarks/average_screen.py --seed 0   # 1,000 updates: 15 minutes
    mpirun -n 2 python benchmarks/average_screen.py --seed 1
    cp -r runs/tts/fast-sticky-avg15-1 runs/screens/average-hour-1   # go on from a run:
    mpirun -n 2 python benchmarks/average_screen.py --resume runs/screens/average-hour-1 \
        --updates 4040 --half-lives 200 600 2000                      # to its 60th minute

Trains ParallelPG with the default settings (sticky actions) for ``--updates`` updates and
watches, beside the live parameters, exponential moving averages of them with half-lives of
20, 60 and 200 updates (after every update, on every rank: ``avg = a * avg + (1 - a) *
params`` in float32, a = 0.5 ** (1 / half-life)). The averages never touch training, so the run
and its live policy are the default's, bit for bit. Then each policy, live first, plays
``--games`` new games with sticky actions and ``--games`` deterministic ones, sampling its
actions; the evaluations are drawn in that order, so a repeat gives the same games. Prints
and writes benchmarks/results/average_screen_seedSEED.json (mean, 95% interval half-width,
games won) and keeps the run in runs/screens/average-SEED.

With ``--resume LOG_DIR`` it goes on from that run's checkpoint (``--updates`` counts from the
start of the run, as ``train`` does); every average starts as the run's own (which is the
live network if it kept none) and the results go to average_screen_NAME.json. With
``--decay-from STEPS`` the run goes on with a late decay of the step size instead (the live
policy then is no longer the default's; a checkpoint does not keep the decay, so run it in one
go): after STEPS agent steps it is the rule's step divided by 1 + (steps - STEPS) /
``--decay-steps``, so a decay from a step count the run has not reached yet leaves the run as
it was until then. ``--decay-entropy`` divides the entropy bonus by the same factor (set
before each update; a screen only). ``--greedy`` plays every policy greedily too.
``--value-baseline C`` trains with a learned baseline of that weight (``value_baseline``; the
run then goes to runs/screens/average-value-C-SEED and its results to
average_screen_value-C-seedSEED.json); with ``--resume`` the checkpoint's setting holds.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402

from pgmpi import ParallelPG, mpi  # noqa: E402

HALF_LIVES = (20, 60, 200)  # updates


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--updates", type=int, default=1000, help="updates to train (1000)")
    p.add_argument("--games", type=int, default=100, help="games per evaluation (100)")
    p.add_argument("--resume", metavar="LOG_DIR", help="go on from this run's checkpoint")
    p.add_argument(
        "--half-lives",
        type=float,
        nargs="+",
        default=HALF_LIVES,
        help="half-lives of the averages, in updates (20 60 200)",
    )
    p.add_argument(
        "--decay-from",
        type=int,
        metavar="STEPS",
        help="screen a late decay too: from this many agent steps on, the step "
        "size is divided by 1 + (steps - STEPS) / --decay-steps",
    )
    p.add_argument("--decay-steps", type=int, default=8_000_000, help="(8,000,000)")
    p.add_argument(
        "--decay-entropy",
        action="store_true",
        help="with --decay-from, divide the entropy bonus by the same factor",
    )
    p.add_argument("--greedy", action="store_true", help="evaluate greedy play too")
    p.add_argument("--value-baseline", type=float, default=0.0, help="(0: none)")
    args = p.parse_args()
    if args.resume:
        log_dir = common.Path(args.resume).resolve()
        agent = ParallelPG.load(log_dir / "checkpoint.npz", log_dir=log_dir, quiet=True)
        tag = log_dir.name
    else:
        c = args.value_baseline
        named = f"value-{c:g}-" if c else ""
        log_dir = common.ROOT / "runs" / "screens" / f"average-{named}{args.seed}"
        agent = ParallelPG(
            seed=args.seed, value_baseline=c, log_dir=log_dir, quiet=True, overwrite=True
        )
        tag = f"{named}seed{args.seed}"
    averages = {h: agent.policy.params.copy() for h in args.half_lives}
    if args.decay_from is not None:  # the same + and / on every rank
        lr, start, H = agent.learning_rate, args.decay_from, args.decay_steps
        beta = agent.config["entropy_bonus"]

        def step_size() -> float:
            factor = 1 + max(agent.steps - start, 0) / H
            if args.decay_entropy:  # read by the next update's gradients
                agent.config["entropy_bonus"] = beta / factor
            return lr / factor

        agent.step_size = step_size

    def watch(row: dict) -> None:  # on every rank, after every update
        for h, avg in averages.items():
            a = np.float32(0.5 ** (1 / h))
            avg *= a
            avg += (1 - a) * agent.net.params

    agent.train(updates=args.updates, callback=watch, checkpoint_path=log_dir / "checkpoint.npz")
    live = agent.net.params.copy()  # each policy in turn is played as the live network
    out = {
        "seed": agent.config["seed"],
        "resumed_from": args.resume,
        "updates": agent.update,
        "steps": agent.steps,
        "decay_from": args.decay_from,
        "decay_steps": args.decay_steps,
        "decay_entropy": args.decay_entropy,
        "value_baseline": agent.config["value_baseline"],
        "policies": {},
    }
    for name, params in [("live", live)] + [
        (f"average, half-life {h:g}", a) for h, a in averages.items()
    ]:
        agent.net.params[:] = params
        plays = [("sticky", True, False), ("deterministic", False, False)]
        if args.greedy:
            plays += [("sticky, greedy", True, True), ("deterministic, greedy", False, True)]
        for protocol, sticky, greedy in plays:
            score = agent.evaluate(args.games, greedy=greedy, sticky=sticky, live=True)
            r = agent.evaluation_returns
            out["policies"].setdefault(name, {})[protocol] = {
                "mean": float(score),
                "ci95_half_width": float(score.ci95[1] - score),
                "won": int((r > 0).sum()),
            }
            if mpi.is_root():
                print(f"{name}: {protocol} {score}", flush=True)
    if mpi.is_root():
        out["machine"] = common.machine()
        print("wrote", common.write(f"average_screen_{tag}", out))


if __name__ == "__main__":
    main()
