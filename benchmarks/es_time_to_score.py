"""ParallelES's time to score on BipedalWalker-v3: the first snapshot of a run whose current
network's mean over 100 new episodes reaches 0, +100, +200 and +300.

    python benchmarks/es_time_to_score.py --rate STEPS_PER_SECOND          # runs/es-tts/seed*/
    python benchmarks/es_time_to_score.py --rate STEPS_PER_SECOND --docs   # the docs' figure
    python benchmarks/es_time_to_score.py --runs DIR --json OUT.json --cache CACHE.json --out F.png

Reads each run ``RUNS/seed{S}/`` that a driver made, one chunk at a time with
``examples/bipedal_walker_es.py --generations G [--resume]`` into that folder: its
``progress.csv``, ``config.json``, ``chunks.log`` (lines ``<unix time> start gen G`` and
``<unix time> end gen G``, a chunk being the run up to G generations) and
``snapshots/gen_NNNNN.npz``, the checkpoint copied at the end of each chunk. Nothing is
written there.

For each run it plays the current network of chosen snapshots over ``--episodes`` (100)
new episodes on ``--ranks`` (2) ranks (``ParallelES.load(snapshot).evaluate(100)`` under
mpirun), coarse first (every ``--coarse``-th snapshot, and the last), then bisecting
between the last coarse snapshot below a level and the first at or above it. A level's
snapshot is the first evaluated one whose mean reaches it (the means are noisy, not
monotone: a snapshot skipped by the bisection may reach it earlier). Each evaluation is
kept in ``--cache`` (benchmarks/results/es_time_to_score_cache.json) as it ends, so none is
played twice, whatever is interrupted.

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
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402

FIGURE = "es_time_to_score.png"
LEVELS = (0, 100, 200, 300)
KEPT = common.RECORDINGS / "es_time_to_score.json"
CURVE_POINTS = 400  # the return curve kept per run, thinned to about this many points


def evaluate_worker(snapshot: str, episodes: int) -> None:
    """Under mpirun: the snapshot's current network over ``episodes`` new episodes, as JSON
    on rank 0."""
    from pgmpi import ParallelES, mpi

    score = ParallelES.load(snapshot, quiet=True).evaluate(episodes)
    if mpi.is_root():
        print(json.dumps(dict(mean=float(score), ci95=list(score.ci95), episodes=episodes)))


def snapshots(run: Path) -> list[int]:
    """The generations of a run's snapshots, in order."""
    return sorted(int(p.stem.removeprefix("gen_")) for p in (run / "snapshots").glob("gen_*.npz"))


def snapshot_path(run: Path, generation: int) -> Path:
    return run / "snapshots" / f"gen_{generation:05d}.npz"


def chunk_minutes(run: Path) -> dict[int, float]:
    """{G: wall minutes as run up to the end of the chunk that ended at G generations}: the
    sum of every finished chunk's duration so far, each from its last ``start gen G`` line
    to its ``end gen G`` line (a chunk that failed and was run again counts once)."""
    started, total, out = {}, 0.0, {}
    for line in (run / "chunks.log").read_text().splitlines():
        words = line.split()
        if len(words) == 4 and words[1:3] in (["start", "gen"], ["end", "gen"]):
            t, what, g = float(words[0]), words[1], int(words[3])
            if what == "start":
                started[g] = t
            elif g in started:
                total += t - started.pop(g)
                out[g] = total / 60
    return out


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


def search(gens: list[int], score: Callable[[int], float], levels, coarse: int) -> dict:
    """{level: the first generation among ``gens`` whose evaluated ``score`` reaches the
    level, or None}: ``score`` is called on every ``coarse``-th generation and the last, then
    by bisection between the last coarse one below each level and the first at or above it
    (``score`` should be cached: the bisections of several levels meet)."""
    if not gens:
        return {level: None for level in levels}
    seen = {}
    for i in sorted({*range(0, len(gens), coarse), len(gens) - 1}):
        seen[i] = score(gens[i])
    for level in levels:
        above = [i for i in sorted(seen) if seen[i] >= level]
        if not above:
            continue
        hi = above[0]
        lo = max((i for i in seen if i < hi), default=-1)  # below the level: seen[lo] < level
        while hi - lo > 1:
            mid = (lo + hi) // 2
            seen[mid] = score(gens[mid])
            lo, hi = (lo, mid) if seen[mid] >= level else (mid, hi)
    return {
        level: next((gens[i] for i in sorted(seen) if seen[i] >= level), None) for level in levels
    }


class Evaluations:
    """The cache of evaluations, {snapshot's absolute path: {mean, ci95, episodes}}, read from
    and written to ``path`` after every new one; ``play(path)`` evaluates one."""

    def __init__(self, path: Path, play: Callable[[Path], dict], episodes: int):
        self.path, self.play, self.episodes, self.new = path, play, episodes, 0
        self.known = json.loads(path.read_text()) if path.exists() else {}

    def key(self, snapshot: Path) -> str:
        return f"{snapshot.resolve()}:{self.episodes}"

    def has(self, snapshot: Path) -> bool:
        return self.key(snapshot) in self.known

    def __call__(self, snapshot: Path) -> dict:
        key = self.key(snapshot)
        if key not in self.known:
            print(f"evaluating {snapshot} ...", flush=True)
            self.known[key] = self.play(snapshot)
            self.new += 1
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.known, indent=1) + "\n")
            tmp.replace(self.path)  # whole, even if interrupted
        return self.known[key]


