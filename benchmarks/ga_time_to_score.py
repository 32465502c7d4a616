"""PrunedGA's time to score on BipedalWalker-v3: generations, episodes, env steps, minutes
and core-hours until the best network's return first reaches each score.

    python benchmarks/ga_time_to_score.py --run signed-dag:0 signed-dag:1 ones:0 [--minutes 60]
    python benchmarks/ga_time_to_score.py          # only read the runs already in runs/ga-tts
    python benchmarks/ga_time_to_score.py --docs   # and redraw docs/figures/ga_time_to_score.png

``--run GENOME:SEED ...`` trains each from scratch, one after the other, on ``--ranks`` (2)
ranks: ``mpirun -n 2 python examples/bipedal_walker.py --genome GENOME --seed SEED
--minutes M --generations 100000 --log-dir runs/ga-tts/GENOME-SEED`` (the example's
settings: hidden 8 8, population 138, 8 episodes per individual, as in the
synaptolytic-learning benchmark). It then plays the best network ever seen over
``--episodes`` (100) new episodes and records the mean with its 95% confidence interval.
Time the runs on an otherwise idle machine.

Then, for every run in runs/ga-tts, prints the table of the first generation at which the
best individual's return (its mean over its 8 episodes) reached -50, 0, +100, +200 and
+300, and the population mean 0, with episodes, env steps, wall minutes and core-hours
(minutes x ranks / 60), and the final best and population-mean return; writes
benchmarks/results/ga_time_to_score.json and runs/benchmarks/ga_time_to_score.png (best
and population-mean return against wall minutes and against env steps; ``--out PATH``
elsewhere, ``--docs`` to the tracked docs/figures/ga_time_to_score.png, keeping the curves in
benchmarks/recordings/ga_time_to_score.json, from which ``benchmarks/figures.py --docs``
redraws it).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "runs" / "ga-tts"
FIGURE = "ga_time_to_score.png"
KEPT = common.RECORDINGS / "ga_time_to_score.json"  # what --docs drew last (thinned curves)
THRESHOLDS = (-50, 0, 100, 200, 300)
MEAN_THRESHOLDS = (0,)  # the population mean (estool's CMA-ES: > 0 after about 15 k episodes)


def evaluate(checkpoint: str, episodes: int) -> None:
    """Under mpirun: the best network over ``episodes`` new episodes, as JSON on rank 0."""
    from pgmpi import PrunedGA, mpi

    agent = PrunedGA.load(checkpoint, quiet=True)
    score = agent.evaluate(episodes)
    if mpi.is_root():
        out = dict(mean=float(score), ci95=list(score.ci95), episodes=episodes)
        out["walked"] = int((score.returns > 0).sum())  # episodes with a positive return
        print(json.dumps(out), flush=True)


def read(run: Path) -> list[dict]:
    """One row per generation: the counts, the best and the population-mean return."""
    settings = json.loads((run / "config.json").read_text())
    per_generation = settings["population_size"] * settings["episodes_per_individual"]
    weight = settings["complexity_weight"]
    rows = []
    for r in csv.DictReader(open(run / "progress.csv")):
        g = int(r["generation"]) + 1  # generations done
        rows.append({
            "generations": g, "episodes": g * per_generation, "steps": int(r["steps"]),
            "minutes": float(r["time/elapsed_s"]) / 60,
            "best": float(r["charts/best_return"]),
            # fitness = return - weight x share kept, so the mean return is exact from the means
            "mean": float(r["charts/mean_fitness"]) + weight * float(r["charts/connections_kept"]),
        })  # fmt: skip
    return rows


def first_reached(rows: list[dict], ranks: int, key="best", thresholds=THRESHOLDS) -> dict:
    out = {}
    for t in thresholds:
        row = next((r for r in rows if r[key] >= t), None)
        out[t] = row and dict(
            {k: row[k] for k in ("generations", "episodes", "steps", "minutes")},
            core_hours=row["minutes"] * ranks / 60,
        )
    return out


def label(name: str) -> str:
    """A run's folder name (GENOME-SEED) in words, for a legend."""
    genome, _, seed = name.rpartition("-")
    return f"seed {seed}, {genome} genome"


