"""What a ParallelPG run needs besides its updates: the book-keeping after each (counters,
running reward, the logged row), the loop's figures and lines, the learned policy played
(evaluation, ``act``), and checkpoints of the run with its games in progress.

:class:`pgmpi.pg.ParallelPG` is the algorithm, set-up and update, as the post reads; it takes
these from :class:`PGRun`, which reads the attributes that ParallelPG's constructor sets
(``net``, ``average``, ``optimizer``, ``config``, ``probe``, ``games``, ``mine``,
``open_rallies``, ``recent_returns``, the counters).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TypeVar

import numpy as np

from pgmpi import checkpoint, diagnostics, mpi, noop, pong, rallies, rollout
from pgmpi.evaluation import Evaluation, evaluation_returns
from pgmpi.games import make_game
from pgmpi.logger import mean, rank_figures
from pgmpi.loop import Description
from pgmpi.networks import TwoLayerPolicy
from pgmpi.presets import PRESETS
from pgmpi.retired import PG_BEFORE
from pgmpi.settings import at_least, first_problem, is_bool

Agent = TypeVar("Agent", bound="PGRun")


def evaluate_problem(episodes, greedy, sticky, live) -> str | None:
    """The first problem with ``ParallelPG.evaluate``'s arguments, or None."""
    return first_problem(dict(episodes=episodes, greedy=greedy, sticky=sticky, live=live), [
        ("episodes", lambda x: at_least(x, 1), "an int >= 1"),
        ("greedy", is_bool, "True or False"),
        ("sticky", lambda x: x is None or is_bool(x), "None, True or False"),
        ("live", is_bool, "True or False"),
    ])  # fmt: skip


