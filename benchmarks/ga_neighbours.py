"""Is a better walker one pruned connection away from a PrunedGA run's best network?

    python benchmarks/ga_neighbours.py benchmarks/recordings/ga-tts/seed1 --episodes 50 --rounds 4

A careful local search, with none of the GA's noise: starting from the network the run's
own rule calls its best (``--min-episodes``, 8 as the example's default), each round plays
every network one pruned connection away (PrunedGA's only operator) on the same
``--episodes`` episodes (common random numbers, env seeds 60,000 + 1,000 x round on), moves
to the best of them if it beats the current network on those episodes, and scores the new
network on 100 episodes no choice was made on (env seeds 50,000-50,099). If the search
climbs on those 100, the GA's selection is what holds its runs back (noise, too few
episodes); if it does not, the hour's networks sit on a local peak of what pruning can reach.

One process, no MPI run: a round on BipedalWalker plays connections x episodes episodes
(87 x 50, about 6 M env steps, 10-20 minutes on one core). Prints each round and writes
benchmarks/results/ga_neighbours.json (or ``--json``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import common
import gymnasium as gym
import numpy as np
from ga_best_choice import choices

from pgmpi import PrunedGA
from pgmpi.evaluation import Evaluation

TEST = np.arange(50_000, 50_100)  # the episodes each step is scored on, never chosen on


def neighbours(mask: np.ndarray) -> list[np.ndarray]:
    """Every mask with one of ``mask``'s kept connections pruned, in the connections' order."""
    out = []
    for i in np.flatnonzero(mask):
        m = mask.copy()
        m[i] = False
        out.append(m)
    return out


def returns(agent: PrunedGA, env, mask: np.ndarray, seeds) -> np.ndarray:
    """The return of ``mask``'s network on each episode of env seed in ``seeds``, as act() plays."""
    weights, out = agent.net.weights(mask), []
    for seed in seeds:
        obs, _ = env.reset(seed=int(seed))
        done, total = False, 0.0
        while not done:
            obs, reward, terminated, truncated, _ = env.step(
                agent.probe.stretched(agent.net.act(weights, obs))
            )
            total, done = total + reward, terminated or truncated
        out.append(total)
    return np.array(out)


def score(agent, env, mask) -> dict:
    """``mask`` on the 100 test episodes: mean, its 95% interval, episodes above +300."""
    test = returns(agent, env, mask, TEST)
    ci95 = [float(x) for x in Evaluation(test.tolist(), "test").ci95]
    return dict(kept=int(mask.sum()), test=float(test.mean()), ci95=ci95,
                above_300=int((test > 300).sum()))  # fmt: skip


def climb(run: Path, episodes: int, rounds: int, min_episodes: int) -> dict:
    """The rounds of the search from ``run``'s best network (see the module's docstring)."""
    agent = PrunedGA.load(run / "checkpoint.npz", quiet=True)
    mask = agent.optimizer.population[choices(run, [min_episodes])[-1]["row"]].copy()
    env = gym.make(agent.config["env"])
    steps = [dict(round=None, **score(agent, env, mask))]
    print(f"{run}: start, {steps[0]['kept']} connections: test {steps[0]['test']:+.1f}", flush=True)
    for k in range(rounds):
        chosen_on = np.arange(episodes) + 60_000 + 1_000 * k
        here = returns(agent, env, mask, chosen_on).mean()
        near = neighbours(mask)
        means = np.array([returns(agent, env, m, chosen_on).mean() for m in near])
        best = int(np.argmax(means))
        print(f"{run}: round {k}: here {here:+.1f}, best of {len(near)} neighbours "
              f"{means[best]:+.1f} on {episodes} episodes", flush=True)  # fmt: skip
        if means[best] <= here:
            break  # a local peak on these episodes
        mask = near[best]
        steps.append(dict(round=k, here=float(here), chosen=float(means[best]),
                          **score(agent, env, mask)))  # fmt: skip
        print(f"{run}:   moved: {steps[-1]['kept']} connections, test {steps[-1]['test']:+.1f} "
              f"[{steps[-1]['ci95'][0]:+.1f}, {steps[-1]['ci95'][1]:+.1f}], "
              f"{steps[-1]['above_300']} above +300", flush=True)  # fmt: skip
    env.close()
    return dict(run=str(run), episodes=episodes, min_episodes=min_episodes, steps=steps)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", type=Path, help="PrunedGA log dirs (their checkpoint.npz)")
    p.add_argument("--episodes", type=int, default=50, help="episodes each choice rests on (50)")
    p.add_argument("--rounds", type=int, default=4, help="at most this many moves (4)")
    p.add_argument("--min-episodes", type=int, default=8, help="the rule that names the start (8)")
    p.add_argument("--json", type=Path, help="write here (default benchmarks/results/)")
    args = p.parse_args()
    result = dict(machine=common.machine(), runs=[])
    for run in args.runs:
        result["runs"].append(climb(run, args.episodes, args.rounds, args.min_episodes))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    print(f"wrote {args.json or common.write('ga_neighbours', result)}")


if __name__ == "__main__":
    main()
