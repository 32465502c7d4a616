"""A run's snapshots evaluated over new episodes: the first snapshot whose mean reaches each
level, found with few evaluations. Shared by es_time_to_score.py and ga_time_to_score.py.

A run made in chunks (each resuming the checkpoint for a few more generations) keeps a copy
of its checkpoint after each chunk: ``RUN/snapshots/gen_NNNNN.npz``, NNNNN the generations
done, and notes when each chunk started and ended in ``RUN/chunks.log`` (:func:`log_chunk`,
:func:`chunk_minutes`). Playing a snapshot's network over 100 new episodes takes seconds to
minutes, so :func:`search` plays every ``coarse``-th snapshot and the last, then bisects between the
last one below a level and the first at or above it; :class:`Evaluations` keeps each
evaluation in a JSON cache as it ends, so none is played twice, whatever is interrupted.
:func:`worker` is what plays one under mpirun (a benchmark's hidden ``--evaluate`` flag),
:func:`player` what starts it; :func:`table` writes the rows, per run and level.

An hour-long run on several seeds can outlive the machine it started on. :func:`carry`
copies a run with its checkpoint and last snapshot only, every other snapshot's metadata
and evaluations in ``RUN/snapshots/carried.json``: small enough to keep in git, and the copy
resumes, tables and draws as the run did (a carried snapshot is never played again)::

    python benchmarks/snapshots.py carry RUN DEST --cache CACHE
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import common
import numpy as np

LEVELS = (0, 100, 200, 300)
CARRIED = "carried.json"  # in RUN/snapshots: the snapshots carry() kept without their files


def carried(run: Path) -> dict[int, dict]:
    """{generation: {"meta": its checkpoint's metadata, "evaluations": {episodes: evaluation}}}
    of the run's snapshots that :func:`carry` kept without their files ({} if none)."""
    path = run / "snapshots" / CARRIED
    return {int(g): v for g, v in json.loads(path.read_text()).items()} if path.exists() else {}


def generations(run: Path) -> list[int]:
    """The generations of a run's snapshots, carried ones included, in order."""
    files = {int(p.stem.removeprefix("gen_")) for p in (run / "snapshots").glob("gen_*.npz")}
    return sorted(files | set(carried(run)))


def carried_entry(snapshot: Path) -> dict | None:
    """A snapshot's entry in its run's carried.json (see :func:`carried`), or None."""
    if snapshot.parent.name != "snapshots":
        return None
    return carried(snapshot.parent.parent).get(int(snapshot.stem.removeprefix("gen_")))


def meta(checkpoint: Path) -> dict:
    """A checkpoint's metadata (its counters and settings), read without loading it; a
    carried snapshot's from its run's carried.json."""
    entry = carried_entry(checkpoint) if not checkpoint.exists() else None
    if entry:
        return entry["meta"]
    with np.load(checkpoint, allow_pickle=False) as data:
        return json.loads(data["__meta__"].tobytes().decode())


def snapshot_path(run: Path, generation: int) -> Path:
    return run / "snapshots" / f"gen_{generation:05d}.npz"


def log_chunk(run: Path, what: str, generation: int) -> None:
    """Add ``<unix time> start gen G`` or ``... end gen G`` (``what``) to RUN/chunks.log: a
    chunk that runs or ran up to G generations."""
    with open(run / "chunks.log", "a") as f:
        f.write(f"{time.time():.3f} {what} gen {generation}\n")


def chunk_minutes(run: Path) -> dict[int, float]:
    """{G: wall minutes as run up to the end of the chunk that ended at G generations}: the
    sum of every finished chunk's duration so far, each from its last ``start gen G`` line
    to its ``end gen G`` line (a chunk that failed and was run again counts once)."""
    started, total, out = {}, 0.0, {}
    for line in (run / "chunks.log").read_text().splitlines():
        words = line.split()
        if len(words) == 4 and words[1:3] in (["start", "gen"], ["end", "gen"]):
            t, what, g = float(words[0]), words[1], int(words[3])
            if what == "start":
                started[g] = t
            elif g in started:
                total += t - started.pop(g)
                out[g] = total / 60
    return out


def search(gens: list[int], score: Callable[[int], float], levels, coarse: int, known=()) -> dict:
    """{level: the first generation among ``gens`` whose evaluated ``score`` reaches the
    level, or None}: ``score`` is called on the generations ``known`` (already evaluated,
    so free), every ``coarse``-th generation and the last, then by bisection between the
    last one seen below each level and the first at or above it (``score`` should be
    cached: the bisections of several levels meet). The scores are noisy, not monotone: a
    snapshot nobody evaluated may reach a level earlier, but none evaluated does."""
    if not gens:
        return {level: None for level in levels}
    seen, at = {}, {g: i for i, g in enumerate(gens)}
    for i in sorted({*(at[g] for g in known), *range(0, len(gens), coarse), len(gens) - 1}):
        seen[i] = score(gens[i])
    for level in levels:
        above = [i for i in sorted(seen) if seen[i] >= level]
        if not above:
            continue
        hi = above[0]
        lo = max((i for i in seen if i < hi), default=-1)  # below the level: seen[lo] < level
        while hi - lo > 1:
            mid = (lo + hi) // 2
            seen[mid] = score(gens[mid])
            lo, hi = (lo, mid) if seen[mid] >= level else (mid, hi)
    return {
        level: next((gens[i] for i in sorted(seen) if seen[i] >= level), None) for level in levels
    }


def first_reaching(gens: list[int], path_of, evaluations, args) -> tuple[dict, dict]:
    """({level as ``f"{level:g}"``: the first of ``gens`` to reach it, or None}, {generation:
    its evaluation, for every one of ``gens`` whose snapshot ``path_of(generation)`` has
    been evaluated}): :func:`search` with ``args.levels`` and ``args.coarse``, each
    snapshot evaluated by ``evaluations`` (an :class:`Evaluations`), those it has evaluated
    already all counted: a run reads the same after a carry, or after more snapshots."""

    # a carried snapshot without its file or this evaluation cannot be played
    gens = [g for g in gens if evaluations.playable(p := path_of(g)) or not carried_entry(p)]

    def mean(g: int) -> float:
        return evaluations(path_of(g))["mean"]

    known = [g for g in gens if evaluations.has(path_of(g))]  # earlier calls', a carry's
    found = search(gens, mean, args.levels, args.coarse, known)
    evaluated = {g: evaluations(path) for g in gens if evaluations.has(path := path_of(g))}
    return {f"{level:g}": g for level, g in found.items()}, evaluated


class Evaluations:
    """The cache of evaluations, {snapshot's absolute path: {mean, ci95, episodes, ...}}, read
    from and written to ``path`` after every new one; ``play(path)`` evaluates one."""

    def __init__(self, path: Path, play: Callable[[Path], dict], episodes: int):
        self.path, self.play, self.episodes, self.new = path, play, episodes, 0
        self.known = json.loads(path.read_text()) if path.exists() else {}

    def key(self, snapshot: Path) -> str:
        return f"{snapshot.resolve()}:{self.episodes}"

    def carried(self, snapshot: Path) -> dict | None:
        """The evaluation :func:`carry` kept of a snapshot, or None."""
        return (carried_entry(snapshot) or {}).get("evaluations", {}).get(str(self.episodes))

    def has(self, snapshot: Path) -> bool:
        return self.key(snapshot) in self.known or self.carried(snapshot) is not None

    def playable(self, snapshot: Path) -> bool:
        """Whether ``self(snapshot)`` can answer: its file is there, or its evaluation."""
        return snapshot.exists() or self.has(snapshot)

    def __call__(self, snapshot: Path) -> dict:
        key = self.key(snapshot)
        if key not in self.known and (kept := self.carried(snapshot)) is not None:
            return kept
        if key not in self.known:
            print(f"evaluating {snapshot} ...", flush=True)
            self.known[key] = self.play(snapshot)
            self.new += 1
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.known, indent=1) + "\n")
            tmp.replace(self.path)  # whole, even if interrupted
        return self.known[key]


