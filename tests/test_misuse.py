"""Tier 1, single process: what a new user hits on one machine, each refused or handled cleanly.

Bad limits and arguments, limits already reached, observations of the wrong shape, log dirs
that are files or held by another run, games that never end, checkpoints of another env.
"""

import math
import os
import signal
import subprocess
import sys
import time

import gymnasium as gym
import numpy as np
import pytest

from pgmpi import ConfigError, ParallelPG, PrunedGA, checkpoint
from pgmpi.logger import Logger, lock_log_dir
from pgmpi.mpi import failure
from tests.helpers.launch import ROOT, holding_log_dir


def _cartpole(**kw):
    base = dict(env="CartPole-v1", hidden_size=8, learning_rate=1e-2, optimizer="rmsprop")
    base |= dict(slots=2, steps_per_slot=1, seed=3, quiet=True)
    return ParallelPG(**(base | kw))


def _ga(**kw):
    base = dict(env="CartPole-v1", hidden_sizes=(4,), population_size=8)
    return PrunedGA(**(base | dict(episodes_per_individual=1, seed=3, quiet=True) | kw))


# ---------------------------------------------------------------- arguments of train & co.
BAD_LIMITS = [
    (dict(updates=-1), "updates must be None or an int >= 1, got -1"),
    (dict(updates=0), "updates must be None or an int >= 1, got 0"),
    (dict(updates=2.5), "updates must be None or an int >= 1, got 2.5"),
    (dict(episodes=-3), "episodes must be None or an int >= 1, got -3"),
    (dict(minutes=math.nan), "minutes must be None or a finite number > 0, got nan"),
    (dict(minutes=-1.0), "minutes must be None or a finite number > 0, got -1.0"),
    (dict(minutes=math.inf), "minutes must be None or a finite number > 0, got inf"),
    (dict(target_return=math.nan), "target_return must be None or a finite number, got nan"),
    (dict(callback=3), "callback must be None or a function, got 3"),
]


@pytest.mark.parametrize("kw, text", BAD_LIMITS)
def test_bad_train_limits_are_refused_before_anything_is_written(tmp_path, kw, text):
    agent = _cartpole(log_dir=tmp_path)
    with pytest.raises(ConfigError) as err:
        agent.train(checkpoint_path=tmp_path / "ck.npz", **kw)
    assert text in str(err.value)
    assert agent.update == 0 and sorted(os.listdir(tmp_path)) == []


@pytest.mark.parametrize("kw, text", BAD_LIMITS)
def test_bad_ga_train_limits_are_refused(kw, text):
    kw = {("generations" if k in ("updates", "episodes") else k): v for k, v in kw.items()}
    text = text.replace("updates", "generations").replace("episodes", "generations")
    ga = _ga()
    with pytest.raises(ConfigError, match=text.replace("(", r"\(").replace(")", r"\)")):
        ga.train(**kw)
    assert ga.generation == 0


def test_a_limit_already_reached_trains_nothing():
    agent = _cartpole().train(updates=2)
    params, games = agent.net.params.copy(), agent.episodes
    agent.train(updates=2)
    agent.train(episodes=games)
    assert agent.update == 2 and agent.episodes == games
    np.testing.assert_array_equal(agent.net.params, params)
    agent.train(updates=3)
    assert agent.update == 3  # and a limit not yet reached still trains
    ga = _ga()
    ga.train(generations=1)
    ga.train(generations=1)
    assert ga.generation == 1


@pytest.mark.parametrize(
    "kw, text",
    [
        (dict(episodes=0), "episodes must be an int >= 1, got 0"),
        (dict(episodes=-2), "episodes must be an int >= 1, got -2"),
        (dict(episodes=2.5), "episodes must be an int >= 1, got 2.5"),
        (dict(greedy="yes"), "greedy must be True or False, got 'yes'"),
        (dict(sticky=1.5), "sticky must be None, True or False, got 1.5"),
    ],
)
def test_bad_evaluate_arguments_are_refused(kw, text):
    agent = _cartpole()
    with pytest.raises(ConfigError) as err:
        agent.evaluate(**kw)
    assert text in str(err.value)


