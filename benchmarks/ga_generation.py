"""Seconds per PrunedGA generation and env steps/s with the BipedalWalker settings, by rank count.

    python benchmarks/ga_generation.py [--generations 3] [--ranks 1 2]
    python benchmarks/ga_generation.py --population-size 24 --episodes-per-individual 8

Launches itself under mpirun for each rank count, with examples/bipedal_walker.py's settings
(its SETTINGS: hidden 8 8, 138 individuals, 2 episodes each, elites ranked on their mean,
the signed-dag genome) and seed 0, unless a flag says otherwise. The same seed gives the same
generations on any rank count, so every run does exactly the same work (checked: the fitness
histories must hash the same) and parallel efficiency is T(1) / (n * T(n)) on the summed
generation times. Episode lengths vary from about 40 to 1,600 steps, so it also reports how
long ranks wait for each other in the fitness Allreduce, with pgmpi's self-scheduled units
("dynamic": one episode of one individual each, longest predicted first, taken by whichever
rank is free) and with plain round robin over the units ("round-robin"). After its
generations each rank also steps the env alone with random actions (``--alone-steps``, new
episodes as they end) on every rank at once, so the GA's env steps per second per core can
be set beside the env's own rate measured in the same run, under the same load.
benchmarks/ga_scaling.py projects the balance to many ranks.
Prints the machine, MPI library, numpy/BLAS and figures; writes
benchmarks/results/ga_generation.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402


def worker(args) -> None:
    from pgmpi import PrunedGA, mpi

    n, me = mpi.size(), mpi.rank()
    env, example = common.example_settings("bipedal_walker")
    agent = PrunedGA(env=env, config=example, seed=args.seed, quiet=True, **settings(args))
    if args.assign == "round-robin":  # the baseline: unit u on rank u % n
        agent.evaluation.units = lambda costs: range(me, len(costs), n)
    rows = []
    agent.train(generations=args.generations, callback=rows.append)
    in_collective = mpi.gather_object([r["perf/allreduce_s"] for r in rows])
    mpi.barrier()  # every rank steps the env alone at the same time, as it played
    alone = mpi.gather_object(env_alone_rate(args.alone_steps, me))
    history = agent.optimizer.state()["fitness_history"]
    if mpi.is_root():
        per_rank = np.array(in_collective)  # (ranks, generations): seconds in the Allreduce
        out = {
            "ranks": mpi.size(),
            "assign": args.assign,
            "blas": agent.options.blas,
            "fitness_hash": hashlib.sha256(history.tobytes()).hexdigest(),
            "settings": {k: agent.config[k] for k in SHOWN},
            "generation_s": [r["time/generation_s"] for r in rows],
            "env_steps": [r["perf/env_steps"] for r in rows],
            "wait_s": [r["perf/wait_s"] for r in rows],
            "allreduce_s_per_rank": per_rank.tolist(),
            "env_alone_steps_per_s_per_rank": alone,
        }
        print(json.dumps(out), flush=True)


SHOWN = ("hidden_sizes", "genome", "population_size", "episodes_per_individual", "synapses",
         "elite_averaging")  # fmt: skip


def settings(args) -> dict:
    """The settings that the flags change from the example's."""
    return {k: getattr(args, k) for k in SHOWN[:5] if getattr(args, k) is not None}


def env_alone_rate(steps: int, seed: int) -> float:
    """Env steps per second of BipedalWalker-v3 stepping ``steps`` uniform random actions
    (drawn beforehand), with a reset whenever an episode ends: the env's own rate here."""
    import gymnasium as gym

    env = gym.make("BipedalWalker-v3")
    env.reset(seed=seed)
    actions = np.random.default_rng(seed).uniform(-1, 1, (steps, 4)).astype(np.float32)
    t = time.perf_counter()
    for a in actions:  # drawn beforehand: the loop times the env, not the drawing
        _, _, terminated, truncated, _ = env.step(a)
        if terminated or truncated:
            env.reset()
    rate = steps / (time.perf_counter() - t)
    env.close()
    return rate


