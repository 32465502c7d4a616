"""Tier 1: the settings dataclasses, the flags built from them, and what a run writes down."""

import argparse
import json
from dataclasses import asdict, fields, replace

import pytest

from pgmpi import ConfigError, ParallelPG, PrunedGA
from pgmpi.cli import add_run_flags, add_settings, field_docs, settings_given
from pgmpi.config import ESConfig, GAConfig, PGConfig
from pgmpi.presets import GA_PRESETS, PRESETS
from pgmpi.retired import GA_RETIRED

TINY = dict(env="CartPole-v1", hidden_size=4, slots=2, steps_per_slot=1, blas_threads=1)


def test_presets_are_the_defaults_with_some_fields_replaced():
    assert PRESETS["fast"] == PGConfig()
    changed = {k for k, v in asdict(PRESETS["karpathy"]).items() if v != getattr(PGConfig(), k)}
    assert changed == {
        "optimizer", "learning_rate", "slots", "steps_per_slot", "whole_games", "batch_gradient",
        "entropy_bonus", "frame_skip", "average_half_life", "value_baseline",
        "lr_decay_steps", "standardise_over", "noop_from",
    }  # fmt: skip
    assert PRESETS["karpathy"].entropy_bonus == 0 and PGConfig().entropy_bonus is None  # per env
    assert PRESETS["karpathy"].average_half_life == 0 < PGConfig().average_half_life  # live
    assert PRESETS["karpathy"].value_baseline == 0 and PGConfig().value_baseline is None
    assert PRESETS["karpathy"].lr_decay_steps is None and PGConfig().lr_decay_steps  # constant
    assert PRESETS["karpathy"].noop_from is None and PGConfig().noop_from  # up and down only


def test_the_synaptolytic_preset_is_the_original_benchmarks_settings_field_by_field():
    # The synaptolytic-learning benchmark on BipedalWalker: github.com/riveSunder/
    # synaptolytic-learning at commit 89f4dbb, src/mpi_simple.py run with -p 138 -d 8 8 -r 8
    # and the HebbianDAG agent of src/hebbian_dag.py. Literals, not the defaults: a change of
    # the defaults must not move the preset.
    original = {
        "hidden_sizes": [8, 8],  # -d 8 8
        "genome": "signed-dag",  # HebbianDAG: signed N(0, 1) weights, a DAG, Hebbian pruning
        "weight_scale": 1.0,  # its N(0, 1) weights, unscaled
        "population_size": 138,  # -p 138
        "episodes_per_individual": 8,  # -r 8: get_fitness(epds=8) averages 8 episodes
        "elite_fraction": 0.125,  # update_pop: keep = ceil(0.125 * population_size)
        "prune_rate": 0.025,  # HebbianDAG.__init__: mutate_pop(rate=0.025)
        "mutation_rate": 0.01,  # update_pop: hebbian_prune(0.01), every generation
        "restore_rate": 0.0,  # a connection once pruned never comes back
        "synapses": 1,  # HebbianDAG: one weight per connection
        "bias": False,  # HebbianDAG: its units have no bias
        "best_reevaluation": False,  # pgmpi's rule before the setting: the best keeps its best
        "elite_averaging": False,  # ranked by this generation's fitness alone
        "best_min_episodes": 1,  # the best: the top of the ranking (on its 8 episodes)
        "crossover": 0.0,  # no child of two elites (its own recombination is not PrunedGA's)
        "finish_bonus": 0.0,  # the fitness is the env's return alone
        "complexity_weight": 0.0,  # get_fitness: the mean return, its penalty commented out
        "max_episode_steps": 1600,  # BipedalWalker's own time limit
        "stall_steps": None,  # episodes play on to their end
        "action_cost": 0.0,  # get_fitness: the env's rewards alone
        "common_episodes": False,  # each individual's episodes its own, as its workers played
        "seed": 0,  # mpi_simple.py: HebbianDAG(..., seed=0)
    }
    # a retired setting (GA_RETIRED) is played at its value: the original's, too
    preset = asdict(GA_PRESETS["synaptolytic"]) | GA_RETIRED
    assert set(preset) == set(original)  # a new GAConfig field must be given a value here
    for name, value in original.items():
        assert preset[name] == value and type(preset[name]) is type(value), name
    assert GA_PRESETS["synaptolytic"].check() is None and GA_PRESETS["default"] == GAConfig()


