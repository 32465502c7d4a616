"""Tier 1, single process: ParallelES's pieces (noise table, fitness shaping, the ES gradient
by hand), its settings' errors, its determinism and its checkpoints."""

import csv

import numpy as np
import pytest

from pgmpi import ConfigError, ParallelES, checkpoint
from pgmpi.config import ESConfig
from pgmpi.es import NoiseTable, centred_ranks, es_gradient
from pgmpi.presets import ES_PRESETS

TINY = dict(env="CartPole-v1", hidden_sizes=[4], population_size=6, noise_table_size=10_000)


def _tiny(**kw) -> ParallelES:
    return ParallelES(**dict(TINY, quiet=True) | kw)


def _table(values) -> NoiseTable:
    table = NoiseTable(1, 0)
    table.noise = np.asarray(values, dtype=np.float32)
    return table


# ---------------------------------------------------------------- the pure pieces
def test_noise_table_is_a_function_of_its_seed_alone():
    a, b, c = NoiseTable(1000, 5), NoiseTable(1000, 5), NoiseTable(1000, 6)
    assert a.noise.dtype == np.float32 and np.array_equal(a.noise, b.noise)
    assert not np.array_equal(a.noise, c.noise)
    assert not a.noise.flags.writeable
    assert abs(a.noise.mean()) < 0.1 and abs(a.noise.std() - 1) < 0.1
    starts = [a.index(np.random.default_rng(s), 990) for s in range(200)]
    assert min(starts) >= 0 and max(starts) <= 10  # a perturbation always fits


def test_centred_ranks_share_ties_and_span_minus_to_plus_half():
    got = centred_ranks(np.array([[3.0, 1.0], [0.0, 2.0]]))
    assert np.allclose(got, [[0.5, -1 / 6], [-0.5, 1 / 6]])
    assert np.array_equal(centred_ranks(np.full((3, 2), 7.0)), np.zeros((3, 2)))
    assert np.allclose(centred_ranks(np.array([[1.0, 1.0], [2.0, 0.0]])), [[0, 0], [0.5, -0.5]])


def test_es_gradient_matches_a_worked_example_by_hand():
    # Table 1 2 3 4 5 6; pair 0 starts at 0 (eps = [1, 2]), pair 1 at 2 (eps = [3, 4]).
    # Returns (+, -): (3, 1) and (0, 2): centred ranks (0.5, -1/6) and (-0.5, 1/6), so the
    # pairs weigh 2/3 and -2/3: sum = 2/3 [1, 2] - 2/3 [3, 4] = [-4/3, -4/3]; divided by
    # 4 episodes x sigma 0.5 = 2: [-2/3, -2/3].
    table = _table([1, 2, 3, 4, 5, 6])
    shaped = centred_ranks(np.array([[3.0, 1.0], [0.0, 2.0]]))
    grad = es_gradient(table, np.array([0, 2]), shaped, 0.5, 2)
    assert np.allclose(grad, [-2 / 3, -2 / 3])
    # Raw (unshaped) returns: (3 - 1) [1, 2] + (0 - 2) [3, 4] = [-4, -4]; / 2 = [-2, -2]
    raw = es_gradient(table, np.array([0, 2]), np.array([[3.0, 1.0], [0.0, 2.0]]), 0.5, 2)
    assert np.allclose(raw, [-2.0, -2.0])


def test_antithetic_pairs_cancel_on_a_constant_fitness():
    table = NoiseTable(5000, 1)
    indices = np.arange(0, 4000, 400)
    constant = np.full((10, 2), 42.0)
    for shaped in (constant, centred_ranks(constant)):
        assert np.array_equal(es_gradient(table, indices, shaped, 0.02, 100), np.zeros(100))


# ---------------------------------------------------------------- settings
@pytest.mark.parametrize(
    "setting, value, message",
    [
        ("population_size", 7, "population_size must be an even int >= 2 (antithetic pairs)"),
        ("noise_std", -0.1, "noise_std must be a number > 0, got -0.1"),
        ("noise_table_size", 10, "noise_table_size must be at least a perturbation: 30"),
        ("obs_stat_fraction", 2.0, "obs_stat_fraction must be in [0, 1]"),
        ("seed", -1, "seed must be an int >= 0"),
        ("hidden_size", 3, "unknown setting(s) ['hidden_size']"),
    ],
)
def test_bad_settings_are_named(setting, value, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):  # fmt: skip
        _tiny(**{setting: value})


