"""ParallelPG: Karpathy's "Pong from Pixels" policy gradient, data-parallel over MPI ranks.

The algorithm is the one of Andrej Karpathy's post "Deep Reinforcement Learning: Pong from
Pixels" (2016): a two-layer policy network, REINFORCE with discounted returns standardised
per episode (and, for Pong, the running return reset at every point scored), and RMSProp on
the gradient summed over a batch of episodes. In parallel, each update's ``batch_size``
episodes are shared out over the ranks; one Allreduce over one flat buffer sums the
per-episode gradients, and every rank applies the same RMSProp step, so the parameters stay
identical everywhere without ever being sent.

Reproducibility: episode ``e`` of update ``u`` draws its randomness from the stream keyed on
(seed, u, e), whichever rank plays it, and by default the gradients are summed exactly in
fixed point (int64), which does not depend on the order of the sum. So a seed gives the same
parameters, bit for bit, on 1, 2, 3 or any number of ranks.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

import numpy as np

from pgmpi import checkpoint, mpi, rng, threads
from pgmpi.config import first_problem, is_int, is_real
from pgmpi.envs import PONG_ID, EpisodeEnv, pong_frame
from pgmpi.logger import Logger, run_header
from pgmpi.networks import TwoLayerPolicy
from pgmpi.optimizers import RMSProp
from pgmpi.version import __version__

# Fixed-point scale of the exact reduction: gradients are summed as round(g * 2**32) in int64.
FIXED_POINT_BITS = 32
FIXED_POINT_LIMIT = 2.0 ** (62 - FIXED_POINT_BITS)  # |sum of g| must stay below this


def discounted_returns(rewards: np.ndarray, gamma: float, reset_on_reward: bool) -> np.ndarray:
    """G_t = r_t + gamma * G_{t+1}; with ``reset_on_reward`` G restarts at each non-zero r_t
    (Pong: a point ends a rally, so later rallies say nothing about earlier actions)."""
    out = np.zeros(len(rewards), dtype=np.float64)
    running = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        if reset_on_reward and rewards[t] != 0:
            running = 0.0
        running = running * gamma + rewards[t]
        out[t] = running
    return out


def standardise(x: np.ndarray) -> np.ndarray:
    """(x - mean) / std, or x - mean where the std is zero."""
    x = x - x.mean()
    std = x.std()
    return x / std if std > 0 else x


class ParallelPG:
    """Policy gradient over MPI ranks; every rank must construct it with the same arguments.

    Args:
        env: a gymnasium env id, or a zero-argument function returning an env. Pong
            (``"ALE/Pong-v5"``) is played from pixels; other envs need a discrete action space
            and a 1-D box observation.
        hidden_size: hidden units of the two-layer network (200 in the post).
        learning_rate: RMSProp step size (1e-4 for Pong).
        gamma: discount factor, in (0, 1].
        decay_rate: RMSProp decay of the squared-gradient average, in [0, 1).
        batch_size: episodes per update, over all ranks together (10 in the post).
        seed: root seed of every random stream in the run.
        reset_on_reward: restart the discounted return at every non-zero reward; None means
            True for Pong and False for other envs.
        exact_reduction: sum gradients exactly in fixed point, so results do not depend on
            the rank count; False uses a plain float32 Allreduce.
        log_dir: folder for ``progress.csv``; None to print only.
        blas_threads: BLAS threads per rank; None means cores per node / ranks per node, or
            the user's OMP_NUM_THREADS.
        quiet: print nothing (the CSV is still written).

    Raises:
        ConfigError (a ValueError): on every rank, naming the bad value, if an argument is
            invalid, the env cannot be made, or ranks were given different settings.

    Collective: every rank must call this.
    """

    algorithm = "ParallelPG"

    def __init__(
        self,
        *,
        env: str | Callable = PONG_ID,
        hidden_size: int = 200,
        learning_rate: float = 1e-4,
        gamma: float = 0.99,
        decay_rate: float = 0.99,
        batch_size: int = 10,
        seed: int = 0,
        reset_on_reward: bool | None = None,
        exact_reduction: bool = True,
        log_dir: str | Path | None = None,
        blas_threads: int | None = None,
        quiet: bool = False,
    ):
        problem = first_problem([
            (is_int(hidden_size) and hidden_size >= 1, "hidden_size", hidden_size, "an int >= 1"),
            (is_real(learning_rate) and learning_rate > 0, "learning_rate", learning_rate, "> 0"),
            (is_real(gamma) and 0 < gamma <= 1, "gamma", gamma, "in (0, 1]"),
            (is_real(decay_rate) and 0 <= decay_rate < 1, "decay_rate", decay_rate, "in [0, 1)"),
            (is_int(batch_size) and batch_size >= 1, "batch_size", batch_size, "an int >= 1"),
            (is_int(seed) and seed >= 0, "seed", seed, "an int >= 0"),
            (blas_threads is None or (is_int(blas_threads) and blas_threads >= 1),
             "blas_threads", blas_threads, "None or an int >= 1"),
        ])  # fmt: skip
        self.env = None
        if problem is None:
            try:
                self.env = EpisodeEnv(env)
            except Exception as e:  # any failure to make the env is the user's input
                problem = f"cannot make env {env!r}: {type(e).__name__}: {e}"
        self.config = dict(
            env=env if isinstance(env, str) else getattr(self.env, "env_id", "custom"),
            hidden_size=hidden_size,
            learning_rate=learning_rate,
            gamma=gamma,
            decay_rate=decay_rate,
            batch_size=batch_size,
            seed=seed,
            reset_on_reward=reset_on_reward,
            exact_reduction=exact_reduction,
        )
        mpi.agree(dict(self.config, version=__version__, numpy=np.__version__), problem)
        self.log_dir, self.quiet = log_dir, quiet
        self.blas = threads.cap_blas_threads(blas_threads)
        self.reset_on_reward = self.env.is_pong if reset_on_reward is None else reset_on_reward
        self.net = TwoLayerPolicy(
            self.env.n_inputs,
            hidden_size,
            self.env.n_actions,
            rng.stream(seed, rng.INIT),
            bernoulli=self.env.is_pong,
        )
        self.optimizer = RMSProp(self.net.params.size, learning_rate, decay_rate)
        self.update, self.episodes, self.steps = 0, 0, 0
        self.running_reward: float | None = None
        self.recent_returns: deque[float] = deque(maxlen=100)
        self._evaluations = 0
        self._act_prev: np.ndarray | None = None

    # ------------------------------------------------------------------ one episode
    def _play(self, stream: np.random.Generator, greedy: bool = False):
        """Play one episode; returns (return, length, REINFORCE gradient or None if greedy)."""
        x = self.env.reset(rng.env_seed(stream))
        inputs, hs, dls, rewards = [], [], [], []
        done = False
        while not done:
            idx, h, p = self.net.forward(x)
            if greedy:
                a = int(np.argmax(p))
            else:  # sample from p with this episode's stream
                a = min(int(np.searchsorted(np.cumsum(p), stream.random(), "right")), len(p) - 1)
                inputs.append((idx, x[idx]))
                hs.append(h)
                dls.append(self.net.dlogits(p, a))
            x, r, done = self.env.step(a)
            rewards.append(r)
        total, length = float(np.sum(rewards)), len(rewards)
        if greedy:
            return total, length, None
        returns = discounted_returns(np.array(rewards), self.config["gamma"], self.reset_on_reward)
        adv = standardise(returns).astype(np.float32)
        dlogits = np.array(dls) * adv[:, None]  # the policy-gradient trick: weight by advantage
        return total, length, self.net.gradient(inputs, np.array(hs), dlogits)

    # ------------------------------------------------------------------ one update
    def _one_update(self) -> dict:
        B, me, n = self.config["batch_size"], mpi.rank(), mpi.size()
        exact = self.config["exact_reduction"]
        # One flat buffer: the summed gradient, then one slot counting bad episodes.
        buf = np.zeros(self.net.params.size + 1, dtype=np.int64 if exact else np.float32)
        stats = np.zeros(2 * B + 1)  # returns, lengths, stop flag (filled in by train)
        t0 = time.perf_counter()
        for e in range(me, B, n):  # episode e is played by rank e % n
            ret, length, g = self._play(
                rng.stream(self.config["seed"], rng.EPISODE, self.update, e)
            )
            stats[e], stats[B + e] = ret, length
            if not np.all(np.isfinite(g)) or np.abs(g).max() >= FIXED_POINT_LIMIT / B:
                buf[-1] += 1
            elif exact:
                buf[:-1] += np.rint(g * 2.0**FIXED_POINT_BITS).astype(np.int64)
            else:
                buf[:-1] += g
        t1 = time.perf_counter()
        mpi.allreduce_sum_(buf)  # sum every episode's gradient over all ranks
        t2 = time.perf_counter()
        if buf[-1] != 0 or not np.all(np.isfinite(buf[:-1])):
            raise mpi.NonFiniteError(
                f"update {self.update}: non-finite or huge gradient in {int(buf[-1])} episode(s)"
                "; lower learning_rate or check the env's rewards (nothing was saved)"
            )
        scale = 2.0**FIXED_POINT_BITS if exact else 1.0
        grad = (buf[:-1] / (scale * B)).astype(np.float32)
        self.optimizer.step(self.net.params, grad)
        # stats holds only this rank's episodes until train() sums it over ranks
        local_steps = int(stats[B : 2 * B].sum())
        return dict(stats=stats, play_s=t1 - t0, allreduce_s=t2 - t1, local_steps=local_steps)

    # ------------------------------------------------------------------ training loop
    def train(
        self,
        *,
        episodes: int | None = None,
        minutes: float | None = None,
        target_return: float | None = None,
        checkpoint_path: str | Path | None = None,
        checkpoint_every: int = 10,
        callback: Callable[[dict], None] | None = None,
    ):
        """Run updates until a limit is reached; returns self.

        Args:
            episodes: stop once this many episodes in total have been played (counted from
                the start of the run, resumes included).
            minutes: stop after the first update that ends this many minutes after the call.
            target_return: stop once the mean return of the last 100 episodes reaches this.
            checkpoint_path: save here every ``checkpoint_every`` updates and at the end.
            callback: called on every rank after every update with the logged row.

        With no limit at all, trains until interrupted. Collective: every rank must call this.
        """
        if not (is_int(checkpoint_every) and checkpoint_every >= 1):  # same on every rank
            raise mpi.ConfigError(f"checkpoint_every must be an int >= 1, got {checkpoint_every!r}")
        if episodes is None and minutes is None and target_return is None:
            self._logger().print("no limit given: training until interrupted")
        log, B = self._logger(), self.config["batch_size"]
        start = time.perf_counter()
        while True:
            out = self._one_update()
            stats = out["stats"]
            elapsed = time.perf_counter() - start
            stats[-1] = minutes is not None and elapsed >= 60 * minutes
            mpi.allreduce_sum_(stats)  # every episode's return and length, and any stop vote
            for ret in stats[:B]:
                self.running_reward = (
                    ret if self.running_reward is None else 0.99 * self.running_reward + 0.01 * ret
                )
                self.recent_returns.append(float(ret))
            self.update += 1
            self.episodes += B
            self.steps += int(stats[B : 2 * B].sum())
            row = self._log_row(stats, out, elapsed)
            log.log(row, self._log_line(row))
            if callback is not None:
                callback(row)
            done = (
                stats[-1] > 0
                or (episodes is not None and self.episodes >= episodes)
                or (
                    target_return is not None
                    and len(self.recent_returns) == 100
                    and row["charts/mean_return_100"] >= target_return
                )
            )
            if checkpoint_path is not None and (done or self.update % checkpoint_every == 0):
                self.save(checkpoint_path)
            if done:
                return self

    def _log_row(self, stats: np.ndarray, out: dict, elapsed: float) -> dict:
        B = self.config["batch_size"]
        per_rank = mpi.gather_stats({k: out[k] for k in ("play_s", "allreduce_s", "local_steps")})
        row = {
            "episodes": self.episodes,
            "update": self.update,
            "steps": self.steps,
            "charts/running_reward": round(self.running_reward, 6),
            "charts/mean_return": float(stats[:B].mean()),
            "charts/mean_return_100": float(np.mean(self.recent_returns)),
            "charts/mean_length": float(stats[B : 2 * B].mean()),
            "time/elapsed_s": elapsed,
        }
        if per_rank is not None:  # the root: timing figures of every rank
            play = max(r["play_s"] for r in per_rank) + max(r["allreduce_s"] for r in per_rank)
            rank_rates = [r["local_steps"] / max(r["play_s"], 1e-9) for r in per_rank]
            row.update(
                {
                    "perf/steps_per_s": stats[B : 2 * B].sum() / max(play, 1e-9),
                    "perf/rank_steps_per_s_min": min(rank_rates),
                    "perf/rank_steps_per_s_max": max(rank_rates),
                    "perf/allreduce_s": max(r["allreduce_s"] for r in per_rank),
                }
            )
        return row

    @staticmethod
    def _log_line(row: dict) -> str:
        return (
            f"ep {row['episodes']:6d} | upd {row['update']:5d} | "
            f"running {row['charts/running_reward']:8.2f} | "
            f"mean100 {row['charts/mean_return_100']:8.2f} | "
            f"len {row['charts/mean_length']:7.1f} | "
            f"steps/s {row.get('perf/steps_per_s', 0):7.0f} "
            f"(rank {row.get('perf/rank_steps_per_s_min', 0):.0f}-"
            f"{row.get('perf/rank_steps_per_s_max', 0):.0f}) | "
            f"allreduce {1e3 * row.get('perf/allreduce_s', 0):6.1f} ms"
        )

    def _logger(self) -> Logger:
        if not hasattr(self, "_log"):
            self._log = Logger(self.log_dir, resume=self.update > 0, quiet=self.quiet)
            self._log.truncate(self.update)
            self._log.print(
                run_header(
                    self.algorithm,
                    self.config["env"],
                    self.blas,
                    f"{self.net.params.size:,} params | update {self.update}",
                )
            )
        return self._log

    # ------------------------------------------------------------------ using a policy
    def evaluate(self, episodes: int = 10, greedy: bool = True) -> float:
        """Mean return over ``episodes`` episodes shared out over ranks (no learning).

        Collective: every rank must call this.
        """
        self._evaluations += 1
        returns = np.zeros(episodes)
        for e in range(mpi.rank(), episodes, mpi.size()):
            stream = rng.stream(self.config["seed"], rng.EVALUATE, self._evaluations, e)
            returns[e] = self._play(stream, greedy=greedy)[0]
        return float(mpi.allreduce_sum_(returns).mean())  # each return lives on one rank

    def act(self, observation: np.ndarray, new_episode: bool = False) -> int:
        """The greedy action for a raw env observation (for Pong: a frame; the previous
        frame is kept, so pass ``new_episode=True`` on an episode's first frame)."""
        x = np.asarray(observation, dtype=np.float32)
        if self.env.is_pong:
            cur = pong_frame(observation)
            x = cur - (cur if new_episode or self._act_prev is None else self._act_prev)
            self._act_prev = cur
        a = int(np.argmax(self.net.forward(x)[2]))
        return (2 if a == 0 else 3) if self.env.is_pong else a

    # ------------------------------------------------------------------ checkpoints
    def save(self, path: str | Path) -> Path:
        """Write parameters, optimizer state and counters to ``path`` (root only, atomic)."""
        meta = {
            "algorithm": self.algorithm,
            "version": __version__,
            "config": self.config,
            "update": self.update,
            "episodes": self.episodes,
            "steps": self.steps,
            "running_reward": self.running_reward,
            "evaluations": self._evaluations,
        }
        return checkpoint.save(
            path,
            {
                "params": self.net.params,
                "rmsprop_cache": self.optimizer.cache,
                "recent_returns": np.array(self.recent_returns, dtype=np.float64),
            },
            meta,
        )

    @classmethod
    def load(cls, path: str | Path, **overrides) -> ParallelPG:
        """A ParallelPG restored from ``path``, ready to ``train`` on from where it stopped.

        ``overrides`` replace constructor arguments that are not part of the checkpoint's
        learning state: ``env`` (needed if it was a factory), ``log_dir``, ``blas_threads``,
        ``quiet``. Collective: every rank must call this.
        """
        arrays, meta, settings = checkpoint.load_settings(path, cls.algorithm, overrides)
        agent = cls(**settings)
        problem = None
        if arrays["params"].shape != agent.net.params.shape:
            problem = (
                f"checkpoint {str(path)!r} has {arrays['params'].size} parameters, "
                f"the network {agent.net.params.size}"
            )
        mpi.agree({}, problem)
        agent.net.params[:] = arrays["params"]
        agent.optimizer.cache[:] = arrays["rmsprop_cache"]
        agent.recent_returns.extend(arrays["recent_returns"].tolist())
        agent.update, agent.episodes, agent.steps = meta["update"], meta["episodes"], meta["steps"]
        agent.running_reward, agent._evaluations = meta["running_reward"], meta["evaluations"]
        return agent
