"""Tier 1: checkpoints are atomic, never unpickled, and every bad file is one clear error."""

import zipfile

import numpy as np
import pytest

from pgmpi import ConfigError, ParallelPG, checkpoint
from pgmpi.rallies import OpenRallies
from tests.helpers.checkpoints import rewrite_meta


@pytest.fixture
def saved(tmp_path):
    agent = ParallelPG(env="CartPole-v1", hidden_size=8, slots=2, steps_per_slot=1, quiet=True)
    agent.train(episodes=2)
    return agent.save(tmp_path / "ck.npz")


def _assert_refused(path, text):
    before = path.read_bytes() if path.exists() else None
    with pytest.raises(ConfigError) as err:
        ParallelPG.load(path, quiet=True)
    assert text in str(err.value) and str(path) in str(err.value)
    assert (path.read_bytes() if path.exists() else None) == before  # nothing changed


def test_truncated_checkpoint(saved):
    saved.write_bytes(saved.read_bytes()[: saved.stat().st_size // 2])
    _assert_refused(saved, "not a readable .npz file")


def test_not_an_npz(tmp_path):
    path = tmp_path / "notes.npz"
    path.write_text("hello")
    _assert_refused(path, "not a readable .npz file")


def test_missing_file(tmp_path):
    _assert_refused(tmp_path / "absent.npz", "no such file")


def test_pickled_object_is_refused(tmp_path):
    path = tmp_path / "evil.npz"
    np.savez(path, params=np.array([{"a": 1}], dtype=object))
    _assert_refused(path, "pickled object")


def test_plain_npz_without_metadata(tmp_path):
    path = tmp_path / "plain.npz"
    np.savez(path, params=np.zeros(3))
    _assert_refused(path, "not a pgmpi checkpoint")


def test_other_algorithm(saved):
    rewrite_meta(saved, algorithm="PrunedGA")
    _assert_refused(saved, "written by 'PrunedGA', not 'ParallelPG'")


def test_incompatible_format(saved):
    rewrite_meta(saved, format=99)
    _assert_refused(saved, "checkpoint format 99")


def test_save_replaces_atomically_and_leaves_no_temporary(saved):
    first = saved.read_bytes()
    checkpoint.save(saved, {"x": np.arange(3)}, {"algorithm": "test"})
    assert saved.read_bytes() != first
    assert zipfile.is_zipfile(saved)
    assert [p.name for p in saved.parent.iterdir()] == [saved.name]


def test_packed_items_keep_empty_arrays_apart_from_absent_keys():
    items = [
        {"a": np.arange(3), "b": np.zeros(0, dtype=np.float32)},
        {"a": np.zeros(0, dtype=np.int64)},
        {"b": np.array([1.5], dtype=np.float32)},
    ]
    packed = checkpoint.pack_ragged(items, "x")
    for i, item in enumerate(items):
        back = checkpoint.unpack_ragged(packed, "x", i)
        assert sorted(back) == sorted(item)  # an empty array is kept, an absent key is not
        for key, value in item.items():
            assert back[key].dtype == value.dtype and np.array_equal(back[key], value)
    # a checkpoint written before ".present" reads as it did: size 0 is left out
    older = {k: v for k, v in packed.items() if not k.endswith(".present")}
    assert sorted(checkpoint.unpack_ragged(older, "x", 0)) == ["a"]
    assert sorted(checkpoint.unpack_ragged(older, "x", 1)) == []


def test_an_open_rally_of_blank_frames_survives_a_checkpoint():
    # Between points the difference frame can be blank: no non-zero input, so the waiting
    # steps' idx and vals are empty for that game (checkpoints before ".present" left them out).
    blank = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32))
    moving = (np.array([3, 70], dtype=np.int64), np.array([1.0, -1.0], dtype=np.float32))
    rallies = OpenRallies()
    rallies.steps = {0: ([blank, blank], [1, 0]), 1: ([moving, blank], [0, 1])}
    packed = checkpoint.pack_games([{k: rallies.arrays(k) for k in (0, 1)}])
    back = OpenRallies()
    for k, snap in checkpoint.unpack_games(packed, [0, 1]).items():
        back.restore(k, snap)
    for k in (0, 1):
        inputs, actions = back.steps[k]
        assert actions == rallies.steps[k][1]
        for (i, v), (i0, v0) in zip(inputs, rallies.steps[k][0], strict=True):
            assert i.dtype == np.int64 and v.dtype == np.float32
            assert np.array_equal(i, i0) and np.array_equal(v, v0)