def test_presets_are_valid_and_the_paper_is_the_papers():
    paper = ES_PRESETS["paper"]
    assert all(cfg.check() is None for cfg in ES_PRESETS.values())
    assert (paper.noise_std, paper.learning_rate, paper.weight_decay) == (0.02, 0.01, 0.005)
    assert paper.population_size == 10_000 and paper.hidden_sizes == [256, 256]
    assert ESConfig().noise_table_size * 4 * 128 <= 16 * 2**30  # 128 ranks' tables: 12 GiB


# ---------------------------------------------------------------- ParallelES
def test_its_units_are_episodes_of_pairs_and_the_current_network():
    _, count, what, setting, busy = _tiny().describe()
    assert count == 6 + 4 and what == "episodes: 3 pairs x 2 + 4 unperturbed"
    assert setting == "population_size" and busy == 8


def test_same_seed_same_parameters_and_rows():
    def run():
        rows = []
        es = _tiny(seed=4).train(generations=3, callback=rows.append)
        drop = ("perf/", "time/")
        return es.net.params.copy(), [
            {k: v for k, v in r.items() if not k.startswith(drop)} for r in rows
        ]

    (a, rows_a), (b, rows_b) = run(), run()
    assert np.array_equal(a, b) and rows_a == rows_b
    assert rows_a[-1]["generation"] == 2 and rows_a[-1]["steps"] > 0


def test_an_update_moves_theta_and_counts_observations():
    es = _tiny(obs_stat_fraction=0.5)
    before, count = es.net.params.copy(), es.obs_stats[-1]
    es.train(generations=1)
    assert not np.array_equal(before, es.net.params)
    assert es.stat_units == 3 and es.obs_stats[-1] > count  # 3 episodes' observations
    assert es.optimizer.t == 1


def test_act_takes_the_envs_actions():
    discrete = _tiny()
    assert discrete.act(np.zeros(4)) in (0, 1)
    walker = ParallelES(env="BipedalWalker-v3", hidden_sizes=[4], noise_table_size=1000, quiet=True)
    a = walker.act(np.zeros(24))
    assert a.shape == (4,) and np.all(np.abs(a) <= 1)
    with pytest.raises(ValueError, match="shape"):
        walker.act(np.zeros(3))


def test_evaluate_gives_a_mean_with_its_interval():
    score = _tiny().evaluate(4)
    assert len(score.returns) == 4 and score.ci95[0] <= score <= score.ci95[1]
    with pytest.raises(ConfigError, match="episodes must be an int >= 1"):
        _tiny().evaluate(0)


def test_checkpoint_resumes_exactly(tmp_path):
    path = tmp_path / "es.npz"
    whole = _tiny(seed=2).train(generations=3)
    _tiny(seed=2).train(generations=1, checkpoint_path=path)
    resumed = ParallelES.load(path, quiet=True).train(generations=3)
    assert np.array_equal(whole.net.params, resumed.net.params)
    assert np.array_equal(whole.obs_stats, resumed.obs_stats)
    assert whole.steps == resumed.steps and resumed.generation == 3
    arrays, meta = checkpoint.load(path, "ParallelES")
    assert meta["algorithm"] == "ParallelES" and "pickle" not in str(arrays.keys())


def test_progress_has_the_charts_plot_reads(tmp_path):
    _tiny(log_dir=tmp_path).train(generations=2)
    rows = list(csv.DictReader(open(tmp_path / "progress.csv")))
    assert len(rows) == 2
    for key in ("charts/best_fitness", "charts/mean_fitness", "charts/current_return"):
        assert key in rows[0]
    # returns, steps and player of 10 units; one unit's observation sums; the rank's seconds
    assert float(rows[0]["perf/allreduce_bytes"]) == 8 * (3 * 10 + 1 * 9 + 1)


def test_a_non_finite_return_stops_before_saving(tmp_path):
    es = _tiny()
    es._play = lambda params, stream, stats=None: (float("nan"), 1)
    with pytest.raises(Exception, match="non-finite return"):
        es.train(generations=1, checkpoint_path=tmp_path / "c.npz")
    assert not (tmp_path / "c.npz").exists()
