"""ParallelES screens on BipedalWalker-v3: runs of other settings beside the reference, each
read up to the same budget of env steps, as a table and a figure for docs/screens.md.

    python benchmarks/es_screens.py runs/es-tts/seed0 runs/es-screen/sigma0.05
    python benchmarks/es_screens.py RUN_DIR [RUN_DIR ...] --label seed0=reference --evaluate --docs

Each RUN_DIR is a run as benchmarks/es_time_to_score.py reads them (progress.csv, config.json,
snapshots/), never written to; it is named by its folder (``--label FOLDER=NAME`` renames one)
and by the settings in its config.json that differ from examples/bipedal_walker_es.py's.
Up to ``--budget`` env steps (12 M), so that runs cut at different points compare fairly: the
current return logged each generation (4 episodes) as a trailing mean over ``--window`` (5)
generations, fewer at the start; the env steps of the first generation where it reaches 0,
+100, +200 and +300; its value at the budget and its best. ``--evaluate``: the current network
of the last snapshot within the budget plays ``--episodes`` (100) new episodes on ``--ranks``
(2), through es_time_to_score.py's evaluation and cache (mean, 95% interval). Prints a markdown
table, writes benchmarks/results/es_screens.json (``--docs``: kept in benchmarks/recordings/
too, curves thinned to about 400 points) and draws the smoothed curves against env steps in
runs/benchmarks/es_screens.png (``--docs``: docs/figures/).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402
import es_time_to_score  # noqa: E402
import snapshots  # noqa: E402

FIGURE = "es_screens.png"
KEPT = common.RECORDINGS / "es_screens.json"
WORDS = {"noise_std": "sigma", "hidden_sizes": "hidden layers", "population_size": "population"}


def differences(config: dict) -> dict:
    """The settings of a run's config.json that differ from examples/bipedal_walker_es.py's."""
    ENV, SETTINGS = common.example_settings("bipedal_walker_es")

    default = dataclasses.asdict(SETTINGS) | {"env": ENV}
    return {k: v for k, v in config.items() if k in default and v != default[k]}


def in_words(settings: dict) -> str:
    """``sigma 0.05, learning rate 0.02``, or ``today's default`` where none differs."""
    said = (f"{WORDS.get(k, k.replace('_', ' '))} {v}" for k, v in settings.items())
    return ", ".join(said) or "today's default"


def trailing_mean(values: list[float], window: int) -> list[float]:
    """Each value's mean with the ``window - 1`` before it (as many as there are)."""
    parts = (values[max(0, i - window + 1) : i + 1] for i in range(len(values)))
    return [sum(part) / len(part) for part in parts]


