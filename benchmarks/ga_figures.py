"""The PrunedGA scaling figures and tables, drawn from projections of kept recordings.

* :func:`plot`: idle share and speed-up against ranks, one line per way of sharing out a
  generation and per stretch of generations (``ga_scaling.png``, ``ga_scaling_run.png``,
  ``ga_scaling_late.png``);
* :func:`plot_generations`: one panel per run, each generation's projected idle share at
  63 and 128 ranks, the run so far, and its best fitness (``ga_scaling_generations.png``);
* :func:`plot_idle`: bars of each run's whole-run idle share at 63 and 128 ranks against
  the targets (``ga_idle.png``);
* :func:`draw_docs`: all of them from the runs kept in benchmarks/recordings/ (KEPT_RUNS),
  as ``python benchmarks/figures.py --docs`` draws them.
"""

from __future__ import annotations

from pathlib import Path

import common
import numpy as np
from ga_simulate import RANKS, SPLITS, by_generation, projected, under_from

TARGETS = ((63, 0.05), (128, 0.10))  # pgmpi's aims: idle under 5% at 63 ranks, 10% at 128
NAMES = {"old": "whole individuals, longest first (pgmpi before units)",
         "static": "units, shared out statically",
         "dynamic": "units, self-scheduled, not playing ahead",
         "ahead": "units, self-scheduled, playing ahead (PrunedGA)"}  # fmt: skip
COLOURS = {"old": "tab:red", "static": "tab:orange", "dynamic": "tab:grey", "ahead": "tab:blue"}
# The four signed-dag runs the docs quote, each a list of recordings of one run, in order.
KEPT_RUNS = {
    "run 1: seed 0, 37 generations (recorded before playing ahead)": ["signedrun"],
    "run 2: seed 1, 18 generations (recorded before playing ahead)": ["signedrun1"],
    "run 3: seed 0, 86 generations, under playing ahead": ["longrun0"],
    "run 4: seed 2, generations 0-34 and 45-75, under playing ahead": ["aheadrun2", "longrun2b"],
}


