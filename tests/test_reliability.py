"""Tier 1: nothing lost, nothing overwritten, nothing silent (one process).

A new run refuses a used log dir or checkpoint unless told to overwrite, and never replaces a
file pgmpi did not write; a blow-up stops before non-finite parameters are saved; a full
disk is one error naming what is intact; the run header names idle ranks on a line of its
own. The launcher cases (signals, several ranks) are in test_reliability_launch.py.
"""

import subprocess
from pathlib import Path

import numpy as np
import pytest

from pgmpi import ConfigError, NonFiniteError, ParallelPG, PrunedGA, WriteError, checkpoint


def _cartpole(**kw):
    base = dict(env="CartPole-v1", hidden_size=8, slots=2, steps_per_slot=1, seed=3)
    return ParallelPG(**(base | dict(quiet=True, blas_threads=1) | kw))


def test_a_new_run_in_a_used_log_dir_is_refused_and_changes_nothing(tmp_path):
    ck = tmp_path / "checkpoint.npz"
    _cartpole(log_dir=tmp_path).train(updates=3, checkpoint_path=ck)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(ConfigError, match="holds an earlier run .* --resume .* --overwrite"):
        _cartpole(log_dir=tmp_path, seed=4).train(updates=1, checkpoint_path=ck)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    back = ParallelPG.load(ck, log_dir=tmp_path, quiet=True)  # --resume goes on
    back.train(updates=5, checkpoint_path=ck)
    assert ParallelPG.load(ck).update == 5
    _cartpole(log_dir=tmp_path, seed=4, overwrite=True).train(updates=1, checkpoint_path=ck)
    assert ParallelPG.load(ck).update == 1  # replaced, as asked
    assert len((tmp_path / "progress.csv").read_text().splitlines()) == 2


@pytest.mark.parametrize("content", [b"notes\n", None])
def test_a_file_pgmpi_did_not_write_is_never_replaced(tmp_path, content):
    path = tmp_path / "notes.txt"
    if content is None:  # a user's own .npz archive
        np.savez(path.with_suffix(".npz"), x=np.arange(3))
        path = path.with_suffix(".npz")
    else:
        path.write_bytes(content)
    before = path.read_bytes()
    for overwrite in (False, True):
        with pytest.raises(ConfigError, match="is not a pgmpi checkpoint"):
            _cartpole(overwrite=overwrite).train(updates=1, checkpoint_path=path)
    assert path.read_bytes() == before


def test_two_calls_of_train_on_one_agent_are_one_run(tmp_path):
    agent = _cartpole(log_dir=tmp_path)
    agent.train(updates=2, checkpoint_path=tmp_path / "ck.npz")
    agent.train(updates=4, checkpoint_path=tmp_path / "ck.npz")  # no --overwrite needed
    assert ParallelPG.load(tmp_path / "ck.npz").update == 4


def test_a_blow_up_stops_before_non_finite_parameters_are_saved(tmp_path):
    ck = tmp_path / "ck.npz"
    agent = _cartpole(learning_rate=1e-2, optimizer="rmsprop")
    agent.train(updates=2, checkpoint_path=ck)
    good = ck.read_bytes()
    agent.step_size = lambda: 1e300  # the step after this one overflows
    made_inf = r"update 3: the optimizer step made the parameters non-finite"
    with pytest.raises(NonFiniteError, match=made_inf + r".*; the checkpoint .* from before"):
        agent.train(updates=5, checkpoint_path=ck, checkpoint_every=1)
    assert ck.read_bytes() == good
    assert np.all(np.isfinite(ParallelPG.load(ck).net.params))


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB tmpfs (needs root and mount; skipped where it cannot be made)."""
    where = tmp_path / "disk"
    where.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)],
                          capture_output=True, text=True)  # fmt: skip
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
    yield where
    subprocess.run(["umount", "-l", str(where)], check=False)


def _fill(disk: Path) -> None:
    """Take every free byte of ``disk``."""
    with open(disk / "filler", "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass


def test_a_full_disk_at_a_save_is_one_error_and_the_earlier_checkpoint_is_intact(small_disk):
    ck = small_disk / "ck.npz"
    agent = _cartpole()
    agent.train(updates=1, checkpoint_path=ck)
    good = ck.read_bytes()
    _fill(small_disk)
    with pytest.raises(WriteError, match=r"cannot save .*ck.npz.*: No space left on device "
                       r"\(errno 28\); the checkpoint there \(update 1\) is intact"):  # fmt: skip
        agent.train(updates=2, checkpoint_path=ck)
    assert ck.read_bytes() == good
    assert [p.name for p in small_disk.iterdir() if p.name.startswith(".")] == []  # no leftovers


def test_a_full_disk_under_the_log_is_one_error_naming_the_checkpoint(small_disk):
    ck = small_disk / "ck.npz"
    agent = _cartpole(log_dir=small_disk)
    agent.train(updates=2, checkpoint_path=ck)
    _fill(small_disk)  # the CSV's last page still takes a few rows, then the disk is full
    full = r"cannot write .*progress.csv.*: No space left on device \(errno 28\)"
    with pytest.raises(WriteError, match=full + r"; the checkpoint .*ck.npz from before"):
        agent.train(updates=500, checkpoint_path=ck, checkpoint_every=1000)
    assert ParallelPG.load(ck).update == 2


def test_the_idle_rank_warning_is_a_line_of_its_own(capsys):
    """One rank, one individual: not idle; the header stays one line."""
    PrunedGA(env="CartPole-v1", hidden_sizes=[4], population_size=2, episodes_per_individual=1,
             blas_threads=1).train(generations=1)  # fmt: skip
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("pgmpi ") and out[0].endswith("generation 0")
    assert not any(line.startswith("warning") for line in out)


def test_checkpoint_writable_problem_knows_its_own_files(tmp_path):
    cfg = {"env": "CartPole-v1", "seed": 1}
    ck = tmp_path / "ck.npz"
    checkpoint.save(ck, {"x": np.zeros(2)}, {"algorithm": "ParallelPG", "config": cfg, "update": 7})
    assert "earlier run (update 7)" in checkpoint.writable_problem(ck, "ParallelPG", cfg)
    assert checkpoint.writable_problem(ck, "ParallelPG", cfg, overwrite=True) is None
    assert checkpoint.writable_problem(ck, "ParallelPG", cfg, fresh=False) is None  # the same run
    other = dict(cfg, seed=2)
    assert "earlier run" in checkpoint.writable_problem(ck, "ParallelPG", other, fresh=False)
