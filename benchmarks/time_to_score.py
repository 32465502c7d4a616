"""Time to score on Pong: games, agent steps, minutes and core-hours to each 100-game mean.

    python benchmarks/time_to_score.py --run fast:0 fast:1 [--minutes 15]   # sticky actions
    python benchmarks/time_to_score.py --run fast:0 --deterministic
    python benchmarks/time_to_score.py            # only read the runs already in runs/tts
    python benchmarks/time_to_score.py --docs     # and redraw docs/figures/time_to_score.png

``--run PRESET:SEED ...`` trains each from scratch, one after the other, on ``--ranks`` (2)
ranks: ``mpirun -n 2 python examples/pong.py --preset PRESET --seed SEED --minutes M
--target-return T --log-dir runs/tts/PRESET-PROTOCOL[TAG]-SEED`` (``--pin`` binds each rank
to a core of its own, the same bits, not reliably faster here: docs/cluster.md; the command
heads the run's train.log; T: 15 unless told;
PROTOCOL: ``sticky``, ALE v5's sticky actions, repeat_action_probability 0.25 as Machado et
al. 2018 set the standard, or ``deterministic`` with ``--deterministic``); any flags after
``--`` go to examples/pong.py as well (a screen: ``--tag=-h100 -- --hidden-size 100``).
It then evaluates
the final policy over 100 new games under both protocols, sampling its actions as it
trained and taking the most likely one (greedy): a policy that beats Pong beats it under
both, and a score cannot come from memorising a deterministic game. Each evaluation is the
mean with its 95% confidence interval (1.96 standard errors). Time the runs on an otherwise
idle machine.

Then, for every run in runs/tts, prints the table of the first update at which the mean of
the last 100 games reached -15, -10, -5, 0, +10 and +15 (core-hours = minutes x ranks / 60),
writes benchmarks/results/time_to_score.json and runs/benchmarks/time_to_score.png (the
100-game mean against wall minutes and against agent steps, every run on one figure;
``--out PATH`` elsewhere, ``--docs`` to docs/figures/time_to_score.png, the tracked one the
docs/benchmarks.md shows). ``--docs`` also keeps every run it drew, thinned, in
benchmarks/recordings/time_to_score.json, so the table and figure outlive runs/ (not tracked): a
kept run missing from runs/tts is listed as "(kept)" and drawn from there.
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
RUNS = ROOT / "runs" / "tts"
FIGURE = "time_to_score.png"
KEPT = common.RECORDINGS / "time_to_score.json"
THRESHOLDS = (-15, -10, -5, 0, 10, 15)


def evaluate(checkpoint: str, games: int, live: bool = False) -> None:
    """Under mpirun: the final policy over ``games`` new games under each protocol, sampled
    and greedy: the mean, its 95% confidence interval and the games won. A run with a frame
    skip other than ALE v5's 4 (the karpathy preset's Pong-v0) also plays its own game.
    ``live``: the live parameters instead of their running average (what evaluate() plays)."""
    import numpy as np

    from pgmpi import ParallelPG, mpi

    agent = ParallelPG.load(checkpoint, quiet=True)
    out, protocols = {}, [("sticky", True), ("deterministic", False)]
    if agent.config["frame_skip"] != 4:  # the karpathy preset: its own game too (Pong-v0's)
        protocols.append(("as_trained", None))
    for protocol, sticky in protocols:
        for policy, greedy in (("sampled", False), ("greedy", True)):
            mean = float(agent.evaluate(games, greedy=greedy, sticky=sticky, live=live))
            r = agent.evaluation_returns
            half = 1.96 * float(r.std(ddof=1)) / np.sqrt(len(r))
            out[f"{protocol}_{policy}"] = {
                "mean": mean,
                "ci95": [mean - half, mean + half],
                "won": int((r > 0).sum()),
                "games": games,
            }
    if mpi.is_root():
        print(json.dumps(out), flush=True)


def first_reached(rows: list[dict], ranks: int) -> dict:
    """For each threshold, the first row where the 100-game mean reached it (or None)."""
    out = {}
    for t in THRESHOLDS:
        row = next(
            (r for r in rows if int(r["episodes"]) >= 100 and float(r["mean100"]) >= t), None
        )
        out[t] = row and {
            "games": int(row["episodes"]),
            "steps": int(row["steps"]),
            "minutes": float(row["minutes"]),
            "core_hours": float(row["minutes"]) * ranks / 60,
        }
    return out


def read(run: Path) -> list[dict]:
    """The run's rows; minutes count on across a resume (whose seconds start again at 0)."""
    rows, offset, last = [], 0.0, 0.0
    for r in csv.DictReader(open(run / "progress.csv")):
        seconds = float(r["time/elapsed_s"])
        if seconds < last:  # resumed: go on from the last row before it
            offset += last
        last = seconds
        rows.append({
            "episodes": r["episodes"], "steps": r["steps"],
            "mean100": r["charts/mean_return_100"], "minutes": (offset + seconds) / 60,
        })  # fmt: skip
    return rows