def test_bad_ga_evaluate_arguments_are_refused():
    ga = _ga()
    with pytest.raises(ConfigError, match="episodes must be an int >= 1, got 0"):
        ga.evaluate(episodes=0)
    n = ga.net.n_weights
    with pytest.raises(ConfigError, match=rf"mask must be 0/1 or bool of shape \({n},\)"):
        ga.evaluate(episodes=1, mask=np.ones(n + 1, dtype=bool))
    with pytest.raises(ConfigError, match="mask must be"):
        ga.evaluate(episodes=1, mask=np.full(n, 0.5))
    assert ga.evaluate(episodes=1, mask=np.ones(n, dtype=int)) >= 1  # 0/1 ints are a mask


def test_act_refuses_an_observation_of_the_wrong_shape():
    agent = _cartpole()
    assert agent.act(np.zeros(4)) in (0, 1)
    with pytest.raises(ValueError, match=r"shape \(4,\), finite; got shape \(3,\)"):
        agent.act(np.zeros(3))
    with pytest.raises(ValueError, match=r"got shape \(2, 4\)"):
        agent.act(np.zeros((2, 4)))
    with pytest.raises(ValueError, match="got NaN or inf"):
        agent.act(np.array([0.0, np.nan, 0.0, 0.0]))
    pong = ParallelPG(hidden_size=8, slots=1, steps_per_slot=10, quiet=True)
    with pytest.raises(ValueError, match=r"shape \(210, 160, 3\), finite; got shape \(6400,\)"):
        pong.act(np.zeros(6400))


# ---------------------------------------------------------------- a cap on episode length
def _endless_mountain_car():
    """MountainCar without its TimeLimit: a random policy rarely reaches the flag, so an
    episode goes on for tens of thousands of steps."""
    return gym.make("MountainCar-v0").unwrapped


def test_episodes_without_a_time_limit_end_at_the_cap_and_are_counted(tmp_path):
    rows = []
    agent = _cartpole(env=_endless_mountain_car, max_episode_steps=300, log_dir=tmp_path)
    start = time.monotonic()
    agent.train(minutes=0.01, callback=rows.append)
    assert time.monotonic() - start < 60
    assert all(r["charts/games"] == 2 and r["charts/capped_games"] == 2 for r in rows), rows
    assert all(r["charts/mean_length"] == 300 and r["charts/mean_return"] == -300 for r in rows)
    assert agent.evaluate(episodes=2) == -300.0  # evaluation is capped too
    assert "charts/capped_games" in (tmp_path / "progress.csv").read_text().splitlines()[0]


def test_uncapped_games_are_not_counted():
    rows = []
    _cartpole().train(updates=2, callback=rows.append)
    assert all(r["charts/capped_games"] == 0 and r["charts/games"] == 2 for r in rows)


def test_pong_games_are_capped_per_game_across_updates():
    """Pong plays 40-step pieces per update; a game (not a piece) ends at step 100."""
    rows = []
    agent = ParallelPG(hidden_size=8, slots=1, steps_per_slot=40, max_episode_steps=100,
                       seed=2, quiet=True)  # fmt: skip
    agent.train(updates=5, callback=rows.append)
    games = [(r["charts/games"], r["charts/mean_length"]) for r in rows]
    # Steps 1-100 are game 1 (ends 20 steps into update 3); game 2 starts there, ends with 5.
    assert [g for g, _ in games] == [0, 0, 1, 0, 1] and games[2][1] == games[4][1] == 100, games
    assert [r["charts/capped_games"] for r in rows] == [0, 0, 1, 0, 1]


def test_ga_episodes_end_at_the_cap():
    ga = _ga(env=_endless_mountain_car, max_episode_steps=50, population_size=4)
    ga.train(generations=1)
    assert ga.steps == 4 * 50
    assert ga.evaluate(episodes=1) == -50.0


@pytest.mark.parametrize("bad", [0, -5, 2.5, None])
def test_bad_max_episode_steps_is_refused(bad):
    with pytest.raises(ConfigError, match=f"max_episode_steps must be an int >= 1, got {bad}"):
        _cartpole(max_episode_steps=bad)
    with pytest.raises(ConfigError, match=f"max_episode_steps must be an int >= 1, got {bad}"):
        _ga(max_episode_steps=bad)


# ---------------------------------------------------------------- log dirs
def test_a_log_dir_that_is_a_file_is_one_clear_error(tmp_path):
    path = tmp_path / "not-a-folder"
    path.write_text("precious")
    agent = _cartpole(log_dir=path)
    with pytest.raises(ConfigError, match="cannot use log dir .*not-a-folder.*not a folder"):
        agent.train(updates=1)
    with pytest.raises(ConfigError, match="cannot use log dir .*Not a directory"):
        _cartpole(log_dir=path / "below").train(updates=1)
    with pytest.raises(ConfigError, match="cannot write checkpoint .*not-a-folder"):
        _cartpole().train(updates=1, checkpoint_path=path / "ck.npz")
    assert path.read_text() == "precious" and agent.update == 0


