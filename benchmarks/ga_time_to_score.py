"""PrunedGA's time to score on BipedalWalker-v3: the first time the best network's mean over
100 new episodes reaches 0, +100, +200 and +300, per seed, and the preset on the same budget.

    python benchmarks/ga_time_to_score.py --run 0 1 2 synaptolytic:0   # train, evaluate, table
    python benchmarks/ga_time_to_score.py          # only evaluate and table the runs in runs/ga-tts
    python benchmarks/ga_time_to_score.py --docs   # and keep the result for the docs' figure
    python benchmarks/ga_time_to_score.py --run 3 --minutes 10 -- --population-size 64

``--run [PRESET:]SEED ...`` trains each run from scratch into ``--runs``/NAME (runs/ga-tts;
NAME ``seedS``, or ``PRESET-seedS`` for ``--preset PRESET``), one after the other, on
``--ranks`` (2) ranks, for ``--minutes`` (60) of training, in chunks of ``--every`` (2)
generations: ``mpirun -n 2 python examples/bipedal_walker.py --generations G --minutes LEFT
--log-dir DIR [--resume]`` (the first chunk with ``--seed S [--preset PRESET]`` and any
flags after ``--``; each later one resumes the checkpoint exactly, with ``--hardcore`` again
for a BipedalWalkerHardcore-v3 run). After each chunk it
copies the checkpoint to DIR/snapshots/gen_NNNNN.npz and notes the chunk's start and end in
DIR/chunks.log; the example's own output goes to DIR/train.log. A run already there goes on
where it stopped, and one that has trained ``--minutes`` (or ``--generations``) is left as
it is (``--env-steps N``: also one that has played N env steps, checked after each chunk,
for screens on a busy machine; the evaluations then end at the last snapshot within N).
The minutes are training minutes: the generations' seconds that PrunedGA adds up (start-up,
checkpoints and the 1-episode evaluation at each chunk's end not included); a limit stops a
run at the end of the generation under way. With ``--rate R`` (idle env steps/s on 2 ranks,
measured apart) the tables and the figure give idle minutes instead, env steps over R, for
runs trained beside other jobs.

Then, for every run with snapshots in ``--runs``, it plays the best network of chosen
snapshots over ``--episodes`` (100) new episodes (``PrunedGA.load(snapshot).evaluate(100)``
under mpirun), coarse then bisecting, each evaluation cached (benchmarks/snapshots.py; the
same episodes for every snapshot, so snapshots that keep the same best network are played
once). A level's row is the first evaluated snapshot whose mean reaches it, with the
generation, env steps, episodes, training minutes and core-hours at which the run found
that network (its best from then to the snapshot). The final row per run is its last
snapshot's best network: the mean with its 95% interval, episodes above +300, connections
kept. Writes ``--json`` (benchmarks/results/ga_time_to_score.json, or a screen's
``--runs`` folder's time_to_score.json beside its cache.json; ``--docs``: also
benchmarks/recordings/ga_time_to_score.json, which ``benchmarks/figures.py --docs`` draws
from) and the figure (runs/benchmarks/ga_time_to_score.png; ``--docs``: docs/figures/): each
evaluated network's mean with its interval and each generation's best training return,
against training minutes and env steps.
"""

from __future__ import annotations

import argparse
import csv
import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402
import snapshots  # noqa: E402

WALKER = str(common.ROOT / "examples" / "bipedal_walker.py")
HARDCORE = common.example("bipedal_walker").HARDCORE  # its --hardcore, given again on resume
MARKERS = "os^Dvp*"  # a screen's seeds, in its figures
FIGURE = "ga_time_to_score.png"
KEPT = common.RECORDINGS / "ga_time_to_score.json"  # what --docs kept, for figures.py
# docs/screens.md's walker screens, kept with --json (its command is there)
SCREENS_KEPT = common.RECORDINGS / "ga_screens.json"
RATE_KEPT = common.RECORDINGS / "ga_screens_rate.json"  # and its mutation-rate and width screen
HARDCORE_KEPT = common.RECORDINGS / "ga_hardcore.json"  # and the Hardcore hour (its --json)
CURVE_POINTS = 400  # each run's training curve kept, thinned to about this many points
PRESETS = ("synaptolytic",)  # examples/bipedal_walker.py --preset


