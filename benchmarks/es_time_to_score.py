"""ParallelES's time to score on BipedalWalker-v3: the first snapshot of a run whose current
network's mean over 100 new episodes reaches 0, +100, +200 and +300.

    python benchmarks/es_time_to_score.py --rate STEPS_PER_SECOND          # runs/es-tts/seed*/
    python benchmarks/es_time_to_score.py --rate STEPS_PER_SECOND --docs   # the docs' figure
    python benchmarks/es_time_to_score.py --runs DIR --out F.png   # a screen: DIR keeps its result

Reads each run ``RUNS/seed{S}/`` that a driver made, one chunk at a time with
``examples/bipedal_walker_es.py --generations G [--resume]`` into that folder: its
``progress.csv``, ``config.json``, ``chunks.log`` (lines ``<unix time> start gen G`` and
``<unix time> end gen G``, a chunk being the run up to G generations) and
``snapshots/gen_NNNNN.npz``, the checkpoint copied at the end of each chunk. Nothing is
written there.

For each run it plays the current network of chosen snapshots over ``--episodes`` (100)
new episodes on ``--ranks`` (2) ranks (``ParallelES.load(snapshot).evaluate(100)`` under
mpirun), coarse first (every ``--coarse``-th snapshot, and the last), then bisecting
between the last coarse snapshot below a level and the first at or above it
(benchmarks/snapshots.py, shared with ga_time_to_score.py). A level's snapshot is the
first evaluated one whose mean reaches it (the means are noisy, not monotone: a snapshot
skipped by the bisection may reach it earlier). Each evaluation is kept in ``--cache``
(benchmarks/results/es_time_to_score_cache.json) as it ends, so none is played twice,
whatever is interrupted. Another ``--runs`` folder, a screen's, keeps its own
time_to_score.json and cache.json, where ``--json`` and ``--cache`` are not given.

Reports per run and level: the generation, env steps, wall minutes as run (the chunks'
durations in chunks.log, start to end, up to that snapshot: start-up and the machine's
other load included) and idle minutes, the env steps at ``--rate`` steps/s (a 2-core idle
machine's rate, measured apart). Prints the table, writes ``--json``
(benchmarks/recordings/es_time_to_score.json: the table, every evaluation and each run's
return curve, for ``figures.py --docs``) and the figure (runs/benchmarks/es_time_to_score.png;
``--docs``: docs/figures/): each evaluated snapshot's 100-episode mean, with its 95% interval,
and the 4-episode current return logged every generation, against env steps.
"""

from __future__ import annotations

import argparse
import csv
import functools
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402
import snapshots  # noqa: E402

FIGURE = "es_time_to_score.png"
KEPT = common.RECORDINGS / "es_time_to_score.json"
CURVE_POINTS = 400  # the return curve kept per run, thinned to about this many points


def evaluate_worker(snapshot: str, episodes: int) -> None:
    """Under mpirun: the snapshot's current network over ``episodes`` new episodes, as JSON
    on rank 0."""
    from pgmpi import ParallelES

    snapshots.worker(ParallelES, snapshot, episodes)


def progress(run: Path) -> list[dict]:
    """One row per generation of progress.csv: generations done, env steps, current return."""
    return [
        dict(
            generations=int(r["generation"]) + 1,
            steps=int(r["steps"]),
            current=float(r["charts/current_return"]),
        )
        for r in csv.DictReader(open(run / "progress.csv"))
    ]


