"""Plot a run's ``progress.csv``: ``python -m pgmpi.plot LOG_DIR [--out FILE.png]``.

Draws every ``charts/`` column against the episode (or generation) count, one panel each,
and saves a PNG (default ``LOG_DIR/progress.png``). Needs matplotlib (``pip install
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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("log_dir", type=Path, help="folder holding progress.csv")
    p.add_argument("--out", type=Path, help="PNG to write (LOG_DIR/progress.png)")
    args = p.parse_args()
    print(plot(args.log_dir, args.out))


if __name__ == "__main__":
    main()
