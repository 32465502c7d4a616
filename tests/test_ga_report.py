"""Tier 1, single process: PrunedGA's best network as the task scores it (pgmpi.best): when
it was found, kept across a resume, and evaluate()'s report."""

import pickle
import re

import numpy as np
import pytest

from pgmpi import ConfigError, PrunedGA, checkpoint
from pgmpi.best import BestFound, BestScore

TINY = dict(env="CartPole-v1", hidden_sizes=(4,), population_size=12, episodes_per_individual=2)
REPORT = re.compile(
    r"best network: [+-]\d+\.\d \[[+-]\d+\.\d, [+-]\d+\.\d\] \(95% CI\) over (\d+) new episodes; "
    r"keeps (\d+) of (\d+) connections; found in generation (\d+), after ([\d,]+) env steps, "
    r"([\d,]+) episodes, \d+\.\d minutes, \d+\.\d\d core-hours"
)


def _tiny(**kw) -> PrunedGA:
    return PrunedGA(**dict(TINY, seed=4, quiet=True, **kw))


def _counts(at: dict) -> tuple:
    return at["generation"], at["steps"], at["episodes"]


def test_the_best_is_noted_in_the_generation_that_found_it_with_the_runs_counts():
    rows = []
    ga = _tiny().train(generations=4, callback=rows.append)
    history = ga.optimizer.fitness_history
    best = [max(h.max() for h in history[: g + 1]) for g in range(4)]
    found = max(g for g in range(4) if g == 0 or best[g] > best[g - 1])  # the last new best
    at = ga.best_found.at
    assert _counts(at) == (found, rows[found]["steps"], (found + 1) * 12 * 2)
    assert ga.optimizer.best_fitness == best[-1]
    assert 0 < at["seconds"] <= ga.best_found.seconds  # one rank: core-seconds are seconds
    assert (
        at["core_seconds"] == at["seconds"] and ga.best_found.core_seconds == ga.best_found.seconds
    )


def test_a_resumed_run_reports_the_counts_of_an_uninterrupted_one(tmp_path):
    whole = _tiny().train(generations=5)
    ck = tmp_path / "ga.npz"
    part = _tiny(log_dir=tmp_path).train(generations=2, checkpoint_path=ck, checkpoint_every=1)
    loaded = PrunedGA.load(ck, log_dir=tmp_path, quiet=True)
    assert loaded.best_found.state() == part.best_found.state()  # times too, as saved
    loaded.train(generations=5, checkpoint_path=ck)
    assert _counts(loaded.best_found.at) == _counts(whole.best_found.at)
    assert loaded.best_found.seconds > part.best_found.seconds  # the stretches add up
    again = PrunedGA.load(ck, quiet=True)
    assert again.best_found.state() == loaded.best_found.state()
    assert again.evaluate(3).found == loaded.best_found.at


def test_evaluate_reports_the_score_the_connections_kept_and_when_found():
    ga = _tiny()
    assert ga.evaluate(2).found is None  # before any generation: the first individual
    ga.train(generations=3)
    score = ga.evaluate(5)
    assert isinstance(score, BestScore) and isinstance(score, float) and len(score.returns) == 5
    assert score.ci95[0] <= score <= score.ci95[1]
    assert score.kept == ga.optimizer.best_mask.sum() and score.connections == ga.net.n_weights
    match = REPORT.fullmatch(score.report())
    assert match, score.report()
    n, kept, of, generation, steps, episodes = (int(g.replace(",", "")) for g in match.groups())
    at = ga.best_found.at
    assert (n, kept, of) == (5, score.kept, ga.net.n_weights)
    assert (generation, steps, episodes) == _counts(at)
    copy = pickle.loads(pickle.dumps(score))  # as mpi4py's object collectives send it
    assert copy.report() == score.report() and copy == score
    given = ga.evaluate(2, mask=np.ones(ga.net.n_weights, dtype=bool))
    assert given.found is None and given.report().startswith("given mask: ")
    assert "found" not in given.report() and given.kept == ga.net.n_weights
    assert ga.evaluate.__defaults__[0] == 100  # as the task is scored: over 100 episodes


def test_a_network_of_several_synapses_a_connection_counts_its_synapses():
    ga = _tiny(genome="signed-dag", synapses=2).train(generations=1)
    score = ga.evaluate(2)
    assert (score.kept, score.connections) == (ga.optimizer.best_mask.sum(), ga.net.n_weights)
    assert ga.net.n_weights == 2 * ga.net.connections
    assert f"keeps {score.kept} of {score.connections} synapses;" in score.report()
    copy = pickle.loads(pickle.dumps(score))
    assert copy.unit == "synapses" and copy.report() == score.report()


def test_one_episode_has_no_interval_and_unknown_times_are_named():
    at = dict(generation=3, steps=1234, episodes=96, seconds=None, core_seconds=None)
    score = BestScore(np.array([12.5]), "best network", 7, 40, at)
    assert score.report() == (
        "best network: +12.5 over 1 new episode; keeps 7 of 40 connections; found in "
        "generation 3, after 1,234 env steps, 96 episodes, time not recorded (an older checkpoint)"
    )


def test_a_checkpoint_from_before_the_times_loads_them_as_unknown(tmp_path):
    ck = tmp_path / "ga.npz"
    _tiny().train(generations=2, checkpoint_path=ck)
    arrays, meta = checkpoint.load(ck, "PrunedGA")
    for key in ("train_seconds", "train_core_seconds", "best_found"):
        del meta[key]
    checkpoint.save(ck, arrays, meta)
    old = PrunedGA.load(ck, quiet=True)
    assert (old.best_found.seconds, old.best_found.at) == (None, None)
    old.best_found.count(2, 10, 24, 1.5, improved=True)
    assert old.best_found.at["seconds"] is None and old.best_found.seconds is None


@pytest.mark.parametrize(
    "key, value",
    [
        ("train_seconds", -1.0),
        ("train_core_seconds", "soon"),
        ("best_found", dict(generation=1)),
        ("best_found", dict(generation=-1, steps=0, episodes=0, seconds=0, core_seconds=0)),
    ],
)
def test_a_hand_edited_time_or_best_found_is_a_config_error_naming_it(tmp_path, key, value):
    ck = tmp_path / "ga.npz"
    _tiny().train(generations=1, checkpoint_path=ck)
    arrays, meta = checkpoint.load(ck, "PrunedGA")
    checkpoint.save(ck, arrays, dict(meta, **{key: value}))
    with pytest.raises(ConfigError, match=f"its {key} is"):
        PrunedGA.load(ck, quiet=True)


def test_best_found_adds_each_stretch_at_its_own_rank_count(monkeypatch):
    found = BestFound()
    found.count(0, 100, 8, 2.0, improved=True)
    monkeypatch.setattr("pgmpi.mpi.size", lambda: 4)  # resumed on 4 ranks
    found.count(1, 250, 8, 1.0, improved=False)
    found.count(2, 400, 8, 1.0, improved=True)
    assert (found.seconds, found.core_seconds) == (4.0, 10.0)
    assert found.at == dict(generation=2, steps=400, episodes=24, seconds=4.0, core_seconds=10.0)
