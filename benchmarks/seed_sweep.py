"""Seed sweep on Pong: N seeds with the same settings, each cut at a budget of agent steps.

    python benchmarks/seed_sweep.py --run 0 1 2 3 4            # today's default, 3 M steps each
    python benchmarks/seed_sweep.py --run 0 1 2 3 4 --tag=-gae -- --value-baseline 0.1
    python benchmarks/seed_sweep.py                     # only read the runs already in runs/sweep
    python benchmarks/seed_sweep.py --seeds 0 1 3       # only these (e.g. while others still run)
    python benchmarks/seed_sweep.py --evaluate          # and the median seed's policy, 100 games
    python benchmarks/seed_sweep.py --docs              # and redraw docs/figures/seed_sweep.png
    python benchmarks/seed_sweep.py --tag=-noop --screen   # a screen, against the kept default

``--run SEED ...`` trains each seed from scratch: ``mpirun -n RANKS python examples/pong.py
--preset PRESET --seed SEED --slots SLOTS --updates U --checkpoint-every 10 --log-dir
runs/sweep/TAG-SEED`` (TAG: PRESET-PROTOCOL plus ``--tag``, as in time_to_score.py; U: the
budget in updates of SLOTS x 512 agent steps, rounded up; flags after ``--`` go to
examples/pong.py), ``--parallel`` runs at once (cores / ranks unless told); the command
heads runs/sweep/TAG-SEED.log, the run's output. A run already in its log dir is resumed
from its checkpoint (``--resume``), or left alone if it played the budget. With the slot
count fixed a run computes the same bits on any rank count (README, Guarantees), so seeds run
as 1-rank processes side by side are the 2-rank runs a user would start, only not timed.

Then, for every run runs/sweep/TAG-SEED, it prints each seed's agent steps to a 100-game mean
of 0, +10 and +15 (the first update at which the mean of the last 100 games reached it, over
at least 100 games), "not reached within B" where the run ended (or was cut at the budget)
short of it, and the median and the worst over the seeds ("at least B" where a seed short of
the level leaves them unknown): agent steps, so a busy machine does not change the answer.
It writes benchmarks/results/seed_sweep[TAG].json and the figure runs/benchmarks/seed_sweep.png
(every seed's 100-game mean against agent steps, with their median and spread; ``--out
PATH`` elsewhere, ``--docs`` to docs/figures/seed_sweep.png).
``--evaluate`` plays the median seed's final policy (the median by steps to 0, then by final
100-game mean) over ``--games`` new games as trained (sampled, sticky) on 2 ranks, and keeps
the result in its log dir as evaluation.json (``--live``: its live parameters in place of
their running average, as evaluation-live.json), with the agent steps it had played: one of a
checkpoint the run has since gone on from is left out.

``--screen`` keeps the sweep as a screen: its curves thinned into
benchmarks/recordings/seed_sweep-NAME.json, and its figure, with the median and spread of the
kept default's sweep (benchmarks/recordings/seed_sweep.json) drawn beside its seeds, into
docs/figures/seed_sweep-NAME.png (``benchmarks/figures.py --docs`` redraws both kinds).
``--against NAME`` draws beside the seeds the median and spread of another kept sweep,
benchmarks/recordings/NAME.json (seed_sweep_before.json: the default before NOOP from 3 M and
the decay from 7.5 M), and ``--docs`` or ``--screen`` keeps the name so that a redraw does too.
``--runs-dir DIR`` reads (and ``--run`` trains) runs in DIR instead of runs/sweep.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402
import time_to_score  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "runs" / "sweep"
FIGURE = "seed_sweep.png"
KEPT = common.RECORDINGS / "seed_sweep.json"  # what --docs drew last: runs/ is not tracked
SCREEN = "seed_sweep-{}.json"  # what --screen kept of a screen's sweep, in RECORDINGS
LEVELS = (0, 10, 15)
STEPS_PER_SLOT = 512  # the fast preset's; an update is slots x this many agent steps


def played(run: Path) -> int:
    """Agent steps the run in ``run`` has logged (0 if none)."""
    rows = (
        list(csv.DictReader(open(run / "progress.csv"))) if (run / "progress.csv").exists() else []
    )
    return int(rows[-1]["steps"]) if rows else 0


def reached(rows: list[dict], budget: int) -> dict[int, int | None]:
    """For each level, the agent steps at which the 100-game mean first reached it within the
    budget, or None."""
    rows = [r for r in rows if int(r["steps"]) <= budget]
    first = time_to_score.first_reached(rows, ranks=1)  # the thresholds include LEVELS
    return {level: first[level] and first[level]["steps"] for level in LEVELS}


def median_and_worst(steps: list[int | None]) -> tuple[float | None, int | None]:
    """The median and the worst of the seeds' steps to a level; None (not reached) ranks after
    every number, and a median that needs one is None."""
    ranked = sorted(steps, key=lambda s: math.inf if s is None else s)
    n = len(ranked)
    middle = ranked[(n - 1) // 2 : n // 2 + 1]
    median = None if None in middle else statistics.mean(middle)
    return median, ranked[-1]


def known_within(seeds: dict[str, dict], level: int) -> dict[str, float]:
    """How far a median and a worst that did not reach ``level`` are known: the same
    statistics of each seed's lower bound, its steps to the level or, short of it, the steps
    it played (a seed stopped at its target played less, and says nothing of higher levels)."""
    level = str(level)
    bound = [s["steps_played"] if s["reached"][level] is None else s["reached"][level]
             for s in seeds.values()]  # fmt: skip
    ranked, n = sorted(bound), len(bound)
    return {"median": statistics.mean(ranked[(n - 1) // 2 : n // 2 + 1]), "worst": ranked[-1]}


def run_name(preset: str, deterministic: bool, tag: str) -> str:
    """A sweep's name, PRESET-PROTOCOL[TAG]: its runs are runs_dir/NAME-SEED."""
    return f"{preset}-{'deterministic' if deterministic else 'sticky'}{tag}"