def recording(tag: str) -> Path:
    """A kept recording's path, from its tag (``signedrun``: ga_scaling_signedrun_costs.npz)."""
    return common.RECORDINGS / f"ga_scaling_{tag}_costs.npz"


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def table(results: dict) -> str:
    """Markdown: idle share and speed-up at 63 and 128 ranks per setting, stretch and split."""
    lines = [
        "| settings | generations | ranks | old split: idle, speed-up | static units | "
        "dynamic units | dynamic, playing ahead (PrunedGA) | s per generation (old / PrunedGA) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, phases in results.items():
        for phase, by_split in phases.items():
            for n in (63, 128):
                cells = [f"{100 * by_split[s][n][0]:.1f}%, {by_split[s][n][1]:.1f}x" for s in
                         SPLITS]  # fmt: skip
                secs = f"{by_split['old'][n][2]:.2f} / {by_split['ahead'][n][2]:.2f}"
                lines.append(f"| {name} | {phase} | {n} | {' | '.join(cells)} | {secs} |")
    return "\n".join(lines)


def plot(results: dict, path: Path, title: str = "") -> Path:
    """Idle share and speed-up against ranks (``results``: ga_scaling's projection of the
    first setting), every line labelled, the legend below the panels."""
    plt = _pyplot()
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    name = next(iter(results))
    for phase, style in zip(results[name], ("-", "--", ":"), strict=False):
        for split, by_n in results[name][phase].items():
            label = f"{NAMES[split]}: generations {phase}"
            a.plot(RANKS, [100 * by_n[n][0] for n in RANKS], style, c=COLOURS[split], label=label)
            b.plot(RANKS, [by_n[n][1] for n in RANKS], style, c=COLOURS[split])
    b.plot(RANKS, RANKS, c="black", lw=0.8, label="ideal speed-up (n ranks: n times)")
    for ax in (a, b):
        ax.axvline(63, c="0.5", lw=0.6, ls="-.", label="63 ranks (the original's 63 workers)")
        ax.grid(alpha=0.3, which="both")
    a.set(xscale="log", xlabel="ranks", ylabel="% of rank time idle")
    b.set(xscale="log", yscale="log", xlabel="ranks", ylabel="speed-up over 1 rank")
    a.set_title(f"Idle share, {name} (projected)")
    b.set_title("Speed-up over 1 rank (projected)")
    lines = a.get_lines() + b.get_lines()[-2:-1]  # every curve once, the ideal, the 63 mark
    fig.suptitle(title or "PrunedGA on BipedalWalker-v3, projected from 2-rank recordings")
    fig.legend(lines, [x.get_label() for x in lines], loc="upper center",
               bbox_to_anchor=(0.5, 0.0), ncol=2, fontsize=7)  # fmt: skip
    return common.save_figure(fig, path)


def whole_run(idle: dict, split: str, n: int, which: slice = slice(None)) -> float:
    """A run's idle share over the generations ``which``: :func:`by_generation`'s shares
    weighted by their rank seconds."""
    weight = idle["rank_s"][split][n][which]
    return float(np.sum(idle[split][n][which] * weight) / weight.sum())


def run_summary(idle: dict) -> list[str]:
    """Lines that say, from :func:`by_generation`'s ``idle``, the share of generations above
    each target, and the run's share with and without playing ahead, over all of it, before
    its first positive best fitness and from it, and where the run so far stays under each
    target."""
    above = [f"{100 * np.mean(idle[s][n] > t):.0f}%" for s in ("ahead", "dynamic")
             for n, t in TARGETS]  # fmt: skip
    lines = [f"generations above the target, playing ahead 63 / 128 ranks {above[0]} / "
             f"{above[1]}, without {above[2]} / {above[3]}"]  # fmt: skip
    g, best = idle["generation"], idle["best"]
    first = int(np.argmax(best > 0)) if np.any(best > 0) else len(g)
    parts = {f"all ({g[0]}-{g[-1]}, {len(g)} recorded)": slice(0, len(g))}
    if 0 < first < len(g):
        parts[f"before a positive best ({g[0]}-{g[first - 1]})"] = slice(0, first)
        parts[f"from it ({g[first]}-{g[-1]})"] = slice(first, len(g))
    for name, w in parts.items():
        cells = [f"{100 * whole_run(idle, s, n, w):.1f}%" for s in ("ahead", "dynamic")
                 for n, _ in TARGETS]  # fmt: skip
        lines.append(f"{name}: playing ahead {cells[0]} / {cells[1]}, without {cells[2]} / "
                     f"{cells[3]} (63 / 128 ranks)")  # fmt: skip
    for n, t in TARGETS:
        since = under_from(idle["so far"][n], t, g)
        where = f"from generation {since} on" if since is not None else "not at its end"
        lines.append(f"the run so far at {n} ranks: under {100 * t:.0f}% {where}")
    return lines


def plot_generations(recordings: dict, path: Path) -> dict:
    """One panel per recording ({label: list of stretches, as :func:`by_generation` takes}):
    each generation's projected idle share at 63 and 128 ranks, self-scheduled with playing
    ahead (PrunedGA) and without, the share of the run so far at 128 ranks, against the
    targets, and the generation's best fitness on a second axis; generations not recorded
    are shaded. Returns the shares drawn, {label: :func:`by_generation`}."""
    plt = _pyplot()
    fig, axes = plt.subplots(len(recordings), 1, figsize=(10, 2.6 * len(recordings)),
                             squeeze=False)  # fmt: skip
    shares = {}
    for ax, (label, stretches) in zip(axes[:, 0], recordings.items(), strict=True):
        shares[label] = idle = by_generation(stretches)
        x = np.arange(idle["generation"][0], idle["generation"][-1] + 1)
        at = idle["generation"] - x[0]

        def full(v, at=at, x=x):  # NaN where a generation was not recorded: the line breaks
            out = np.full(len(x), np.nan)
            out[at] = v
            return out

        ax.plot(x, full(100 * idle["ahead"][128]), "-o", ms=3, c="tab:blue",
                label="128 ranks, playing ahead (PrunedGA)")  # fmt: skip
        ax.plot(x, full(100 * idle["dynamic"][128]), "--", c="tab:grey",
                label="128 ranks, not playing ahead")  # fmt: skip
        ax.plot(x, full(100 * idle["ahead"][63]), "-", c="tab:cyan",
                label="63 ranks, playing ahead (PrunedGA)")  # fmt: skip
        ax.plot(x, full(100 * idle["so far"][128]), "-", lw=2.2, c="tab:purple",
                label="128 ranks, playing ahead, the run so far")  # fmt: skip
        best = full(idle["best"])
        for g in x[np.isnan(best)]:
            ax.axvspan(g - 0.5, g + 0.5, color="0.9", lw=0)
        for (n, target), c in zip(TARGETS, ("tab:orange", "tab:red"), strict=True):
            ax.axhline(100 * target, c=c, lw=0.8, ls=":", label=f"target at {n} ranks")
        ax.set(ylabel="% of rank time idle", ylim=(0, 100), xlim=(x[0] - 0.5, x[-1] + 0.5))
        ax.set_title(label, fontsize=9)
        ax.grid(alpha=0.3)
        fit = ax.twinx()
        fit.plot(x, best, c="tab:green", lw=1.2, label="best fitness (right axis)")
        fit.axhline(0, c="tab:green", lw=0.5, ls=":")
        fit.set_ylabel("best fitness", color="tab:green")
        if np.any(best > 0):
            ax.axvline(x[np.argmax(best > 0)] - 0.5, c="tab:green", lw=0.8,
                       label="first positive best fitness")  # fmt: skip
        lines = ax.get_lines() + fit.get_lines()[:1]
    axes[-1, 0].set_xlabel("generation (shaded: not recorded)")
    top = 1 - 0.75 / (2.6 * len(recordings))  # room above the panels for the legend
    fig.legend(lines, [x.get_label() for x in lines], loc="upper center",
               bbox_to_anchor=(0.5, 1.0), ncol=3, fontsize=8)  # fmt: skip
    common.save_figure(fig, path, rect=(0, 0, 1, top))
    return shares


def plot_idle(shares: dict, path: Path) -> Path:
    """Bars: each run's whole-run idle share (``shares``: {label: :func:`by_generation`}) at
    63 and 128 ranks, playing ahead (PrunedGA) and not, against the targets."""
    import textwrap

    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(13, 5), sharey=True)
    x = np.arange(len(shares))
    ticks = ["\n".join([run, *textwrap.wrap(what, 18)]) for run, _, what in
             (label.partition(": ") for label in shares)]  # fmt: skip
    for ax, (n, target) in zip(axes, TARGETS, strict=True):
        for shift, split in ((-0.2, "ahead"), (0.2, "dynamic")):
            v = [100 * whole_run(idle, split, n) for idle in shares.values()]
            bars = ax.bar(x + shift, v, width=0.4, color=COLOURS[split], label=NAMES[split])
            ax.bar_label(bars, fmt="%.1f%%", fontsize=8)
        ax.axhline(100 * target, c="tab:red", lw=1, ls="--")
        ax.text(x[0] - 0.45, 100 * target, f" target: {100 * target:.0f}%", c="tab:red",
                ha="left", va="bottom", fontsize=8)  # fmt: skip
        ax.set_xticks(x, ticks, fontsize=8)
        ax.set_title(f"{n} ranks (target: under {100 * target:.0f}% idle)", fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("% of rank time idle over the whole run")
    fig.suptitle("PrunedGA on BipedalWalker-v3: each recorded run's idle share, projected")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="upper center",
               bbox_to_anchor=(0.5, 0.0), ncol=2, fontsize=9)  # fmt: skip
    return common.save_figure(fig, path)