def screen(run: Path, budget: int, window: int = 5) -> dict:
    """One run read up to ``budget`` env steps (see the module's docstring); its curve is the
    whole run's smoothed current return, [env steps, return], thinned to every k-th row."""
    rows = es_time_to_score.progress(run)
    smooth = trailing_mean([r["current"] for r in rows], window)
    n = sum(r["steps"] <= budget for r in rows)  # the steps only grow: rows[:n]
    if n == 0:
        raise SystemExit(f"{run}: no generation within {budget:,} env steps")
    best, last = max(range(n), key=smooth.__getitem__), rows[n - 1]
    gens = [g for g in snapshots.generations(run) if g <= last["generations"]]  # within budget
    every = max(1, len(rows) // es_time_to_score.CURVE_POINTS)
    settings = differences(json.loads((run / "config.json").read_text()))
    return dict(
        settings=settings,
        words=in_words(settings),
        generations=last["generations"],
        steps=last["steps"],
        reached={
            f"{level:g}": next((rows[i]["steps"] for i in range(n) if smooth[i] >= level), None)
            for level in snapshots.LEVELS
        },
        at_budget=smooth[n - 1],
        best=smooth[best],
        best_steps=rows[best]["steps"],
        snapshot=gens[-1] if gens else None,
        curve=[[r["steps"], v] for r, v in list(zip(rows, smooth, strict=True))[::every]],
        evaluation=None,
    )


def million(steps: int | None) -> str:  # 12.0 M
    return "-" if steps is None else f"{steps / 1e6:.1f} M"


def table(result: dict) -> str:
    """Markdown: a row per run."""
    levels = " / ".join(f"{level:+g}" for level in snapshots.LEVELS)
    head = ["run", "settings", "read to", f"env steps to {levels}",
            f"smoothed return at {result['budget'] / 1e6:g} M", "best smoothed return"]  # fmt: skip
    if result["episodes"]:
        head.append(f"last snapshot: mean of {result['episodes']} new episodes [95% interval]")
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for name, s in result["runs"].items():
        cells = [name, s["words"], f"generation {s['generations']}, {million(s['steps'])}",
                 " / ".join(million(x) for x in s["reached"].values()), f"{s['at_budget']:+.1f}",
                 f"{s['best']:+.1f} at {million(s['best_steps'])}"]  # fmt: skip
        if e := s["evaluation"]:
            cells.append(f"generation {e['generation']}: {snapshots.interval(e)}")
        elif result["episodes"]:
            cells.append("no snapshot")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(result: dict, path: Path) -> Path:
    """Each run's smoothed current return against env steps, the budget, 0 and +300 marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.5))
    for k, (name, s) in enumerate(result["runs"].items()):
        x, y = zip(*s["curve"], strict=True)
        ax.plot([v / 1e6 for v in x], y, c=f"C{k}", lw=1, label=f"{name}: {s['words']}")
    budget = result["budget"] / 1e6
    ax.axvline(budget, c="k", ls="--", lw=0.8, label=f"the budget: {budget:g} M env steps")
    for level in (0, 300):
        ax.axhline(level, c="grey", lw=0.6, ls=":")
    ax.set(xlabel="env steps (millions)", title="ParallelES screens on BipedalWalker-v3",
           ylabel=f"current return, mean of {result['window']} generations")  # fmt: skip
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return common.save_figure(fig, path)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", type=Path, nargs="+", help="run folders (progress.csv, config.json)")
    p.add_argument("--budget", type=float, default=12e6, help="env steps read (12000000)")
    p.add_argument("--window", type=int, default=5, help="generations in the trailing mean (5)")
    p.add_argument("--label", action="append", default=[], help="FOLDER=NAME: a run's name")
    p.add_argument("--evaluate", action="store_true", help="play each last snapshot (mpirun)")
    p.add_argument("--episodes", type=int, default=100, help="evaluation episodes (100)")
    p.add_argument("--ranks", type=int, default=2, help="ranks per evaluation (2)")
    cache = common.RESULTS / "es_time_to_score_cache.json"
    p.add_argument("--cache", type=Path, default=cache, help="es_time_to_score.py's evaluations")
    common.add_figure_flags(p, FIGURE)
    args = p.parse_args()
    names, budget = dict(label.split("=", 1) for label in args.label), int(args.budget)
    runs = {names.get(d.name, d.name): d for d in args.runs}
    episodes = args.episodes if args.evaluate else None  # of each evaluation
    result = dict(machine=common.machine(), budget=budget, window=args.window, episodes=episodes)
    result["runs"] = {name: screen(d, budget, args.window) for name, d in runs.items()}
    if args.evaluate:
        play = snapshots.player(es_time_to_score.__file__, args)
        evaluations = snapshots.Evaluations(args.cache, play, args.episodes)
        for name, d in runs.items():
            if (g := result["runs"][name]["snapshot"]) is not None:
                e = evaluations(snapshots.snapshot_path(d, g))
                result["runs"][name]["evaluation"] = dict(e, generation=g)
    print(table(result))
    path = common.write("es_screens", result, keep=args.docs)
    print("wrote", path, "and", plot(result, common.figure_path(args, FIGURE)))


if __name__ == "__main__":
    main()
