"""PrunedGA's units of work recorded at 1 and 2 ranks, for benchmarks/ga_scaling.py to project.

:func:`record` runs BipedalWalker-v3 under mpirun, one run at a time, this file as the
worker of each (``python benchmarks/ga_record.py --record PATH ...``, under mpirun):

* 1 rank, ``--serial-generations`` generations, and 2 ranks with the units shared out
  statically (longest-predicted-first over units, :func:`ga_simulate.balance`),
  ``--static-generations``: the same generations as the start of the next run (checked:
  same steps and fitness);
* 2 ranks as PrunedGA runs them (self-scheduled units, playing ahead), for ``--minutes``,
  recording every generation's units of work (individual, episode): their predicted cost,
  steps, seconds and the rank that played them, the ranks' busy seconds, the generation's
  wall time. Its measured waiting is PrunedGA's ``perf/wait_s``, which counts a rank's
  time playing ahead as waiting: an upper bound.

Each recording is written after every generation (a checkpoint's atomic write), so a run
cut short keeps what it recorded. The 2-rank run keeps its log and checkpoint (every 5
generations and at the end) in benchmarks/results/ga_scaling{TAG}_run/, so ``--start``
goes on from where a recording stopped: late in a run, where walkers walk.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import common
import numpy as np
from ga_simulate import balance


def worker(args) -> None:
    from pgmpi import PrunedGA, checkpoint, mpi
    from pgmpi.envs import Game

    # the recorded run keeps a log and a checkpoint, so that --start can go on from it
    # traced, so that each unit's seconds travel in the Allreduce and every rank records all
    # of them; a trace needs a log dir (the run's own, or a temporary one, the same on all)
    log_dir = args.log_dir or mpi.broadcast_object(
        tempfile.mkdtemp(prefix="ga_record_") if mpi.is_root() else None
    )
    run = dict(quiet=True, trace=True, log_dir=log_dir, overwrite=True)
    if args.start:  # go on from a checkpoint: late generations of a real run
        agent = PrunedGA.load(args.start, **run)
    else:
        agent = PrunedGA(
            env="BipedalWalker-v3",
            hidden_sizes=[8, 8],
            genome=args.genome,
            population_size=args.population_size,
            episodes_per_individual=args.episodes_per_individual,
            seed=args.seed,
            **run,
        )
    first_generation, steps_before = agent.generation, agent.evaluation.steps.copy()
    me, n = mpi.rank(), mpi.size()
    keys = ("steps", "seconds", "ranks", "wall", "wait", "fit", "select")
    predicted, parents, rec = [], [], {k: [] for k in keys}
    evaluation = agent.evaluation  # what PrunedGA keeps of each generation (pgmpi.units)
    if args.mode == "static":  # the comparison: a fixed split of the units, on every rank
        evaluation.units = lambda costs: np.flatnonzero(balance(costs, n) == me)

    # The cost of one fetch from the shared counter with every rank fetching at once, and
    # of making an env; measured first, so that each generation's save is complete.
    mpi.barrier()
    t = time.perf_counter()
    fetched = sum(1 for _ in mpi.shared_counter().take(2000 * n))
    fetch_s = max(mpi.allgather_object((time.perf_counter() - t) / max(fetched, 1)))
    t = time.perf_counter()
    for _ in range(10):
        Game("BipedalWalker-v3").close()
    make_s = (time.perf_counter() - t) / 10
    t0 = time.perf_counter()

    def record(row):
        predicted.append(evaluation.costs.copy())
        parents.append(evaluation.parents.copy())
        rec["steps"].append(evaluation.steps.copy())
        rec["seconds"].append(evaluation.seconds.copy())  # every rank's: the run is traced
        rec["ranks"].append(evaluation.ranks.copy())
        rec["wall"].append(row["time/elapsed_s"])
        rec["wait"].append(row["perf/wait_s"])
        rec["fit"].append([row["charts/best_fitness"], row["charts/mean_fitness"]])
        # what every rank pays outside the evaluation: selection, mutation, the row
        played = evaluation.results
        rec["select"].append(row["time/generation_s"] - played.play_s - played.allreduce_s)
        # after every generation, atomically (a checkpoint's write, collective): a run cut
        # short keeps what it recorded
        started = time.perf_counter() - t0 - row["time/elapsed_s"]  # to the first step
        arrays = dict(predicted=predicted, parents=parents, **rec)
        arrays = {k: np.array(v) for k, v in arrays.items()} | dict(
            ranks_count=n,
            fetch_s=fetch_s,
            make_s=make_s,
            started_s=started,
            first_generation=first_generation,
            steps_before=steps_before,
        )
        checkpoint.save(args.record, arrays, dict(recording="benchmarks/ga_record.py"))

    limit = (
        dict(minutes=args.run_minutes)
        if args.run_minutes
        else dict(generations=first_generation + args.generations)
    )
    if args.log_dir:
        limit["checkpoint_path"] = Path(args.log_dir) / "checkpoint.npz"
    agent.train(**limit, callback=record)


# ---------------------------------------------------------------- the projection
def record(args, settings: list[str], stem: str) -> tuple[Path, dict]:
    """Record the three runs (1 rank, static split, PrunedGA's own) with the worker's
    ``settings``, one after another; returns the PrunedGA run's recording and what was
    measured."""
    costs_path = common.RESULTS / f"{stem}_costs.npz"
    runs = {}
    plan = [("serial", 1, "dynamic", ["--generations", str(args.serial_generations)]),
            ("static", 2, "static", ["--generations", str(args.static_generations)]),
            ("dynamic", 2, "dynamic", ["--run-minutes", str(args.minutes)])]  # fmt: skip
    for name, n, mode, limit in plan:  # one at a time: no two timed runs share the cores
        path = costs_path if name == "dynamic" else common.RESULTS / f"{stem}_{name}.npz"
        flags = [__file__, "--mode", mode, "--record", str(path), *settings]
        if name == "dynamic":  # its log and checkpoint: --start goes on from them
            flags += ["--log-dir", str(common.RESULTS / f"{stem}_run")]
        # an hour, and the recorded run's limit on top: its last generation may run long
        extra = 60 * args.minutes if name == "dynamic" else 0
        common.mpirun(n, [*flags, *limit], timeout=3600 + extra)
        runs[name] = dict(np.load(path))
        print(f"recorded {name} ({n} rank(s)): {len(runs[name]['wall'])} generations",
              flush=True)  # fmt: skip
    rec = runs["dynamic"]
    k = min(len(r["wall"]) for r in runs.values())
    same = all(
        np.array_equal(r["steps"][:k], rec["steps"][:k]) and
        np.array_equal(r["fit"][:k], rec["fit"][:k]) for r in runs.values()
    )  # fmt: skip
    measured = {}
    for name, r in runs.items():
        wall = np.diff(np.concatenate([[0.0], r["wall"]]))[:k]
        measured[name] = {
            "seconds_per_generation": float(wall.mean()),
            "wait_share": float(r["wait"][:k].sum() / wall.sum()),
        }
    gens = np.diff(np.concatenate([[0.0], rec["wall"]]))
    measured["dynamic_all"] = {
        "generations": len(gens),
        "seconds_per_generation": float(gens.mean()),
        "wait_share": float(rec["wait"].sum() / gens.sum()),
    }
    print(f"same steps and fitness in the first {k} generation(s) of every run: {same}")
    for name, m in measured.items():
        print(f"measured {name}: {json.dumps(m)}")
    return costs_path, dict(measured, same_results=bool(same), generations_compared=k)


def worker_flags(p: argparse.ArgumentParser) -> None:
    """The run's settings, which benchmarks/ga_scaling.py passes on to the worker."""
    p.add_argument(
        "--genome", default="ones", help="PrunedGA genome (ones: as measured in the docs)"
    )
    p.add_argument("--population-size", type=int, default=138)
    p.add_argument("--episodes-per-individual", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--start", type=Path, help="record generations that go on from this checkpoint")


def main() -> None:
    p = argparse.ArgumentParser(description="One recorded run (launched by ga_scaling.py).")
    worker_flags(p)
    p.add_argument("--record", required=True, help="write the recording here")
    p.add_argument("--mode", default="dynamic", choices=("dynamic", "static"))
    p.add_argument("--generations", type=int, default=1, help="this many generations (1)")
    p.add_argument("--run-minutes", type=float, help="or this many minutes")
    p.add_argument("--log-dir", help="keep the run's log and checkpoint here")
    worker(p.parse_args())


if __name__ == "__main__":
    main()
