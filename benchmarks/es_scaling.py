"""ParallelES scaling: unit costs recorded on 2 ranks, idle share projected to 1,536 ranks.

    python benchmarks/es_scaling.py [--generations 4]     # record on 2 ranks, then project
    python benchmarks/es_scaling.py --costs benchmarks/recordings/es_scaling_costs.npz
    python benchmarks/es_scaling.py --start runs/es-tts/seed0/snapshots/gen_00200.npz --tag _late
    python benchmarks/figures.py --docs                    # the figure, from the kept recording

Runs ParallelES on BipedalWalker-v3 with examples/bipedal_walker_es.py's settings (hidden
64 64, population 128 in antithetic pairs, 4 unperturbed episodes: 132 units a
generation, a unit one episode) on ``--ranks`` (2) ranks, traced, and records after every
generation what ``agent.evaluation`` (:class:`pgmpi.units.Episodes`) kept of it: each
unit's steps, seconds and rank, each rank's busy seconds; beside them the update's seconds
(``tell``) and the Allreduce's bytes. Each generation is saved as it ends (a checkpoint's
atomic write), so a run cut short keeps what it recorded. ``--start CHECKPOINT`` records
generations that go on from a ParallelES checkpoint of BipedalWalker-v3 instead (its
settings replace the example's): late in a run, where walkers walk.

Then it replays each recorded generation on n ranks as ParallelES shares it out: units in
index order, each taken by the first free rank after one fetch from the shared counter
(``ga_simulate.dynamic_schedule``: the same model as PrunedGA's projection), then a ring
Allreduce of the generation's buffer on a 10 Gb/s network and the measured update. Idle
share = 1 - the units' seconds / (n x the makespan), over all recorded generations. It
projects the example's population and, with ``--also`` (10,000: the paper's), a larger
one whose units are drawn, with replacement, from each generation's recorded ones. Prints
the machine, the measured share at the recorded rank count and the projected ones at 2,
128 and 1,536 ranks as a markdown table; writes benchmarks/results/es_scaling.json, the
recording to benchmarks/results/es_scaling_costs.npz and the figure to
runs/benchmarks/es_scaling.png (``--out PATH``, ``--docs``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402
import numpy as np  # noqa: E402
from ga_simulate import LINK, dynamic_makespan, idle_share  # noqa: E402

FIGURE = "es_scaling.png"
KEPT = common.RECORDINGS / "es_scaling_costs.npz"  # the recording the docs quote
RANKS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 1536]
QUOTED = (2, 128, 1536)  # the table's rank counts


def worker(args) -> None:
    """Under mpirun: train and record every generation's units into ``args.record``."""
    from pgmpi import ParallelES, checkpoint, mpi

    ENV, SETTINGS = common.example_settings("bipedal_walker_es")

    # traced, so that each unit's seconds travel in the Allreduce and the root has them all;
    # a trace needs a log dir (a temporary one, the same on every rank)
    log_dir = mpi.broadcast_object(tempfile.mkdtemp(prefix="es_record_") if mpi.is_root() else None)
    run = dict(quiet=True, trace=True, log_dir=log_dir, overwrite=True)
    if args.start:  # go on from a checkpoint: late generations of a real run
        agent = ParallelES.load(args.start, **run)
    else:
        sizes = {k: v for k, v in vars(args).items() if k in SIZES and v is not None}
        agent = ParallelES(env=ENV, config=SETTINGS, seed=args.seed, **sizes, **run)
    first = agent.generation
    # One fetch from the shared counter with every rank fetching at once, measured first
    n = mpi.size()
    mpi.barrier()
    t = time.perf_counter()
    fetched = sum(1 for _ in mpi.shared_counter().take(2000 * n))
    fetch_s = max(mpi.allgather_object((time.perf_counter() - t) / max(fetched, 1)))
    keys = ("seconds", "steps", "ranks", "busy", "wall", "tell_s", "bytes", "current", "mean")
    rec = {k: [] for k in keys}

    def record(row):
        ev = agent.evaluation  # the generation just played, summed over ranks
        rec["seconds"].append(ev.sums.seconds.copy())  # every rank's units: the run is traced
        rec["steps"].append(ev.sums.steps.copy())
        rec["ranks"].append(ev.sums.ranks.astype(np.int64) - 1)
        rec["busy"].append(ev.sums.busy.copy())
        rec["wall"].append(row["time/elapsed_s"])
        rec["tell_s"].append(row["time/generation_s"] - ev.play_s - ev.allreduce_s)
        # the buffer as an untraced run sends it: without the units' seconds
        rec["bytes"].append(row["perf/allreduce_bytes"] - ev.sums.seconds.nbytes)
        rec["current"].append(row["charts/current_return"])
        rec["mean"].append(row["charts/mean_fitness"])
        arrays = {k: np.array(v) for k, v in rec.items()}
        meta = dict(recording="benchmarks/es_scaling.py", config=agent.config)
        sizes = {k: agent.config[k] for k in ("population_size", "obs_stat_fraction")}
        arrays |= dict(ranks_count=n, fetch_s=fetch_s, obs_size=agent.probe.n_inputs, **sizes)
        checkpoint.save(args.record, arrays | dict(first_generation=first), meta)

    agent.train(generations=first + args.generations, callback=record)


