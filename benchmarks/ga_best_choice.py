"""Which network a PrunedGA run calls its best: the top of the elite-averaged ranking, or
the top-ranked elite whose mean rests on at least N episodes (``best_min_episodes``).

    python benchmarks/ga_best_choice.py benchmarks/recordings/ga-tts/seed0 ... --min-episodes 2 4 8

For each run (a log dir with checkpoint.npz from a run with ``elite_averaging``) it reads
the elites of the checkpoint's next population, which every rule chooses among (the same
selection), and plays over 100 new episodes (``--episodes``) the network each rule calls
the best: the top of the ranking (``best_min_episodes`` 1, PrunedGA's rule before the
setting) and, for each N of ``--min-episodes``, the top-ranked elite that has played
ceil(N / episodes per individual) generations (else the one that has played most). Every
network plays the same episodes, those ``PrunedGA.load(checkpoint).evaluate()`` would play
next (so the rule the run itself used gives the evaluation a time-to-score table gives its
last checkpoint). Prints a table and writes benchmarks/results/ga_best_choice.json. One
process, no MPI run; about a minute per network on BipedalWalker. ``--save DIR`` also writes
each run's checkpoint with the first N's network as its best to DIR/RUN/checkpoint.npz, to
watch it (``python -m pgmpi.play DIR/RUN --gif walker.gif``); its other counts are the run's.
``--every-elite`` also plays, on the same episodes, each elite no rule chose (rule 0 in the
table): whether the population holds a better walker than any rule picks.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import common
import numpy as np

from pgmpi import PrunedGA


def choices(run: Path, min_episodes: list[int], every: bool = False) -> list[dict]:
    """Each rule's best among the checkpoint's elites: (rule, row, generations played, mean);
    ``every``: then each elite no rule chose, in ranked order, as rule 0."""
    with np.load(run / "checkpoint.npz") as data:
        count, total = data["earlier_count"], data["earlier_sum"]
    agent = PrunedGA.load(run / "checkpoint.npz", quiet=True)
    if not agent.config["elite_averaging"]:
        raise SystemExit(f"{run}: trained without elite_averaging; every rule is the same")
    elites = int((count > 0).sum())  # the elites lead the population, in ranked order
    mean = total[:elites] / count[:elites]
    order = np.lexsort((np.arange(elites), -mean))
    per = agent.config["episodes_per_individual"]
    rows = []
    for n in [1, *min_episodes]:
        sure = [i for i in order if count[i] >= math.ceil(n / per)]
        row = int(sure[0]) if sure else int(order[np.argmax(count[order])])
        rows.append(dict(min_episodes=n, row=row, generations=int(count[row]), mean=mean[row]))
    if every:  # then each elite no rule chose, in ranked order
        chosen = {r["row"] for r in rows}
        rows += [dict(min_episodes=0, row=int(i), generations=int(count[i]), mean=mean[i])
                 for i in order if i not in chosen]  # fmt: skip
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", type=Path, help="PrunedGA log dirs (their checkpoint.npz)")
    p.add_argument("--min-episodes", nargs="+", type=int, default=[8], help="N of each rule (8)")
    p.add_argument("--episodes", type=int, default=100, help="new episodes per network (100)")
    p.add_argument("--save", type=Path, help="write each run with the first N's best here")
    every = "also play each elite no rule chose (rule 0): does any walk better?"
    p.add_argument("--every-elite", action="store_true", help=every)
    args = p.parse_args()
    print("| run | best_min_episodes | elite (generations played) | training mean | "
          "new episodes: mean [95% interval] | above +300 |\n" + "|---" * 6 + "|")  # fmt: skip
    result, played = dict(machine=common.machine(), runs=[]), {}
    for run in args.runs:
        for c in choices(run, args.min_episodes, args.every_elite):
            agent = PrunedGA.load(run / "checkpoint.npz", quiet=True)
            mask = agent.optimizer.population[c["row"]]
            key = (run, mask.tobytes())
            if key not in played:  # the same network under two rules plays once
                played[key] = agent.evaluate(args.episodes, mask=mask)
            score = played[key]
            lo, hi = score.ci95
            above = int((np.asarray(score.returns) > 300).sum())  # the task's solved level
            c.update(run=str(run), score=float(score), ci95=[lo, hi], kept=int(mask.sum()),
                     above_300=above)  # fmt: skip
            result["runs"].append(c)
            print(f"| {run} | {c['min_episodes']} | {c['row']} ({c['generations']}) | "
                  f"{c['mean']:+.1f} | {float(score):+.1f} [{lo:+.1f}, {hi:+.1f}] | {above} |",
                  flush=True)  # fmt: skip
        if args.save:  # the first N's network as the best, to play
            agent = PrunedGA.load(run / "checkpoint.npz", quiet=True)
            row = next(c["row"] for c in result["runs"] if c["run"] == str(run)
                       and c["min_episodes"] == args.min_episodes[0])  # fmt: skip
            agent.optimizer.best_mask = agent.optimizer.population[row].copy()
            print(f"wrote {agent.save(args.save / run.name / 'checkpoint.npz')}")
    print(f"wrote {common.write('ga_best_choice', result)}")


if __name__ == "__main__":
    main()
