"""Tier 1: issue 47's validation gaps: each value no run could use is one ConfigError naming
the setting, raised before anything big is made (not a bare MemoryError, nor a blow-up that
names another setting)."""

import json
import zipfile

import numpy as np
import pytest

from pgmpi import ConfigError, ParallelPG, PrunedGA

PG = dict(env="CartPole-v1", hidden_size=4, slots=2, steps_per_slot=1, quiet=True)
GA = dict(env="CartPole-v1", hidden_sizes=[4], population_size=8, episodes_per_individual=1,
          quiet=True)  # fmt: skip


@pytest.mark.parametrize(
    "setting, value, named",
    [
        ("slots", 10**12, r"slots=1000000000000 over 1 rank\(s\) is 1,000,000,000,000 games "
         "per rank, which need at least .* more than this machine's .* use fewer slots"),
        ("entropy_bonus", 1e308, r"entropy_bonus must be at most 100 \(a weight .*, got 1e\+308"),
        ("value_baseline", 1e308, r"value_baseline must be at most 100 \(a weight against"),
        ("frame_skip", 10**9, r"frame_skip must be an int in \[1, 100\]"),
        ("frame_skip", [2, 10**9], r"frame_skip must be an int in \[1, 100\], or \[low, high\]"),
    ],
)  # fmt: skip
def test_parallel_pg_names_the_setting(setting, value, named):
    with pytest.raises(ConfigError, match=named):
        ParallelPG(**(PG | {setting: value}))


@pytest.mark.parametrize(
    "setting, value",
    [("hidden_sizes", [10**9]), ("population_size", 10**9), ("episodes_per_individual", 10**12)],
)
def test_pruned_ga_checks_memory_before_it_allocates(setting, value):
    with pytest.raises(ConfigError, match=r"hidden_sizes=.*population_size=.* and "
                       r"episodes_per_individual=.* need about .* GiB per rank .* more than "
                       "this machine's"):  # fmt: skip
        PrunedGA(**(GA | {setting: value}))


def test_a_real_size_fits():
    PrunedGA(env="CartPole-v1", hidden_sizes=[8, 8], population_size=138, quiet=True)
    ParallelPG(**(PG | dict(slots=64)))


def _edit_meta(path, **changes):
    """Rewrite ``path``'s metadata with ``changes``, as a user with a text editor might."""
    with np.load(path) as f:
        arrays = {k: f[k] for k in f.files}
    key = next(k for k in arrays if "meta" in k)
    meta = json.loads(arrays[key].tobytes()) | changes
    arrays[key] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    np.savez(path, **arrays)
    assert zipfile.is_zipfile(path)


@pytest.mark.parametrize(
    "counter, value", [("update", -3), ("steps", "many"), ("running_reward", "none")]
)
def test_a_checkpoint_with_hand_edited_counters_is_one_error(tmp_path, counter, value):
    ck = ParallelPG(**PG).train(updates=1).save(tmp_path / "ck.npz")
    _edit_meta(ck, **{counter: value})
    with pytest.raises(ConfigError, match=f"its {counter} is {value!r}, not .*edited by hand"):
        ParallelPG.load(ck)
    ga = PrunedGA(**GA).train(generations=1).save(tmp_path / "ga.npz")
    _edit_meta(ga, evaluations=1.5)
    with pytest.raises(ConfigError, match="its evaluations is 1.5, not an int >= 0"):
        PrunedGA.load(ga)