def record(score) -> dict:
    """What an evaluation keeps beside the mean and interval: episodes above +300, the
    network's size and when the run found it (a :class:`pgmpi.best.BestScore`'s)."""
    above = int((score.returns > 300).sum())
    return dict(above_300=above, kept=score.kept, connections=score.connections, found=score.found)


def evaluate_worker(snapshot: str, episodes: int) -> None:
    """Under mpirun: the snapshot's best network over ``episodes`` new episodes, as JSON on
    rank 0 (:func:`record`'s entries included)."""
    from pgmpi import PrunedGA

    snapshots.worker(PrunedGA, snapshot, episodes, record)


def parse(spec: str) -> tuple[str, str | None, int]:
    """``[PRESET:]SEED`` -> (the run's folder name, the preset or None, the seed)."""
    preset, _, seed = spec.rpartition(":")
    if not seed.isdigit() or preset not in ("", *PRESETS):
        raise SystemExit(f"--run {spec!r}: not [PRESET:]SEED (PRESET one of {PRESETS})")
    return (f"{preset}-seed{seed}" if preset else f"seed{seed}"), preset or None, int(seed)


def train(name: str, preset: str | None, seed: int, args, extra: list[str]) -> None:
    """Train the run ``name`` (what :func:`parse` gives) in chunks until ``args.minutes`` of
    training or ``args.generations``, a snapshot after each (see the module's docstring)."""
    run = args.runs / name
    checkpoint = run / "checkpoint.npz"
    while True:
        m = snapshots.meta(checkpoint) if checkpoint.exists() else None
        done, seconds = (m["generation"], m["train_seconds"]) if m else (0, 0.0)
        (run / "snapshots").mkdir(parents=True, exist_ok=True)  # a branched run has none yet
        if m and not snapshots.snapshot_path(run, done).exists():  # stopped before the copy
            shutil.copy(checkpoint, snapshots.snapshot_path(run, done))
        left = args.minutes - seconds / 60
        if left <= 0 or (args.generations and done >= args.generations):
            return
        if m and args.env_steps and m["steps"] >= args.env_steps:
            return
        target = min(done + args.every, args.generations or done + args.every)
        flags = [WALKER, "--log-dir", str(run), "--generations", str(target)]
        flags += ["--minutes", f"{max(left, 1e-4):.4f}", "--eval-episodes", "1"]
        first = ["--seed", str(seed), *(["--preset", preset] if preset else [])]
        hardcore = m and m["config"].get("env") == HARDCORE  # the env is not a setting
        flags += (
            (["--resume", *["--hardcore"] * hardcore]) if m else ["--overwrite", *first, *extra]
        )
        print(f"training {name} to generation {target} ({left:.1f} minutes left) ...", flush=True)
        snapshots.log_chunk(run, "start", target)
        with open(run / "train.log", "a") as log:
            command = common.mpirun_command(args.ranks, flags)
            proc = subprocess.run(
                command, stdout=log, stderr=subprocess.STDOUT, timeout=left * 60 + 900
            )
        if proc.returncode:
            why = f"the chunk to generation {target} failed (rc {proc.returncode})"
            raise SystemExit(f"{name}: {why}: see {run / 'train.log'}")
        done = snapshots.meta(checkpoint)["generation"]
        snapshots.log_chunk(run, "end", target)
        shutil.copy(checkpoint, snapshots.snapshot_path(run, done))
        if done < target:  # the time limit stopped it
            return


def progress(run: Path) -> list[dict]:
    """One row per generation: generations done, env steps, training minutes so far (the
    generations' seconds), and the generation's best return (its best individual's mean)."""
    rows, seconds = [], 0.0
    for r in csv.DictReader(open(run / "progress.csv")):
        seconds += float(r["time/generation_s"])
        g, steps, best = int(r["generation"]) + 1, int(r["steps"]), float(r["charts/best_return"])
        rows.append(dict(generations=g, steps=steps, minutes=seconds / 60, best=best))
    return rows


