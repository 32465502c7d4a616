"""What a ParallelES run needs besides its generations: the loop's header, lines and limits,
the current network played (``act``, ``evaluate``), and checkpoints.

:class:`pgmpi.es.ParallelES` is the algorithm, set-up and generation, as the paper's
Algorithm 2 reads; it takes these from :class:`ESRun`, which reads the attributes that
ParallelES's constructor sets (``config``, ``net``, ``optimizer``, ``probe``, ``obs_stats``,
the counters) and its ``_action`` and ``_play``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

import numpy as np

from pgmpi import checkpoint, mpi
from pgmpi.envs import Game
from pgmpi.evaluation import Evaluation, evaluation_returns
from pgmpi.loop import EPISODES_A_RANK, Description
from pgmpi.settings import at_least, must

Agent = TypeVar("Agent", bound="ESRun")


class ESRun:
    """ParallelES's side that is not the learning: see the module's docstring."""

    algorithm = "ParallelES"

    def counts(self) -> dict[str, int]:
        return {"generations": self.generation}

    def reached(self, row: dict | None, target_return: float) -> bool:
        key = "charts/current_return" if self.config["eval_episodes"] else "charts/mean_fitness"
        return row is not None and row[key] >= target_return

    def describe(self) -> Description:
        """For the run header: the network and noise; a step's units are its episodes."""
        c, P, E = self.config, self.config["population_size"], self.config["eval_episodes"]
        text = (
            f"layers {self.net.sizes}, {self.net.n_params} parameters, sigma "
            f"{c['noise_std']:g}, noise table {c['noise_table_size']:,} (float32)"
        )
        what = f"episodes: {P // 2} pairs x 2 + {E} unperturbed"
        return Description(text, P + E, what, "population_size", EPISODES_A_RANK)

    @staticmethod
    def line(r: dict) -> str:
        """The printed line of one generation."""
        return (
            f"gen {r['generation']:5d} | return current {r['charts/current_return']:8.2f} "
            f"perturbed mean {r['charts/mean_fitness']:8.2f} best "
            f"{r['charts/best_fitness']:8.2f} | |grad| {r['charts/grad_norm']:8.3f} | steps "
            f"{r['perf/env_steps']:8d} {r['perf/steps_per_s']:6.0f}/s | "
            f"{r['time/generation_s']:6.2f} s (wait {r['perf/wait_s']:5.2f} s)"
        )

    def act(self, observation: np.ndarray):
        """The current network's action for one raw env observation (normalised as in
        training): an int, or a float vector within the env's bounds.

        Raises:
            ValueError: if the observation's shape is not the env's or it holds NaN or inf.
                Not collective: only this rank raises.
        """
        Game._checked(observation, (self.probe.n_inputs,))
        return self._action(self.net.layers(self.net.params), self.normaliser(), observation)

    def evaluate(self, episodes: int = 10) -> Evaluation:
        """The current network's mean return over ``episodes`` new episodes shared out over
        ranks, as an :class:`~pgmpi.evaluation.Evaluation`: a float with its 95% confidence
        interval.

        Raises:
            ConfigError: on every rank, if ``episodes`` is not an int >= 1.

        Collective: every rank must call this.
        """
        problem = None if at_least(episodes, 1) else must("episodes", episodes, "an int >= 1")
        mpi.agree(dict(episodes=episodes), problem)
        self.evaluations += 1
        play = lambda streams: [self._play(self.net.params, s)[0] for s in streams]  # noqa: E731
        returns = evaluation_returns(episodes, self.config["seed"], self.evaluations, play)
        return Evaluation(returns, "current network")

    def save(self, path: str | Path) -> Path:
        """Write theta, Adam's state and the observation statistics to ``path`` (atomically,
        by the root). Collective: every rank must call this."""
        arrays = dict(self.optimizer.state(), params=self.net.params, obs_stats=self.obs_stats)
        counters = dict(generation=self.generation, steps=self.steps, evaluations=self.evaluations)
        return checkpoint.save_agent(path, self, arrays, **counters)

    @classmethod
    def load(cls: type[Agent], path: str | Path, **overrides) -> Agent:
        """A ParallelES restored from ``path``, on any number of ranks; training on gives what
        an uninterrupted run gives. ``overrides`` may replace the run options
        (:data:`pgmpi.checkpoint.RUN_OPTIONS`: ``env``, needed if it was a factory,
        ``log_dir``, ...). Collective: every rank must call this."""
        arrays, meta, settings = checkpoint.load_settings(path, cls.algorithm, overrides)
        agent = cls(**settings)
        with checkpoint.complete(path, cls.algorithm):  # a missing key: a ConfigError
            checkpoint.restore_params(path, arrays["params"], agent.net.params)
            agent.optimizer.set_state(arrays)
            agent.obs_stats = arrays["obs_stats"].astype(np.float64)
            agent.generation, agent.steps = meta["generation"], meta["steps"]
            agent.evaluations = meta["evaluations"]
        return agent
