"""ParallelPG: Karpathy's "Pong from Pixels" policy gradient, data-parallel over MPI ranks.

The learning rule is the one of Andrej Karpathy's post "Deep Reinforcement Learning: Pong
from Pixels" (2016): a two-layer policy network, REINFORCE with discounted returns that
restart at every point (a Pong rally) and are standardised (over all the games of an update;
over each game in the post and, by default, in deterministic Pong), then a gradient step. Of
the ``PRESETS`` (in :mod:`pgmpi.presets`), ``karpathy`` is the post exactly: 10 whole games per
update, their gradients summed, RMSProp 1e-4; ``fast``, the defaults, learns faster.

Work split (docs/how-it-is-parallel.md): ``slots`` persistent games, game k played by
rank k % n, each ``steps_per_slot`` agent steps per update with randomness keyed on (seed,
update, k). An update (:meth:`ParallelPG.step`) makes three collectives: a small allgather
of each game's advantage sums (``standardise_over`` 'update'; none with 'game',
deterministic Pong's default) standardises them over every game; one exact Allreduce sums
every game's gradient, so every rank takes the same optimizer step and parameters stay
identical, bit for bit on any rank count, never sent; one small allgather then hands every
rank the scores of the games that ended, every rank's seconds and each game's diagnostics
(:mod:`pgmpi.diagnostics`: entropy, points won, the baseline's fit), so all log the same row.
(The loop, :func:`pgmpi.loop.train`, makes its own after each update: a small Allreduce of
the stop signals and time-limit votes, so all stop together; with ``trace``, a gather of
every rank's seconds; when it saves, the checkpoint's gather of the games in progress.)
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

import numpy as np

from pgmpi import diagnostics, loop, mpi, noop, rallies, rng, rollout
from pgmpi.config import REFERENCE_SLOTS, PGConfig
from pgmpi.envs import PONG_ID
from pgmpi.games import make_games, probe_game
from pgmpi.networks import TwoLayerPolicy
from pgmpi.optimizers import Adam, RMSProp
from pgmpi.options import RunOptions
from pgmpi.pg_run import PGRun
from pgmpi.version import __version__


def discounted_returns(rewards: np.ndarray, gamma: float, ends: np.ndarray) -> np.ndarray:
    """G_t = r_t + gamma * G_{t+1}, restarting where ``ends[t]`` (a rally or episode ended
    at step t: what comes after says nothing about the actions before)."""
    out = np.zeros(len(rewards), dtype=np.float64)
    running = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        running = (0.0 if ends[t] else running * gamma) + rewards[t]
        out[t] = running
    return out


def standardise(x: np.ndarray) -> np.ndarray:
    """(x - mean) / std, or x - mean where the std is zero."""
    x = x - x.mean()
    std = x.std()
    return x / std if std > 0 else x


class ParallelPG(PGRun):
    """Policy gradient over MPI ranks; every rank must construct it with the same arguments.

    The set-up and the update are here; what the run does besides (the book-keeping after an
    update, its printed lines, ``evaluate``, ``act``, ``save``, ``load``, ``from_preset``) is
    :class:`pgmpi.pg_run.PGRun`.

    Args:
        env: a gymnasium env id or a zero-argument env factory; Pong (``"ALE/Pong-v5"``) is
            played from pixels, other envs need a discrete action space and 1-D box inputs.
        config: the settings to start from (default ``PGConfig()``, the "fast" preset);
            :class:`pgmpi.config.PGConfig` documents each one and its default.
        settings: any :class:`~pgmpi.config.PGConfig` field by name (``hidden_size``,
            ``learning_rate``, ``slots``, ``seed``, ...), replacing ``config``'s value.
        log_dir, blas_threads, quiet, trace, tensorboard, overwrite: the run's options,
            which change no result (:class:`pgmpi.options.RunOptions` says what each does),
            kept as ``options``.

    Attributes:
        config: the run's settings as a dict (``env`` and every PGConfig field, resolved:
            :meth:`~pgmpi.config.PGConfig.resolved`): what every rank agreed on and
            checkpoints keep; ``learning_rate`` lives here only (:attr:`learning_rate`).

    Raises:
        ConfigError (a ValueError): on every rank, naming the bad value, if an argument is
            invalid, the env cannot be made, or ranks were given different settings.

    Collective: every rank must call this.
    """

    def __init__(
        self,
        *,
        env: str | Callable = PONG_ID,
        config: PGConfig | None = None,
        log_dir: str | Path | None = None,
        blas_threads: int | None = None,
        quiet: bool = False,
        trace: bool = False,
        tensorboard: bool = False,
        overwrite: bool = False,
        **settings,
    ):
        options = RunOptions(log_dir, blas_threads, quiet, trace, tensorboard, overwrite)
        cfg, problem = options.start(PGConfig, config, settings)  # MPI's hooks; the checks
        n = mpi.size()
        slots_note = "set" if cfg.slots is not None else f"default for {n} ranks"
        probe = None
        if problem is None:  # every rank makes one game at least, to check the env
            probe, problem = probe_game(env, cfg)
        cfg = cfg.resolved(probe, n)  # slots, whole_games, value_baseline
        problem = problem or cfg.check(probe, n)
        self.mine = list(range(mpi.rank(), 0 if problem else cfg.slots, n))  # game k: rank k % n
        self.games = {} if problem else make_games(env, self.mine, cfg, probe)
        named = env if isinstance(env, str) else getattr(probe, "env_id", "custom")
        self.config = {"env": named} | cfg.as_dict()
        # trace is agreed too: with it on, every rank joins one more gather per update
        agreed = dict(self.config, version=__version__, numpy=np.__version__, trace=trace)
        mpi.agree(agreed, problem)
        self.probe = probe
        self.options = options
        self._make_env = env  # the id or factory itself: evaluation plays the same env
        options.cap_blas_threads()
        bernoulli = probe.is_pong and probe.n_actions == 2  # Pong: one up/down logit
        shape = (probe.n_inputs, cfg.hidden_size, probe.n_actions)
        value = cfg.value_baseline > 0
        self.net = TwoLayerPolicy(*shape, rng.stream(cfg.seed, rng.INIT), bernoulli, value)
        # The policy played (evaluate, act): a running average of the parameters, kept beside
        # training and never fed back; it beats Pong under both protocols sooner than the
        # live parameters, which swing from update to update (docs/screens.md).
        h = cfg.average_half_life
        self.average = None
        if h:  # the same initial draws: it starts as the network
            self.average = TwoLayerPolicy(*shape, rng.stream(cfg.seed, rng.INIT), bernoulli, value)
        self._keep = np.float32(0.5 ** (1 / h)) if h else None
        size = self.net.params.size  # its step size comes with each step: step_size()
        self.optimizer = (
            Adam(size) if cfg.optimizer == "adam" else RMSProp(size, decay_rate=cfg.decay_rate)
        )
        self.update = 0
        self.episodes = 0
        self.steps = 0
        self.evaluations = 0
        self.running_reward = None  # no game finished yet
        self._act_prev = None  # no frame seen yet
        self.recent_returns = deque(maxlen=100)
        self.open_rallies = rallies.OpenRallies()  # Pong: steps that wait for their point
        self._slots_note = slots_note

    def _batch(self, k: int, piece: rollout.Piece) -> tuple | None:
        """Game k's finished rallies, their discounted returns and advantages (the returns
        less the learned baseline's values, with one), as (steps, returns, values,
        advantages); None if no rally finished."""
        steps = self.open_rallies.known(k, piece, self.net)  # a rally's steps wait for its point
        if steps is None:
            return None
        returns = discounted_returns(steps.rewards, self.config["gamma"], steps.ends)
        values = self.net.values(steps.caches)  # zeros without a baseline
        adv = returns - values
        if self.config["value_baseline"]:
            piece.fit = diagnostics.fit(returns, values)  # for the log: explained variance
        return steps, returns, values, adv

    def _standardised(self, batch: list[tuple]) -> list[tuple]:
        """``batch`` with its advantages standardised over each game's finished rallies
        (``standardise_over`` 'game', as the post does over each of its games), or over every
        game of the update on every rank ('update': an allgather of each game's count, sum and
        sum of squares, added exactly, so any rank count gives the same bits)."""
        if self.config["standardise_over"] == "game":
            return [(*b[:3], standardise(b[3]).astype(np.float32)) for b in batch]
        mine = [(len(b[3]), b[3].sum(), (b[3] ** 2).sum()) for b in batch]  # per game
        every = [g for games in mpi.allgather_object(mine) for g in games]  # collective
        n, total, squares = (math.fsum(g[i] for g in every) for i in range(3))  # exact sums
        mean = total / max(n, 1)
        std = math.sqrt(max(squares / max(n, 1) - mean * mean, 0.0)) or 1.0
        return [(*b[:3], ((b[3] - mean) / std).astype(np.float32)) for b in batch]

    def _gradient(self, steps: rollout.Piece, returns, values, adv) -> tuple:
        """The REINFORCE gradient of a game's finished rallies: d log pi weighted by the
        advantages, as (rows, values)."""
        dlogits = np.array(steps.dlogits)
        weighted = dlogits * adv[:, None]
        beta = self.entropy_weight()
        if beta:  # + beta d H / d logits: keeps the policy from settling too soon
            weighted += np.float32(beta) * self.net.entropy_dlogits(dlogits, steps.actions)
        c = self.config["value_baseline"]
        if c:  # and the value output climbs -c (G - v)^2 / 2: its gradient is c (G - v)
            fit = (c * (returns - values)).astype(np.float32)
            weighted = np.concatenate([weighted, fit[:, None]], axis=1)
        return self.net.gradient(steps.caches, weighted)

    def train(
        self,
        *,
        updates: int | None = None,
        episodes: int | None = None,
        minutes: float | None = None,
        target_return: float | None = None,
        checkpoint_path: str | Path | None = None,
        checkpoint_every: int = 10,
        callback: Callable[[dict], None] | None = None,
    ):
        """Run updates until a limit is reached; returns self.

        Args:
            updates, episodes: stop once this many updates have been made, or games have
                finished, in total (counted from the start of the run, resumes included).
            target_return: stop once the mean return of the last 100 games reaches this.
            minutes, checkpoint_path, checkpoint_every, callback: as in :func:`pgmpi.loop.train`
                (a step is an update), which also says what no limit, errors and Ctrl-C do.

        Collective: every rank must call this.
        """
        limits = dict(updates=updates, episodes=episodes)
        return loop.train(self, limits, minutes=minutes, target_return=target_return,
                          checkpoint_path=checkpoint_path, checkpoint_every=checkpoint_every,
                          callback=callback)  # fmt: skip

    def step(self) -> dict:
        """One update: play, the returns and gradient of every game, their sum over ranks,
        the optimizer step, then the book-keeping (:meth:`pgmpi.pg_run.PGRun._book_keeping`).
        Returns the row to log, with this rank's seconds (see :meth:`pgmpi.loop.Trainable.step`).

        Collective: every rank must call this. It makes three collectives: the small
        allgather of :meth:`_standardised` (none with ``standardise_over`` 'game'), the
        Allreduce that sums the gradients (a flat buffer, with a count of the games left out
        as non-finite), and the book-keeping's small allgather (once in a run with
        ``noop_from``, one more: :func:`pgmpi.noop.join_if_due`)."""
        c = self.config
        t0 = time.perf_counter()
        streams = [rng.stream(c["seed"], rng.EPISODE, self.update, k) for k in self.mine]
        games = [self.games[k] for k in self.mine]  # game k is played by rank k % n
        pieces = rollout.play(
            self.net, games, streams, min_steps=c["steps_per_slot"], whole_games=c["whole_games"]
        )
        t1 = time.perf_counter()
        batch = [self._batch(k, piece) for k, piece in zip(self.mine, pieces, strict=True)]
        batch = self._standardised([b for b in batch if b is not None])
        total = mpi.ExactSum(self.net.params.size, terms=c["slots"], exact=c["exact_reduction"])
        for game in batch:
            rows, block = self._gradient(*game)
            total.add(block, rows=rows)
        t2 = time.perf_counter()
        divide_by = c["slots"] if c["batch_gradient"] == "mean" else 1  # the mean, or the sum
        grad, bad = total.allreduce(divide_by)  # collective 1: every game's gradient, exactly
        allreduce_s = time.perf_counter() - t2
        self._take(grad, bad)
        if self.average is not None:  # the same float32 operations on every rank
            self.average.params *= self._keep
            self.average.params += (1 - self._keep) * self.net.params
        total_s = time.perf_counter() - t0  # this rank's seconds
        mine = dict(play_s=t1 - t0, grad_s=total_s - (t1 - t0) - allreduce_s)
        mine.update(allreduce_s=allreduce_s, total_s=total_s)
        mine.update(steps=sum(len(p.rewards) for p in pieces))
        row = self._book_keeping(pieces, mine, grad)
        noop.join_if_due(self, row)  # noop_from: NOOP joins up and down once its steps are played
        return row

    def _take(self, grad: np.ndarray, bad: int) -> None:
        """The optimizer step on the summed gradient (the same on every rank); raises on a
        non-finite gradient or step."""
        if bad:
            raise mpi.NonFiniteError(
                f"update {self.update + 1}: non-finite or huge gradient in {bad} game(s); "
                "lower learning_rate or check the env's rewards"
            )
        self.optimizer.step(self.net.params, grad, self.step_size())  # the same on every rank
        if not np.isfinite(self.net.params.sum(dtype=np.float64)):  # the same on every rank
            raise mpi.NonFiniteError(
                f"update {self.update + 1}: the optimizer step made the parameters non-finite "
                f"(learning rate {self.learning_rate:g}); lower learning_rate"
            )

    def decay(self) -> float:
        """What this update's step size and entropy bonus are divided by: 1, or with
        ``lr_decay_steps`` H, 1 + (agent steps so far - ``decay_from``) / H once past
        ``decay_from`` (only -, + and /, so every rank on every host computes the same bits)."""
        H, past = self.config["lr_decay_steps"], self.steps - self.config["decay_from"]
        return 1.0 if H is None or past <= 0 else 1 + past / H

    def entropy_weight(self) -> float:
        """This update's entropy bonus over :meth:`decay`: ``entropy_bonus``, or with
        ``entropy_final``, moved linearly to it over the first ``entropy_steps`` agent steps."""
        c, beta = self.config, self.config["entropy_bonus"]
        if c["entropy_final"] is not None:
            beta += (c["entropy_final"] - beta) * min(self.steps / c["entropy_steps"], 1.0)
        return beta / self.decay()

    @property
    def learning_rate(self) -> float:
        """The step size before the late decay: the ``learning_rate`` setting (for 16 slots)
        times sqrt(slots / 16) with batch_gradient 'mean' and more than 16 slots. Derived
        from ``config``, its one home; :meth:`step_size` hands each update's to the optimizer."""
        c = self.config
        scale = math.sqrt(c["slots"] / REFERENCE_SLOTS) if c["batch_gradient"] == "mean" else 1.0
        return c["learning_rate"] * max(scale, 1.0)

    def step_size(self) -> float:
        """This update's learning rate: :attr:`learning_rate` over :meth:`decay`."""
        return self.learning_rate / self.decay()