def time_to_score(run: Path, evaluations: Evaluations, args) -> dict:
    """One run's levels, evaluations and curve (see the module's docstring)."""
    rows, minutes, gens = progress(run), chunk_minutes(run), snapshots(run)
    steps = {r["generations"]: r["steps"] for r in rows}
    gens = [g for g in gens if g in steps]  # a snapshot whose rows are logged
    found = search(
        gens, lambda g: evaluations(snapshot_path(run, g))["mean"], args.levels, args.coarse
    )
    evaluated = {
        g: evaluations(path) for g in gens if evaluations.has(path := snapshot_path(run, g))
    }

    def at(g: int) -> dict:
        e, idle = evaluated[g], steps[g] / args.rate / 60 if args.rate else None
        return dict(generation=g, steps=steps[g], wall_minutes=minutes.get(g),
                    idle_minutes=idle, mean=e["mean"], ci95=e["ci95"])  # fmt: skip

    reached = {f"{level:g}": None if g is None else at(g) for level, g in found.items()}
    every = max(1, len(rows) // CURVE_POINTS)
    curve = [[r["steps"], r["current"]] for r in rows[::every]]
    return dict(
        reached=reached,
        evaluations={str(g): dict(e, steps=steps[g]) for g, e in evaluated.items()},
        curve=curve,
        generations=rows[-1]["generations"] if rows else 0,
        wall_minutes=max(minutes.values(), default=None),
    )


def table(result: dict) -> str:
    """Markdown: per run and level, when the 100-episode mean first reached it."""
    rate = result["rate"]
    idle = f"idle minutes ({rate:,.0f} steps/s)" if rate else "idle minutes"
    lines = [
        f"| run | level | generation | env steps | wall minutes as run | {idle} | "
        f"mean of {result['episodes']} episodes [95% interval] |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, run in result["runs"].items():
        for level, r in run["reached"].items():
            if not r:
                lines.append(
                    f"| {name} | {float(level):+g} | not reached in "
                    f"{run['generations']} generations | | | | |"
                )
                continue
            wall = "-" if r["wall_minutes"] is None else f"{r['wall_minutes']:.1f}"
            quiet = "-" if r["idle_minutes"] is None else f"{r['idle_minutes']:.1f}"
            lines.append(
                f"| {name} | {float(level):+g} | {r['generation']} | {r['steps']:,} | {wall} "
                f"| {quiet} | {r['mean']:+.1f} [{r['ci95'][0]:+.1f}, {r['ci95'][1]:+.1f}] |"
            )
    return "\n".join(lines)


def plot(result: dict, path: Path) -> Path:
    """Each run's evaluated snapshots (100-episode mean, 95% interval) and its 4-episode
    current return, against env steps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.5))
    for k, (name, run) in enumerate(sorted(result["runs"].items())):
        c = f"C{k}"
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
        if ev:
            xs, ms = [e["steps"] / 1e6 for e in ev], [e["mean"] for e in ev]
            err = [
                [m - e["ci95"][0] for m, e in zip(ms, ev, strict=True)],
                [e["ci95"][1] - m for m, e in zip(ms, ev, strict=True)],
            ]
            ax.errorbar(
                xs,
                ms,
                yerr=err,
                fmt="o",
                c=c,
                ms=4,
                capsize=2,
                label=f"{name}: snapshot, mean of {result['episodes']} new episodes",
            )
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
    p.add_argument(
        "--runs",
        type=Path,
        default=common.ROOT / "runs" / "es-tts",
        help="holds seed{S}/ (runs/es-tts)",
    )
    p.add_argument("--rate", type=float, help="idle env steps/s on 2 cores, for idle minutes")
    p.add_argument(
        "--levels", type=float, nargs="+", default=LEVELS, help="levels of the mean (0 100 200 300)"
    )
    p.add_argument("--episodes", type=int, default=100, help="evaluation episodes (100)")
    p.add_argument("--ranks", type=int, default=2, help="ranks per evaluation (2)")
    p.add_argument("--coarse", type=int, default=5, help="evaluate every k-th snapshot first (5)")
    p.add_argument(
        "--json", type=Path, default=KEPT, help=f"the result ({KEPT.name} in recordings)"
    )
    p.add_argument(
        "--cache",
        type=Path,
        default=common.RESULTS / "es_time_to_score_cache.json",
        help="evaluations kept between calls (benchmarks/results/...)",
    )
    p.add_argument("--evaluate", help=argparse.SUPPRESS)  # the worker's snapshot
    common.add_figure_flags(p, FIGURE)
    args = p.parse_args()
    if args.evaluate:
        return evaluate_worker(args.evaluate, args.episodes)

    def play(snapshot: Path) -> dict:
        flags = [__file__, "--evaluate", str(snapshot), "--episodes", str(args.episodes)]
        return common.last_json(common.mpirun(args.ranks, flags, timeout=3600))

    evaluations = Evaluations(args.cache, play, args.episodes)
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
