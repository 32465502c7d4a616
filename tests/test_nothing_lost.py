"""Tier 1: issue 47's cases of a log dir: what a failed start leaves is pgmpi's own and a
rerun cleans it; a file by a name pgmpi writes, in a folder pgmpi never logged to, is never
replaced, ``overwrite`` or not. And its small things: one process prints a bad setting on
one line, and PrunedGA's saved generation is counted as its progress lines count."""

import json
import subprocess
import sys

import pytest

from pgmpi import ConfigError, NonFiniteError, ParallelPG, PrunedGA


def _cartpole(**kw):
    base = dict(env="CartPole-v1", hidden_size=8, slots=2, steps_per_slot=1, seed=3)
    return ParallelPG(**(base | dict(quiet=True, blas_threads=1) | kw))


def test_a_run_that_blew_up_in_its_first_update_leaves_a_log_dir_a_rerun_may_use(tmp_path):
    ck = tmp_path / "checkpoint.npz"
    with pytest.raises(NonFiniteError):
        _cartpole(log_dir=tmp_path, learning_rate=1e300).train(updates=3, checkpoint_path=ck)
    assert not ck.exists() and (tmp_path / "config.json").exists()
    _cartpole(log_dir=tmp_path).train(updates=2, checkpoint_path=ck)  # the fixed command
    assert ParallelPG.load(ck).update == 2
    assert json.loads((tmp_path / "config.json").read_text())["learning_rate"] != 1e300
    with pytest.raises(ConfigError, match=r"holds an earlier run \(2 rows in progress.csv, a "
                       "checkpoint.npz\\)"):  # fmt: skip
        _cartpole(log_dir=tmp_path).train(updates=2)  # now it is one


def test_a_start_that_failed_before_training_leaves_nothing_in_the_way(tmp_path, monkeypatch):
    """As a missing tensorboardX does: the Logger fails after writing config.json."""
    import pgmpi.tensorboard

    def missing(folder):
        raise ImportError("tensorboard=True needs tensorboardX: pip install pgmpi[tensorboard]")

    monkeypatch.setattr(pgmpi.tensorboard, "ScalarWriter", missing)
    with pytest.raises(ConfigError, match="needs tensorboardX"):
        _cartpole(log_dir=tmp_path, tensorboard=True).train(updates=1)
    monkeypatch.undo()
    _cartpole(log_dir=tmp_path).train(updates=1)  # without --tensorboard: it starts
    assert len((tmp_path / "progress.csv").read_text().splitlines()) == 2


@pytest.mark.parametrize("name", ["config.json", "trace.csv"])
def test_overwrite_never_replaces_a_users_own_file(tmp_path, name):
    theirs = '{"model_type": "bert"}\n'
    (tmp_path / name).write_text(theirs)
    for overwrite in (False, True):
        with pytest.raises(ConfigError, match=f"holds a {name} that pgmpi did not write .it "
                           "never logged there.: choose another log dir"):  # fmt: skip
            _cartpole(log_dir=tmp_path, overwrite=overwrite).train(updates=1)
        assert (tmp_path / name).read_text() == theirs
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # nothing added, no .lock


def test_one_process_prints_a_bad_setting_on_one_line_as_several_ranks_do():
    code = "from pgmpi import ParallelPG; ParallelPG(env='CartPole-v1', slots=0)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        "pgmpi: error: ConfigError: slots must be None or an int >= 1, got 0"
    ]


def test_the_ga_counts_its_saved_generation_as_its_progress_lines_do(tmp_path, capsys):
    ga = PrunedGA(env="CartPole-v1", hidden_sizes=[4], population_size=8,
                  episodes_per_individual=1, seed=3)  # fmt: skip
    ga.train(generations=2, checkpoint_path=tmp_path / "ga.npz")
    out = capsys.readouterr().out
    assert "\ngen     1 |" in out and "\ngen     2 |" not in out  # the lines: gen 0 and gen 1
    assert f"saved: checkpoint {tmp_path / 'ga.npz'} (generation 1, 2 generations done)" in out
