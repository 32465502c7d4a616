"""Screen: does a running average of the parameters play better than the live policy?

    mpirun -n 2 python benchmarks/average_screen.py --seed 0   # 1,000 updates: 15 minutes
    mpirun -n 2 python benchmarks/average_screen.py --seed 1

Trains ParallelPG with the default settings (sticky actions) for ``--updates`` updates and
watches, beside the live parameters, exponential moving averages of them with half-lives of
20, 60 and 200 updates (after every update, on every rank: ``avg = a * avg + (1 - a) *
params`` in float32, a = 0.5 ** (1 / half-life)). The averages never touch training, so the run
and its live policy are the default's, bit for bit. Then each policy, live first, plays
``--games`` new games with sticky actions and ``--games`` deterministic ones, sampling its
actions; the evaluations are drawn in that order, so a repeat gives the same games. Prints
and writes benchmarks/results/average_screen_seedSEED.json (mean, 95% interval half-width,
games won) and keeps the run in runs/screens/average-SEED.
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
    args = p.parse_args()
    log_dir = common.ROOT / "runs" / "screens" / f"average-{args.seed}"
    agent = ParallelPG(seed=args.seed, log_dir=log_dir, quiet=True, overwrite=True)
    averages = {h: agent.net.params.copy() for h in HALF_LIVES}

    def watch(row: dict) -> None:  # on every rank, after every update
        for h, avg in averages.items():
            a = np.float32(0.5 ** (1 / h))
            avg *= a
            avg += (1 - a) * agent.net.params

    agent.train(updates=args.updates, callback=watch, checkpoint_path=log_dir / "checkpoint.npz")
    live = agent.net.params.copy()
    out = {"seed": args.seed, "updates": agent.update, "steps": agent.steps, "policies": {}}
    for name, params in [("live", live)] + [
        (f"average, half-life {h}", a) for h, a in averages.items()
    ]:
        agent.net.params[:] = params
        for protocol, sticky in (("sticky", True), ("deterministic", False)):
            score = agent.evaluate(args.games, sticky=sticky)
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
        print("wrote", common.write(f"average_screen_seed{args.seed}", out))


if __name__ == "__main__":
    main()
