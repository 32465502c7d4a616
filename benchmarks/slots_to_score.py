"""Learning at the scale users launch: sticky-action Pong's time to score against the slot count.

    python benchmarks/slots_to_score.py --run 64 128 [--ranks 1 --at-once] [--minutes 90]
    python benchmarks/slots_to_score.py           # only read the runs already in runs/slots
    python benchmarks/slots_to_score.py --docs    # and redraw docs/figures/slots_to_score.png

``mpirun -n 128 python examples/pong.py`` trains with 128 slots (games played at once), one
per rank. A run's result depends on its slot count, never on its rank count (bit for bit),
so ``mpirun -n 2 python examples/pong.py --slots 128`` computes exactly what 128 ranks
would, only slower: this measures learning per agent step at many slots on a small machine.

``--run S[:SEED] ...`` trains each slot count S from scratch with the default settings
(sticky actions; the learning rate scaled by sqrt(S / 16), 512 steps per slot per update):
``mpirun -n RANKS python examples/pong.py --slots S --seed SEED --target-return T --minutes M
--log-dir runs/slots/sS[TAG]-SEED`` (T: 0 unless told; SEED: 0 unless told). Any extra
flags for examples/pong.py go after ``--``. ``--at-once`` starts the runs together (each on
``--ranks`` ranks) instead of one after the other: agent steps, the measure here, do not
depend on how busy the machine is, wall minutes do.

Then, for every run in runs/slots, prints the agent steps (and games) at which the mean of
the last 100 games first reached -15, -10, -5 and 0, and, for a run of 128 or 1,536 slots,
the projected wall-clock time to 0 on that many ranks (one game each): the agent steps over
the projected agent steps per second. An update then lasts a rank's piece of play (the
cost of 512 steps with their gradient that benchmarks/scaling.py recorded, scaled to the
run's steps per slot and stretched by the waiting scaling.py projects), then the ring
Allreduce on a 10 Gb/s network and the per-update costs (benchmarks/recordings/scaling.json,
kept by ``scaling.py --docs``, or a newer benchmarks/results/scaling.json). Writes
benchmarks/results/slots_to_score.json and runs/benchmarks/slots_to_score.png (the 100-game
mean against agent steps, one line per run; ``--out PATH`` elsewhere, ``--docs`` to
docs/figures/slots_to_score.png). ``--docs`` also keeps every run it drew, thinned, in
benchmarks/recordings/slots_to_score.json, so the table and figure outlive runs/ (not tracked): a
kept run shows "(kept)", and a run of the same name in runs/slots replaces it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402
from time_to_score import read, thin  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "runs" / "slots"
FIGURE = "slots_to_score.png"
KEPT = common.RECORDINGS / "slots_to_score.json"
THRESHOLDS = (-15, -10, -5, 0)
LINK = "10 Gb/s"
RANKS = (128, 1536)


def cost_model() -> tuple[dict, str]:
    """scaling.py's costs: a slot's piece of 512 agent steps with its gradient, alone on a
    rank; the per-update costs outside play; on a 10 Gb/s network, the ring Allreduce and the
    share of time ranks wait for the slowest, at 128 and 1,536 ranks. From the result
    ``scaling.py --docs`` kept in benchmarks/recordings, or a newer benchmarks/results one."""
    paths = [common.RESULTS / "scaling.json", common.RECORDINGS / "scaling.json"]
    path = max((p for p in paths if p.exists()), key=lambda p: p.stat().st_mtime)
    s = json.loads(path.read_text())
    rows = {r["ranks"]: r for r in s["projection"][LINK]}
    return {
        "piece_s": float(sum(s["model"]["slot_s"]) / len(s["model"]["slot_s"])),
        "fixed_s": s["model"]["optimizer_s"],
        "allreduce_s": {n: rows[n]["allreduce_s"] for n in RANKS},
        "wait": {n: rows[n]["new_wait_fraction"] for n in RANKS},
    }, str(path.relative_to(ROOT))


def steps_per_second(model: dict, n: int, steps_per_slot: int) -> float:
    """Projected agent steps per second on n ranks holding one game each: an update is a
    rank's piece of play (scaled to ``steps_per_slot`` steps, stretched by the waiting for
    the slowest rank), then the Allreduce and the per-update costs."""
    play = model["piece_s"] * steps_per_slot / 512 / (1 - model["wait"][n])
    return n * steps_per_slot / (play + model["allreduce_s"][n] + model["fixed_s"])


def first_reached(rows: list[dict]) -> dict:
    """For each threshold, the agent steps and games when the 100-game mean first reached it."""
    out = {}
    for t in THRESHOLDS:
        row = next(
            (r for r in rows if int(r["episodes"]) >= 100 and float(r["mean100"]) >= t), None
        )
        out[t] = row and {"games": int(row["episodes"]), "steps": int(row["steps"])}
    return out


def summary_of(run: Path) -> dict:
    """A run in runs/slots: its settings, thresholds reached, last row and thinned rows."""
    rows = read(run)
    last = rows[-1]
    return {
        "settings": json.loads((run / "config.json").read_text()),
        "reached": first_reached(rows),
        "final": {
            "games": int(last["episodes"]),
            "steps": int(last["steps"]),
            "mean100": float(last["mean100"]),
        },  # fmt: skip
        "rows": thin(rows),
    }


def kept_runs() -> dict:
    """The runs the docs figure drew when ``--docs`` last ran, kept in benchmarks/recordings
    (runs/ is not tracked, so a new checkout has none of them), as :func:`summary_of` gives them."""
    runs = json.loads(KEPT.read_text()) if KEPT.exists() else {}
    for run in runs.values():  # JSON keys are strings
        run["reached"] = {int(t): r for t, r in run["reached"].items()}
    return runs


def plot(curves: dict[str, list[dict]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.5))
    for name, rows in curves.items():
        rows = [r for r in rows if int(r["episodes"]) >= 100]
        ax.plot([int(r["steps"]) / 1e6 for r in rows], [float(r["mean100"]) for r in rows],
                label=common.run_label(name))  # fmt: skip
    ax.axhline(0, c="grey", lw=0.8)
    ax.grid(alpha=0.3)
    ax.set(xlabel="agent steps (millions)", ylabel="mean return of the last 100 games",
           ylim=(-21, 21))  # fmt: skip
    fig.legend(*ax.get_legend_handles_labels(), loc="upper center", bbox_to_anchor=(0.5, 0.0),
               ncol=2, fontsize=8, title="run")  # fmt: skip
    ax.set_title("Sticky-action Pong: learning per agent step, one line per run")
    common.save_figure(fig, path)


def main() -> None:
    argv, extra = common.split_extra(sys.argv[1:])
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run", nargs="*", default=[], metavar="S[:SEED]", help="train these")
    p.add_argument("--minutes", type=float, default=90, help="limit per run (90)")
    p.add_argument("--ranks", type=int, default=2, help="ranks per run (2)")
    p.add_argument("--at-once", action="store_true", help="start the runs together")
    p.add_argument(
        "--target-return", type=float, default=0, help="stop a run at this 100-game mean (0)"
    )
    p.add_argument("--tag", default="", help="runs go to runs/slots/sS[TAG]-SEED")
    common.add_figure_flags(p, FIGURE)
    args = p.parse_args(argv)

    jobs = []
    for spec in args.run:
        slots, _, seed = spec.partition(":")
        log_dir = RUNS / f"s{slots}{args.tag}-{seed or 0}"
        pong = [str(ROOT / "examples" / "pong.py"), "--slots", slots, "--seed", seed or "0"]
        pong += ["--minutes", str(args.minutes), "--target-return", str(args.target_return)]
        jobs.append((log_dir, [*pong, *extra, "--log-dir", str(log_dir), "--quiet"]))
    timeout = args.minutes * 60 + 600
    if args.at_once and jobs:
        print(f"training {', '.join(args.run)} at once ...", flush=True)
        outs = common.mpiruns_at_once([(args.ranks, a) for _, a in jobs], timeout=timeout)
    else:
        outs = []
        for spec, (_, a) in zip(args.run, jobs, strict=True):
            print(f"training {spec} slots ...", flush=True)
            outs.append(common.mpirun(args.ranks, a, timeout=timeout))
    for (log_dir, _), out in zip(jobs, outs, strict=True):
        (log_dir / "train.log").write_text(out)

    model, source = cost_model()
    runs = kept_runs() | {  # a run in runs/slots replaces its kept copy
        d.name: summary_of(d) for d in RUNS.glob("*") if (d / "progress.csv").exists()
    }
    runs = dict(sorted(runs.items(), key=lambda kv: (kv[1]["settings"]["slots"], kv[0])))
    result = {"machine": common.machine(), "model": model, "model_from": source, "link": LINK,
              "runs": {}}  # fmt: skip
    print(f"projected from scaling.py's costs ({source}), {LINK} network")
    print("| run | slots x steps per slot, learning rate | "
          + " | ".join(f"to {t:+d}" for t in THRESHOLDS)
          + " | at the end | projected time to 0 |")  # fmt: skip
    print("|" + "---|" * (len(THRESHOLDS) + 4))
    for name, run in runs.items():
        cfg, reached, last = run["settings"], run["reached"], run["final"]
        S, k = cfg["slots"], cfg["steps_per_slot"]
        lr = cfg["learning_rate"] * (S / 16) ** 0.5  # the rate in force (the square-root rule)
        projected = {  # on S ranks, one game each, where S is a rank count projected here
            n: reached[0]["steps"] / steps_per_second(model, n, k)
            for n in RANKS
            if reached[0] and n == S
        }
        result["runs"][name] = {
            "slots": S,
            "steps_per_slot": k,
            "learning_rate": lr,
            "reached": reached,
            "final": last,
            "projected_s_to_0": projected,
            "projected_steps_per_s": {n: steps_per_second(model, n, k) for n in RANKS},
        }
        cells = [f"{r['steps'] / 1e6:.1f} M ({r['games']:,} g)" if r else "-"
                 for r in reached.values()]  # fmt: skip
        end = f"{last['mean100']:+.1f} at {last['steps'] / 1e6:.1f} M"
        proj = ", ".join(f"{s:.0f} s at {n:,} ranks" for n, s in projected.items()) or "-"
        kept = "" if (RUNS / name).is_dir() else " (kept)"
        print(f"| {name}{kept} | {S} x {k}, {lr:.2g} | " + " | ".join(cells)
              + f" | {end} | {proj} |")  # fmt: skip
    for n in RANKS:
        rates = ", ".join(f"{k} steps per slot {steps_per_second(model, n, k):,.0f}"
                          for k in (512, 64))  # fmt: skip
        print(f"projected agent steps/s at {n:,} ranks: {rates}")
    if runs:
        figure = common.figure_path(args, FIGURE)
        plot({name: run["rows"] for name, run in runs.items()}, figure)
        if args.docs:
            KEPT.write_text(json.dumps(runs, separators=(",", ":")) + "\n")
        print("wrote", common.write("slots_to_score", result), "and", figure)
    else:
        print(f"no runs in {RUNS}: pass --run S")


if __name__ == "__main__":
    main()