def worker(agent_class, snapshot: str, episodes: int, more=None) -> None:
    """Under mpirun: ``agent_class.load(snapshot).evaluate(episodes)``, printed by rank 0
    as one JSON line: mean, ci95, episodes, and ``more(score)``'s entries if given.
    Collective: every rank must call this."""
    from pgmpi import mpi

    score = agent_class.load(snapshot, quiet=True).evaluate(episodes)
    if mpi.is_root():
        out = dict(mean=float(score), ci95=list(score.ci95), episodes=episodes)
        print(json.dumps(out | (more(score) if more else {})), flush=True)


def player(script: str, args) -> Callable[[Path], dict]:
    """``play(snapshot)``: ``script --evaluate SNAPSHOT --episodes E`` on ``args.ranks``
    ranks, its JSON line read back."""

    def play(snapshot: Path) -> dict:
        flags = [script, "--evaluate", str(snapshot), "--episodes", str(args.episodes)]
        return common.last_json(common.mpirun(args.ranks, flags, timeout=3600))

    return play


def add_flags(
    p: argparse.ArgumentParser,
    runs: Path,
    kept: Path,
    cache: str,
    ranks: str = "ranks per evaluation",
) -> None:
    """The flags of a benchmark that evaluates snapshots: ``--runs`` (default ``runs``),
    ``--levels``, ``--episodes``, ``--ranks``, ``--coarse``, ``--json`` and ``--cache``,
    ``--rate`` and the worker's hidden ``--evaluate``; ``ranks``: what ``--ranks`` counts.
    :func:`parse` resolves ``--json`` and ``--cache`` not given: ``kept`` and
    benchmarks/results/``cache`` for the default ``--runs``, else (a screen's folder) that
    folder's time_to_score.json and cache.json, so a screen never overwrites the tables."""
    p.add_argument(
        "--runs",
        type=Path,
        default=runs,
        help=f"the runs' folder ({runs.relative_to(common.ROOT)}); another one, a screen's, "
        "also keeps the --json and --cache not given (time_to_score.json, cache.json)",
    )
    p.add_argument(
        "--levels", type=float, nargs="+", default=LEVELS, help="levels of the mean (0 100 200 300)"
    )
    p.add_argument("--episodes", type=int, default=100, help="evaluation episodes (100)")
    p.add_argument("--ranks", type=int, default=2, help=f"{ranks} (2)")
    p.add_argument("--coarse", type=int, default=5, help="evaluate every k-th snapshot first (5)")
    p.add_argument("--json", type=Path, help=f"the result ({kept.name} in {kept.parent.name})")
    p.add_argument(
        "--cache", type=Path, help=f"evaluations kept between calls (benchmarks/results/{cache})"
    )
    p.add_argument(
        "--rate",
        type=float,
        help="idle env steps/s on 2 ranks, measured apart: minutes as env steps over it "
        "(idle minutes), for runs trained beside other jobs",
    )
    p.add_argument("--evaluate", help=argparse.SUPPRESS)  # the worker's snapshot
    p.set_defaults(tables=(runs, kept, common.RESULTS / cache))


