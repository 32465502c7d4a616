"""Tier 3: ParallelES and its examples launched with mpirun in a subprocess."""

import csv

import numpy as np
import pytest

from tests.helpers.launch import run_mpi

pytestmark = pytest.mark.launcher

# Trains a small ParallelES and prints a hash of everything its next update depends on.
HASH_SCRIPT = """
import hashlib, sys
from pgmpi import ParallelES, mpi
es = ParallelES(env=sys.argv[1], hidden_sizes=[4], population_size=6, eval_episodes=1,
                noise_table_size=20_000, obs_stat_fraction=0.5, max_episode_steps=200,
                seed=9, quiet=True).train(generations=3)
state = [es.net.params, es.optimizer.m, es.optimizer.v, es.obs_stats]
digest = hashlib.sha256(b"".join(a.tobytes() for a in state)).hexdigest()
if mpi.is_root():
    print("HASH", digest, es.steps)
"""


def _hash(proc) -> str:
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [line.split(" ", 1)[1] for line in proc.stdout.splitlines() if line.startswith("HASH")][
        0
    ]


@pytest.mark.parametrize("env", ["CartPole-v1", "BipedalWalker-v3"])
def test_same_parameters_on_one_two_three_and_five_ranks(env):
    hashes = {n: _hash(run_mpi(n, ["-c", HASH_SCRIPT, env], timeout=180)) for n in (1, 2, 3, 5)}
    assert len(set(hashes.values())) == 1, hashes


def test_cartpole_example_reaches_500_on_two_ranks(tmp_path):
    args = ["examples/cartpole_es.py", "--quiet", "--generations", "60", "--log-dir", str(tmp_path)]
    proc = run_mpi(2, args, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert proc.stdout.startswith("reached 500 in")
    rows = list(csv.DictReader(open(tmp_path / "progress.csv")))
    assert float(rows[-1]["charts/current_return"]) == 500.0


def test_bipedal_walker_example_resumes_exactly_on_another_rank_count(tmp_path):
    small = ["--hidden-sizes", "4", "--population-size", "4", "--eval-episodes", "1"]
    small += ["--noise-table-size", "20000", "--obs-stat-fraction", "0.5", "--quiet"]
    small += ["--checkpoint-every", "1"]

    def run(n, folder, *extra):
        args = ["examples/bipedal_walker_es.py", *small, "--log-dir", str(folder), *extra]
        proc = run_mpi(n, args, timeout=180)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return np.load(folder / "checkpoint.npz")

    whole = run(2, tmp_path / "a", "--generations", "3")
    run(2, tmp_path / "b", "--generations", "1")
    resumed = run(3, tmp_path / "b", "--generations", "3", "--resume")
    for key in whole.files:
        if key != "__meta__":
            assert np.array_equal(whole[key], resumed[key]), key
    assert len(list(csv.DictReader(open(tmp_path / "b" / "progress.csv")))) == 3


@pytest.mark.parametrize(
    "flags, text",
    [
        (["--population-size", "7"], "population_size must be an even int >= 2"),
        (["--noise-std", "-0.1"], "noise_std must be a number > 0, got -0.1"),
        (["--noise-table-size", "100"], "noise_table_size must be at least a perturbation"),
    ],
)
def test_bad_settings_fail_once_on_every_rank(tmp_path, flags, text):
    proc = run_mpi(2, ["examples/cartpole_es.py", *flags, "--log-dir", str(tmp_path)], timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.count(f"ConfigError: {text}") == 1, proc.stderr
