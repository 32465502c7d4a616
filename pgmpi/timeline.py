"""One run's ``trace.csv`` drawn like a profiler's timeline (``python -m pgmpi.plot
--timeline LOG_DIR``): a row per rank, a coloured bar for each phase of each update or
generation at the seconds it happened on that rank's clock. Needs matplotlib."""

from __future__ import annotations

import csv
from pathlib import Path

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
    offset = 0.0
    end = 0.0
    previous = float("-inf")
    for u in sorted({r["update"] for r in rows}):
        mine = [r for r in rows if r["update"] == u]
        first = min(r["start_s"] for r in mine)
        offset = end if first < previous else offset
        previous = first
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
