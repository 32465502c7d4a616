"""Plot runs: ``python -m pgmpi.plot LOG_DIR [--x X] [--out FILE.png]``, several runs side
by side: ``python -m pgmpi.plot RUN RUN ... [--x X] [--out FILE.png]``, or one run's
timeline: ``python -m pgmpi.plot --timeline LOG_DIR [--out FILE.png] [--last N]``.

The first draws what a reader looks for, against agent steps (minutes of training along
the top), or ``--x``: the return on the game's own scale (Pong: -21 to +21, 0 marked;
ParallelPG's mean of the last 100 games, PrunedGA's best fitness), then the speed in agent
steps per second, then every other ``charts/`` column that changes; the title names those
that do not (default ``LOG_DIR/progress.png``). The
second draws the main curves of several runs on one figure, one line per run labelled by
its folder name (default ``compare.png`` in the current folder): for ParallelPG the mean
return of the last 100 games and the running reward, for PrunedGA and ParallelES the best
and the mean fitness (and ES's unperturbed network's return), against steps (generations if
every run has them) and against minutes of training,
or against the one axis ``--x`` names. A run folder that is missing or holds no rows, or an
``--out`` that is a folder, is one line on stderr and exit status 2. The third draws
``trace.csv`` (written with ``trace=True`` / ``--trace``) like a profiler's timeline: one
row per rank, a coloured bar for each phase of each update (playing, computing gradients,
waiting at the Allreduce, applying the update) at the seconds it happened on that rank's
clock (default ``LOG_DIR/timeline.png``); the gaps between updates are logging and the
gathering of every rank's games. Each call to ``train`` (and each resumed run) restarts
the clock at 0; the plots put them end to end. Needs matplotlib (``pip install
pgmpi[plot]``); imported only here, never by ``import pgmpi``.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from pgmpi.progress import (
    X_AXES,
    PlotError,
    constant,
    game_scale,
    read_progress,
    run_labels,
    x_values,
)
from pgmpi.timeline import timeline

# The curves worth comparing across runs, by algorithm; panels follow this order.
MAIN_METRICS = (
    "charts/mean_return_100",  # ParallelPG
    "charts/running_reward",
    "charts/best_fitness",  # PrunedGA
    "charts/mean_fitness",
    "charts/current_return",  # ParallelES (it has the two above too)
)


def _check_out(out: Path) -> None:
    if out.is_dir():
        raise PlotError(f"--out {str(out)!r} is a folder: give the PNG file to write")


def _save(fig, out: Path) -> Path:
    import matplotlib.pyplot as plt

    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=100)
    except (OSError, ValueError) as e:  # ValueError: an extension matplotlib cannot write
        raise PlotError(f"cannot write {str(out)!r}: {e}") from None
    finally:
        plt.close(fig)
    return out


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


RETURNS = {  # the return panel's lines, by algorithm: (column, legend, line width)
    "charts/mean_return_100": [
        ("charts/mean_return_100", "mean of the last 100 games", 2.0),
        ("charts/running_reward", "running reward (the post's)", 1.0),
    ],
    "charts/best_fitness": [
        ("charts/best_fitness", "best fitness", 2.0),
        ("charts/elite_mean_fitness", "elites' mean fitness", 1.0),
        ("charts/mean_fitness", "mean fitness", 1.0),
    ],
}
SPEED = "perf/steps_per_s"


def _short(value: float) -> str:
    return f"{value:g}" if not math.isnan(value) else "empty"


def plot(log_dir: str | Path, out: str | Path | None = None, x: str | None = None) -> Path:
    """Save a PNG of one run (``log_dir/progress.csv``); returns its path.

    The first panel is what a reader looks for: the return (ParallelPG: the mean of the last
    100 games and the running reward; PrunedGA: the best, elite and mean fitness), on the
    game's own scale where :data:`pgmpi.progress.GAME_SCALES` knows it (Pong: -21 to +21,
    with 0 marked).
    The second is the speed, agent steps per second over all ranks. Every other ``charts/``
    column follows, one panel each, except those that never change: their value is said in
    the title instead. The x axis is ``x`` (an ``X_AXES`` key; default agent steps), with
    minutes of training along the top when it is agent steps.

    Raises:
        PlotError: see :func:`read_progress` and :func:`x_values`; or the run has no
            ``charts/`` column; or ``out`` is a folder or cannot be written.
    """
    log_dir = Path(log_dir)
    out = Path(out) if out else log_dir / "progress.png"
    _check_out(out)
    columns = read_progress(log_dir)
    x = x or ("steps" if "steps" in columns else "generation")
    xs = x_values(columns, x, log_dir)
    charts = [k for k in columns if k.startswith("charts/")]
    if not charts:
        raise PlotError(f"{str(log_dir / 'progress.csv')!r} has no charts/ columns")
    main = next((k for k in RETURNS if k in columns), None)
    lines = [line for line in RETURNS.get(main, []) if line[0] in columns]
    drawn = {line[0] for line in lines}
    constants, panels = [], []
    for key in [k for k in charts if k not in drawn] + ([SPEED] if SPEED in columns else []):
        value = constant(columns[key])
        if value is None:
            panels.append(key)
        else:
            constants.append(f"{_label(key)} {_short(value)}")
    if SPEED in panels:  # the speed comes second, right under the return
        panels.remove(SPEED)
        panels.insert(0, SPEED)
    env, scale = game_scale(log_dir)
    plt = _pyplot()
    from matplotlib.ticker import MaxNLocator

    n = (1 if lines else 0) + len(panels)
    heights = ([2.0] if lines else []) + [1.0] * len(panels)
    fig, axes = plt.subplots(
        max(n, 1), 1, figsize=(7, 1.4 + 1.9 * sum(heights)), sharex=True, squeeze=False,
        gridspec_kw={"height_ratios": heights or [1.0]},
    )  # fmt: skip
    axes = list(axes[:, 0])
    if lines:
        ax = axes[0]
        for key, label, width in lines:
            ax.plot(xs, columns[key], lw=width, label=label)
        if scale is not None:
            low, high = scale
            pad = 0.04 * (high - low)
            ax.set_ylim(low - pad, high + pad)
            if low < 0 < high:
                ax.axhline(0, color="black", lw=0.8, ls="--")
        ax.set_ylabel("return" if main == "charts/mean_return_100" else "fitness")
        ax.legend(loc="upper left", fontsize=8, frameon=False)
    for ax, key in zip(axes[1 if lines else 0 :], panels, strict=True):
        ax.plot(xs, columns[key], lw=1.2)
        ax.set_ylabel(_label(key), fontsize=8)
    for ax in axes:
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel(X_AXES[x][1])
    minutes = _minutes_axis(columns, xs, log_dir) if x == "steps" else None
    if minutes is not None:  # the steps axis ends at the first and last rows: minutes
        axes[-1].set_xlim(minutes[2])  # cannot be read off past them
        top = axes[0].secondary_xaxis("top", functions=minutes[:2])
        top.set_xlabel("minutes of training", fontsize=8)
        top.xaxis.set_major_locator(MaxNLocator(6))
    title = f"{log_dir}" + (f" ({env})" if env else "")
    if constants:
        title += "\nconstant: " + ", ".join(constants)
    axes[0].set_title(title, fontsize=9, pad=20 if minutes is not None else 6)
    fig.tight_layout()
    return _save(fig, out)


LABELS = {  # panel labels that the column name alone would not make clear
    SPEED: "agent steps per s",
    "charts/mean_return": "return, this update's games",
    "charts/mean_length": "length, this update's games",
    "charts/games": "games ended, this update",
}


def _label(key: str) -> str:
    return LABELS.get(key) or key.split("/", 1)[1].replace("_", " ")


def _minutes_axis(columns, steps: list[float], where: Path):
    """Functions that turn agent steps into minutes of training and back, by interpolating
    between the run's rows, and the steps of the first and last rows; None where the run
    has no time column or too few rows."""
    import numpy as np

    if "time/elapsed_s" not in columns:
        return None
    minutes = np.asarray(x_values(columns, "minutes", where), dtype=float)
    steps = np.asarray(steps, dtype=float)
    keep = ~(np.isnan(minutes) | np.isnan(steps))
    minutes, steps = minutes[keep], steps[keep]
    if len(steps) < 2 or np.any(np.diff(steps) <= 0) or np.any(np.diff(minutes) < 0):
        return None

    def through(x, xp, fp):  # np.interp, carried on straight past both ends
        x = np.asarray(x, dtype=float)
        y = np.interp(x, xp, fp)
        low, high = x < xp[0], x > xp[-1]
        y[low] = fp[0] + (x[low] - xp[0]) * (fp[1] - fp[0]) / max(xp[1] - xp[0], 1e-12)
        y[high] = fp[-1] + (x[high] - xp[-1]) * (fp[-1] - fp[-2]) / max(xp[-1] - xp[-2], 1e-12)
        return y

    return (
        lambda s: through(s, steps, minutes),
        lambda m: through(m, minutes, steps),
        (steps[0], steps[-1]),
    )


def compare(runs: list[str | Path], out: str | Path | None = None, x: str | None = None) -> Path:
    """Save a PNG comparing runs: a panel per main metric (``MAIN_METRICS`` that any run
    has) and per x axis, one line per run labelled by its folder; returns its path.

    Args:
        runs: log dirs, each with a ``progress.csv``; ParallelPG and PrunedGA runs may mix
            (each is drawn in the panels of its own metrics).
        out: the PNG to write (default ``compare.png`` in the current folder).
        x: an ``X_AXES`` key, or None for two columns of panels: against steps (generations
            if every run is a GA) and against minutes.

    Raises:
        PlotError: see :func:`read_progress` and :func:`x_values`; or no run has a main
            metric; or ``out`` is a folder or cannot be written.
    """
    runs = [Path(r) for r in runs]
    out = Path(out) if out else Path("compare.png")
    _check_out(out)
    data = [read_progress(r) for r in runs]
    metrics = [m for m in MAIN_METRICS if any(m in d for d in data)]
    if not metrics:
        raise PlotError(f"none of the runs has any of the columns {', '.join(MAIN_METRICS)}")
    if x is None:
        x_names = ["generation" if all("generation" in d for d in data) else "steps", "minutes"]
    else:
        x_names = [x]
    xs = {}  # (run index, x axis) -> the run's x coordinates; checked before drawing
    for i, (run, columns) in enumerate(zip(runs, data, strict=True)):
        for name in x_names:
            xs[i, name] = x_values(columns, name, run)
    plt = _pyplot()
    fig, axes = plt.subplots(
        len(metrics),
        len(x_names),
        figsize=(5.5 * len(x_names), 1.2 + 2.4 * len(metrics)),
        sharex="col",
        squeeze=False,
    )
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    labels = run_labels(runs)
    for row, metric in enumerate(metrics):
        for col, name in enumerate(x_names):
            ax = axes[row, col]
            for i, d in enumerate(data):
                if metric in d:
                    colour = colours[i % len(colours)]
                    ax.plot(xs[i, name], d[metric], color=colour, label=labels[i], lw=1.2)
            ax.grid(alpha=0.3)
            if col == 0:
                ax.set_ylabel(metric.removeprefix("charts/").replace("_", " "))
            if row == len(metrics) - 1:
                ax.set_xlabel(X_AXES[name][1])
    handles = {}  # one legend entry per run, from whichever panels drew it
    for ax in axes.flat:
        for h, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, h)
    fig.legend(
        [handles[label] for label in labels if label in handles],
        [label for label in labels if label in handles],
        loc="upper center",
        ncol=min(len(labels), 4),
        fontsize=9,
        frameon=False,
    )
    top = 1 - 0.35 * math.ceil(len(labels) / 4) / fig.get_figheight()
    fig.tight_layout(rect=(0, 0, 1, top))
    return _save(fig, out)


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m pgmpi.plot", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "runs",
        type=Path,
        nargs="*",
        metavar="RUN",
        help="log dir(s) holding progress.csv: one draws its return, speed and other charts, "
        "several are compared",
    )
    p.add_argument(
        "--timeline", type=Path, metavar="LOG_DIR", help="draw LOG_DIR/trace.csv instead"
    )
    p.add_argument(
        "--out",
        type=Path,
        help="PNG to write (LOG_DIR/progress.png, compare.png for several runs, or "
        "LOG_DIR/timeline.png)",
    )
    p.add_argument(
        "--x",
        choices=list(X_AXES),
        help="x axis (one run: steps, minutes along the top; several: steps, or "
        "generation if all are GAs, and minutes side by side)",
    )
    p.add_argument("--last", type=int, help="timeline: only the last N updates (all)")
    args = p.parse_args()
    if bool(args.runs) == (args.timeline is not None):
        p.error("give either RUN [RUN ...] or --timeline LOG_DIR")
    if args.last is not None and (args.timeline is None or args.last < 1):
        p.error("--last N needs --timeline and N >= 1")
    if args.x is not None and args.timeline is not None:
        p.error("--x is for progress plots, not --timeline")
    try:
        if args.out is not None:
            _check_out(args.out)  # the timeline's --out too
        if args.timeline is not None:
            print(timeline(args.timeline, args.out, args.last))
        elif len(args.runs) == 1:
            print(plot(args.runs[0], args.out, args.x))
        else:
            print(compare(args.runs, args.out, args.x))
    except PlotError as e:
        print(f"{p.prog}: error: {e}", file=sys.stderr)
        sys.exit(2)  # as argparse's own errors


if __name__ == "__main__":
    main()