def plot(curves: dict[str, list[dict]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for name, rows in sorted(curves.items()):
        rows = [r for r in rows if int(r["episodes"]) >= 100]
        y = [float(r["mean100"]) for r in rows]
        style = "-" if "sticky" in name else "--"
        a.plot([r["minutes"] for r in rows], y, style, label=common.run_label(name))
        b.plot([int(r["steps"]) / 1e6 for r in rows], y, style)
    a.set(xlabel="wall minutes on 2 ranks", ylabel="mean return of the last 100 games")
    b.set(xlabel="agent steps (millions)")
    for ax in (a, b):
        ax.axhline(0, c="grey", lw=0.8)
        ax.grid(alpha=0.3)
    fig.legend(*a.get_legend_handles_labels(), loc="upper center", bbox_to_anchor=(0.5, 0.0),
               ncol=2, fontsize=8)  # fmt: skip
    fig.suptitle("Pong from pixels: time to score (solid: sticky actions; dashed: deterministic)")
    common.save_figure(fig, path)


def main() -> None:
    argv, extra = common.split_extra(sys.argv[1:])
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run", nargs="*", default=[], metavar="PRESET:SEED", help="train these")
    p.add_argument("--minutes", type=float, default=30, help="limit per run (30)")
    p.add_argument("--ranks", type=int, default=2, help="ranks per run (2)")
    p.add_argument("--games", type=int, default=100, help="evaluation games per mode (100)")
    p.add_argument(
        "--target-return", type=float, default=15, help="stop a run at this 100-game mean (15)"
    )
    p.add_argument("--tag", default="", help="runs go to runs/tts/PRESET-PROTOCOL[TAG]-SEED")
    p.add_argument("--deterministic", action="store_true", help="train without sticky actions")
    p.add_argument("--pin", action="store_true", help="bind each rank to a core of its own")
    p.add_argument("--evaluate", help=argparse.SUPPRESS)
    p.add_argument("--live", action="store_true", help=argparse.SUPPRESS)
    common.add_figure_flags(p, FIGURE)
    args = p.parse_args(argv)
    if args.evaluate:
        return evaluate(args.evaluate, args.games, args.live)

    for spec in args.run:
        preset, seed = spec.split(":")
        protocol = "deterministic" if args.deterministic else "sticky"
        log_dir = RUNS / f"{preset}-{protocol}{args.tag}-{seed}"
        pong = [str(ROOT / "examples" / "pong.py"), "--preset", preset, "--seed", seed]
        limits = ["--minutes", str(args.minutes), "--target-return", str(args.target_return)]
        limits += ["--deterministic"] if args.deterministic else []
        limits += extra
        train = [*pong, *limits, "--log-dir", str(log_dir)]
        command = common.mpirun_command(args.ranks, train, args.pin)
        print(f"training {spec}: {' '.join(command)}", flush=True)
        out = common.mpirun(args.ranks, train, timeout=args.minutes * 60 + 600, pin=args.pin)
        (log_dir / "train.log").write_text(f"# {' '.join(command)}\n{out}")
        print(f"evaluating {spec} ...", flush=True)
        score = common.mpirun(
            args.ranks,
            [__file__, "--evaluate", str(log_dir / "checkpoint.npz"), "--games", str(args.games)],
            timeout=3600,
        )
        (log_dir / "evaluation.json").write_text(score.strip().splitlines()[-1] + "\n")

    runs = sorted(d for d in RUNS.glob("*") if (d / "progress.csv").exists())
    summary = kept_runs()  # the runs the docs figure drew, where runs/tts lacks them
    for run in runs:
        rows = read(run)
        evaluation = run / "evaluation.json"
        summary[run.name] = {
            "reached": first_reached(rows, args.ranks),
            "final": {k: float(v) for k, v in rows[-1].items()},
            "evaluation": json.loads(evaluation.read_text()) if evaluation.exists() else None,
            "rows": thin(rows),
        }
    if not summary:
        return print(f"no runs in {RUNS}: pass --run PRESET:SEED")
    head = (
        "| run | "
        + " | ".join(f"to {t:+d}" for t in THRESHOLDS)
        + " | final eval, sticky (sampled / greedy) | deterministic (sampled / greedy)"
        + " | its own game, if not ALE v5's (sampled / greedy) |"
    )
    print(head + "\n|" + "---|" * (len(THRESHOLDS) + 4))
    for name, run in sorted(summary.items()):
        cells = [
            f"{r['games']:,} g, {r['steps'] / 1e6:.1f} M, {r['minutes']:.1f} min, "
            f"{r['core_hours']:.2f} ch"
            if r
            else "not reached"
            for r in run["reached"].values()
        ]
        evaluation = run["evaluation"]
        ev = [
            " / ".join(
                "{mean:+.1f} [{0:+.1f}, {1:+.1f}]".format(*e["ci95"], mean=e["mean"])
                for e in (evaluation[f"{protocol}_sampled"], evaluation[f"{protocol}_greedy"])
            )
            if evaluation and f"{protocol}_sampled" in evaluation
            else "-"
            for protocol in ("sticky", "deterministic", "as_trained")
        ]
        kept = "" if (RUNS / name).is_dir() else " (kept)"
        print(f"| {name}{kept} | " + " | ".join(cells + ev) + " |")
    figure = common.figure_path(args, FIGURE)
    plot({name: run["rows"] for name, run in summary.items()}, figure)
    if args.docs:
        KEPT.write_text(json.dumps(summary, separators=(",", ":")) + "\n")
    result = {"machine": common.machine(), "ranks": args.ranks, "runs": summary}
    print("wrote", common.write("time_to_score", result), "and", figure)


def thin(rows: list[dict], most: int = 400) -> list[dict]:
    """At most about ``most`` of a run's rows, evenly spaced, the last one kept, as numbers."""
    kept = rows[:: max(1, len(rows) // most)] + rows[-1:]
    return [{k: round(float(v), 3) for k, v in r.items()} for r in kept]


def kept_runs() -> dict:
    """The runs the docs figure drew when ``--docs`` last ran, kept in benchmarks/recordings
    (runs/ is not tracked, so a new checkout has none of them): name -> reached, final,
    evaluation and thinned rows. A run in runs/tts replaces its kept copy."""
    return json.loads(KEPT.read_text()) if KEPT.exists() else {}


if __name__ == "__main__":
    main()
