"""PrunedGA on BipedalWalker-v3, from the synaptolytic-learning settings; checkpointed, resumable.

    python examples/bipedal_walker.py --generations 2
    mpirun -n 4 python examples/bipedal_walker.py
    mpirun -n 4 python examples/bipedal_walker.py --resume --minutes 30
    mpirun -n 4 python examples/bipedal_walker.py --preset synaptolytic
    mpirun -n 4 python examples/bipedal_walker.py --hardcore --log-dir runs/hardcore

Hidden layers of 8 and 8 tanh units and 138 individuals, as the synaptolytic-learning
benchmark ran, but 2 episodes each, not its 8, and an unchanged elite ranked on its mean
fitness over the generations it has played (--elite-averaging): four times the generations
in the same env steps, with survivors judged on more episodes; the best network (the one
evaluated and reported) is the top-ranked elite whose mean rests on 8 episodes at least
(--best-min-episodes 8), not a child that tops the ranking on its first 2 lucky ones; and
children that lose 3% of their parent's connections (--mutation-rate 0.03), where the
adaptive rate climbs to 12.5%.
At 12 M env steps the worst of seeds 0-2 scores +136 over 100 new episodes, where the
adaptive rate (--mutation-rate none) gave +92 and 8 episodes each +13 (docs/screens.md); 200
generations. --preset synaptolytic takes every setting from the benchmark
(pgmpi.presets.GA_PRESETS says which and where each was read): 8 episodes, generation 0
pruned at 0.025 and later ones at 0.01, no size penalty. Any flag given replaces the
preset's value. The population, best network, mutation rate, fitness history and when the
best network was found are saved to LOG_DIR/checkpoint.npz every --checkpoint-every
generations and when training stops (Ctrl-C too: at the end of the generation under way;
again, 3 s or more later, to stop at once); --resume continues from that file (a
BipedalWalker one), with its settings, exactly as an uninterrupted run would, naming the
settings flags it ignores. --generations counts from the start of the run (resumes
included); --minutes bounds this invocation. At the end the best network plays
--eval-episodes (100) new episodes, as the task is scored (solved at a mean of 300), and the
last line gives their mean with its 95% interval, the connections it keeps, and the
generation, env steps, episodes, minutes and core-hours at which it was found. A generation
costs up to 138 x 2 x 1,600 steps once walkers stop falling over: use every core you have.
Its 276 episodes are the units the ranks share, and episodes differ in length: projected,
they leave a quarter of rank time idle at 63 ranks and half at 128, where the benchmark's
1,104 (8 each) leave 1.2% and 7.5% (docs/benchmarks.md, PrunedGA at scale). The run's header
warns below 8 episodes a rank: past 32 ranks, give a larger population or more episodes
each.
"""

import sys
from dataclasses import replace

from pgmpi import PrunedGA, mpi
from pgmpi.cli import (
    ArgumentParser,
    add_run_flags,
    add_settings,
    make_agent,
    positive_float,
    positive_int,
)
from pgmpi.config import GAConfig
from pgmpi.presets import GA_PRESETS

ENV = "BipedalWalker-v3"
HARDCORE = "BipedalWalkerHardcore-v3"  # --hardcore
# The synaptolytic-learning benchmark's sizes (population 138, hidden layers 8 and 8), 2
# episodes per individual, elites ranked on their mean, the best chosen on 8 episodes and a
# fixed mutation rate of 0.03 (screened), the rest GAConfig's defaults; --preset
# synaptolytic: every setting the benchmark's.
SETTINGS = replace(
    GAConfig(),
    hidden_sizes=[8, 8],
    population_size=138,
    episodes_per_individual=2,
    elite_averaging=True,
    best_min_episodes=8,
    mutation_rate=0.03,
)


def main() -> int:
    p = ArgumentParser(__doc__)
    p.add_argument(
        "--preset",
        choices=["synaptolytic"],
        help="the synaptolytic-learning benchmark's settings, all of them (the flags below "
        "show this example's)",
    )
    p.add_argument("--generations", type=positive_int, default=200, help="total generations (200)")
    p.add_argument("--minutes", type=positive_float, help="stop after this many minutes")
    p.add_argument("--target-return", type=float, help="stop once a mean return reaches this")
    p.add_argument(
        "--eval-episodes", type=positive_int, default=100, help="new episodes at the end (100)"
    )
    p.add_argument(
        "--hardcore",
        action="store_true",
        help=f"{HARDCORE}: stumps, pits and stairs, 2,000 steps an episode, also solved at 300 "
        "(give it again with --resume)",
    )
    add_settings(p, SETTINGS)
    add_run_flags(p, "runs/bipedal_walker", "generation", PrunedGA.train)
    args = p.parse_args()
    mpi.set_deadline(args.deadline)

    checkpoint = args.log_dir / "checkpoint.npz"
    settings = GA_PRESETS[args.preset] if args.preset else SETTINGS
    ga = make_agent(PrunedGA, p, args, HARDCORE if args.hardcore else ENV, settings)
    ga.train(
        generations=args.generations,
        minutes=args.minutes,
        target_return=args.target_return,
        checkpoint_path=checkpoint,
        checkpoint_every=args.checkpoint_every,
    )
    score = ga.evaluate(episodes=args.eval_episodes)
    if mpi.is_root():
        print(f"{score.report()}; saved {checkpoint}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
