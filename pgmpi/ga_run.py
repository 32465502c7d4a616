"""What a PrunedGA run needs besides its generations: each generation's row and printed line,
the best network played (``act``, ``evaluate``), and checkpoints.

:class:`pgmpi.ga.PrunedGA` is the algorithm, set-up and generation (ask, evaluate, tell); it
takes these from :class:`GARun`, which reads the attributes that PrunedGA's constructor sets
(``config``, ``net``, ``probe``, ``optimizer``, ``evaluation``, the counters).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TypeVar

import numpy as np

from pgmpi import checkpoint, mpi
from pgmpi.best import BestScore
from pgmpi.envs import Game
from pgmpi.evaluation import evaluation_returns
from pgmpi.loop import EPISODES_A_RANK, Description
from pgmpi.settings import at_least, first_problem

Agent = TypeVar("Agent", bound="GARun")


class GARun:
    """PrunedGA's side that is not the learning: see the module's docstring."""

    algorithm = "PrunedGA"

    def _book_keeping(self, g: int, results, fitness, kept, t0: float, improved: bool) -> dict:
        """The counters and the row of generation ``g``, from its evaluation's ``results``
        (:class:`pgmpi.units.Results`), ``fitness`` and each one's fraction of connections
        ``kept``, the generation begun at ``t0`` (``time.perf_counter``); ``improved``: it
        holds a new best ever (:class:`pgmpi.best.BestFound` notes when)."""
        returns = results.returns.sum(axis=1) / results.returns.shape[1]
        self.last_steps = results.steps.sum(axis=1)
        steps = self.last_steps.sum()
        self.steps += int(steps)
        seconds = time.perf_counter() - t0
        self.best_found.count(g, self.steps, results.returns.size, seconds, improved)
        mine = dict(play_s=results.play_s, grad_s=0.0, allreduce_s=results.allreduce_s)
        best_k = np.sort(fitness)[::-1][: self.optimizer.n_elites]
        row = {
            "generation": g,
            "steps": self.steps,
            "charts/best_fitness": fitness.max(),
            "charts/mean_fitness": fitness.mean(),
            "charts/min_fitness": fitness.min(),
            "charts/elite_mean_fitness": best_k.mean(),
            "charts/best_return": returns.max(),
            "charts/connections_kept": kept.mean(),
            "charts/mutation_rate": self.optimizer.mutation_rate,
            "perf/env_steps": int(steps),
            "perf/steps_per_s": steps / max(seconds, 1e-9),
            "perf/wait_s": results.wait_s,
            "perf/units_played_ahead": results.played_ahead,
            "perf/allreduce_s": results.allreduce_s,
            "time/generation_s": seconds,
            "_seconds": dict(mine, total_s=seconds),  # the loop's: this rank's, for the trace
        }
        return row  # float64 values are floats: fine for CSV and JSON

    def counts(self) -> dict[str, int]:
        return {"generations": self.generation}

    def reached(self, row: dict | None, target_return: float) -> bool:
        return row is not None and row["charts/best_return"] >= target_return

    def _mask_unit(self) -> str:
        """What a mask keeps or prunes: "connections", or "synapses" with several a connection."""
        return "connections" if self.net.synapses == 1 else "synapses"

    def describe(self) -> Description:
        """For the run header: the genome and network; a step's units are its episodes."""
        net, c = self.net, self.config
        genome = f"genome {c['genome']} ({net.description})"
        kept = self._mask_unit()
        P, E = c["population_size"], c["episodes_per_individual"]
        return Description(
            f"{genome}, layers {net.sizes}, {net.n_weights} {kept}",
            P * E,
            f"episodes: {P} individuals x {E} each",
            "population_size x episodes_per_individual",
            EPISODES_A_RANK,
        )

    @staticmethod
    def line(r: dict) -> str:
        """The printed line of one generation."""
        return (
            f"gen {r['generation']:5d} | fitness best {r['charts/best_fitness']:8.2f} "
            f"mean {r['charts/mean_fitness']:8.2f} min {r['charts/min_fitness']:8.2f} "
            f"elite {r['charts/elite_mean_fitness']:8.2f} | kept {r['charts/connections_kept']:.3f}"
            f" | rate {r['charts/mutation_rate']:.4f} | steps {r['perf/env_steps']:8d} "
            f"{r['perf/steps_per_s']:6.0f}/s | {r['time/generation_s']:6.2f} s "
            f"(wait {r['perf/wait_s']:5.2f} s)"
        )

    def _best(self) -> np.ndarray:
        """The best mask ever seen, or before any generation the first individual."""
        told = self.optimizer.best_fitness > -np.inf
        return self.optimizer.best_mask if told else self.optimizer.population[0]

    def act(self, observation: np.ndarray, mask: np.ndarray | None = None):
        """The action network ``mask`` takes for one raw env observation, as in training: an
        int, or a float vector within the env's bounds. ``mask`` defaults to the best ever
        seen (before any generation: the first individual, as in :meth:`evaluate`).

        Raises:
            ValueError: if the observation's shape is not the env's or it holds NaN or inf.
                Not collective: only this rank raises.
        """
        Game._checked(observation, (self.net.sizes[0],))
        mask = self._best() if mask is None else mask
        return self._action(self.net.weights(np.asarray(mask, dtype=bool)), observation)

    def evaluate(self, episodes: int = 100, mask: np.ndarray | None = None) -> BestScore:
        """Mean return of ``mask`` (default: the best ever, or before any generation the first
        individual) over ``episodes`` new episodes shared out over ranks, as a
        :class:`~pgmpi.best.BestScore`: a float with its 95% interval, size and ``report()``.

        Raises:
            ConfigError: on every rank, if ``episodes`` is not an int >= 1 or ``mask`` is not
                an array of 0/1 or bools with one entry per connection.

        Collective: every rank must call this.
        """
        n = self.net.n_weights
        shape = None if mask is None else np.shape(mask)
        ok_mask = mask is None or (shape == (n,) and np.isin(mask, (0, 1)).all())
        problem = first_problem(dict(episodes=episodes), [
            ("episodes", lambda x: at_least(x, 1), "an int >= 1"),
            (lambda _: ok_mask, f"mask must be 0/1 or bool of shape ({n},), got shape {shape}"),
        ])  # fmt: skip
        mpi.agree(dict(episodes=episodes), problem)
        self.evaluations += 1
        label = "best network" if mask is None else "given mask"
        mask = self._best() if mask is None else mask
        weights = self.net.weights(np.asarray(mask, dtype=bool))
        returns = evaluation_returns(
            episodes,
            self.config["seed"],
            self.evaluations,
            lambda streams: [self._play(weights, s)[0] for s in streams],
        )
        found = self.best_found.at if label == "best network" else None
        return BestScore(returns, label, int(mask.sum()), n, found, self._mask_unit())

    def save(self, path: str | Path) -> Path:
        """Write the population, best mask (and its activity for the signed genome), rate and
        history to ``path`` (atomically, by the root); the signed weights are re-drawn from
        the seed on load. Collective: every rank must call this."""
        steps = dict(last_steps=self.last_steps, unit_steps=self.evaluation.steps)
        arrays = dict(self.optimizer.state(), **steps)
        counters = dict(generation=self.generation, steps=self.steps, evaluations=self.evaluations)
        counters |= self.best_found.state()
        return checkpoint.save_agent(path, self, arrays, **counters)

    @classmethod
    def load(cls: type[Agent], path: str | Path, **overrides) -> Agent:
        """A PrunedGA restored from ``path``; training on gives what an uninterrupted run gives.

        ``overrides`` may replace the run options (:data:`pgmpi.checkpoint.RUN_OPTIONS`:
        ``env``, needed if it was a factory, ``log_dir``, ...). Collective: every rank must
        call this.
        """
        arrays, meta, settings = checkpoint.load_settings(path, cls.algorithm, overrides)
        agent = cls(**settings)
        with checkpoint.complete(path, cls.algorithm):  # a missing key: a ConfigError
            have = arrays["population"].shape
            want = agent.optimizer.population.shape
            problem = f"checkpoint {str(path)!r}: population {have}, settings make {want}"
            mpi.agree({}, None if have == want else problem)
            agent.optimizer.set_state(arrays)
            agent.last_steps = arrays["last_steps"].copy()
            if "unit_steps" in arrays:  # only the next generation's work order needs them
                agent.evaluation.steps = arrays["unit_steps"].reshape(agent.evaluation.steps.shape)
            agent.steps = meta["steps"]
            agent.evaluations = meta["evaluations"]
            agent.best_found.restore(meta, path)
        return agent
