"""Branch a ParallelPG or PrunedGA run: a copy of its log dir whose checkpoint goes on with other
learning settings, so that screens of a late phase start from one shared point instead of from
scratch.

    python benchmarks/branch.py runs/sweep/snap/ent3-2-u370 runs/sweep/fast-sticky-ent3-decay3-2 \\
        decay_from=3000000 lr_decay_steps=3000000
    python benchmarks/seed_sweep.py --run 2 --budget 10e6 --tag=-ent3-decay3   # resumes it
    python benchmarks/branch.py benchmarks/recordings/ga-tts/seed0 runs/ga-late/rate0.01-seed0 \\
        mutation_rate=0.01
    python examples/bipedal_walker.py --log-dir runs/ga-late/rate0.01-seed0 --resume \\
        --generations 196

The copy keeps the run's learning state (a policy's parameters, optimizer state, running
average and games in progress; a population and its fitness history) and counters, and its
progress.csv up to the checkpoint's update or generation; only the settings named change
(``NAME=VALUE``, the value read as JSON: ``null`` for None), and only those that leave the
state's shapes and the games in progress as they are (``BRANCHABLE``, per algorithm; a PrunedGA
branch may also change how long its episodes play, evaluations' included, their finishing
bonus, how many each individual plays and which elite it reports as the best; with
``elite_averaging`` an elite's mean still weighs each generation it played alike, whatever its
episodes then). A two-action Pong run may also take NOOP on (``noop=true``): its one up/down
logit becomes the softmax's up and down logits (z and 0: the same policy) and NOOP's logit
starts at ``-a`` times the sum of the hidden layer, ``a`` chosen so that NOOP takes 5%
(``pgmpi.noop.SHARE``) of the median state of the games in progress; the optimizer's state for
the new columns starts with the old column's second moment. With ``noop_from=N`` (N past the
checkpoint's agent steps) the run grows the same way itself once it has played N
(PGConfig.noop_from), bit for bit the run that had it from the start. The checkpoint and
config.json say the new values, so a resume (``examples/pong.py --resume`` or
``examples/bipedal_walker.py --resume``, or seed_sweep.py, which resumes a run it finds) plays
on with them: up to the checkpoint the branch is its parent, bit for bit, and two branches of
one parent differ only by what changed (a PrunedGA branch: from the next generation's children
on). Settings already resolved in the parent stay resolved (the sticky entropy schedule's 0.03
and 0.01, say).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pgmpi import checkpoint, noop  # noqa: E402
from pgmpi.config import GAConfig, PGConfig  # noqa: E402
from pgmpi.envs import PONG_ID  # noqa: E402
from pgmpi.retired import without_retired  # noqa: E402

BRANCHABLE = {  # what a run may change midway: schedules, weights and (PrunedGA, whose episodes
    # are new each generation) its episodes' length and number; not shapes or games in progress
    "ParallelPG": ("learning_rate", "lr_decay_steps", "decay_from", "entropy_bonus",
                   "entropy_final", "entropy_steps", "gamma", "noop", "noop_from"),
    "PrunedGA": ("mutation_rate",  # the next generation's children on
                 "max_episode_steps", "finish_bonus",  # the next generation's episodes on
                 "episodes_per_individual",
                 "best_min_episodes"),  # which elite is reported as the best, from the next on
}  # fmt: skip
CONFIGS = {"ParallelPG": (PGConfig, "update"), "PrunedGA": (GAConfig, "generation")}


def branch(parent: Path, child: Path, changes: dict) -> Path:
    """Write the branch of the run in ``parent`` with ``changes`` to ``child`` (a new folder,
    written whole or not at all); raises ValueError, with nothing written, on a setting that
    may not change or a bad value."""
    arrays, meta = checkpoint.read(parent / "checkpoint.npz")
    algorithm = str(meta.get("algorithm"))
    if algorithm not in BRANCHABLE:
        raise ValueError(f"{parent}: a {algorithm} run; branch.py branches {', '.join(BRANCHABLE)}")
    may, (settings, unit) = BRANCHABLE[algorithm], CONFIGS[algorithm]
    cannot = sorted(set(changes) - set(may))
    if cannot:
        raise ValueError(f"cannot branch on {cannot}; a branch may change {', '.join(may)}")
    if child.exists():
        raise ValueError(f"{child} exists")
    config, gone = without_retired(meta["config"])  # a setting since removed: at today's value
    if gone:
        raise ValueError(f"{parent}: {gone}")
    later, grown = changes.get("noop_from"), noop.due(config, meta.get("steps", 0))
    if "noop_from" in changes and (config["env"] != PONG_ID or grown):
        raise ValueError("noop_from branches a two-action Pong run")
    if later is not None and (not isinstance(later, int) or later <= meta["steps"]):
        raise ValueError(
            f"noop_from={later!r}: the run has played {meta['steps']:,} agent "
            "steps; a branch takes NOOP on later than that, or now (noop=true)"
        )
    if changes.get("noop") and not config.get("noop"):
        add_noop(arrays, config)
    elif "noop" in changes and changes["noop"] != config.get("noop"):
        raise ValueError("a branch may take NOOP on (noop=true), not off")
    if "episodes_per_individual" in changes:  # last generation's steps per episode, which only
        arrays.pop("unit_steps", None)  # order the next one's work: it orders its own afresh
    meta["config"] = config = dict(config, **changes)
    problem = settings(**{k: v for k, v in config.items() if k != "env"}).check()
    if problem:
        raise ValueError(problem)
    tmp = child.with_name(f".{child.name}.tmp-{os.getpid()}")
    tmp.mkdir(parents=True)
    try:
        checkpoint.save(tmp / "checkpoint.npz", arrays, meta)
        (tmp / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        with open(parent / "progress.csv", newline="") as f:  # the rows the checkpoint holds
            rows = list(csv.reader(f))
        u = rows[0].index(unit)
        kept = [rows[0], *(r for r in rows[1:] if int(r[u]) <= meta[unit])]
        with open(tmp / "progress.csv", "w", newline="") as f:
            csv.writer(f).writerows(kept)
        tmp.rename(child)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return child


def add_noop(arrays: dict, config: dict) -> None:
    """Grow a two-action Pong policy's output layer, in place, to up, down and NOOP (see the
    module's docstring): W2's columns (z, value) become (z, 0, -a, value)."""
    h = config["hidden_size"]
    d = len(arrays["params"]) // h - 2  # the inputs, whatever Pong's: W1 (d, h), W2 (h, 2)
    if config["env"] != PONG_ID or not config["value_baseline"] or len(arrays["params"]) % h:
        raise ValueError("noop=true branches a two-action Pong run with a baseline")

    w1, z_of = arrays["params"][: d * h].reshape(d, h), arrays["params"][d * h :: 2]
    sizes, idx, vals = (arrays[f"game.open_{k}"] for k in ("sizes", "idx", "vals"))
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    hs = np.array([np.maximum(vals[s : s + n] @ w1[idx[s : s + n]], 0)
                   for s, n in zip(starts, sizes, strict=True) if n])  # fmt: skip
    a = noop.share_weight(hs @ z_of, hs.sum(axis=1))  # NOOP's logit: -a * sum(h)
    for name in {"params", "average"} & set(arrays):
        arrays[name] = noop.widen(arrays[name], d * h, h, 0.0, -a)
    arrays["adam_m"] = noop.widen(arrays["adam_m"], d * h, h, 0.0, 0.0)
    arrays["adam_v"] = noop.widen(arrays["adam_v"], d * h, h)  # z's second moment, twice


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("parent", type=Path, help="the run's log dir (its checkpoint.npz)")
    p.add_argument("child", type=Path, help="the branch's log dir, new")
    p.add_argument("changes", nargs="+", metavar="NAME=VALUE", help="settings to change (JSON)")
    args = p.parse_args()
    changes = {}
    for change in args.changes:
        name, _, value = change.partition("=")
        try:
            changes[name] = json.loads(value)
        except json.JSONDecodeError:
            p.error(f"{change!r}: the value must be JSON (a number, null, ...)")
    try:
        branch(args.parent, args.child, changes)
    except ValueError as e:
        p.error(str(e))
    print(f"{args.child}: {args.parent} at its checkpoint, with {changes}")


if __name__ == "__main__":
    main()
