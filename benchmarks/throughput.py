"""Pong throughput of ParallelPG per rank, at 1 and 2 ranks, BLAS capped and uncapped.

    python benchmarks/throughput.py [--updates 4] [--repeats 2] [--ranks 1 2] [--coupling-repeats 3]
    python benchmarks/throughput.py --noop --ranks 1 --coupling-repeats 0   # three actions

Launches itself under mpirun for each configuration and measures, in the same run:

* ``emulator``: ALE Pong alone, random actions, frameskip 4 (the ceiling for any agent);
* ``parallel_pg``: ParallelPG training on Pong with the defaults (16 games of 512 steps per
  update, shared over the ranks): agent steps per second of the whole update (play,
  gradients, Allreduce, Adam step) and on each rank while playing, and peak memory per
  rank; one warm-up update, then ``--updates`` timed ones. After each update (outside its
  timing) the emulator alone is timed again for an eighth of ``--emulator-steps``, and the
  ratio of the two rates is kept update by update: the ratio at 1 rank is given both from
  the fastest runs and as the median of these side-by-side ratios, which a host whose
  speed drifts during the run moves far less;
* ``eight_games``: 8 Pong games in one process, stepped by pgmpi's loop and by ale-py's own
  vector env (one thread, full RGB frames), to choose between them;
* ``dense_float64``: the original post's style for scale (dense float64 first layer,
  per-step matrix-vector product over all 6,400 inputs, dense backward), one episode;
* ``coupling`` (when 1 and 2 ranks are measured; ``--coupling-repeats`` rounds): ParallelPG
  on 1 rank, on 2 ranks, and as two independent 1-rank runs of 8 games each started at
  once. The pair does the 2-rank run's work with no Allreduce and no waiting, so its
  speed-up is what two processes get on this machine at that moment, and the 2-rank run's
  share of it is what pgmpi's coupling keeps.

``--noop`` measures ParallelPG with NOOP beside up and down (``noop=True``: three logits),
what a sticky Pong run plays once ``noop_from``'s steps are past, in the coupling rounds too;
the result is written to benchmarks/results/throughput_noop.json.

"capped" uses pgmpi's default BLAS cap (cores per node / ranks per node); "uncapped" gives
every rank as many BLAS threads as the node has cores, which is what numpy does by default.
Each configuration runs ``--repeats`` times and the fastest run is kept (a shared machine
only ever slows a run down). Speed-up at 2 ranks is given two ways: wall-clock total steps/s
(includes ranks waiting for each other at the Allreduce, since episode lengths differ) and
the sum of the ranks' playing rates (pure compute scaling). Prints the figures and writes
benchmarks/results/throughput.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402


def emulator_rate(steps: int) -> float:
    from pgmpi.envs import make_gym
    from pgmpi.pong import PONG_DOWN, PONG_UP

    env = make_gym("ALE/Pong-v5")
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    for _ in range(steps):
        _, _, term, trunc, _ = env.step(PONG_UP if rng.random() < 0.5 else PONG_DOWN)
        if term or trunc:
            env.reset()
    return steps / (time.perf_counter() - start)


def eight_games_rates(steps: int) -> dict:
    """Eight Pong games stepped together by one process, random actions, RGB frames: as
    pgmpi's loop over its games (``envs.Game``) and as ale-py's own vector env (one thread,
    full 210x160 RGB frames so the post's preprocessing could follow)."""
    import ale_py

    from pgmpi.pong import PongGame

    rng, n = np.random.default_rng(0), 8
    games = [PongGame() for _ in range(n)]
    for game in games:
        game.new_game(0)
    start = time.perf_counter()
    for _ in range(steps // n):
        for game in games:
            game.step(int(rng.random() < 0.5))
            if not game.live:
                game.new_game(0)
    loop = steps / (time.perf_counter() - start)
    vec = ale_py.AtariVectorEnv(
        "pong", n, num_threads=1, img_height=210, img_width=160, grayscale=False, stack_num=1,
        maxpool=False, noop_max=0, reward_clipping=False, use_fire_reset=False,
        repeat_action_probability=0.0,
    )  # fmt: skip
    vec.reset(seed=0)
    start = time.perf_counter()
    for _ in range(steps // n):
        vec.step(np.where(rng.random(n) < 0.5, 2, 3))
    vector = steps / (time.perf_counter() - start)
    vec.close()
    return {"loop_of_games": loop, "ale_vector_env": vector}


def dense_float64_rate(max_steps: int) -> float:
    """One episode in the dense float64 style of the original post (written anew here)."""
    from pgmpi.networks import dense
    from pgmpi.pong import PongGame

    env, rng = PongGame(), np.random.default_rng(0)
    W1 = rng.standard_normal((200, 6400)) / 80.0
    W2 = rng.standard_normal(200) / np.sqrt(200)
    xs, hs, dl = [], [], []
    start = time.perf_counter()
    env.new_game(0)
    x, done = dense(env.x, 6400).astype(np.float64), False
    while not done and len(xs) < max_steps:
        h = np.maximum(W1 @ x, 0.0)
        p = 1.0 / (1.0 + np.exp(-(W2 @ h)))
        a = 0 if rng.random() < p else 1
        xs.append(x), hs.append(h), dl.append((a == 0) - p)
        done = env.step(a)[2]
        x = dense(env.x, 6400).astype(np.float64)
    X, H, D = np.array(xs), np.array(hs), np.array(dl)
    dh = np.outer(D, W2)
    dh[H <= 0] = 0
    _ = H.T @ D, dh.T @ X  # the dense backward pass of the original
    return len(xs) / (time.perf_counter() - start)


def worker(args) -> None:
    from pgmpi import ParallelPG, mpi, threads

    blas = None if args.capped else os.cpu_count()
    if args.pg_only:  # ParallelPG alone, 1 BLAS thread per rank: the coupling comparison
        agent = ParallelPG(
            env="ALE/Pong-v5", seed=0, slots=args.slots, blas_threads=1, noop=args.noop, quiet=True
        )
        rows = []
        agent.train(updates=args.updates + 1, callback=rows.append)
        if mpi.is_root():
            rate = float(np.mean([r["perf/steps_per_s"] for r in rows[1:]]))  # after warm-up
            print(json.dumps({"steps_per_s": rate}), flush=True)
        return
    threads.cap_blas_threads(blas)
    emu = emulator_rate(args.emulator_steps)
    eight = eight_games_rates(args.emulator_steps)
    dense = dense_float64_rate(args.dense_steps)
    rows, beside = [], []

    def after_update(row: dict) -> None:  # outside the update's own timing
        rows.append(row)
        beside.append(emulator_rate(args.emulator_steps // 8))  # the emulator, right after

    agent = ParallelPG(env="ALE/Pong-v5", seed=0, blas_threads=blas, noop=args.noop, quiet=True)
    agent.train(updates=args.updates + 1, callback=after_update)
    rows, beside = rows[1:], beside[1:]  # the first update is warm-up (ROM load, allocations)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    per_rank = mpi.gather_object({"emulator": emu, "dense_float64": dense, "peak_mb": peak_mb})
    if mpi.is_root():
        print(
            json.dumps(
                {
                    "ranks": mpi.size(),
                    "capped": args.capped,
                    "blas_threads": agent.options.blas["threads"],
                    "emulator_steps_per_s_per_rank": float(
                        np.mean([r["emulator"] for r in per_rank])
                    ),
                    "dense_float64_steps_per_s_per_rank": float(
                        np.mean([r["dense_float64"] for r in per_rank])
                    ),
                    "pg_steps_per_s_per_rank": float(
                        np.mean(
                            [
                                (r["perf/rank_steps_per_s_min"] + r["perf/rank_steps_per_s_max"])
                                / 2
                                for r in rows
                            ]
                        )
                    ),
                    "pg_steps_per_s_total": float(np.mean([r["perf/steps_per_s"] for r in rows])),
                    "pg_wait_fraction": float(np.mean([r["perf/wait_fraction"] for r in rows])),
                    "pg_allreduce_s_per_update": float(
                        np.mean([r["perf/allreduce_s"] for r in rows])
                    ),
                    "peak_mb_per_rank_max": max(r["peak_mb"] for r in per_rank),
                    # Each update's whole-update rate over the emulator's, timed just after
                    # it on rank 0: side by side, so a host that speeds up or slows down
                    # over the run's half minute moves both.
                    "pg_over_emulator_beside": [
                        r["perf/steps_per_s"] / e for r, e in zip(rows, beside, strict=True)
                    ],
                    "eight_games_loop_steps_per_s": eight["loop_of_games"],
                    "eight_games_ale_vector_env_steps_per_s": eight["ale_vector_env"],
                }
            ),
            flush=True,
        )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--updates", type=int, default=4, help="ParallelPG updates per config (4)")
    p.add_argument("--repeats", type=int, default=2, help="runs per config, fastest kept (2)")
    p.add_argument("--ranks", type=int, nargs="+", default=[1, 2], help="rank counts (1 2)")
    p.add_argument("--emulator-steps", type=int, default=20000)
    p.add_argument("--dense-steps", type=int, default=1500)
    p.add_argument(
        "--coupling-repeats",
        type=int,
        default=3,
        help="rounds of the coupling comparison, 0 to skip it (3)",
    )
    p.add_argument(
        "--docs",
        action="store_true",
        help="also keep the result in benchmarks/recordings/throughput.json (tracked), what "
        "benchmarks/figures.py --docs draws docs/figures/oversubscription.png from",
    )
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--capped", type=int, default=1, help=argparse.SUPPRESS)
    p.add_argument("--pg-only", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--noop", action="store_true", help="ParallelPG with NOOP: three actions")
    p.add_argument("--slots", type=int, default=16, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return worker(args)

    info = common.machine()
    print("machine:", json.dumps(info))
    configs = []
    for n in args.ranks:
        for capped in (1, 0):
            runs = []
            for _ in range(args.repeats):
                out = common.mpirun(
                    n,
                    [
                        __file__,
                        "--worker",
                        "--capped",
                        str(capped),
                        "--updates",
                        str(args.updates),
                        "--emulator-steps",
                        str(args.emulator_steps),
                        "--dense-steps",
                        str(args.dense_steps),
                        *["--noop"] * args.noop,
                    ],
                )
                runs.append(common.last_json(out))
            row = {
                k: max(r[k] for r in runs)
                if k.endswith("_per_rank") or "steps_per_s" in k
                else runs[0][k]
                for k in runs[0]
            }
            row["pg_over_emulator_beside"] = [x for r in runs for x in r["pg_over_emulator_beside"]]
            configs.append(row)
            print(
                f"ranks {n} {'capped' if capped else 'uncapped'} "
                f"({row['blas_threads']} BLAS thread(s)/rank): "
                f"emulator {row['emulator_steps_per_s_per_rank']:.0f}/s per rank, "
                f"ParallelPG {row['pg_steps_per_s_per_rank']:.0f}/s per rank "
                f"({row['pg_steps_per_s_total']:.0f} total), dense float64 "
                f"{row['dense_float64_steps_per_s_per_rank']:.0f}/s per rank, "
                f"peak {row['peak_mb_per_rank_max']:.0f} MB per rank; 8 games in one process: "
                f"loop {row['eight_games_loop_steps_per_s']:.0f}/s, ale-py vector env "
                f"{row['eight_games_ale_vector_env_steps_per_s']:.0f}/s",
                flush=True,
            )
    result = {"machine": info, "noop": args.noop, "configs": configs}
    capped = {c["ranks"]: c for c in configs if c["capped"]}
    if 1 in capped:
        one = capped[1]
        result["pg_vs_emulator_1_rank"] = (
            one["pg_steps_per_s_total"] / one["emulator_steps_per_s_per_rank"]
        )
        beside = one["pg_over_emulator_beside"]
        result["pg_vs_emulator_1_rank_beside"] = float(np.median(beside))
        print(
            f"ParallelPG (whole updates) / emulator at 1 rank: "
            f"{result['pg_vs_emulator_1_rank']:.2f} from the fastest runs; update by update, "
            f"against the emulator timed right after each: median "
            f"{result['pg_vs_emulator_1_rank_beside']:.2f} (range {min(beside):.2f}-"
            f"{max(beside):.2f}, {len(beside)} updates) (target >= 0.85)"
        )
    if 1 in capped and 2 in capped:
        one, two = capped[1], capped[2]
        result["speedup_2_ranks_wall"] = two["pg_steps_per_s_total"] / one["pg_steps_per_s_total"]
        result["speedup_2_ranks_compute"] = (
            2 * two["pg_steps_per_s_per_rank"] / one["pg_steps_per_s_per_rank"]
        )
        print(
            f"2 ranks / 1 rank: {result['speedup_2_ranks_wall']:.2f} in wall-clock steps/s, "
            f"{result['speedup_2_ranks_compute']:.2f} in summed rank rates (target >= 1.95), "
            f"ranks waiting {100 * two['pg_wait_fraction']:.1f}% of the time"
        )
    if args.coupling_repeats and 1 in args.ranks and 2 in args.ranks:
        result["coupling"] = coupling(args.updates, args.coupling_repeats, args.noop)
    name = "throughput_noop" if args.noop else "throughput"
    print("wrote", common.write(name, result, keep=args.docs))


def coupling(updates: int, repeats: int, noop: bool = False) -> dict:
    """How much of the 2-rank speed-up the coupling costs, against what this machine gives.

    Each round runs, one after another: ParallelPG on 1 rank (16 games), on 2 ranks (8 games
    each, one Allreduce per update) and, at the same time, two independent 1-rank runs of 8
    games each. The independent pair does the 2-rank run's work with nothing shared and no
    rank ever waiting, so its summed rate over the 1-rank rate is the speed-up two processes
    get on this machine at that moment; the coupled run's speed-up over it is what pgmpi's
    coupling (waiting at the Allreduce, the Allreduce itself) keeps.
    """
    run = [__file__, "--worker", "--pg-only", "--updates", str(updates), *["--noop"] * noop]

    def rate(stdout: str) -> float:
        return common.last_json(stdout)["steps_per_s"]

    rounds = []
    for _ in range(repeats):
        one, two = (rate(common.mpirun(n, run)) for n in (1, 2))
        apart = sum(map(rate, common.mpiruns_at_once([(1, [*run, "--slots", "8"])] * 2)))
        rounds.append(
            {
                "one": one,
                "two": two,
                "pair": apart,
                "speedup": two / one,
                "pair_speedup": apart / one,
                "coupled_over_pair": two / apart,
            }
        )
        print(
            f"coupling: 1 rank {one:.0f} steps/s; 2 ranks {two:.0f} ({two / one:.2f}x); two "
            f"independent 1-rank runs of 8 games at once {apart:.0f} ({apart / one:.2f}x): "
            f"the 2-rank run reaches {two / apart:.1%} of the independent pair",
            flush=True,
        )
    keys = ("speedup", "pair_speedup", "coupled_over_pair")
    kept = {k: float(np.median([r[k] for r in rounds])) for k in keys}
    print(
        f"coupling, median of {repeats} rounds: 2 ranks {kept['speedup']:.2f}x, independent pair "
        f"{kept['pair_speedup']:.2f}x; the 2-rank run keeps {kept['coupled_over_pair']:.1%}"
    )
    return {"rounds": rounds, **kept}


if __name__ == "__main__":
    main()