def test_a_log_dir_held_by_a_live_run_is_refused_naming_it(tmp_path):
    with holding_log_dir(tmp_path) as holder:
        (tmp_path / "progress.csv").write_text("theirs\n")
        agent = _cartpole(log_dir=tmp_path)
        with pytest.raises(ConfigError) as err:
            agent.train(updates=1, checkpoint_path=tmp_path / "checkpoint.npz")
        message = str(err.value)
        assert f"pid {holder.pid}" in message and "in use by another run" in message
        assert "host " in message and "started 20" in message
        assert (tmp_path / "progress.csv").read_text() == "theirs\n"
        assert not (tmp_path / "checkpoint.npz").exists()
    # The holder died without cleaning up: its lock went with it (the file stays, stale).
    assert f"pid {holder.pid}" in (tmp_path / ".lock").read_text()
    assert lock_log_dir(tmp_path) is None
    assert f"pid {os.getpid()}" in (tmp_path / ".lock").read_text()


def test_one_process_may_reuse_its_own_log_dir(tmp_path):
    ck = tmp_path / "checkpoint.npz"
    _cartpole(log_dir=tmp_path).train(updates=1, checkpoint_path=ck)
    again = ParallelPG.load(ck, log_dir=tmp_path, quiet=True)
    again.train(updates=2, checkpoint_path=ck)
    Logger(tmp_path, resume=True)
    assert len((tmp_path / "progress.csv").read_text().splitlines()) == 3  # header, 2 rows


# ---------------------------------------------------------------- checkpoints of another env
def test_load_refuses_a_checkpoint_of_another_env(tmp_path):
    ck = tmp_path / "checkpoint.npz"
    _cartpole().train(updates=1, checkpoint_path=ck)
    before = ck.read_bytes()
    with pytest.raises(ConfigError, match="trained on 'CartPole-v1', not 'ALE/Pong-v5'"):
        ParallelPG.load(ck, env="ALE/Pong-v5")
    assert ParallelPG.load(ck, env="CartPole-v1").update == 1  # the same id is fine
    with pytest.raises(ConfigError, match="written by 'ParallelPG', not 'PrunedGA'"):
        PrunedGA.load(ck)
    _ga().train(generations=1, checkpoint_path=tmp_path / "ga.npz")
    with pytest.raises(ConfigError, match="trained on 'CartPole-v1', not 'BipedalWalker-v3'"):
        PrunedGA.load(tmp_path / "ga.npz", env="BipedalWalker-v3")
    assert ck.read_bytes() == before


def test_a_fresh_run_does_not_replace_a_checkpoint_of_another_env_or_algorithm(tmp_path):
    ck = tmp_path / "checkpoint.npz"
    _cartpole().train(updates=1, checkpoint_path=ck)
    before = ck.read_bytes()
    other_env = _cartpole(env=_endless_mountain_car, max_episode_steps=20, log_dir=tmp_path)
    with pytest.raises(ConfigError, match="holds a ParallelPG run on 'CartPole-v1'; this "
                       "ParallelPG run on 'MountainCar-v0' would replace it"):  # fmt: skip
        other_env.train(updates=1, checkpoint_path=ck)
    with pytest.raises(ConfigError, match="this PrunedGA run on 'CartPole-v1' would replace it"):
        _ga().train(generations=1, checkpoint_path=ck)
    assert ck.read_bytes() == before and not (tmp_path / "progress.csv").exists()
    with pytest.raises(ConfigError, match="holds an earlier run .update 1.: continue it with "
                       "--resume .* or pass --overwrite"):  # fmt: skip
        _cartpole(seed=4).train(updates=2, checkpoint_path=ck)  # an earlier run of the same kind
    assert ck.read_bytes() == before
    _cartpole(seed=4, overwrite=True).train(updates=2, checkpoint_path=ck)  # when told to
    assert ParallelPG.load(ck).update == 2


