"""Why Pong seeds stall: each seed's diagnostics over a seed sweep, a panel each.

    python benchmarks/seed_diagnostics.py --tag=-diag           # runs/sweep/fast-sticky-diag-*
    python benchmarks/seed_diagnostics.py --tag=-diag --docs    # and keep it for the docs

For the runs that ``benchmarks/seed_sweep.py`` reads with the same ``--preset``, ``--tag``,
``--seeds`` and ``--runs-dir`` (``--deterministic`` for its deterministic runs), whose
progress.csv has ParallelPG's diagnostics columns (:mod:`pgmpi.diagnostics`; runs logged
before them are named and left out): one panel each of the 100-game mean, the policy's
entropy, the baseline's explained variance, the gradient norm and the share of points won,
against agent steps, a line per seed (each a trailing mean over ``--smooth`` updates), in
runs/benchmarks/seed_diagnostics.png (``--out``; ``--docs``: docs/figures/, and what it is
drawn from in benchmarks/recordings/seed_diagnostics.json, which ``figures.py --docs``
redraws). It prints each seed's means over its last ``--smooth`` updates.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402
import seed_sweep  # noqa: E402

FIGURE = "seed_diagnostics.png"
KEPT = common.RECORDINGS / "seed_diagnostics.json"  # what --docs drew last
PANELS = (  # (column, axis label)
    ("charts/mean_return_100", "100-game mean"),
    ("diagnostics/entropy", "entropy (nats;\nln 2 = 0.69)"),
    ("diagnostics/explained_variance", "baseline's\nexplained variance"),
    ("diagnostics/gradient_norm", "gradient norm"),
    ("diagnostics/rally_share", "share of\npoints won"),
)


def smooth(values: list[float], n: int) -> list[float]:
    """The trailing mean of the last ``n`` values at each point, empty cells (NaN) left out;
    NaN where the window holds none."""
    import numpy as np

    y = np.asarray(values, dtype=float)
    known = ~np.isnan(y)
    sums = np.convolve(np.where(known, y, 0.0), np.ones(n))[: len(y)]
    counts = np.convolve(known.astype(float), np.ones(n))[: len(y)]
    return list(np.where(counts > 0, sums / np.maximum(counts, 1), np.nan))


def diagnosed(run: Path) -> dict[str, list[float]] | None:
    """The run's steps and its ``PANELS`` columns, as floats (an empty cell is NaN), or None
    if its progress.csv lacks any of them."""
    rows = list(csv.DictReader(open(run / "progress.csv")))
    if not rows or any(column not in rows[0] for column, _ in PANELS):
        return None
    columns = ["steps"] + [column for column, _ in PANELS]
    return {c: [float(r[c]) if r[c] not in ("", None) else math.nan for r in rows] for c in columns}


def diagnose(runs: dict[str, dict], n: int, path: Path, title: str) -> None:
    """One panel per ``PANELS`` column, a line per seed (``runs``: seed -> :func:`diagnosed`),
    each smoothed over ``n`` updates, against agent steps; prints each seed's last means."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(PANELS), 1, figsize=(9.5, 10), sharex=True)
    print(f"each seed's mean over its last {n} updates:\n| seed | steps | "
          + " | ".join(label.replace("\n", " ") for _, label in PANELS) + " |")  # fmt: skip
    print("|---|---|" + "---|" * len(PANELS))
    for seed, columns in sorted(runs.items(), key=lambda kv: int(kv[0])):
        x = [s / 1e6 for s in columns["steps"]]
        for ax, (column, _) in zip(axes, PANELS, strict=True):
            ax.plot(x, smooth(columns[column], n), lw=1.1, label=f"seed {seed}")
        last = [smooth(columns[c], n)[-1] for c, _ in PANELS]
        print(f"| {seed} | {x[-1]:.2f} M | " + " | ".join(f"{v:.3g}" for v in last) + " |")
    for ax, (_, label) in zip(axes, PANELS, strict=True):
        ax.set_ylabel(label, fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].axhline(0, c="black", lw=0.8, ls=":")
    axes[3].set_yscale("log")
    axes[4].axhline(0.5, c="black", lw=0.8, ls=":")
    axes[-1].set_xlabel("agent steps (millions)")
    axes[0].set_title(title + f" (each a trailing mean over {n} updates)", fontsize=10)
    axes[0].legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=9, frameon=False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)


def draw_kept(out_dir: Path) -> list[Path]:
    """``seed_diagnostics.png`` in ``out_dir`` from what ``--docs`` kept, if it kept one."""
    if not KEPT.exists():
        return []
    kept = json.loads(KEPT.read_text())
    columns = {s: {k: [math.nan if v is None else v for v in c[k]] for k in c}
               for s, c in kept["columns"].items()}  # fmt: skip
    diagnose(columns, kept["smooth"], out_dir / FIGURE, kept["title"])
    return [out_dir / FIGURE]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="fast", help="the sweep's preset (fast)")
    p.add_argument("--deterministic", action="store_true", help="the sweep's deterministic runs")
    p.add_argument("--tag", default="", help="runs/sweep/PRESET-PROTOCOL[TAG]-SEED")
    p.add_argument("--seeds", nargs="*", metavar="SEED", help="only these (all)")
    p.add_argument("--smooth", type=int, default=10, help="updates per mean (10)")
    p.add_argument("--runs-dir", type=Path, default=seed_sweep.RUNS, help="(runs/sweep)")
    common.add_figure_flags(p, FIGURE)
    args = p.parse_args()
    name = seed_sweep.run_name(args.preset, args.deterministic, args.tag)
    runs = [d for d in seed_sweep.runs_of(args.runs_dir, name) if seed_sweep.played(d)]
    columns = {d.name.rsplit("-", 1)[1]: diagnosed(d) for d in runs}
    columns = {s: c for s, c in columns.items() if args.seeds is None or s in args.seeds}
    for seed in [s for s, c in columns.items() if c is None]:
        print(f"seed {seed}: no diagnostics columns in its progress.csv (logged before them)")
        del columns[seed]
    if not columns:
        raise SystemExit(f"no runs {args.runs_dir}/{name}-SEED with diagnostics")
    slots = json.loads((runs[0] / "config.json").read_text())["slots"]
    title = f"Pong, {name}, {slots} slots: {len(columns)} seeds"
    figure = common.figure_path(args, FIGURE)
    diagnose(columns, args.smooth, figure, title)
    if args.docs:  # keep what the figure is drawn from (None for an empty cell)
        kept = {s: {k: [None if math.isnan(v) else float(f"{v:.5g}") for v in c[k]] for k in c}
                for s, c in columns.items()}  # fmt: skip
        KEPT.write_text(json.dumps({"title": title, "smooth": args.smooth, "columns": kept},
                                   separators=(",", ":")) + "\n")  # fmt: skip
    print("wrote", figure)


if __name__ == "__main__":
    main()