def draw_docs(out_dir: Path) -> list[Path]:
    """Every PrunedGA figure the docs show, from the recordings kept in benchmarks/recordings:
    the by-generation panels and the bars of the four runs (KEPT_RUNS), and the projection
    against ranks of run 1 (``ga_scaling_run.png``), run 3 (``ga_scaling.png``: from
    scratch under playing ahead) and run 4's generations 45-75 (``ga_scaling_late.png``)."""
    runs = {label: [dict(np.load(recording(t))) for t in tags] for label, tags in
            KEPT_RUNS.items()}  # fmt: skip
    shares = plot_generations(runs, out_dir / "ga_scaling_generations.png")
    made = [out_dir / "ga_scaling_generations.png", plot_idle(shares, out_dir / "ga_idle.png")]
    against_ranks = (("ga_scaling_run.png", "signedrun", "run 1"),
                     ("ga_scaling.png", "longrun0", "run 3"),
                     ("ga_scaling_late.png", "longrun2b", "run 4, generations 45-75"))  # fmt: skip
    for name, tag, which in against_ranks:
        rec = dict(np.load(recording(tag)))
        own = "x".join(str(k) for k in rec["steps"].shape[1:])  # its own setting only
        results = projected(rec, also=own)[0]
        made.append(plot(results, out_dir / name, f"PrunedGA on BipedalWalker-v3, {which} "
                         "(signed-dag), projected from its 2-rank recording"))  # fmt: skip
    return made