def plot(curves: dict[str, list[dict]], path: Path, ranks: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for k, (name, rows) in enumerate(sorted(curves.items())):
        c = f"C{k}"
        for key, style, what in (("best", "-", "best"), ("mean", ":", "population mean")):
            y = [r[key] for r in rows]
            a.plot([r["minutes"] for r in rows], y, style, c=c, label=f"{label(name)}: {what}")
            b.plot([r["steps"] / 1e6 for r in rows], y, style, c=c)
    a.set(xlabel=f"wall minutes on {ranks} ranks", ylabel="return (mean of 8 episodes)")
    b.set(xlabel="env steps (millions)")
    for ax in (a, b):
        ax.axhline(0, c="grey", lw=0.8)
        ax.grid(alpha=0.3)
    fig.legend(loc="lower center", ncol=2, fontsize=8, frameon=False)
    fig.suptitle("PrunedGA on BipedalWalker-v3 (population 138, 8 episodes each)")
    common.save_figure(fig, path, rect=(0, 0.12, 1, 1))


def draw_kept(out_dir: Path) -> list[Path]:
    """``ga_time_to_score.png`` in ``out_dir`` from the curves ``--docs`` kept, if any."""
    if not KEPT.exists():
        return []
    kept = json.loads(KEPT.read_text())
    plot(kept["curves"], out_dir / FIGURE, kept["ranks"])
    return [out_dir / FIGURE]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run", nargs="*", default=[], metavar="GENOME:SEED", help="train these")
    p.add_argument("--minutes", type=float, default=60, help="limit per run (60)")
    p.add_argument("--ranks", type=int, default=2, help="ranks per run (2)")
    p.add_argument("--episodes", type=int, default=100, help="evaluation episodes (100)")
    p.add_argument("--evaluate", help=argparse.SUPPRESS)
    common.add_figure_flags(p, FIGURE)
    args = p.parse_args()
    if args.evaluate:
        return evaluate(args.evaluate, args.episodes)

    for spec in args.run:
        genome, seed = spec.split(":")
        log_dir = RUNS / f"{genome}-{seed}"
        walker = [str(ROOT / "examples" / "bipedal_walker.py"), "--genome", genome]
        limits = ["--seed", seed, "--minutes", str(args.minutes), "--generations", "100000"]
        print(f"training {spec} ...", flush=True)
        out = common.mpirun(
            args.ranks,
            [*walker, *limits, "--log-dir", str(log_dir)],
            timeout=args.minutes * 60 + 900,
        )
        (log_dir / "train.log").write_text(out)
        print(f"evaluating {spec} ...", flush=True)
        flags = [__file__, "--evaluate", str(log_dir / "checkpoint.npz")]
        score = common.mpirun(args.ranks, [*flags, "--episodes", str(args.episodes)], timeout=3600)
        (log_dir / "evaluation.json").write_text(score.strip().splitlines()[-1] + "\n")

    runs = sorted(d for d in RUNS.glob("*") if (d / "progress.csv").exists())
    result, curves = {"machine": common.machine(), "ranks": args.ranks, "runs": {}}, {}
    head = "| run | " + " | ".join(f"best to {t:+d}" for t in THRESHOLDS)
    head += "".join(f" | population mean to {t:+d}" for t in MEAN_THRESHOLDS)
    head += " | at the end: generations, minutes, best / population mean"
    head += " | best network, 100 new episodes |"
    print(head + "\n|" + "---|" * (len(THRESHOLDS) + len(MEAN_THRESHOLDS) + 3))
    for run in runs:
        curves[run.name] = rows = read(run)
        reached = first_reached(rows, args.ranks)
        mean_reached = first_reached(rows, args.ranks, "mean", MEAN_THRESHOLDS)
        path = run / "evaluation.json"
        evaluation = json.loads(path.read_text()) if path.exists() else None
        result["runs"][run.name] = {
            "reached": reached, "mean_reached": mean_reached, "final": rows[-1],
            "evaluation": evaluation,
        }  # fmt: skip
        cells = [
            f"gen {r['generations']}, {r['episodes']:,} ep, {r['steps'] / 1e6:.1f} M steps, "
            f"{r['minutes']:.0f} min, {r['core_hours']:.2f} ch"
            if r
            else "not reached"
            for r in [*reached.values(), *mean_reached.values()]
        ]
        last = rows[-1]
        cells.append(
            f"{last['generations']}, {last['minutes']:.0f} min, {last['best']:+.1f} / "
            f"{last['mean']:+.1f}"
        )
        cells.append(
            "{mean:+.1f} [{0:+.1f}, {1:+.1f}], {walked} with a positive return".format(
                *evaluation["ci95"], mean=evaluation["mean"], walked=evaluation["walked"]
            )
            if evaluation
            else "-"
        )
        print(f"| {run.name} | " + " | ".join(cells) + " |")
    if curves:
        figure = common.figure_path(args, FIGURE)
        plot(curves, figure, args.ranks)
        if args.docs:  # runs/ is not tracked: keep what the docs' figure is drawn from
            thinned = {
                n: rows[:: max(1, len(rows) // 400)] + rows[-1:] for n, rows in curves.items()
            }
            KEPT.write_text(json.dumps({"ranks": args.ranks, "curves": thinned}) + "\n")
        print("wrote", common.write("ga_time_to_score", result), "and", figure)
    else:
        print(f"no runs in {RUNS}: pass --run GENOME:SEED")


if __name__ == "__main__":
    main()