class PGRun:
    """ParallelPG's side that is not the learning: see the module's docstring."""

    algorithm = "ParallelPG"
    COUNTERS = ("update", "episodes", "steps", "running_reward", "evaluations")  # checkpointed

    def counts(self) -> dict[str, int]:
        return {"updates": self.update, "episodes": self.episodes}

    def reached(self, row: dict | None, target_return: float) -> bool:
        return len(self.recent_returns) == 100 and mean(self.recent_returns) >= target_return

    def describe(self) -> Description:
        """For the run header: parameters, slots and how they play, the optimizer, the Pong
        protocol; a step's units of work are the slots."""
        c = self.config
        moves = c["entropy_final"] is not None  # an entropy bonus schedule
        text = (
            f"{self.net.params.size:,} params | {c['slots']} slots ({self._slots_note}) of "
            f"{c['steps_per_slot']} steps"
            + (", then to the end of a game" if c["whole_games"] else ", open rallies carried over")
            + f" | {c['optimizer']} lr {self.learning_rate:g}, {c['batch_gradient']} over slots"
            + (f", entropy bonus {c['entropy_bonus']:g}" if c["entropy_bonus"] or moves else "")
            + (
                f" to {c['entropy_final']:g} over {c['entropy_steps']:,} agent steps"
                if moves
                else ""
            )  # fmt: skip
            + (f", learned baseline {c['value_baseline']:g}" if c["value_baseline"] else "")
            + (
                f", lr{' and bonus' if c['entropy_bonus'] or moves else ''} decayed past "
                f"{c['decay_from']:,} agent steps (halved "
                f"{c['lr_decay_steps']:,} later)"
                if c["lr_decay_steps"]
                else ""
            )  # fmt: skip
            + (f", NOOP from {c['noop_from']:,} agent steps" if c["noop_from"] else "")
            + (
                f" | plays the running average (half-life {c['average_half_life']:g} updates)"
                if self.average is not None
                else ""
            )  # fmt: skip
        )
        if self.probe.is_pong:  # which protocol the logged scores are under
            played = pong.protocol(c["sticky_actions"], c["frame_skip"])
            text += " | " + played.replace("sticky", "sticky actions (0.25)")
        return Description(text, c["slots"], "slots", "slots")

    def _book_keeping(self, pieces: list, mine: dict, grad: np.ndarray) -> dict:
        """The post's "boring book-keeping", from every game finished on any rank, in slot
        order and in order of play within a slot (the same on any rank count): the counters,
        the running reward, the row. Collective: one small allgather, so that every rank
        logs the same row, with every rank's seconds and steps (``mine``) and diagnostics."""
        c = self.config
        rate = self.step_size()  # this update's: before the steps below are counted
        finished = [(k, *g) for k, p in zip(self.mine, pieces, strict=True) for g in p.finished]
        sums = [diagnostics.game_sums(p) for p in pieces]  # entropy, points, baseline fit
        ranks = mpi.allgather_object((finished, mine, sums))  # collective 2: every rank's, to all
        games = sorted((g for f, *_ in ranks for g in f), key=lambda g: g[0])
        for _, ret, _ in games:
            rr = self.running_reward
            self.running_reward = ret if rr is None else 0.99 * rr + 0.01 * ret
            self.recent_returns.append(ret)
        figures = [r for _, r, _ in ranks]
        self.update += 1
        self.episodes += len(games)
        self.steps += sum(r["steps"] for r in figures)
        cap = c["max_episode_steps"]
        running = float("nan") if self.running_reward is None else self.running_reward
        row = {
            "episodes": self.episodes,
            "update": self.update,
            "steps": self.steps,
            "charts/running_reward": running,
            "charts/mean_return_100": mean(self.recent_returns),
            "charts/games": len(games),
            "charts/mean_return": mean([g[1] for g in games]),
            "charts/mean_length": mean([g[2] for g in games]),
            "charts/capped_games": sum(g[2] >= cap for g in games),
            "charts/learning_rate": rate,
            **rank_figures(figures),
            **diagnostics.row([d for *_, d in ranks], grad),  # exact sums, in any order
            "_seconds": mine,  # the loop's: this rank's, for the trace
        }
        if row["charts/capped_games"]:  # said once by the loop; the CSV counts them
            row["_note"] = f"note: games cut at max_episode_steps={cap}"
        return row

    @staticmethod
    def line(row: dict) -> str:
        """The printed line of one update."""
        return (
            f"upd {row['update']:5d} | games {row['episodes']:6d} | steps {row['steps']:10,d} | "
            f"running {row['charts/running_reward']:7.2f} | "
            f"mean100 {row['charts/mean_return_100']:7.2f} | "
            f"steps/s {row['perf/steps_per_s']:6.0f} "
            f"(rank {row['perf/rank_steps_per_s_min']:.0f}-{row['perf/rank_steps_per_s_max']:.0f})"
            f" | wait {100 * row['perf/wait_fraction']:4.1f}%"
            f" | allreduce {1e3 * row['perf/allreduce_s']:5.1f} ms"
        )

    @property
    def policy(self) -> TwoLayerPolicy:
        """The network :meth:`evaluate` and :meth:`act` play: the running average of the
        parameters (``average_half_life``), or the live network if that is 0."""
        return self.net if self.average is None else self.average

    def evaluate(
        self,
        episodes: int = 10,
        greedy: bool = False,
        sticky: bool | None = None,
        live: bool = False,
    ) -> Evaluation:
        """Mean return over ``episodes`` whole games shared out over ranks (no learning), as an
        :class:`~pgmpi.evaluation.Evaluation`: a float with its 95% confidence interval
        (``ci95``) and every game's return (also kept in ``evaluation_returns``); no game goes
        past ``max_episode_steps``. The same numbers on any rank count.

        Args:
            greedy: take the most likely action instead of sampling from the policy.
            sticky: Pong with ALE v5's sticky actions (repeat_action_probability 0.25), or
                without (False); None: as trained (``sticky_actions``, and the frame skip).
            live: play the live parameters instead of their running average (:attr:`policy`).

        Raises:
            ConfigError: on every rank, if ``episodes`` is not an int >= 1 or a flag not a bool.

        Collective: every rank must call this.
        """
        given = dict(episodes=episodes, greedy=greedy, sticky=sticky, live=live)
        mpi.agree(given, evaluate_problem(**given))
        self.evaluations += 1
        c = self.config
        as_trained = sticky is None
        sticky = c["sticky_actions"] if as_trained else sticky
        skip = c["frame_skip"] if as_trained else 4
        cap = c["max_episode_steps"]
        with_noop = noop.due(c, self.steps)  # noop, or noop_from passed
        new_game = partial(make_game, self._make_env, sticky, cap, skip, with_noop)
        net = self.net if live else self.policy
        play = partial(rollout.whole_games, net, new_game, greedy=greedy)
        self.evaluation_returns = evaluation_returns(episodes, c["seed"], self.evaluations, play)
        protocol = pong.protocol(sticky, skip) if self.probe.is_pong else "env"
        policy = "greedy" if greedy else "sampled"
        return Evaluation(self.evaluation_returns, f"{protocol}, {policy}")

    def act(self, observation: np.ndarray, new_episode: bool = False) -> int:
        """The greedy action of :attr:`policy` for a raw env observation (for Pong: a frame;
        the previous frame is kept, so pass ``new_episode=True`` on an episode's first frame).

        Raises:
            ValueError: if the observation's shape is not the env's ((210, 160, 3) for Pong)
                or it holds NaN or inf. Not collective: only this rank raises.
        """
        prev = None if new_episode else self._act_prev
        x, self._act_prev = self.probe.outside_input(observation, prev)
        return self.probe.env_action(int(np.argmax(self.policy.forward([x])[0][0])))

    def save(self, path: str | Path) -> Path:
        """Write parameters, optimizer state, counters and every game in progress to
        ``path`` (atomically, by the root). Collective: every rank must call this."""
        snaps = mpi.gather_object(rallies.snapshots(self.games, self.open_rallies))  # to the root
        arrays = {"params": self.net.params, **self.optimizer.state()}
        if self.average is not None:
            arrays["average"] = self.average.params
        arrays["recent_returns"] = np.array(self.recent_returns, dtype=np.float64)
        arrays.update(checkpoint.pack_games(snaps))  # on the root: every game, in slot order
        counters = {k: getattr(self, k) for k in self.COUNTERS}
        return checkpoint.save_agent(path, self, arrays, **counters)

    @classmethod
    def load(cls: type[Agent], path: str | Path, **overrides) -> Agent:
        """A ParallelPG restored from ``path``, ready to ``train`` on from where it stopped,
        on any number of ranks (each takes over the games it now plays). ``overrides`` may
        replace the run options (:data:`pgmpi.checkpoint.RUN_OPTIONS`: ``env``, needed if it
        was a factory, ``log_dir``, ...).

        Collective: every rank must call this.
        """
        arrays, meta, settings = checkpoint.load_settings(path, cls.algorithm, overrides)
        agent = cls(**{**PG_BEFORE, **settings})  # a setting newer than the checkpoint
        if noop.due(agent.config, meta["steps"]) and agent.net.n_actions == 2:
            noop.grow(agent, 0.0)  # it took NOOP on midway: its weights come next
        with checkpoint.complete(path, cls.algorithm):  # a missing key: a ConfigError
            checkpoint.restore_params(path, arrays["params"], agent.net.params)
            if agent.average is not None:
                checkpoint.restore_params(path, arrays["average"], agent.average.params)
            agent.optimizer.set_state(arrays)
            agent.recent_returns.extend(arrays["recent_returns"].tolist())
            for k in cls.COUNTERS:
                setattr(agent, k, meta[k])
            snaps = checkpoint.unpack_games(arrays, agent.games)
        rallies.restore(agent.games, agent.open_rallies, snaps, agent.config["seed"])
        return agent

    @classmethod
    def from_preset(cls: type[Agent], name: str, **kwargs) -> Agent:
        """A ParallelPG with the settings of preset ``name`` (see ``PRESETS``), any of which
        ``kwargs`` may replace. Collective: every rank must call this."""
        if name not in PRESETS:  # the same on every rank, so the same error on every rank
            raise mpi.ConfigError(f"no preset {name!r}; presets: {', '.join(PRESETS)}")
        return cls(config=PRESETS[name], **kwargs)