def time_to_score(run: Path, evaluations: snapshots.Evaluations, args) -> dict:
    """One run's levels, final evaluation, evaluated networks and training curve."""
    gens = snapshots.generations(run)
    metas = {g: snapshots.meta(snapshots.snapshot_path(run, g)) for g in gens}
    if args.env_steps:  # a screen: the run as it stood at the budget
        gens = [g for g in gens if metas[g]["steps"] <= args.env_steps]
    # Snapshots with the same best network and evaluation count play the same episodes
    # alike: each plays as the first of them.
    # A carried snapshot without its file or an evaluation plays as no other.
    path_of = functools.partial(snapshots.snapshot_path, run)
    first, same = {}, {}
    for g in gens:
        network = metas[g]["best_found"] or g  # None: an older checkpoint, never merged
        key = json.dumps([network, metas[g]["evaluations"]], sort_keys=True)
        playable = evaluations.playable(path_of(g))
        same[g] = first.setdefault(key, g) if playable or key in first else g
    found, evaluated = snapshots.first_reaching(gens, lambda g: path_of(same[g]), evaluations, args)

    def at(g: int) -> dict:
        e, f = evaluated[g], evaluated[g]["found"] or {}
        counts = {k: f.get(k) for k in ("generation", "steps", "episodes")}
        timed = f.get("seconds") is not None
        minutes = f["seconds"] / 60 if timed else None
        core_hours = f["core_seconds"] / 3600 if timed else None
        if args.rate:  # idle minutes on 2 ranks, from env steps
            minutes = f["steps"] / args.rate / 60
            core_hours = 2 * minutes / 60
        return dict(
            snapshot=g,
            **counts,
            minutes=minutes,
            core_hours=core_hours,
            mean=e["mean"],
            ci95=e["ci95"],
        )

    # the last snapshot that can be played: a carried one without its file or an evaluation
    # (a cut by --env-steps between two kept ones) cannot
    last = max((g for g in gens if g in evaluated), default=None)
    rows = progress(run)
    config = json.loads((run / "config.json").read_text())
    wall = snapshots.chunk_minutes(run) if (run / "chunks.log").exists() else {}
    final = None
    if last:  # the last snapshot: always evaluated
        size = {k: evaluated[last][k] for k in ("above_300", "kept", "connections")}
        wall_minutes = max(wall.values(), default=None)  # every chunk's, the last one's included
        trained = metas[last]["steps"] / args.rate if args.rate else metas[last]["train_seconds"]
        minutes = dict(train_minutes=trained / 60, wall_minutes=wall_minutes)
        final = dict(at(last), generations=last, **minutes, **size)
    every = max(1, len(rows) // CURVE_POINTS)
    return dict(
        reached={level: None if g is None else at(g) for level, g in found.items()},
        final=final,
        evaluations={str(g): e for g, e in evaluated.items() if same[g] == g},
        curve=[[r["minutes"], r["steps"], r["best"]] for r in rows[::every] + rows[-1:]],
        generations=last or 0,
        episodes_per_individual=config["episodes_per_individual"],
        env=config["env"],
    )


def minutes_header(result: dict) -> str:
    """What the tables' minutes are: training minutes, or idle minutes at ``--rate``."""
    rate = result.get("rate")
    return f"idle minutes ({rate:,.0f} env steps/s)" if rate else "training minutes"


def table(result: dict) -> str:
    """Markdown: per run and level, when the run found the first evaluated network whose
    mean reaches the level."""
    columns = [
        ("found in generation", snapshots.cell("generation", "d")),
        ("env steps", snapshots.cell("steps", ",")),
        ("episodes", snapshots.cell("episodes", ",")),
        (minutes_header(result), snapshots.cell("minutes", ".1f")),
        ("core-hours", snapshots.cell("core_hours", ".2f")),
        ("snapshot (generations)", snapshots.cell("snapshot", "d")),
    ]
    return snapshots.table(result, columns)


def final_table(result: dict) -> str:
    """Markdown: per run, its last snapshot's best network over the evaluation episodes."""
    lines = [
        f"| run | trained: generations, {minutes_header(result)} (wall minutes as run) | "
        "best network: "
        f"mean of {result['episodes']} new episodes [95% interval] | episodes above +300 | "
        "connections kept | found in generation |",
        "|---|---|---|---|---|---|",
    ]
    for name, run in result["runs"].items():
        f = run["final"]
        if f:
            wall = "-" if f["wall_minutes"] is None else f"{f['wall_minutes']:.1f}"
            lines.append(
                f"| {name} | {f['generations']}, {f['train_minutes']:.1f} ({wall}) | "
                f"{snapshots.interval(f)} | {f['above_300']} | {f['kept']:,} of "
                f"{f['connections']:,} | {snapshots.cell('generation', 'd')(f)} |"
            )
    return "\n".join(lines)


def setting_and_seed(name: str) -> tuple[str, str]:
    """A run's folder name (``seed0``, ``synaptolytic-seed0``, a screen's ``NAME-seed0``) ->
    (its setting in words, ``""`` for the default; its seed)."""
    preset, _, seed = name.rpartition("-")
    return (f"{preset} preset" if preset in PRESETS else preset), seed.removeprefix("seed")


def label(name: str) -> str:
    """A run's folder name in words, for a legend."""
    setting, seed = setting_and_seed(name)
    return f"{setting}, seed {seed}" if setting else f"seed {seed}"


def styles(names: list[str]) -> tuple[dict[str, tuple[str, str, str | None]], dict[str, str]]:
    """Each run's (colour, marker, name in the legend or None), and the seeds' markers to
    explain. A screen (several settings, each run on several seeds): a colour per setting and
    a marker per seed, each setting named once. Else a colour per run, named by itself."""
    settings = {}
    for name in names:
        settings.setdefault(setting_and_seed(name)[0], []).append(name)
    if len(settings) < 2 or any(len(runs) < 2 for runs in settings.values()):
        return {n: (f"C{k}", "o", label(n)) for k, n in enumerate(names)}, {}
    seeds = sorted({setting_and_seed(n)[1] for n in names}, key=lambda s: (len(s), s))  # 2, 10
    seeds = {seed: MARKERS[k % len(MARKERS)] for k, seed in enumerate(seeds)}
    style = {}
    for k, (setting, runs) in enumerate(settings.items()):
        for j, name in enumerate(runs):
            style[name] = (
                f"C{k}",
                seeds[setting_and_seed(name)[1]],
                None if j else setting or "default",
            )
    return style, seeds


def plot(result: dict, path: Path) -> Path:
    """Each run's evaluated networks (mean over the evaluation episodes, 95% interval, at
    the time the run found each) and each generation's best training return, against
    training minutes (idle minutes with ``rate``) and env steps (a screen's without
    ``rate``: env steps only, as its minutes on a busy machine say nothing)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    screen, rate = result.get("env_steps"), result.get("rate")
    # each panel: (x axis, a curve point's x from (minutes, steps), a snapshot's x or None)
    steps = ("env steps (millions)", lambda m, s: s / 1e6, lambda e: e["found"]["steps"] / 1e6)
    minutes = (
        f"training minutes on {result['ranks']} ranks",
        lambda m, s: m,
        lambda e: None if e["found"]["seconds"] is None else e["found"]["seconds"] / 60,
    )
    if rate:  # minutes from env steps
        minutes = (
            f"idle minutes on 2 ranks (env steps at {rate:,.0f}/s)",
            lambda m, s: s / rate / 60,
            lambda e: e["found"]["steps"] / rate / 60,
        )
    panels = [steps] if screen and not rate else [minutes, steps]
    fig, axes = plt.subplots(1, len(panels), figsize=(3 + 4 * len(panels), 4.5), sharey=True)
    axes = [axes] if len(panels) == 1 else list(axes)
    style, seeds = styles(list(result["runs"]))
    for name, run in result["runs"].items():  # the seeds, then the presets
        c, marker, who = style[name]
        episodes = run["episodes_per_individual"]
        training = who and f"{who}: each generation's best, mean of its {episodes} episodes"
        scored = who and f"{who}: best network, mean of {result['episodes']} new episodes"
        ev = sorted(
            (e for e in run["evaluations"].values() if e["found"]),
            key=lambda e: e["found"]["steps"],
        )
        for j, (ax, (_, x, x_found)) in enumerate(zip(axes, panels, strict=True)):
            last = j == len(panels) - 1  # the legend names each line once
            ax.plot([x(m, s) for m, s, _ in run["curve"]], [b for *_, b in run["curve"]],
                    c=c, lw=0.7, alpha=0.45, label=training if last else None)  # fmt: skip
            if all(x_found(e) is not None for e in ev):
                snapshots.draw(ax, ev, x_found, scored if last else None, c=c, marker=marker)
    for seed, marker in seeds.items():
        axes[-1].plot([], [], marker, c="grey", label=f"seed {seed}")
    for ax, (xlabel, *_) in zip(axes, panels, strict=True):
        for level in result["levels"]:
            ax.axhline(level, c="grey", lw=0.6, ls=":")
        ax.grid(alpha=0.3)
        ax.set(xlabel=xlabel)
    axes[0].set(ylabel="return")
    if screen:
        axes[-1].axvline(screen / 1e6, c="k", lw=0.8, ls="--")  # the budget
    envs = ", ".join(
        sorted({run.get("env", "BipedalWalker-v3") for run in result["runs"].values()})
    )
    fig.suptitle(f"PrunedGA on {envs}: the best network, when the run found it")
    fig.legend(loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=2, fontsize=8, frameon=False)
    return common.save_figure(fig, path)


def draw_kept(out_dir: Path) -> list[Path]:
    """``ga_time_to_score.png``, ``ga_screens.png``, ``ga_screens_rate.png`` and
    ``ga_hardcore.png`` in ``out_dir`` from the results kept (``--docs``; the screens' and
    Hardcore's ``--json``), those that exist."""
    kept = ((KEPT, FIGURE), (SCREENS_KEPT, "ga_screens.png"), (RATE_KEPT, "ga_screens_rate.png"),
            (HARDCORE_KEPT, "ga_hardcore.png"))  # fmt: skip
    return [plot(json.loads(k.read_text()), out_dir / png) for k, png in kept if k.exists()]


def main() -> None:
    argv, extra = common.split_extra(sys.argv[1:])
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run", nargs="*", default=[], metavar="[PRESET:]SEED", help="train these "
                   "runs (flags after -- go to the example's first chunk)")  # fmt: skip
    p.add_argument("--minutes", type=float, default=60, help="training minutes per run (60)")
    p.add_argument("--every", type=int, default=2,
                   help="generations a chunk, a snapshot after each (2)")  # fmt: skip
    p.add_argument("--generations", type=int, help="and at most this many generations")
    p.add_argument("--env-steps", type=int,
                   help="and no chunk after this many env steps, and no snapshot past them "
                   "evaluated (for screens on a busy machine, which compare runs at the same "
                   "env steps)")  # fmt: skip
    p.add_argument("--also", nargs="+", default=[], metavar="JSON:RUN",
                   help="runs of an earlier result (its --json) to table and draw beside, "
                   "as they were")  # fmt: skip
    kept, cache = common.RESULTS / "ga_time_to_score.json", "ga_time_to_score_cache.json"
    runs = common.ROOT / "runs" / "ga-tts"
    snapshots.add_flags(p, runs, kept, cache, "ranks per run and per evaluation")
    common.add_figure_flags(p, FIGURE)
    args = snapshots.parse(p, argv)
    if args.evaluate:
        return evaluate_worker(args.evaluate, args.episodes)

    for name, preset, seed in [parse(spec) for spec in args.run]:  # all checked first
        train(name, preset, seed, args, extra)
    play = snapshots.player(__file__, args)
    evaluations = snapshots.Evaluations(args.cache, play, args.episodes)
    runs = [d for d in args.runs.glob("*") if snapshots.generations(d)]
    runs.sort(key=lambda d: ("-" in d.name, d.name))  # the seeds, then the presets
    also = {}
    for spec in args.also:  # checked before any evaluation
        path, _, name = spec.rpartition(":")
        earlier = json.loads(Path(path).read_text())["runs"] if Path(path).is_file() else {}
        if name not in earlier:
            raise SystemExit(f"--also {spec!r}: no run {name!r} in {path!r}")
        also[name] = earlier[name]
    if not runs:
        raise SystemExit(f"no runs with snapshots in {args.runs}: pass --run [PRESET:]SEED")
    scored = {d.name: time_to_score(d, evaluations, args) for d in runs} | also
    result = dict(machine=common.machine(), ranks=args.ranks, episodes=args.episodes,
                  levels=args.levels, runs=scored, env_steps=args.env_steps,
                  rate=args.rate)  # fmt: skip
    print(table(result), final_table(result), sep="\n\n")
    print(f"{evaluations.new} new evaluation(s), {len(evaluations.known)} in {args.cache}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1) + "\n")
    if args.docs:  # runs/ is not tracked: keep what the docs' figure is drawn from
        KEPT.write_text(json.dumps(result, indent=1) + "\n")
    print("wrote", args.json, "and", plot(result, common.figure_path(args, FIGURE)))


if __name__ == "__main__":
    main()
