"""PrunedGA scaling: measured at 1 and 2 ranks, projected to 1,536 ranks from recorded unit costs.

    python benchmarks/ga_scaling.py [--minutes 6]        # about 10 minutes on 2 cores
    python benchmarks/ga_scaling.py --costs benchmarks/recordings/ga_scaling_longrun0_costs.npz
    python benchmarks/ga_scaling.py --start runs/ga-tts/signed-dag-0/checkpoint.npz --tag _late
    python benchmarks/ga_scaling.py --by-generation RUN1.npz "run 2=RUN2A.npz+RUN2B.npz"

Runs BipedalWalker-v3 with the example's settings (hidden 8 8, population 138, 8 episodes:
the synaptolytic-learning benchmark's) and records its units of work
(benchmarks/ga_record.py), or with ``--costs`` reads a recording, then projects each
generation on 1 ... 1,536 ranks (benchmarks/ga_simulate.py) in the four ways of sharing it
out: whole individuals (pgmpi before units), static units, self-scheduled units, and
self-scheduled units playing ahead (PrunedGA). It prints the idle share and speed-up of the
early (first three), late (last three) and, if more than six were recorded, all
generations (the share of a run's allocation), and of each ``--phase A-B`` asked for, at 63
and 128 ranks, as a markdown table; then how far PrunedGA is from a perfect order and from
the floors no order and no schedule can beat. Writes benchmarks/results/ga_scaling{TAG}.json,
the recording to benchmarks/results/ga_scaling{TAG}_costs.npz and the figure
(benchmarks/ga_figures.py) to runs/benchmarks/ga_scaling.png (``--out PATH`` elsewhere).

``--start CHECKPOINT`` records generations that go on from a PrunedGA checkpoint of
BipedalWalker-v3 instead (its settings and genome replace the flags): late in a run.

``--by-generation [LABEL=]COSTS[+COSTS...] ...`` only draws one panel per run, each
generation's projected idle share at 63 and 128 ranks (``ga_scaling_generations.png``), and
prints each run's share, over all of it, before its first positive best fitness and from it.
A run's recordings joined by ``+`` are stretches of it, a later one recorded ``--start`` from
its checkpoint. The docs' figures, from the kept runs: ``python benchmarks/figures.py --docs``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import common
import ga_figures
import ga_record
import numpy as np
from ga_simulate import bounds, generation_shares, projected

FIGURE = "ga_scaling.png"
ORIGINAL_S = 3492 / 200  # synaptolytic-learning README: 200 generations in 3,492 s, 63 workers


def report(rec: dict, args) -> dict:
    """Print the projection of ``rec`` and its bounds; returns them, for the JSON."""
    steps, secs = rec["steps"].ravel(), rec["seconds"].ravel()
    serial_s = float(np.median(rec["select"]))
    print(
        f"units: {len(steps)}, {steps.mean():.0f} steps and {1e3 * secs.mean():.1f} ms on "
        f"average ({1e6 * secs.sum() / steps.sum():.0f} us per step); env making "
        f"{1e3 * float(rec['make_s']):.2f} ms; fetch {1e6 * float(rec['fetch_s']):.1f} us; "
        f"selection and mutation {serial_s:.3f} s per generation"
    )
    results, projections, phases = projected(rec, args.also, args.phase)
    setting = next(iter(results))
    print(ga_figures.table(results))
    for ph, w in phases.items():  # the spread behind each phase's share, self-scheduled
        spread = []
        for n in (63, 128):
            idle = 100 * generation_shares(projections[setting]["ahead"][n][w])
            spread.append(f"{n} ranks {min(idle):.1f}-{max(idle):.1f}%")
        print(f"PrunedGA, single generations of {ph}, {setting}: " + ", ".join(spread))
    out = dict(
        seconds_per_step=float(secs.sum() / steps.sum()),
        serial_s=serial_s,
        fetch_s=float(rec["fetch_s"]),
        make_s=float(rec["make_s"]),
        recorded_generations=len(rec["steps"]),
        mean_unit_steps={ph: float(rec["steps"][w].mean()) for ph, w in phases.items()},
        projection=results,
        original_s_per_generation_63_workers=ORIGINAL_S,
    )
    if "parents" in rec:
        out["bounds"] = ways = bounds(dict(rec, fetch_s=float(rec["fetch_s"])), phases)
        print("\n| schedule (idle at 63 / 128 ranks) | " + " | ".join(phases) + " |")
        print("|---|" + "---|" * len(phases))
        for name, by_phase in ways.items():
            cells = [f"{100 * v[63]:.1f}% / {100 * v[128]:.1f}%" for v in by_phase.values()]
            print(f"| {name} | " + " | ".join(cells) + " |")
    for ph in phases:
        at63 = {s: results[setting][ph][s][63][2] for s in ("old", "ahead")}
        print(
            f"projected s per generation at 63 ranks, {ph}, {setting}: old {at63['old']:.2f}, "
            f"PrunedGA {at63['ahead']:.2f} (original: {ORIGINAL_S:.1f})"
        )
    return out


def generations(spec: str) -> tuple[int, int]:
    """``--phase``'s A-B as (A, B)."""
    try:
        a, b = (int(x) for x in spec.split("-"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{spec!r} is not A-B, two generation numbers") from None
    return a, b


def by_generation(specs: list[str], args) -> None:
    """``--by-generation``: draw and print each run's shares."""
    recordings = {}
    for spec in specs:  # LABEL=A.npz or LABEL=A.npz+B.npz (one run's)
        label, _, paths = spec.rpartition("=")
        recordings[label or paths] = [dict(np.load(p)) for p in paths.split("+")]
    out = common.figure_path(args, "ga_scaling_generations.png")
    if out == common.FIGURES / FIGURE:  # --out not given: not over the main figure
        out = common.FIGURES / "ga_scaling_generations.png"
    for label, idle in ga_figures.plot_generations(recordings, out).items():
        print(label)
        for line in ga_figures.run_summary(idle):
            print("  " + line)
    print("figure:", out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=6.0, help="the recorded 2-rank run (6)")
    p.add_argument("--serial-generations", type=int, default=1, help="at 1 rank (1)")
    p.add_argument("--static-generations", type=int, default=2, help="static split, 2 ranks (2)")
    p.add_argument("--costs", type=Path, help="project from this recording instead of running")
    ga_record.worker_flags(p)
    p.add_argument("--also", default="128x8", help="settings also projected, PxE (128x8)")
    p.add_argument("--phase", action="append", default=[], type=generations, metavar="A-B",
                   help="also project generations A to B (repeatable)")  # fmt: skip
    p.add_argument("--tag", default="", help="suffix of the result files' names ('')")
    p.add_argument(
        "--by-generation",
        nargs="+",
        metavar="[LABEL=]COSTS[+COSTS...]",
        help="only draw each run's idle share per generation, one panel each (a run's "
        "recordings joined by +, the later ones --start from it), and print its share, to "
        "runs/benchmarks/ga_scaling_generations.png (--docs: docs/figures/; or --out PATH)",
    )
    common.add_figure_flags(p, FIGURE)
    args = p.parse_args()
    if args.by_generation:
        return by_generation(args.by_generation, args)
    info = common.machine()
    print("machine:", json.dumps(info), flush=True)
    settings = ["--population-size", str(args.population_size), "--episodes-per-individual",
                str(args.episodes_per_individual), "--seed", str(args.seed), "--genome",
                args.genome]  # fmt: skip
    stem = f"ga_scaling{args.tag}"
    if args.start:
        settings += ["--start", str(args.start)]
        ck = json.loads((args.start.parent / "config.json").read_text())
        P, E = ck["population_size"], ck["episodes_per_individual"]
        args.genome, args.seed = ck["genome"], ck["seed"]
    else:
        P, E = args.population_size, args.episodes_per_individual
    result = {
        "machine": info,
        "settings": dict(population_size=P, episodes=E, seed=args.seed, genome=args.genome),
    }
    if args.start:
        result["settings"]["start"] = str(args.start)
    common.RESULTS.mkdir(exist_ok=True)
    if args.costs is None:
        args.costs, result["measured"] = ga_record.record(args, settings, stem)
    elif (common.RESULTS / f"{stem}.json").exists():  # re-projecting: keep what was measured
        result["measured"] = json.loads((common.RESULTS / f"{stem}.json").read_text()).get(
            "measured"
        )
    rec = dict(np.load(args.costs))
    try:
        result.update(report(rec, args))
    except ValueError as e:
        p.error(str(e))
    out = ga_figures.plot(result["projection"], common.figure_path(args, FIGURE))
    print("figure:", out)
    print("wrote", common.write(stem, result))


if __name__ == "__main__":
    main()
