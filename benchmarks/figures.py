"""Every figure the docs use, drawn by one command from what is kept: no new measurement.

    python benchmarks/figures.py            # into runs/benchmarks/
    python benchmarks/figures.py --docs     # into docs/figures/: regenerate the docs' figures
    python benchmarks/figures.py --quick --out-dir /tmp/figures   # a tiny traced run, for a test

Writes, into ``--out-dir`` (runs/benchmarks; with ``--docs``, docs/figures, the tracked
figures docs/benchmarks.md and the tutorial show):

* ``time_to_score.png`` and ``slots_to_score.png``: the 100-game mean of the runs kept in
  benchmarks/recordings/ (time_to_score.json, slots_to_score.json: what
  ``benchmarks/time_to_score.py --docs`` and ``benchmarks/slots_to_score.py --docs`` drew
  last), and of any run in ``RUNS/tts`` (made by ``time_to_score.py --run ...``);
* the PrunedGA figures (``ga_scaling_generations.png``, ``ga_idle.png``, ``ga_scaling.png``,
  ``ga_scaling_run.png``, ``ga_scaling_late.png``), projected from the recordings kept in
  benchmarks/recordings/ (benchmarks/ga_figures.py);
* ``es_scaling.png``: ParallelES's idle share against ranks, projected from the recording
  kept in benchmarks/recordings/es_scaling_costs.npz (``benchmarks/es_scaling.py``);
* ``es_time_to_score.png``: ParallelES's evaluated snapshots and return curves kept in
  benchmarks/recordings/es_time_to_score.json (``benchmarks/es_time_to_score.py``);
* ``es_screens.png``: ParallelES's screens, each run's smoothed current return, kept in
  benchmarks/recordings/es_screens.json by ``benchmarks/es_screens.py RUN_DIR ... --docs``;
* ``ga_time_to_score.png``: PrunedGA's BipedalWalker runs (each evaluated best network's
  100-episode mean and the training curve) that ``benchmarks/ga_time_to_score.py --docs``
  kept in benchmarks/recordings/ga_time_to_score.json, and ``ga_screens.png``: the walker
  screens of docs/screens.md, kept in benchmarks/recordings/ga_screens.json, and
  ``ga_screens_rate.png``, its mutation-rate and width screens (ga_screens_rate.json), and
  ``ga_hardcore.png``, the BipedalWalkerHardcore-v3 hour (ga_hardcore.json);
* ``seed_sweep.png``: the Pong seeds' curves that ``benchmarks/seed_sweep.py --docs`` kept
  in benchmarks/recordings/seed_sweep.json (and ``seed_sweep-NAME.png``, each screen that
  ``seed_sweep.py --screen`` kept, beside them), and ``seed_diagnostics.png``: their diagnostics,
  kept by ``seed_diagnostics.py --docs`` in benchmarks/recordings/seed_diagnostics.json;
* ``scaling.png``: the projection in benchmarks/recordings/scaling.json, kept by
  ``benchmarks/scaling.py --docs`` (or a newer ``RESULTS/scaling.json``);
* ``oversubscription.png``: agent steps/s per rank with BLAS threads capped and uncapped,
  from benchmarks/recordings/throughput.json, kept by ``benchmarks/throughput.py --docs``
  (or a newer ``RESULTS/throughput.json``);
* ``timeline.png``: the per-rank timeline of a traced run's ``trace.csv`` (``--trace DIR``,
  which ``--docs`` keeps in benchmarks/recordings/timeline/, or the one kept there; with
  ``--quick``, a tiny traced Pong run on 2 ranks that this script starts).

A figure whose input is missing is skipped with a line saying so and how to make it.
Figures of timings are only as clean as the machine they were measured on.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402
import es_scaling  # noqa: E402
import es_screens  # noqa: E402
import es_time_to_score  # noqa: E402
import ga_figures  # noqa: E402
import ga_time_to_score  # noqa: E402
import scaling  # noqa: E402
import seed_diagnostics  # noqa: E402
import seed_sweep  # noqa: E402
import slots_to_score  # noqa: E402
import time_to_score  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def timeline_run(work: Path) -> Path:
    """Train Pong on 2 ranks with tracing for 2 tiny updates; returns the log folder."""
    log_dir = work / "timeline"
    size = ["--updates", "2", "--slots", "4", "--steps-per-slot", "64", "--hidden-size", "16"]
    pong = [str(ROOT / "examples" / "pong.py"), *size, "--trace", "--log-dir", str(log_dir)]
    try:
        common.mpirun(2, [*pong, "--checkpoint-every", "1000"], timeout=600)
    except subprocess.CalledProcessError as e:
        raise SystemExit(f"the traced Pong run failed:\n{e.stderr[-3000:]}") from None
    return log_dir


def oversubscription(throughput: dict, path: Path) -> None:
    """Bars of agent steps/s per rank, per rank count and BLAS cap, for pgmpi's sparse
    first layer and the dense float64 one of the original post."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    configs = sorted(throughput["configs"], key=lambda c: (c["ranks"], -c["capped"]))
    labels = [
        f"{c['ranks']} rank(s)\n{c['blas_threads']} BLAS thread(s) each"
        + ("" if c["capped"] else "\n(uncapped)")
        for c in configs
    ]
    fig, ax = plt.subplots(figsize=(9, 4))
    x = range(len(configs))
    for shift, key, name in (
        (-0.2, "pg_steps_per_s_per_rank", "pgmpi (sparse first layer)"),
        (0.2, "dense_float64_steps_per_s_per_rank", "dense float64 first layer (the post's)"),
    ):
        ax.bar([i + shift for i in x], [c[key] for c in configs], width=0.4, label=name)
    ax.set_xticks(list(x), labels, fontsize=8)
    ax.set_ylabel("agent steps/s per rank while playing")
    m = throughput["machine"]
    ax.set_title(
        f"Pong on {m['cores']} cores ({m['cpu']}): per-rank speed when ranks x BLAS threads "
        "exceed the cores",
        fontsize=10,
    )
    top = max(
        max(c["pg_steps_per_s_per_rank"], c["dense_float64_steps_per_s_per_rank"]) for c in configs
    )
    ax.set_ylim(0, 1.3 * top)  # room for the legend above the bars
    ax.legend(fontsize=8, loc="upper right")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="a tiny traced run for the timeline")
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--out-dir", type=Path, default=common.FIGURES, help="PNGs here (runs/benchmarks)"
    )
    where.add_argument(
        "--docs",
        action="store_true",
        help="PNGs into docs/figures (tracked): regenerate the docs' figures",
    )
    p.add_argument("--runs", type=Path, default=ROOT / "runs", help="holds tts/ (runs)")
    p.add_argument(
        "--results", type=Path, default=common.RESULTS, help="benchmark JSON (benchmarks/results)"
    )
    p.add_argument("--trace", type=Path, help="a traced run's log folder, for the timeline")
    p.add_argument(
        "--work-dir", type=Path, help="for the run --quick starts (RUNS/figures)", default=None
    )
    args = p.parse_args()
    if args.docs:
        args.out_dir = common.DOCS_FIGURES
    args.out_dir.mkdir(parents=True, exist_ok=True)
    made, skipped = [], []

    from pgmpi.timeline import timeline

    traced = args.trace or common.RECORDINGS / "timeline"
    if args.quick:
        traced = timeline_run(args.work_dir or args.runs / "figures")
    if (traced / "trace.csv").exists():
        made.append(timeline(traced, args.out_dir / "timeline.png"))
        if args.docs and args.trace:  # keep the trace the docs' figure is drawn from
            (common.RECORDINGS / "timeline").mkdir(exist_ok=True)
            shutil.copyfile(traced / "trace.csv", common.RECORDINGS / "timeline" / "trace.csv")
    else:
        skipped.append(
            "timeline.png: no trace (mpirun -n 2 python examples/pong.py --updates 6 --trace "
            "--log-dir DIR, then --trace DIR)"
        )

    tts = sorted(d for d in (args.runs / "tts").glob("*") if (d / "progress.csv").exists())
    kept = {} if args.quick else time_to_score.kept_runs()
    curves = {name: run["rows"] for name, run in kept.items()}
    curves.update({d.name: time_to_score.read(d) for d in tts})
    if not curves and args.quick:
        curves = {"quick timeline run": time_to_score.read(traced)}
    if curves:
        time_to_score.plot(curves, args.out_dir / "time_to_score.png")
        made.append(args.out_dir / "time_to_score.png")
    else:
        skipped.append(
            f"time_to_score.png: no runs in {args.runs / 'tts'} "
            "(python benchmarks/time_to_score.py --run fast:0)"
        )
    if not args.quick:  # the figures of kept runs and recordings
        slots = slots_to_score.kept_runs()
        slots_to_score.plot(
            {n: r["rows"] for n, r in slots.items()}, args.out_dir / "slots_to_score.png"
        )
        made.append(args.out_dir / "slots_to_score.png")
        made += ga_figures.draw_docs(args.out_dir)
        if es_scaling.KEPT.exists():
            made.append(
                es_scaling.plot(dict(np.load(es_scaling.KEPT)), args.out_dir / "es_scaling.png")
            )
        else:
            skipped.append("es_scaling.png: no kept recording (python benchmarks/es_scaling.py)")
        for kept, png, how in (
            (es_time_to_score, "es_time_to_score.png", "es_time_to_score.py"),
            (es_screens, "es_screens.png", "es_screens.py RUNS ... --docs"),
        ):  # ParallelES's figures drawn from a kept JSON result
            if kept.KEPT.exists():
                made.append(kept.plot(json.loads(kept.KEPT.read_text()), args.out_dir / png))
            else:
                skipped.append(f"{png}: no kept result (python benchmarks/{how})")

        made += seed_sweep.draw_kept(args.out_dir) + seed_diagnostics.draw_kept(args.out_dir)
        made += ga_time_to_score.draw_kept(args.out_dir)

    for name, draw in (
        ("scaling", lambda r, out: scaling.plot(r["projection"], out)),
        ("throughput", oversubscription),
    ):
        # What --docs kept (tracked), unless a newer result is in --results.
        sources = [args.results / f"{name}.json", common.RECORDINGS / f"{name}.json"]
        sources = sorted((p for p in sources if p.exists()), key=lambda p: -p.stat().st_mtime)
        figure = args.out_dir / ("oversubscription.png" if name == "throughput" else f"{name}.png")
        if sources:
            draw(json.loads(sources[0].read_text()), figure)
            made.append(figure)
        else:
            skipped.append(f"{figure.name}: no {name}.json (python benchmarks/{name}.py --docs)")

    for path in made:
        print(f"wrote {path}")
    for why in skipped:
        print(f"skipped: {why}")


if __name__ == "__main__":
    main()