def test_every_field_has_a_doc_and_the_defaults_pass_their_own_check():
    for cls in (PGConfig, GAConfig, ESConfig):
        assert all(field_docs(cls).get(f.name) for f in fields(cls)), cls
        assert cls().check() is None
    assert "learning_rate must be > 0, got -1" in replace(PGConfig(), learning_rate=-1).check()


def test_flags_carry_the_fields_defaults_and_parse_only_what_was_given():
    p = argparse.ArgumentParser()
    add_settings(p, PRESETS["karpathy"], label="karpathy preset: ")
    add_run_flags(p, "runs/x", "update", ParallelPG.train)
    help_text = " ".join(p.format_help().split())
    assert "(karpathy preset: 0.0001)" in help_text and "(karpathy preset: rmsprop)" in help_text
    args = p.parse_args(["--hidden-size", "8", "--sticky-actions"])
    assert settings_given(args, PGConfig()) == {"hidden_size": 8, "sticky_actions": True}
    with pytest.raises(SystemExit):
        p.parse_args(["--slots", "0"])
    off = p.parse_args(["--lr-decay-steps", "none", "--value-baseline", "0"])  # the old default
    assert settings_given(off, PGConfig()) == {"lr_decay_steps": None, "value_baseline": 0.0}
    constant = p.parse_args(["--entropy-bonus", "0.01", "--entropy-final", "None"])
    assert settings_given(constant, PGConfig()) == {"entropy_bonus": 0.01, "entropy_final": None}
    assert settings_given(p.parse_args(["--lr-decay-steps", "5"]), PGConfig()) == {
        "lr_decay_steps": 5
    }
    with pytest.raises(SystemExit):
        p.parse_args(["--lr-decay-steps", "0"])
    never = p.parse_args(["--noop-from", "none"])  # sticky Pong's two actions throughout
    assert settings_given(never, PGConfig()) == {"noop_from": None}
    with pytest.raises(SystemExit):
        p.parse_args(["--noop-from", "0"])
    ga = argparse.ArgumentParser()
    add_settings(ga, GAConfig())
    assert settings_given(ga.parse_args(["--hidden-sizes", "8", "8"]), GAConfig()) == {
        "hidden_sizes": [8, 8]
    }


def test_an_unknown_setting_is_a_config_error_naming_it():
    with pytest.raises(ConfigError, match=r"unknown setting\(s\) \['hiden_size'\]"):
        ParallelPG(env="CartPole-v1", hiden_size=4)
    with pytest.raises(ConfigError, match=r"unknown setting\(s\) \['populaton_size'\]"):
        PrunedGA(populaton_size=4)


def test_a_config_and_keywords_combine_and_the_config_is_what_is_kept():
    agent = ParallelPG(config=PRESETS["karpathy"], **TINY, quiet=True)
    assert agent.config["optimizer"] == "rmsprop" and agent.config["hidden_size"] == 4
    assert set(agent.config) == {"env"} | {f.name for f in fields(PGConfig)}


def test_a_run_writes_its_settings_and_ends_with_a_summary(tmp_path, capsys):
    agent = ParallelPG(**TINY, log_dir=tmp_path)
    agent.train(updates=2, checkpoint_path=tmp_path / "ck.npz")
    assert json.loads((tmp_path / "config.json").read_text()) == agent.config
    out = capsys.readouterr().out.splitlines()
    assert out[-3] == "done: stopped by the limit of 2 updates"
    assert out[-2].startswith("final: upd     2 |")
    assert out[-1] == f"saved: checkpoint {tmp_path / 'ck.npz'} (update 2); logs in {tmp_path}"


def test_tensorboard_rows_are_written_beside_the_csv(tmp_path):
    pytest.importorskip("tensorboardX")
    ParallelPG(**TINY, log_dir=tmp_path, quiet=True, tensorboard=True).train(updates=3)
    assert list(tmp_path.glob("events.out.tfevents.*"))
    with pytest.raises(ConfigError, match="tensorboard=True needs a log_dir"):
        ParallelPG(**TINY, tensorboard=True)