SIZES = ("hidden_sizes", "population_size", "noise_table_size", "max_episode_steps")


def buffer_bytes(rec: dict, units: int, population: int, n: int) -> int:
    """The bytes of a generation's Allreduce buffer, untraced, on ``n`` ranks: return, steps
    and rank of each of ``units`` units, the observation sums of 1% of ``population``
    (at least one) and one number a rank (ParallelES's layout, pgmpi.units.Episodes)."""
    stat_units = int(np.ceil(float(rec["obs_stat_fraction"]) * population - 1e-9))
    return 8 * (3 * units + stat_units * (2 * int(rec["obs_size"]) + 1) + n)


def project(rec: dict, ranks: list = RANKS, population: int | None = None) -> dict:
    """{n: [(seconds, work, rank seconds, 1-rank seconds) per generation]} for n in
    ``ranks``: each recorded generation replayed on n ranks (see the module's docstring);
    ``population``: that many perturbed units instead of the recorded ones, drawn from each
    generation's recorded perturbed units with replacement (a seeded draw), followed by its
    unperturbed ones."""
    fetch, serial = max(float(rec["fetch_s"]), 2 * LINK[1]), float(np.median(rec["tell_s"]))
    P, draw = int(rec["population_size"]), np.random.default_rng(0)
    population = population or P
    out = {n: [] for n in ranks}
    for cost in rec["seconds"]:
        if population != P:
            cost = np.concatenate([draw.choice(cost[:P], size=population), cost[P:]])
        for n in ranks:
            span = dynamic_makespan(np.ones(len(cost)), cost, n, fetch)
            size = buffer_bytes(rec, len(cost), population, n)
            comm = common.ring_allreduce_s(n, size, *LINK)
            out[n].append((span + comm + serial, cost.sum(), n * span, cost.sum() + serial))
    return out


def summarise(proj: dict) -> dict:
    """{n: [idle share, speed-up over 1 rank, seconds per generation]} over all generations."""
    out = {}
    for n, rows in proj.items():
        seconds, work, rank_s, one = np.array(rows).T
        out[n] = [
            idle_share(np.c_[work, rank_s]),
            float(one.sum() / seconds.sum()),
            float(seconds.mean()),
        ]
    return out


def measured(rec: dict) -> dict:
    """At the recorded rank count: the idle share of the ranks' playing time (each
    generation's busy seconds against its busiest rank's) and seconds per generation."""
    busy = np.array(rec["busy"])
    spans = np.c_[busy.sum(axis=1), busy.shape[1] * busy.max(axis=1)]
    wall = np.diff(np.concatenate([[0.0], rec["wall"]]))
    return dict(ranks=int(rec["ranks_count"]), idle=idle_share(spans), seconds=float(wall.mean()))


