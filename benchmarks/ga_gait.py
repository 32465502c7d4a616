"""Where a walker's return goes: each PrunedGA run's best network on its BipedalWalker env,
its return split into the ground it covers and the torque it spends.

    python benchmarks/ga_gait.py benchmarks/recordings/ga-tts/seed0 runs/ga-late/rate0.03-seed1

BipedalWalker pays 130 / SCALE (4.33) per unit the hull moves forward, charges 0.00035 x 80
(0.028) per step for each motor's |action|, ends an episode at 1,600 steps (Hardcore 2,000),
at the course's end, or at a fall, which costs 100. So a walker that reaches the end earns
+364 for the ground (84 units) and keeps what its torque leaves: +300 needs a torque cost
under about 64, however fast it walks. Each network plays the same ``--episodes`` episodes (env
seeds 10,000 on, or ``--first-seed``), in one process (no MPI run; 20 take about a minute).
Prints a table and writes benchmarks/results/ga_gait.json (or ``--json``).

``--min-episodes 8`` plays the network the run's own rule calls the best (as the time-to-score
table does), ``--row R`` the population's row R (an elite; ``ga_best_choice.py --every-elite``
prints each one's row), and ``--gains`` / ``--scales`` play it again with its actions or its weights
scaled after training, ``--alphas`` with a running mean of its actions sent in their place
(alpha x the last sent + (1 - alpha) x the network's): does a walker spend less torque for the
same course that way? Each row also gives how often each motor's action changes sign, a step.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import common
import gymnasium as gym
import numpy as np
from ga_best_choice import choices
from gymnasium.envs.box2d import bipedal_walker as bw

from pgmpi import PrunedGA
from pgmpi.evaluation import Evaluation

TORQUE = 0.00035 * bw.MOTORS_TORQUE  # the env's cost per step of each motor's |action|
FORWARD = 130 / bw.SCALE  # the env's reward per unit the hull moves forward
END = (bw.TERRAIN_LENGTH - bw.TERRAIN_GRASS) * bw.TERRAIN_STEP  # past this, an episode ends
FIRST_SEED = 10_000


def gait(
    run: Path,
    episodes: int,
    min_episodes=0,
    gain=1.0,
    scale=1.0,
    alpha=0.0,
    row=None,
    first=FIRST_SEED,
) -> dict:
    """The best network of ``run`` over ``episodes`` episodes: means and per-episode rows.

    ``min_episodes`` N > 0 plays the top-ranked elite whose mean rests on N episodes (the
    network ``best_min_episodes`` N calls the best; ga_best_choice.py's rule) in place of the
    checkpoint's best, and ``row`` R the population's row R (an elite: ga_best_choice.py
    --every-elite prints each one's row). ``first`` is the first episode's env seed. ``gain``
    multiplies each action and ``scale`` every kept weight, and ``alpha`` > 0 sends a running
    mean of the actions, after training: a cheaper gait from the same network, if there is
    one."""
    agent = PrunedGA.load(run / "checkpoint.npz", quiet=True)
    mask = agent.optimizer.best_mask
    if row is not None:
        mask = agent.optimizer.population[row]
    elif min_episodes:
        mask = agent.optimizer.population[choices(run, [min_episodes])[-1]["row"]]
    weights = [w * np.float32(scale) for w in agent.net.weights(mask)]
    env = gym.make(agent.config["env"])
    rows = []
    for i in range(episodes):
        obs, _ = env.reset(seed=first + i)
        x0, total, torque, steps, effort = env.unwrapped.hull.position[0], 0.0, 0.0, 0, 0.0
        done, sent, flips = False, np.zeros(agent.probe.n_actions), 0.0
        while not done:
            action = gain * agent.probe.stretched(agent.net.act(weights, obs))  # as act() does
            action = alpha * sent + (1 - alpha) * action if steps else action
            flips, sent = flips + (action * sent < 0), action
            cost = np.clip(np.abs(action), 0, 1)
            torque, effort = torque + TORQUE * cost.sum(), effort + cost
            obs, reward, terminated, truncated, _ = env.step(action)
            total, steps, done = total + reward, steps + 1, terminated or truncated
        x = env.unwrapped.hull.position[0]
        rows.append(dict(ret=float(total), steps=steps, forward=FORWARD * (x - x0),
                         torque=float(torque), end=bool(x > END),
                         fell=bool(env.unwrapped.game_over), effort=(effort / steps).tolist(),
                         flips=(flips / steps).tolist()))  # fmt: skip
    env.close()
    mean = lambda k: float(np.mean([r[k] for r in rows]))  # noqa: E731
    reached = [r["steps"] for r in rows if r["end"]]
    return dict(run=str(run), env=agent.config["env"], episodes=episodes, kept=int(mask.sum()),
                min_episodes=min_episodes, row=row, first_seed=first, gain=gain, scale=scale,
                alpha=alpha,
                mean_return=mean("ret"),
                ci95=float(np.diff(Evaluation([r["ret"] for r in rows], "gait").ci95)[0]) / 2,
                forward=mean("forward"), torque=mean("torque"), rest=mean("ret") - mean("forward")
                + mean("torque"), reached_end=len(reached), fell=sum(r["fell"] for r in rows),
                steps_to_end=float(np.median(reached)) if reached else None,
                above_300=sum(bool(r["ret"] > 300) for r in rows),
                effort=np.mean([r["effort"] for r in rows], axis=0).round(3).tolist(),
                flips=np.mean([r["flips"] for r in rows], axis=0).round(3).tolist(),
                rows=rows)  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", type=Path, help="PrunedGA log dirs (their checkpoint.npz)")
    p.add_argument("--episodes", type=int, default=20, help="episodes per network (20)")
    p.add_argument(
        "--min-episodes",
        type=int,
        default=0,
        metavar="N",
        help="play the network best_min_episodes N calls the best (0: the checkpoint's)",
    )
    p.add_argument("--row", type=int, help="play the population's row R instead (an elite)")
    help = f"the first episode's env seed ({FIRST_SEED:,})"
    p.add_argument("--first-seed", type=int, default=FIRST_SEED, help=help)
    for flag, what in (("--gains", "actions"), ("--scales", "weights")):  # after training
        help = f"also play each network with its {what} times each of these (1)"
        p.add_argument(flag, nargs="+", type=float, default=[1.0], help=help)
    help = "also play each network sending a running mean of its actions, with each alpha"
    p.add_argument("--alphas", nargs="+", type=float, default=[], help=help)
    p.add_argument("--json", type=Path, help="write here (default benchmarks/results/ga_gait.json)")
    args = p.parse_args()
    variants = [(g, 1.0, 0.0) for g in args.gains] + [(1.0, s, 0.0) for s in args.scales if s != 1]
    variants += [(1.0, 1.0, a) for a in args.alphas]
    print("| run | gain, scale, alpha | return +- 95% | ground | torque | falls and tilt | at the "
          "end (median steps) | mean abs(action) per motor | sign flips a step per motor |\n"
          + "|---" * 9 + "|")  # fmt: skip
    result = dict(first_seed=args.first_seed, machine=common.machine(), runs=[])
    for run in args.runs:
        for gain, scale, alpha in variants:
            g = gait(run, args.episodes, args.min_episodes, gain, scale, alpha, args.row,
                     args.first_seed)  # fmt: skip
            result["runs"].append(g)
            end = f"{g['reached_end']} of {g['episodes']}" + (
                f" ({g['steps_to_end']:.0f})" if g["reached_end"] else "")  # fmt: skip
            print(f"| {run} | {gain:g}, {scale:g}, {alpha:g} | {g['mean_return']:+.1f} +- "
                  f"{g['ci95']:.1f} | {g['forward']:+.1f} | -{g['torque']:.1f} | {g['rest']:+.1f} "
                  f"| {end} | {' '.join(f'{e:.2f}' for e in g['effort'])} | "
                  f"{' '.join(f'{e:.2f}' for e in g['flips'])} |", flush=True)  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    else:
        args.json = common.write("ga_gait", result)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