def parse(p: argparse.ArgumentParser, argv: list[str] | None = None) -> argparse.Namespace:
    """``p.parse_args(argv)`` with :func:`add_flags`' ``--json`` and ``--cache`` resolved."""
    args = p.parse_args(argv)
    runs, kept, cache = args.tables
    own = args.runs.resolve() != runs.resolve()  # a screen's folder keeps its own results
    args.json = args.json or (args.runs / "time_to_score.json" if own else kept)
    args.cache = args.cache or (args.runs / "cache.json" if own else cache)
    return args


def cell(key: str, form: str) -> Callable[[dict], str]:
    """A table cell: ``row[key]`` in ``format``'s ``form``, or ``-`` where it is None."""
    return lambda r: "-" if r[key] is None else format(r[key], form)


def interval(r: dict) -> str:
    """``+229.1 [+217.1, +241.0]``: an evaluation's mean and 95% interval."""
    return f"{r['mean']:+.1f} [{r['ci95'][0]:+.1f}, {r['ci95'][1]:+.1f}]"


def table(result: dict, columns: list[tuple[str, Callable[[dict], str]]]) -> str:
    """Markdown: per run of ``result["runs"]`` and level of its ``reached``, the snapshot
    that first reached it, one cell per ``(header, cell(row))`` of ``columns``, then its
    mean over ``result["episodes"]`` episodes with the 95% interval."""
    mean = f"mean of {result['episodes']} episodes [95% interval]"
    lines = [
        "| run | level | " + " | ".join([*(h for h, _ in columns), mean]) + " |",
        "|---|---|" + "---|" * (len(columns) + 1),
    ]
    for name, run in result["runs"].items():
        for level, r in run["reached"].items():
            start = f"| {name} | {float(level):+g} |"
            if not r:
                text = f" not reached in {run['generations']} generations |"
                lines.append(start + text + " |" * len(columns))
                continue
            cells = "".join(f" {cell(r)} |" for _, cell in columns)
            lines.append(f"{start}{cells} {interval(r)} |")
    return "\n".join(lines)


