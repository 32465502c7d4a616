"""Cost of the exact (int64 fixed-point) gradient reduction against a plain float32 one.

    mpirun -n 2 python benchmarks/reduction.py [--repeats 50] [--updates 2] [--tag NAME]

Over TCP between two namespace hosts (root; see tests/hosts/twohosts.sh):

    tests/hosts/twohosts.sh up 2
    UCX_TLS=tcp,self mpirun -launcher ssh -launcher-exec tests/hosts/twohosts.sh \
        -localhost 10.77.0.1 -hosts pgmpi-h1:1,pgmpi-h2:1 -n 2 \
        python benchmarks/reduction.py --tag _tcp
    tests/hosts/twohosts.sh down

ParallelPG sums each game's gradient with ``mpi.ExactSum``: round(g * 2**32) in int64,
exact and independent of the order of the sum, so results do not depend on the rank count.
This measures, for the Pong network (1,280,200 parameters), on this rank count and with the
same verb ParallelPG uses:

* ``ExactSum.add`` of one game's gradient, exact (int64) and plain (float32);
* ``ExactSum.allreduce`` (the Allreduce and the conversion back), exact and plain;
* real Pong updates (the defaults: 16 slots of 512 steps) with each mode, for scale.

The extra cost of the exact mode per update is the difference of the allreduce calls plus
that of one add per game this rank plays; it is printed as a fraction of the update time.
Writes benchmarks/results/reduction_<ranks><tag>.json, with each rank's host name.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402

from pgmpi import ParallelPG, mpi  # noqa: E402

N = 6400 * 200 + 200


def best_time(fn, repeats: int) -> float:
    """Median seconds of ``fn()`` over ``repeats`` calls, all ranks in step."""
    times = []
    for _ in range(repeats):
        mpi.allreduce_sum_(np.zeros(1))  # line the ranks up so waits are not counted
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=50)
    p.add_argument("--updates", type=int, default=2, help="Pong updates timed per mode (2)")
    p.add_argument("--tag", default="", help="suffix of the JSON file's name, e.g. _tcp")
    args = p.parse_args()
    g = np.random.default_rng(0).standard_normal(N).astype(np.float32) * 1e-3
    sums = {exact: mpi.ExactSum(N, terms=16, exact=exact) for exact in (True, False)}
    r = {"ranks": mpi.size(), "hosts": mpi.allgather_object(platform.node())}
    for exact, name in ((True, "exact"), (False, "float")):
        r[f"add_per_game_s_{name}"] = best_time(lambda s=sums[exact]: s.add(g), args.repeats)
        r[f"allreduce_s_{name}"] = best_time(lambda s=sums[exact]: s.allreduce(), args.repeats)
        agent = ParallelPG(seed=0, exact_reduction=exact, quiet=True)
        agent.train(updates=1)  # warm-up: envs made, first games started
        start = time.perf_counter()
        agent.train(updates=1 + args.updates)
        r[f"pong_update_s_{name}"] = (time.perf_counter() - start) / args.updates
    games_here = len(range(mpi.rank(), 16, mpi.size()))
    r["exact_extra_s_per_update"] = (
        r["allreduce_s_exact"]
        - r["allreduce_s_float"]
        + games_here * (r["add_per_game_s_exact"] - r["add_per_game_s_float"])
    )
    r["exact_extra_fraction_of_update"] = r["exact_extra_s_per_update"] / r["pong_update_s_float"]
    if mpi.is_root():
        r["machine"] = common.machine()
        for k, v in r.items():
            print(f"{k}: {v if isinstance(v, (int, dict, list)) else f'{v:.6f}'}")
        print("wrote", common.write(f"reduction_{mpi.size()}{args.tag}", r))


if __name__ == "__main__":
    main()