def runs_of(runs_dir: Path, name: str) -> list[Path]:
    """The folders NAME-SEED in ``runs_dir``, by name: not those of a longer tag that starts
    with this one (a branch's NAME-decay-SEED)."""
    found = runs_dir.glob(f"{name}-*")
    return sorted((d for d in found if d.name[len(name) + 1 :].isdigit()), key=lambda d: d.name)


def evaluation_of(run: Path, steps: int) -> dict | None:
    """The run's evaluation.json if it is of the checkpoint at ``steps``, the run's last;
    None if there is none, or if the run has gone on since (said)."""
    path = run / "evaluation.json"
    ev = json.loads(path.read_text()) if path.exists() else None
    if ev and ev.get("steps") != steps:
        print(f"{path} is of an earlier checkpoint than the run's last: left out")
        return None
    return ev


def median_seed(seeds: dict[str, dict]) -> str:
    """The seed in the middle when ranked by steps to 0 (not reached last), then by the final
    100-game mean (higher first); with an even count, the lower-middle one."""

    def key(name):
        s = seeds[name]
        mean = s["final_mean100"]  # NaN before 100 games: last
        return (s["reached"]["0"] or math.inf, -mean if mean == mean else math.inf)

    return sorted(seeds, key=key)[(len(seeds) - 1) // 2]


def launch(seeds: list[str], args, extra: list[str]) -> None:
    """Train ``seeds``, ``args.parallel`` at a time, each resumed if its log dir has a run."""
    updates = math.ceil(args.budget / (args.slots * STEPS_PER_SLOT))
    pending, running = list(seeds), []
    while pending or running:
        while pending and len(running) < args.parallel:
            seed = pending.pop(0)
            log_dir = args.runs_dir / f"{args.name}-{seed}"
            if played(log_dir) >= updates * args.slots * STEPS_PER_SLOT:
                print(f"seed {seed}: already played the budget in {log_dir}", flush=True)
                continue
            train = [str(ROOT / "examples" / "pong.py"), "--preset", args.preset]
            train += ["--seed", seed, "--slots", str(args.slots), "--updates", str(updates)]
            train += ["--checkpoint-every", "10", "--log-dir", str(log_dir), *extra]
            train += ["--resume"] if (log_dir / "checkpoint.npz").exists() else []
            command = common.mpirun_command(args.ranks, train)
            log = args.runs_dir / f"{args.name}-{seed}.log"
            args.runs_dir.mkdir(parents=True, exist_ok=True)
            with open(log, "a") as out:
                out.write(f"# {' '.join(command)}\n")
                out.flush()
                env = {"OMP_NUM_THREADS": "1", **os.environ}  # one core per rank
                running.append((seed, subprocess.Popen(command, stdout=out, stderr=out, env=env)))
            print(f"seed {seed}: {' '.join(command)}", flush=True)
        time.sleep(5)
        for seed, proc in [r for r in running if r[1].poll() is not None]:
            running.remove((seed, proc))
            print(f"seed {seed}: exit status {proc.returncode}", flush=True)


def evaluate(run: Path, games: int, live: bool = False) -> dict:
    """The run's final policy (the running average, or ``live`` its live parameters) over
    ``games`` new games as trained, sampled, on 2 ranks; kept in the run's log dir."""
    checkpoint = str(run / "checkpoint.npz")
    flags = ["--evaluate-checkpoint", checkpoint, "--games", str(games)] + ["--live"] * live
    result = common.last_json(common.mpirun(2, [__file__, *flags]))
    (run / f"evaluation{'-live' * live}.json").write_text(json.dumps(result) + "\n")
    return result


def evaluate_here(checkpoint: str, games: int, live: bool) -> None:
    """Under mpirun: the mean over ``games`` new games, its 95% interval and the games won."""
    from pgmpi import ParallelPG, mpi

    agent = ParallelPG.load(checkpoint, quiet=True)
    score = agent.evaluate(games, live=live)
    r = agent.evaluation_returns
    result = {"mean": float(score), "ci95": list(map(float, score.ci95)), "games": games}
    result["policy"] = "live parameters" if live else "running average"
    result |= {"won": int((r > 0).sum()), "protocol": score.protocol, "steps": agent.steps}
    if mpi.is_root():
        print(json.dumps(result), flush=True)


def spread(curves: dict[str, list[dict]], budget: int):
    """(steps in millions, each seed's 100-game mean there) over the steps every seed logged
    (the rows a run logs from its 100th game on, within ``budget``)."""
    import numpy as np

    by_step = {}
    for rows in curves.values():
        for r in rows:
            if int(r["episodes"]) >= 100 and int(r["steps"]) <= budget:
                by_step.setdefault(int(r["steps"]), []).append(float(r["mean100"]))
    shared = sorted(s for s, v in by_step.items() if len(v) == len(curves))
    return np.array(shared) / 1e6, np.array([by_step[s] for s in shared]).reshape(len(shared), -1)


def plot(curves: dict[str, list[dict]], budget: int, path: Path, title: str,
         against: dict | None = None) -> None:  # fmt: skip
    """Every seed's 100-game mean against agent steps, their median and spread (lowest to
    highest seed, over the steps every seed has played), the 0 line; legend outside. With
    ``against`` (a kept sweep: its title and curves), that sweep's median and spread too."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(9.5, 4.5))
    for seed, rows in sorted(curves.items(), key=lambda kv: int(kv[0])):
        rows = [r for r in rows if int(r["episodes"]) >= 100 and int(r["steps"]) <= budget]
        x = [int(r["steps"]) / 1e6 for r in rows]
        ax.plot(x, [float(r["mean100"]) for r in rows], lw=0.9, alpha=0.8, label=f"seed {seed}")
    if against:
        x, ys = spread(against["curves"], budget)
        name = against.get("label") or "the default (" + against["title"].split(", ")[1] + ")"
        ax.fill_between(x, ys.min(1), ys.max(1), color="tab:red", alpha=0.1,
                        label=f"{name}: spread")  # fmt: skip
        ax.plot(x, np.median(ys, 1), c="tab:red", lw=1.8, ls="--", label=f"{name}: median")
    x, ys = spread(curves, budget)
    if len(x):
        ax.fill_between(x, ys.min(1), ys.max(1), color="grey", alpha=0.2,
                        label="spread: lowest to highest seed")  # fmt: skip
        ax.plot(x, np.median(ys, 1), c="black", lw=2.2, label=f"median of {len(curves)} seeds")
    ax.axhline(0, c="black", lw=0.8, ls=":", label="0: as many points won as lost")
    ax.set(xlabel="agent steps (millions)", ylabel="mean return of the last 100 games")
    ax.set(xlim=(0, budget / 1e6), ylim=(-21, 21), title=title)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=9, frameon=False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)


def thin(rows: list[dict], most: int = 400) -> list[dict]:
    """At most about ``most`` of a run's rows, evenly spaced, the last kept: what ``plot`` reads."""
    kept = rows[:: max(1, len(rows) // most)] + rows[-1:]
    return [{k: round(float(r[k]), 3) for k in ("steps", "episodes", "mean100")} for r in kept]


def kept_sweep(kept: dict) -> dict | None:
    """The kept sweep that ``kept`` is drawn beside (its "against": a name in
    benchmarks/recordings), or None."""
    name = kept.get("against")
    return json.loads((common.RECORDINGS / f"{name}.json").read_text()) if name else None


def draw_kept(out_dir: Path) -> list[Path]:
    """``seed_sweep.png`` and each screen's ``seed_sweep-NAME.png`` in ``out_dir`` from what
    ``--docs`` and ``--screen`` kept, where they kept something (benchmarks/seed_diagnostics.py
    draws the seeds' diagnostics)."""
    made = []
    if KEPT.exists():
        kept = json.loads(KEPT.read_text())
        plot(kept["curves"], kept["budget"], out_dir / FIGURE, kept["title"], kept_sweep(kept))
        made.append(out_dir / FIGURE)
    for screen in sorted(common.RECORDINGS.glob(SCREEN.format("*"))):  # --screen's
        kept = json.loads(screen.read_text())
        default = kept_sweep(kept) or json.loads(KEPT.read_text())
        out = out_dir / screen.with_suffix(".png").name
        plot(kept["curves"], kept["budget"], out, kept["title"], against=default)
        made.append(out)
    return made


def cell(steps, bound: int, missed: str = "not reached within") -> str:
    """Steps to a level, or where they are not known, how far they are known."""
    return f"{steps / 1e6:.2f} M" if steps is not None else f"{missed} {bound / 1e6:.2f} M"


def main() -> None:
    argv, extra = common.split_extra(sys.argv[1:])
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run", nargs="*", default=[], metavar="SEED", help="train these seeds")
    p.add_argument("--budget", type=float, default=3e6, help="agent steps per seed (3e6)")
    p.add_argument("--preset", default="fast", help="examples/pong.py's preset (fast)")
    p.add_argument("--slots", type=int, default=16, help="games at once, fixed (16)")
    p.add_argument("--ranks", type=int, default=1, help="ranks per run (1: the same bits)")
    p.add_argument("--parallel", type=int, help="runs at once (cores / ranks)")
    p.add_argument("--seeds", nargs="*", metavar="SEED", help="read only these (all)")
    p.add_argument("--tag", default="", help="runs go to runs/sweep/PRESET-PROTOCOL[TAG]-SEED")
    p.add_argument("--evaluate", action="store_true", help="play the median seed, --games")
    p.add_argument("--games", type=int, default=100, help="evaluation games (100)")
    p.add_argument("--live", action="store_true", help="--evaluate the live parameters")
    p.add_argument("--evaluate-checkpoint", help=argparse.SUPPRESS)
    p.add_argument("--runs-dir", type=Path, default=RUNS, help="runs' folder (runs/sweep)")
    p.add_argument("--screen", action="store_true",
                   help="keep the runs as a screen, drawn against the kept default "
                   "(recordings/seed_sweep-NAME.json, docs/figures/)")  # fmt: skip
    p.add_argument("--against", metavar="NAME",
                   help="draw the median and spread of benchmarks/recordings/NAME.json, a "
                   "kept sweep, beside the seeds (--screen: the kept default's)")  # fmt: skip
    common.add_figure_flags(p, FIGURE)
    args = p.parse_args(argv)
    if args.evaluate_checkpoint:
        return evaluate_here(args.evaluate_checkpoint, args.games, args.live)
    deterministic = "--deterministic" in extra or "--no-sticky-actions" in extra
    args.name = run_name(args.preset, deterministic, args.tag)
    args.parallel = args.parallel or max(1, (os.cpu_count() or 1) // args.ranks)
    budget = math.ceil(args.budget / (args.slots * STEPS_PER_SLOT)) * args.slots * STEPS_PER_SLOT
    launch(args.run, args, extra)

    runs = [d for d in runs_of(args.runs_dir, args.name) if played(d)]
    runs = [d for d in runs if args.seeds is None or d.name.rsplit("-", 1)[1] in args.seeds]
    if not runs:
        return print(f"no runs {args.runs_dir}/{args.name}-SEED: pass --run SEED ...")
    seeds, curves = {}, {}
    for run in runs:
        seed, rows = run.name.rsplit("-", 1)[1], time_to_score.read(run)
        ev = evaluation_of(run, int(rows[-1]["steps"]))
        rows = [r for r in rows if int(r["steps"]) <= budget]
        seeds[seed] = {
            "log_dir": str(run.relative_to(ROOT) if run.is_relative_to(ROOT) else run),
            "steps_played": int(rows[-1]["steps"]),
            "reached": {str(k): v for k, v in reached(rows, budget).items()},
            "final_mean100": float(rows[-1]["mean100"]),
            "games": int(rows[-1]["episodes"]),
            "evaluation": ev,
        }
        curves[seed] = rows
    middle = median_seed(seeds)
    if args.evaluate:
        print(f"evaluating seed {middle} over {args.games} new games ...", flush=True)
        run = args.runs_dir / f"{args.name}-{middle}"
        seeds[middle]["evaluation"] = evaluate(run, args.games, args.live)

    print(f"{args.name}: {len(seeds)} seeds, budget {budget:,} agent steps\n")
    print(
        "| seed | "
        + " | ".join(f"to {t:+d}" if t else "to 0" for t in LEVELS)
        + " | played | final 100-game mean |"
    )
    print("|---|" + "---|" * (len(LEVELS) + 2))
    ordered = sorted(seeds, key=int)
    for seed in ordered:
        s = seeds[seed]
        cells = [cell(s["reached"][str(t)], s["steps_played"]) for t in LEVELS]
        print(f"| {seed} | " + " | ".join(cells) + f" | {s['steps_played'] / 1e6:.2f} M | "
              f"{s['final_mean100']:+.1f} |")  # fmt: skip
    summary = {}
    for t in LEVELS:
        median, worst = median_and_worst([seeds[s]["reached"][str(t)] for s in ordered])
        summary[str(t)] = {"median": median, "worst": worst, "bound": known_within(seeds, t)}
    for label in ("median", "worst"):  # one not known: at least its bound
        cells = [cell(summary[str(t)][label], summary[str(t)]["bound"][label], "at least")
                 for t in LEVELS]  # fmt: skip
        print(f"| **{label}** | " + " | ".join(cells) + " | | |")
    ev = seeds[middle]["evaluation"]
    if ev:
        print(f"\nmedian seed {middle}: {ev['mean']:+.1f} [{ev['ci95'][0]:+.1f}, "
              f"{ev['ci95'][1]:+.1f}] over {ev['games']} new games, {ev['won']} won, "
              f"{ev.get('policy', 'running average')}")  # fmt: skip
    figure = common.figure_path(args, FIGURE)
    title = f"Pong, {args.name}, {args.slots} slots: {len(seeds)} seeds"
    against = kept_sweep({"against": args.against})
    if against is None and args.screen and KEPT.exists():
        against = json.loads(KEPT.read_text())
    thinned = {seed: thin(rows) for seed, rows in curves.items()}
    kept = {"title": title, "budget": budget, "seeds": seeds, "curves": thinned}
    kept |= {"against": args.against} if args.against else {}
    if args.screen:  # kept as a screen, or (--docs) as the sweep the docs draw
        figure = common.DOCS_FIGURES / f"seed_sweep-{args.name}.png"
        path = common.RECORDINGS / SCREEN.format(args.name)
        path.write_text(json.dumps(kept, separators=(",", ":")) + "\n")
    elif args.docs:
        KEPT.write_text(json.dumps(kept, separators=(",", ":")) + "\n")
    plot(curves, budget, figure, title, against=against)
    result = {
        "machine": common.machine(),
        "settings": {"preset": args.preset, "slots": args.slots, "extra": extra},
        "budget": budget,
        "seeds": seeds,
        "median_seed": middle,
        "summary": summary,
    }
    name = "seed_sweep" + ("" if args.name == "fast-sticky" else f"-{args.name}")
    print("wrote", common.write(name, result), "and", figure)


if __name__ == "__main__":
    main()