def report(rec: dict, also: int) -> dict:
    """Print the recording, what was measured and the projections; returns them."""
    seconds, steps = rec["seconds"], rec["steps"]
    (G, U), P = seconds.shape, int(rec["population_size"])
    m = measured(rec)
    print(
        f"recorded: {G} generations of {U} units, {steps.mean():.0f} steps and "
        f"{1e3 * seconds.mean():.0f} ms a unit on average (longest {seconds.max():.2f} s); "
        f"update {1e3 * np.median(rec['tell_s']):.1f} ms; fetch "
        f"{1e6 * float(rec['fetch_s']):.1f} us"
    )
    own = summarise(project(rec))
    big = summarise(project(rec, population=also))
    print(
        f"\n| ranks | idle share, population {P} + {U - P} | speed-up | s per generation | "
        f"idle share, population {also:,} + {U - P} (units drawn from the recorded) |"
    )
    print("|---|---|---|---|---|")
    print(f"| {m['ranks']}, measured | {100 * m['idle']:.1f}% | | {m['seconds']:.2f} | |")
    for n in QUOTED:
        i, s, sec = own[n]
        print(
            f"| {n:,}, projected | {100 * i:.1f}% | {s:.1f}x | {sec:.2f} | {100 * big[n][0]:.1f}% |"
        )
    return dict(
        measured=m,
        projection={str(n): v for n, v in own.items()},
        projection_also={str(n): v for n, v in big.items()},
        also=also,
        generations=G,
        units=U,
        seconds_per_step=float(seconds.sum() / steps.sum()),
    )


def plot(rec: dict, path: Path, also: int = 10_000) -> Path:
    """Idle share against ranks, for the recorded population and ``also``, with the
    measured share; beside it each recorded generation's unit seconds, longest first."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    U, P = rec["seconds"].shape[1], int(rec["population_size"])
    for pop, style in ((P, "-o"), (also, "--s")):
        shares = summarise(project(rec, population=pop))
        label = f"population {pop:,} + {U - P}, projected"
        a.plot(RANKS, [100 * shares[n][0] for n in RANKS], style, ms=3, label=label)
    m = measured(rec)
    a.plot([m["ranks"]], [100 * m["idle"]], "k*", ms=9, label=f"measured on {m['ranks']} ranks")
    a.set(xscale="log", xlabel="ranks", ylabel="idle share of the ranks' time (%)", ylim=(0, 100))
    a.set_xticks(RANKS[::2], [f"{n:,}" for n in RANKS[::2]])
    a.legend(fontsize=8)
    g0 = int(rec.get("first_generation", 0))
    for g, cost in enumerate(rec["seconds"], start=g0):
        b.plot(np.arange(1, U + 1), np.sort(cost)[::-1], lw=1, label=f"generation {g}")
    b.set(xlabel="units, longest first", ylabel="seconds a unit (one episode)")
    b.legend(fontsize=7, ncol=2)
    for ax in (a, b):
        ax.grid(alpha=0.3)
    fig.suptitle(
        f"ParallelES on BipedalWalker-v3, projected from generations {g0}-"
        f"{g0 + len(rec['seconds']) - 1} recorded on {m['ranks']} ranks"
    )
    return common.save_figure(fig, path)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--generations", type=int, default=4, help="recorded generations (4)")
    p.add_argument("--ranks", type=int, default=2, help="ranks of the recorded run (2)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--start", type=Path, help="record generations that go on from this checkpoint")
    p.add_argument("--costs", type=Path, help="project this recording instead of recording")
    p.add_argument("--also", type=int, default=10_000, help="also project this population")
    p.add_argument("--tag", default="", help="suffix of the result files' names ('')")
    p.add_argument("--record", type=Path, help=argparse.SUPPRESS)  # the worker's
    for name in SIZES:  # smaller runs, for tests
        kind = (lambda s: [int(x) for x in s.split(",")]) if name == "hidden_sizes" else int
        p.add_argument("--" + name.replace("_", "-"), type=kind, help=argparse.SUPPRESS)
    common.add_figure_flags(p, FIGURE)
    args = p.parse_args()
    if args.record:
        return worker(args)
    info = common.machine()
    print("machine:", json.dumps(info), flush=True)
    stem = f"es_scaling{args.tag}"
    if args.costs is None:
        common.RESULTS.mkdir(exist_ok=True)
        args.costs = common.RESULTS / f"{stem}_costs.npz"
        flags = [__file__, "--record", str(args.costs), "--generations", str(args.generations)]
        flags += ["--seed", str(args.seed)] + (["--start", str(args.start)] if args.start else [])
        for name in SIZES:
            value = getattr(args, name)
            if value is not None:
                text = ",".join(map(str, value)) if isinstance(value, list) else str(value)
                flags += ["--" + name.replace("_", "-"), text]
        common.mpirun(args.ranks, flags, timeout=3600 * 3)
    rec = dict(np.load(args.costs))
    result = dict(machine=info, recording=str(args.costs), **report(rec, args.also))
    print("figure:", plot(rec, common.figure_path(args, FIGURE), args.also))
    print("wrote", common.write(stem, result))


if __name__ == "__main__":
    main()