def time_to_score(run: Path, evaluations: snapshots.Evaluations, args) -> dict:
    """One run's levels, evaluations and curve (see the module's docstring)."""
    rows, minutes, gens = progress(run), snapshots.chunk_minutes(run), snapshots.generations(run)
    steps = {r["generations"]: r["steps"] for r in rows}
    gens = [g for g in gens if g in steps]  # a snapshot whose rows are logged
    path_of = functools.partial(snapshots.snapshot_path, run)
    found, evaluated = snapshots.first_reaching(gens, path_of, evaluations, args)

    def at(g: int) -> dict:
        e, idle = evaluated[g], steps[g] / args.rate / 60 if args.rate else None
        return dict(generation=g, steps=steps[g], wall_minutes=minutes.get(g),
                    idle_minutes=idle, mean=e["mean"], ci95=e["ci95"])  # fmt: skip

    every = max(1, len(rows) // CURVE_POINTS)
    curve = [[r["steps"], r["current"]] for r in rows[::every]]
    return dict(
        reached={level: None if g is None else at(g) for level, g in found.items()},
        evaluations={str(g): dict(e, steps=steps[g]) for g, e in evaluated.items()},
        curve=curve,
        generations=rows[-1]["generations"] if rows else 0,
        wall_minutes=max(minutes.values(), default=None),
    )


def table(result: dict) -> str:
    """Markdown: per run and level, when the 100-episode mean first reached it."""
    rate = result["rate"]
    idle = f"idle minutes ({rate:,.0f} steps/s)" if rate else "idle minutes"
    columns = [
        ("generation", lambda r: str(r["generation"])),
        ("env steps", lambda r: f"{r['steps']:,}"),
        ("wall minutes as run", snapshots.cell("wall_minutes", ".1f")),
        (idle, snapshots.cell("idle_minutes", ".1f")),
    ]
    return snapshots.table(result, columns)


def plot(result: dict, path: Path) -> Path:
    """Each run's evaluated snapshots (100-episode mean, 95% interval) and its 4-episode
    current return, against env steps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.5))
    for k, (name, run) in enumerate(sorted(result["runs"].items())):
        c, name = f"C{k}", name.replace("seed", "seed ")  # a run's folder, seedS, in words
        x, y = zip(*run["curve"], strict=True) if run["curve"] else ((), ())
        ax.plot(
            [s / 1e6 for s in x],
            y,
            c=c,
            lw=0.6,
            alpha=0.5,
            label=f"{name}: current return, {result['eval_episodes']} episodes a generation",
        )
        ev = sorted(run["evaluations"].values(), key=lambda e: e["steps"])
        label = f"{name}: snapshot, mean of {result['episodes']} new episodes"
        snapshots.draw(ax, ev, lambda e: e["steps"] / 1e6, label, c=c)
    for level in result["levels"]:
        ax.axhline(level, c="grey", lw=0.6, ls=":")
    ax.set(
        xlabel="env steps (millions)",
        ylabel="return",
        title="ParallelES on BipedalWalker-v3: the current network's return",
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return common.save_figure(fig, path)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    runs = common.ROOT / "runs" / "es-tts"  # holds seed{S}/
    snapshots.add_flags(p, runs, KEPT, "es_time_to_score_cache.json")
    common.add_figure_flags(p, FIGURE)
    args = snapshots.parse(p)
    if args.evaluate:
        return evaluate_worker(args.evaluate, args.episodes)

    evaluations = snapshots.Evaluations(args.cache, snapshots.player(__file__, args), args.episodes)
    runs = sorted(d for d in args.runs.glob("seed*") if (d / "progress.csv").exists())
    if not runs:
        raise SystemExit(f"no runs in {args.runs} (seed*/progress.csv)")
    config = json.loads((runs[0] / "config.json").read_text())
    result = dict(
        machine=common.machine(),
        rate=args.rate,
        episodes=args.episodes,
        ranks=args.ranks,
        levels=args.levels,
        eval_episodes=config["eval_episodes"],
        runs={d.name: time_to_score(d, evaluations, args) for d in runs},
    )
    print(table(result))
    print(f"{evaluations.new} new evaluation(s), {len(evaluations.known)} in {args.cache}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1) + "\n")
    print("wrote", args.json, "and", plot(result, common.figure_path(args, FIGURE)))


if __name__ == "__main__":
    main()
