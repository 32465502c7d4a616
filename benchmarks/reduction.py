"""Cost of the exact (int64 fixed-point) gradient reduction against a plain float32 one.

    mpirun -n 2 python benchmarks/reduction.py [--repeats 50] [--updates 2]

ParallelPG sums each episode's gradient as round(g * 2**32) in int64, which is exact and
independent of the order of the sum, so results do not depend on the rank count. This
measures, for the Pong network (1,280,200 parameters), on this rank count:

* the Allreduce of the gradient buffer as float32 and as int64;
* converting one episode's gradient to fixed point, and the sum back to float32;
* a real Pong update (batch of 10 episodes) with each reduction, for scale.

The extra cost of the exact mode per update is (int64 - float32 Allreduce) + conversions
for this rank's share of episodes; it is printed as a fraction of the Pong update time.
Writes benchmarks/results/reduction_<ranks>.json.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402

from pgmpi import ParallelPG, mpi  # noqa: E402
from pgmpi.pg import FIXED_POINT_BITS  # noqa: E402

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
    args = p.parse_args()
    g = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    f32, i64 = np.zeros(N + 1, np.float32), np.zeros(N + 1, np.int64)
    scale = 2.0**FIXED_POINT_BITS
    r = {
        "ranks": mpi.size(),
        "allreduce_float32_s": best_time(lambda: mpi.allreduce_sum_(f32), args.repeats),
        "allreduce_int64_s": best_time(lambda: mpi.allreduce_sum_(i64), args.repeats),
        "to_fixed_point_per_episode_s": best_time(
            lambda: np.add(i64[:-1], np.rint(g * scale).astype(np.int64), out=i64[:-1]),
            args.repeats,
        ),
        "from_fixed_point_per_update_s": best_time(
            lambda: (i64[:-1] / (scale * 10)).astype(np.float32), args.repeats
        ),
    }
    for exact in (True, False):
        agent = ParallelPG(env="ALE/Pong-v5", seed=0, exact_reduction=exact, quiet=True)
        start = time.perf_counter()
        agent.train(episodes=10 * args.updates)
        key = "pong_update_s_exact" if exact else "pong_update_s_float"
        r[key] = (time.perf_counter() - start) / args.updates
    episodes_here = -(-10 // mpi.size())  # this rank's share of a batch of 10, rounded up
    r["exact_extra_s_per_update"] = (
        r["allreduce_int64_s"]
        - r["allreduce_float32_s"]
        + episodes_here * r["to_fixed_point_per_episode_s"]
        + r["from_fixed_point_per_update_s"]
    )
    r["exact_extra_fraction_of_update"] = r["exact_extra_s_per_update"] / r["pong_update_s_float"]
    if mpi.is_root():
        r["machine"] = common.machine()
        for k, v in r.items():
            print(f"{k}: {v if isinstance(v, (int, dict)) else f'{v:.6f}'}")
        print("wrote", common.write(f"reduction_{mpi.size()}", r))


if __name__ == "__main__":
    main()
