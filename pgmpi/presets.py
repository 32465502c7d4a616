"""The algorithms' named settings: ``PRESETS`` (ParallelPG: ``ParallelPG.from_preset``,
``examples/pong.py --preset``), ``GA_PRESETS`` (PrunedGA: ``examples/bipedal_walker.py
--preset``) and ``ES_PRESETS`` (ParallelES), each a config of :mod:`pgmpi.config` with where
its values come from."""

from __future__ import annotations

from dataclasses import replace

from pgmpi.config import ESConfig, GAConfig, PGConfig

# ParallelPG's named settings (``ParallelPG.from_preset``, ``examples/pong.py --preset``).
PRESETS = {
    # The defaults: Adam on the mean over slots of time-boxed pieces of play, with an entropy
    # bonus (docs/screens.md: it lifted sticky-action Pong's plateau; three times as heavy at
    # the start, it got the slow seeds going sooner) and a learned baseline
    # (it passed 0 sooner on both seeds screened); in sticky Pong, NOOP joins up and down
    # after 3 M agent steps (it lifted the slow seeds past +10), and from 7.5 M a decay of both
    # (it brought every seed of five to +15: docs/screens.md); the policy played is the
    # parameters' running average (it beat Pong under both protocols); the advantages
    # standardised over all the update's games (it lifted the late curve on five seeds).
    "fast": PGConfig(),
    # The post's algorithm: 10 whole games per update, summed gradient, RMSProp 1e-4, in the
    # post's game: Pong-v0 as gym registered it, a frame skip drawn from {2, 3, 4} at every
    # step and sticky actions (0.25); each game's advantages standardised alone.
    "karpathy": replace(PGConfig(), optimizer="rmsprop", learning_rate=1e-4, slots=10,
                        steps_per_slot=1, whole_games=True, batch_gradient="sum",
                        entropy_bonus=0.0, entropy_final=None, sticky_actions=True,
                        frame_skip=[2, 4], average_half_life=0.0, value_baseline=0.0,
                        lr_decay_steps=None, standardise_over="game", noop_from=None),
}  # fmt: skip


# PrunedGA's named settings (``examples/bipedal_walker.py --preset``). "synaptolytic" is the
# synaptolytic-learning benchmark on BipedalWalker (github.com/riveSunder/synaptolytic-learning
# at commit 89f4dbb: ``mpi_simple.py -e BipedalWalker-v2 -p 138 -g 200 -d 8 8 -r 8`` with the
# HebbianDAG agent, 200 generations on 63 workers), its values read from that commit's
# src/mpi_simple.py and src/hebbian_dag.py: the HebbianDAG agent (signed-dag), hidden layers
# of 8 and 8 (-d), 138 individuals (-p) of 8 episodes each (-r); elites ceil(0.125 x 138) =
# 18 (update_pop); generation 0 pruned at 0.025 (HebbianDAG.__init__: mutate_pop(rate=0.025)),
# later ones at 0.01 (update_pop: hebbian_prune(0.01); mpi_simple.py's workers keep the
# Hebbian traces, so its coordinator's pruning is in effect uniform, where PrunedGA's
# signed-dag weighs it by activity); fitness the mean return, with no size
# penalty (get_fitness: its complexity penalty is commented out); seed 0 (mpi_simple.py
# builds HebbianDAG(seed=0)); episodes end at the env's own 1,600 steps (gym's limit for
# BipedalWalker-v2 and v3). What PrunedGA has no setting for is not kept: a further 0.01 of
# uniform pruning in every other generation, elites included (update_pop: mutate_pop(0.01)
# after a coin flip), a leaderboard of elites, recombination, and weights drawn for every
# individual. The settings added for issue 49's screens (synapses, elite_averaging,
# best_min_episodes, finish_bonus, crossover: not the original's recombination, which swaps weight
# matrices between two networks of the new population) are off, as PrunedGA ran before them.
# Every field is written out, so that a change of the defaults leaves the preset as it is
# (tests/test_config.py compares it with the original's values).
GA_PRESETS = {
    "default": GAConfig(),
    "synaptolytic": GAConfig(hidden_sizes=[8, 8], genome="signed-dag", synapses=1,
                             population_size=138, episodes_per_individual=8,
                             elite_fraction=0.125, prune_rate=0.025, mutation_rate=0.01,
                             elite_averaging=False, best_min_episodes=1, crossover=0.0,
                             finish_bonus=0.0,
                             complexity_weight=0.0,
                             max_episode_steps=1600, seed=0),
}  # fmt: skip


# ParallelES's named settings: "paper" is Salimans et al.'s (2017) MuJoCo settings, as their
# code ran them: 10,000 episodes a generation, sigma 0.02, Adam 0.01, L2 0.005, two hidden
# layers of 256 tanh units, observation statistics from 1% of episodes, a 250 M-number table.
ES_PRESETS = {
    "default": ESConfig(),
    "paper": replace(ESConfig(), hidden_sizes=[256, 256], population_size=10_000,
                     noise_std=0.02, learning_rate=0.01, weight_decay=0.005,
                     noise_table_size=250_000_000, obs_stat_fraction=0.01),
}  # fmt: skip