def draw(
    ax, evaluations: list[dict], x: Callable[[dict], float], label: str, marker="o", **style
) -> None:
    """Evaluations as points (``marker``) with their 95% intervals, at ``x(evaluation)``."""
    if not evaluations:
        return
    ms = [e["mean"] for e in evaluations]
    err = [
        [m - e["ci95"][0] for m, e in zip(ms, evaluations, strict=True)],
        [e["ci95"][1] - m for m, e in zip(ms, evaluations, strict=True)],
    ]
    xs = [x(e) for e in evaluations]
    ax.errorbar(xs, ms, yerr=err, fmt=marker, ms=4, capsize=2, label=label, **style)


def carry(run: Path, dest: Path, cache: Path) -> Path:
    """Copy ``run`` to ``dest`` (replaced) with its checkpoint and last snapshot, every
    snapshot kept as its metadata and the evaluations in ``cache`` (an :class:`Evaluations`'
    file) in ``dest/snapshots/carried.json``; returns ``dest``."""
    gens, known = generations(run), json.loads(cache.read_text()) if cache.exists() else {}
    kept = carried(run)
    for g in gens:
        path = snapshot_path(run, g)
        if path.exists():
            where = str(path.resolve())
            played = {
                k.rpartition(":")[2]: v for k, v in known.items() if k.rpartition(":")[0] == where
            }
            before = kept.get(g, {}).get("evaluations", {})  # carried here before
            kept[g] = dict(meta=meta(path), evaluations={**before, **played})
    if dest.exists():
        shutil.rmtree(dest)

    def left(folder: str, names: list[str]) -> list[str]:  # snapshots added below; a lock file
        return names if Path(folder).name == "snapshots" else [n for n in names if n == ".lock"]

    shutil.copytree(run, dest, ignore=left)
    if gens:
        shutil.copy(snapshot_path(run, gens[-1]), snapshot_path(dest, gens[-1]))
    (dest / "snapshots" / CARRIED).write_text(
        json.dumps({str(g): kept[g] for g in sorted(kept)}) + "\n"
    )
    return dest


def main() -> None:
    p = argparse.ArgumentParser(description="Carry a run to DEST: see the module's docstring.")
    p.add_argument("what", choices=["carry"])
    p.add_argument("run", type=Path, help="the run's folder (RUN/snapshots holds its snapshots)")
    p.add_argument("dest", type=Path, help="the copy's folder (replaced)")
    p.add_argument("--cache", type=Path, required=True, help="the evaluations' cache")
    args = p.parse_args()
    dest = carry(args.run, args.dest, args.cache)
    size = sum(f.stat().st_size for f in dest.rglob("*") if f.is_file())
    print(f"carried {args.run} to {dest}: {len(generations(dest))} snapshots, {size:,} bytes")


if __name__ == "__main__":
    main()
