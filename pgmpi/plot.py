"""Plot a run: ``python -m pgmpi.plot LOG_DIR [--out FILE.png]``, or its timeline:
``python -m pgmpi.plot --timeline LOG_DIR [--out FILE.png] [--last N]``.

The first draws every ``charts/`` column of ``progress.csv`` against the episode (or
generation) count, one panel each (default ``LOG_DIR/progress.png``). The second draws
``trace.csv`` (written with ``trace=True`` / ``--trace``) like a profiler's timeline: one
row per rank, a coloured bar for each phase of each update (playing, computing gradients,
waiting at the Allreduce, applying the update) at the seconds it happened on that rank's
clock (default ``LOG_DIR/timeline.png``); the gaps between updates are logging and the
gathering of every rank's games. Each call to ``train`` (and each resumed run) restarts
the clock at 0; the plot puts them end to end. Needs matplotlib (``pip install
pgmpi[plot]``); imported only here, never by ``import pgmpi``.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path


def plot(log_dir: str | Path, out: str | Path | None = None) -> Path:
    """Save a PNG of ``log_dir/progress.csv``'s ``charts/`` columns; returns its path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    log_dir = Path(log_dir)
    rows = list(csv.DictReader(open(log_dir / "progress.csv", newline="")))
    if not rows:
        raise SystemExit(f"{log_dir / 'progress.csv'} has no rows yet")
    x_key = "episodes" if "episodes" in rows[0] else "generation"
    charts = [k for k in rows[0] if k.startswith("charts/")]
    fig, axes = plt.subplots(
        len(charts), 1, figsize=(7, 2.4 * len(charts)), sharex=True, squeeze=False
    )
    x = [float(r[x_key]) for r in rows]
    for ax, key in zip(axes[:, 0], charts, strict=True):
        ax.plot(x, [float(r[key]) for r in rows])
        ax.set_ylabel(key.removeprefix("charts/").replace("_", " "))
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel(x_key)
    axes[0, 0].set_title(str(log_dir))
    fig.tight_layout()
    out = Path(out) if out else log_dir / "progress.png"
    fig.savefig(out, dpi=100)
    return out


PHASES = (  # trace.csv column, legend, colour
    ("play_s", "playing", "tab:green"),
    ("gradient_s", "gradients", "tab:blue"),
    ("wait_s", "waiting at the Allreduce", "tab:red"),
    ("update_s", "applying the update", "tab:orange"),
)


def read_trace(log_dir: str | Path) -> list[dict]:
    """``log_dir/trace.csv`` as dicts: ``update`` and ``rank`` ints, the rest floats."""
    path = Path(log_dir) / "trace.csv"
    if not path.exists():
        raise SystemExit(f"no {path}: train with trace=True (examples: --trace)")
    with open(path, newline="") as f:
        rows = [
            {k: int(v) if k in ("update", "rank") else float(v) for k, v in r.items()}
            for r in csv.DictReader(f)
        ]
    if not rows:
        raise SystemExit(f"{path} has no rows yet")
    return rows


def timeline(log_dir: str | Path, out: str | Path | None = None, last: int | None = None) -> Path:
    """Save ``log_dir/trace.csv`` as a per-rank timeline PNG (of the last ``last`` updates,
    or all); returns its path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    log_dir = Path(log_dir)
    rows = read_trace(log_dir)
    if last is not None:
        first = max(r["update"] for r in rows) - last + 1
        rows = [r for r in rows if r["update"] >= first]
    # start_s restarts at 0 with every call to train (and on resuming): join them end to end.
    offset, end, previous = 0.0, 0.0, float("-inf")
    for u in sorted({r["update"] for r in rows}):
        mine = [r for r in rows if r["update"] == u]
        first = min(r["start_s"] for r in mine)
        offset, previous = (end if first < previous else offset), first
        for r in mine:
            r["at"] = r["start_s"] + offset
            end = max(end, r["at"] + sum(r[key] for key, _, _ in PHASES))
    ranks = sorted({r["rank"] for r in rows})
    fig, ax = plt.subplots(figsize=(11, 1.6 + 0.6 * len(ranks)))
    for rank in ranks:
        mine = [r for r in rows if r["rank"] == rank]
        at = [r["at"] for r in mine]
        for key, label, colour in PHASES:
            bars = [(a, r[key]) for a, r in zip(at, mine, strict=True)]
            ax.broken_barh(
                bars, (rank - 0.4, 0.8), color=colour, label=label if rank == 0 else None
            )
            at = [a + r[key] for a, r in zip(at, mine, strict=True)]
    ax.set_yticks(ranks, [f"rank {r}" for r in ranks])
    ax.invert_yaxis()
    ax.set_xlabel("seconds of training (each rank's clock; calls to train end to end)")
    updates = sorted({r["update"] for r in rows})
    ax.set_title(f"{log_dir.name}: {len(ranks)} rank(s), updates {updates[0]}-{updates[-1]}")
    fig.legend(loc="lower center", ncol=4, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.12 / (1 + 0.5 * len(ranks)), 1, 1))
    out = Path(out) if out else log_dir / "timeline.png"
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m pgmpi.plot", description=__doc__.split("\n\n")[0])
    p.add_argument("log_dir", type=Path, nargs="?", help="folder holding progress.csv")
    p.add_argument(
        "--timeline", type=Path, metavar="LOG_DIR", help="draw LOG_DIR/trace.csv instead"
    )
    p.add_argument(
        "--out", type=Path, help="PNG to write (LOG_DIR/progress.png or LOG_DIR/timeline.png)"
    )
    p.add_argument("--last", type=int, help="timeline: only the last N updates (all)")
    args = p.parse_args()
    if (args.log_dir is None) == (args.timeline is None):
        p.error("give either LOG_DIR or --timeline LOG_DIR")
    if args.last is not None and (args.timeline is None or args.last < 1):
        p.error("--last N needs --timeline and N >= 1")
    if args.timeline is not None:
        print(timeline(args.timeline, args.out, args.last))
    else:
        print(plot(args.log_dir, args.out))


if __name__ == "__main__":
    main()