def summary(row: dict) -> dict:
    """Per-generation figures of one run, from its per-generation lists."""
    seconds, steps, G = sum(row["generation_s"]), sum(row["env_steps"]), len(row["generation_s"])
    in_collective = np.array(row["allreduce_s_per_rank"]).sum(axis=1) / G
    alone = float(np.mean(row["env_alone_steps_per_s_per_rank"]))
    per_core = steps / seconds / row["ranks"]
    return {
        "seconds_per_generation": seconds / G,
        "steps_per_s": steps / seconds,
        "steps_per_s_per_core": per_core,
        "env_alone_steps_per_s": alone,
        "throughput_ratio": per_core / alone,
        "wait_fraction": sum(row["wait_s"]) / seconds,
        "collective_s_per_generation_max_rank": float(in_collective.max()),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--generations", type=int, default=3, help="generations per run (3)")
    p.add_argument("--ranks", type=int, nargs="+", default=[1, 2], help="rank counts (1 2)")
    p.add_argument("--hidden-sizes", type=int, nargs="+", help="(the example's)")
    p.add_argument("--genome", choices=["ones", "signed-dag"], help="(the example's)")
    p.add_argument("--population-size", type=int, help="(the example's)")
    p.add_argument("--episodes-per-individual", type=int, help="(the example's)")
    p.add_argument(
        "--synapses", type=int, help="the signed genome's per connection (the example's)"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--alone-steps", type=int, default=20_000, help="env alone, per rank (20000)")
    p.add_argument(
        "--assign",
        nargs="+",
        default=["dynamic", "round-robin"],
        choices=["dynamic", "round-robin"],
    )
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        args.assign = args.assign[0]
        return worker(args)

    info = common.machine()
    print("machine:", json.dumps(info), flush=True)
    print("settings: the example's, and", json.dumps(settings(args)), flush=True)
    runs = []
    for assign in args.assign:
        for n in args.ranks:
            flags = [__file__, "--worker", "--assign", assign, "--seed", str(args.seed)]
            flags += ["--generations", str(args.generations)]
            flags += ["--alone-steps", str(args.alone_steps)]
            for name, value in settings(args).items():
                flags += [f"--{name.replace('_', '-')}", *map(str, np.atleast_1d(value))]
            row = common.last_json(common.mpirun(n, flags, timeout=3600))
            row.update(summary(row))
            runs.append(row)
            print(
                f"ranks {n} {assign:11s} ({row['blas']['threads']} BLAS thread(s)/rank): "
                f"{row['seconds_per_generation']:7.2f} s/generation, "
                f"{row['steps_per_s']:7.0f} env steps/s ({row['steps_per_s_per_core']:.0f} per "
                f"core, {100 * row['throughput_ratio']:.0f}% of the env alone's "
                f"{row['env_alone_steps_per_s']:.0f}), ranks waiting "
                f"{100 * row['wait_fraction']:4.1f}% of the time "
                f"(per generation: {', '.join(f'{w:.2f}' for w in row['wait_s'])} s)",
                flush=True,
            )
    result = {"machine": info, "settings": runs[0]["settings"], "seed": args.seed, "runs": runs}
    hashes = {r["fitness_hash"] for r in runs}
    result["identical_results"] = len(hashes) == 1
    print("same fitness history on every rank count and assignment:", len(hashes) == 1)
    for assign in args.assign:
        by_n = {r["ranks"]: r for r in runs if r["assign"] == assign}
        if 1 in by_n:
            t1 = by_n[1]["seconds_per_generation"]
            for n, r in sorted(by_n.items()):
                if n > 1:
                    eff = t1 / (n * r["seconds_per_generation"])
                    result[f"efficiency_{assign}_{n}_ranks"] = eff
                    print(f"parallel efficiency, {assign}, {n} ranks: {100 * eff:.1f}%")
    print("wrote", common.write("ga_generation", result))


if __name__ == "__main__":
    main()
