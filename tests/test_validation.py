"""Tier 1: bad input is one clear ConfigError, never a raw traceback or a silent change of
meaning: bools that are not bools, paths that are not paths, sizes that cannot fit in
memory, NaN observations, a GIF path that is a folder, two env factories taken for one,
and a checkpoint with a key missing."""

import json
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from pgmpi import ConfigError, ParallelPG, PrunedGA, checkpoint

TINY = dict(env="CartPole-v1", hidden_size=4, slots=2, steps_per_slot=1, quiet=True)


@pytest.mark.parametrize(
    "given, text",
    [
        (dict(exact_reduction="no"), "exact_reduction must be True or False, got 'no'"),
        (dict(exact_reduction=None), "exact_reduction must be True or False, got None"),
        (dict(sticky_actions=1), "sticky_actions must be True or False, got 1"),
        (dict(whole_games=1), "whole_games must be None, True or False, got 1"),
        (dict(quiet=0), "quiet must be True or False, got 0"),
        (dict(trace=1, log_dir="runs/x"), "trace must be True or False, got 1"),
        (dict(log_dir=""), "log_dir must be None or a non-empty path, got ''"),
        (dict(log_dir=123), "log_dir must be None or a non-empty path, got 123"),
        (dict(slots=2.5), "slots must be None or an int >= 1, got 2.5"),
    ],
)
def test_bad_constructor_arguments_are_one_clear_error(given, text):
    with pytest.raises(ConfigError, match=text.replace("(", r"\(").replace(")", r"\)")):
        ParallelPG(**(TINY | given))


def test_bad_train_and_evaluate_arguments_are_one_clear_error():
    agent = ParallelPG(**TINY)
    with pytest.raises(ConfigError, match="checkpoint_path must be None or a non-empty path"):
        agent.train(updates=1, checkpoint_path=123)
    with pytest.raises(ConfigError, match="greedy must be True or False, got 1"):
        agent.evaluate(episodes=1, greedy=1)


@pytest.mark.parametrize(
    "given", [dict(hidden_size=10**9), dict(steps_per_slot=10**12)], ids=["hidden", "steps"]
)
def test_sizes_that_cannot_fit_in_memory_are_refused_before_allocation(given):
    with pytest.raises(ConfigError, match=r"needs about [0-9.]+ GiB per rank .* more than this "
                       r"machine's [0-9.]+ GiB of memory"):  # fmt: skip
        ParallelPG(**(TINY | given))


def test_the_ga_refuses_a_nan_observation():
    ga = PrunedGA(env="CartPole-v1", hidden_sizes=[4], population_size=2, quiet=True)
    with pytest.raises(ValueError, match=r"shape \(4,\), finite; got NaN or inf"):
        ga.act(np.array([0.0, np.nan, 0.0, 0.0]))
    with pytest.raises(ValueError, match=r"got shape \(3,\)"):
        ga.act(np.zeros(3))


def test_play_refuses_a_gif_path_that_is_a_folder(tmp_path):
    ck = tmp_path / "ck.npz"
    ParallelPG(**TINY).train(updates=1, checkpoint_path=ck)
    cmd = [sys.executable, "-m", "pgmpi.play", str(ck), "--gif", str(tmp_path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "is a folder" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def _cartpole_without_a_spec():
    from gymnasium.envs.classic_control import CartPoleEnv

    return CartPoleEnv()  # made directly, not registered: no spec id


def _acrobot_without_a_spec():
    from gymnasium.envs.classic_control import AcrobotEnv

    return AcrobotEnv()


def test_two_env_factories_do_not_take_each_others_checkpoints(tmp_path):
    ck = tmp_path / "ck.npz"
    tiny = TINY | dict(whole_games=True)
    first = ParallelPG(**(tiny | dict(env=_cartpole_without_a_spec, max_episode_steps=50)))
    assert (
        first.config["env"].startswith("custom:")
        and "_cartpole_without_a_spec" in (first.config["env"])
    )
    first.train(updates=1, checkpoint_path=ck)
    other = ParallelPG(**(tiny | dict(env=_acrobot_without_a_spec, max_episode_steps=50)))
    assert other.config["env"] != first.config["env"]
    with pytest.raises(ConfigError, match="would replace it"):
        other.train(updates=1, checkpoint_path=ck)


@pytest.mark.parametrize("drop", ["array", "meta"])
def test_a_checkpoint_with_a_key_missing_is_one_clear_error(tmp_path, drop):
    ck, edited = tmp_path / "ck.npz", tmp_path / "edited.npz"
    ParallelPG(**TINY).train(updates=1, checkpoint_path=ck)
    with np.load(ck, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    if drop == "array":
        del arrays["recent_returns"]
        missing = "recent_returns"
    else:
        meta = json.loads(arrays["__meta__"].tobytes())
        del meta["episodes"]
        arrays["__meta__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
        missing = "episodes"
    np.savez(edited, **arrays)
    assert zipfile.is_zipfile(edited)
    with pytest.raises(ConfigError, match=f"lacks '{missing}': not a complete ParallelPG"):
        ParallelPG.load(edited, quiet=True)
    assert checkpoint.load(ck, "ParallelPG")[1]["update"] == 1  # the original is untouched
