"""Pong's 2 ranks pinned to cores against free, in turn: seconds per update, same bits.

    python benchmarks/pinning.py [--pairs 3] [--updates 60]   # about 7 minutes on 2 cores

Runs ``mpirun -n 2 [-bind-to core] python examples/pong.py --seed 1 --updates U`` pinned,
then free, ``--pairs`` times in turn (pairs keep the ratio meaningful on a host whose speed
drifts), and takes each run's seconds per update over updates 10 to U from its
progress.csv (start-up and the first updates left out). Prints each pair's ratio and their
median, checks that every run ended with the same parameters, and writes
benchmarks/results/pinning.json. Pinning uses ``common.pin_flags`` (MPICH's
``-bind-to core``; Open MPI's ``--bind-to core``). Run it on an otherwise idle machine with
2 cores or more.
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import statistics
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402

RUNS = common.ROOT / "runs" / "benchmarks" / "pinning"


def seconds_per_update(log_dir, first: int = 10) -> float:
    """Mean seconds per update from update ``first`` to the last, from progress.csv."""
    with open(log_dir / "progress.csv") as f:
        elapsed = [float(row["time/elapsed_s"]) for row in csv.DictReader(f)]
    return (elapsed[-1] - elapsed[first - 1]) / (len(elapsed) - first)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pairs", type=int, default=3, help="pinned-then-free pairs (3)")
    p.add_argument("--updates", type=int, default=60, help="updates per run (60)")
    args = p.parse_args()
    if args.updates < 20:
        p.error("--updates must be at least 20 (the first 10 are left out)")
    if not common.pin_flags(2):
        sys.exit("pinning needs 2 cores or more and MPICH's or Open MPI's mpirun")
    pong = [str(common.ROOT / "examples" / "pong.py"), "--seed", "1"]
    pong += ["--updates", str(args.updates)]
    pairs, params = [], []
    for i in range(args.pairs):
        pair = {}
        for pin in (True, False):
            log_dir = RUNS / f"{'pinned' if pin else 'free'}-{i}"
            shutil.rmtree(log_dir, ignore_errors=True)
            common.mpirun(2, [*pong, "--log-dir", str(log_dir)], timeout=1800, pin=pin)
            pair["pinned" if pin else "free"] = seconds_per_update(log_dir)
            with np.load(log_dir / "checkpoint.npz") as z:
                params.append(z["params"].tobytes())
        pair["ratio"] = pair["pinned"] / pair["free"]
        pairs.append(pair)
        print(
            f"pair {i + 1}: {pair['pinned']:.4f} s per update pinned, {pair['free']:.4f} free, "
            f"ratio {pair['ratio']:.3f}",
            flush=True,
        )
    same = all(x == params[0] for x in params)
    median = statistics.median(pair["ratio"] for pair in pairs)
    print(f"median ratio pinned / free {median:.3f}; the same parameters in every run: {same}")
    result = {
        "machine": common.machine(),
        "pin_flags": common.pin_flags(2),
        "updates": args.updates,
        "pairs": pairs,
        "median_ratio": median,
        "same_parameters": same,
    }
    print("wrote", common.write("pinning", result))
    if not same:
        sys.exit("pinned and free runs ended with different parameters")


if __name__ == "__main__":
    main()