def test_checkpoint_writable_problem_names_the_path(tmp_path):
    assert checkpoint.writable_problem(None) is None
    assert checkpoint.writable_problem(tmp_path / "new" / "ck.npz") is None
    assert (tmp_path / "new").is_dir() and os.listdir(tmp_path / "new") == []
    (tmp_path / "folder.npz").mkdir()
    assert "it is a folder" in checkpoint.writable_problem(tmp_path / "folder.npz")


# ---------------------------------------------------------------- Ctrl-C
def _ctrl_c_at(step: int, times: int = 1, apart: float = 0.01):
    """A callback that sends this process SIGINT (a real Ctrl-C) after update ``step``,
    ``times`` times, ``apart`` seconds apart."""
    count = []

    def callback(row):
        count.append(row)
        if len(count) == step:
            for _ in range(times):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(apart)  # let the handler run before the next signal

    return callback


def test_ctrl_c_in_training_saves_at_the_end_of_the_update(tmp_path, capfd):
    ck = tmp_path / "ck.npz"
    agent = _cartpole()
    with pytest.raises(KeyboardInterrupt):
        agent.train(updates=100, checkpoint_path=ck, checkpoint_every=50, callback=_ctrl_c_at(3))
    assert agent.update == 3 and ParallelPG.load(ck).update == 3
    assert "stopping at the end of this update (Ctrl-C again, 3 s or more later: at once)" in (
        capfd.readouterr().err
    )
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handler restored
    ga = _ga()
    with pytest.raises(KeyboardInterrupt):
        ga.train(generations=100, checkpoint_path=tmp_path / "ga.npz", checkpoint_every=50,
                 callback=_ctrl_c_at(2))  # fmt: skip
    assert ga.generation == 2 and PrunedGA.load(tmp_path / "ga.npz").generation == 2
    assert "at the end of this generation" in capfd.readouterr().err  # the GA's word


def test_two_ctrl_c_a_moment_apart_are_one_request(tmp_path):
    """As one SIGTERM reaching mpirun, which forwards it, and the ranks: saved, not lost."""
    ck = tmp_path / "ck.npz"
    agent = _cartpole()
    with pytest.raises(KeyboardInterrupt):
        agent.train(updates=100, checkpoint_path=ck, checkpoint_every=50,
                    callback=_ctrl_c_at(2, times=2))  # fmt: skip
    assert agent.update == 2 and ParallelPG.load(ck).update == 2


def test_a_second_ctrl_c_stops_at_once_without_saving(tmp_path, monkeypatch):
    monkeypatch.setattr(failure, "SAME_REQUEST_S", 0.05)  # a second request: after the window
    ck = tmp_path / "ck.npz"
    agent = _cartpole()
    with pytest.raises(KeyboardInterrupt):
        agent.train(updates=100, checkpoint_path=ck, checkpoint_every=50,
                    callback=_ctrl_c_at(2, times=2, apart=0.2))  # fmt: skip
    assert not ck.exists()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


SIGTERM_TWICE = """
import os, signal, sys, time
from pgmpi import ParallelPG
from pgmpi.mpi import failure

failure.SAME_REQUEST_S = 0.05  # a second SIGTERM 0.2 s later is a second request


def twice(row):
    if row["update"] == 2:
        os.kill(os.getpid(), signal.SIGTERM)  # stop at the end of this update
        time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGTERM)  # no: at once
        time.sleep(60)
        print("still running a minute after the second SIGTERM")


agent = ParallelPG(env="CartPole-v1", hidden_size=4, slots=2, steps_per_slot=1, quiet=True)
agent.train(updates=100, checkpoint_path=sys.argv[1], checkpoint_every=50, callback=twice)
"""


def test_a_second_sigterm_on_one_process_stops_at_once_with_143_and_one_line(tmp_path):
    """One process, no mpirun: the second request ends the run from the handler with status
    143 and says so. A SystemExit raised there instead left silently, or, landing inside
    Box2D's ray-cast callback, came out as a SWIG TypeError with exit status 1."""
    script, ck = tmp_path / "twice.py", tmp_path / "ck.npz"
    script.write_text(SIGTERM_TWICE)
    job = subprocess.run([sys.executable, str(script), str(ck)], capture_output=True,
                         text=True, timeout=120, cwd=ROOT)  # fmt: skip
    assert job.returncode == 143, job.stdout + job.stderr
    assert "pgmpi: SIGTERM again: stopping at once, nothing saved (exit status 143)" in (
        job.stderr
    ), job.stderr
    assert "Traceback" not in job.stderr and "still running" not in job.stdout
    assert not ck.exists()
