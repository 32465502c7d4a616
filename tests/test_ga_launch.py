"""Tier 3: PrunedGA and its examples launched with mpirun in a subprocess."""

import csv

import numpy as np
import pytest

from tests.helpers.launch import run_mpi

pytestmark = pytest.mark.launcher

# Trains a small PrunedGA and prints a hash of everything selection depends on.
HASH_SCRIPT = """
import hashlib, sys
from dataclasses import replace
from pgmpi import PrunedGA, mpi
from pgmpi.config import GAConfig
env, hidden, genome = sys.argv[1], [int(h) for h in sys.argv[2].split(",")], sys.argv[3]
small = dict(hidden_sizes=hidden, population_size=10, episodes_per_individual=2, genome=genome,
             seed=9)
if sys.argv[4] == "example":  # examples/bipedal_walker.py's settings, at a small size
    sys.path.insert(0, "examples")
    from bipedal_walker import SETTINGS as config
else:
    config = GAConfig(elite_averaging=sys.argv[4] == "averaging",
                      synapses=2 if sys.argv[4] == "synapses" else 1,
                      crossover=0.5 if sys.argv[4] == "crossover" else 0.0)
ga = PrunedGA(env=env, config=replace(config, **small), quiet=True).train(generations=3)
state = ga.optimizer.state()
digest = hashlib.sha256(b"".join(state[k].tobytes() for k in sorted(state))).hexdigest()
if mpi.is_root():
    print("HASH", digest, ga.steps)
"""


def _hash(proc) -> str:
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [line.split(" ", 1)[1] for line in proc.stdout.splitlines() if line.startswith("HASH")][
        0
    ]


@pytest.mark.parametrize(
    "env, hidden, genome, ranking",
    [
        ("CartPole-v1", "4", "ones", "latest"),
        ("CartPole-v1", "4", "signed-dag", "latest"),
        ("BipedalWalker-v3", "8,8", "ones", "latest"),
        ("BipedalWalker-v3", "8,8", "signed-dag", "latest"),
        ("BipedalWalker-v3", "8,8", "signed-dag", "averaging"),
        ("BipedalWalker-v3", "8,8", "signed-dag", "synapses"),  # two a connection
        ("BipedalWalker-v3", "8,8", "signed-dag", "crossover"),  # half the children of two
        ("BipedalWalker-v3", "8,8", "signed-dag", "example"),  # its mutation rate, and the rest
    ],
)
def test_same_results_on_one_two_and_three_ranks(env, hidden, genome, ranking):
    script = ["-c", HASH_SCRIPT, env, hidden, genome, ranking]
    hashes = {n: _hash(run_mpi(n, script, timeout=120)) for n in (1, 2, 3)}
    assert len(set(hashes.values())) == 1, hashes


def test_cartpole_example_reaches_500_on_two_ranks(tmp_path):
    args = ["examples/cartpole_ga.py", "--quiet", "--generations", "50", "--log-dir", str(tmp_path)]
    proc = run_mpi(2, args, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert proc.stdout.startswith("reached 500 in")
    rows = list(csv.DictReader(open(tmp_path / "progress.csv")))
    assert float(rows[-1]["charts/best_return"]) == 500.0


@pytest.mark.parametrize("genome", ["ones", "signed-dag"])
def test_bipedal_walker_example_resumes_exactly_on_another_rank_count(tmp_path, genome):
    small = ["--genome", genome, "--population-size", "6", "--episodes-per-individual", "1"]
    small += ["--quiet", "--eval-episodes", "2"]
    small += ["--checkpoint-every", "1", "--hidden-sizes", "8", "8"]

    def run(n, folder, *extra):
        proc = run_mpi(
            n, ["examples/bipedal_walker.py", *small, "--log-dir", str(folder), *extra], timeout=120
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        return np.load(folder / "checkpoint.npz")

    whole = run(2, tmp_path / "a", "--generations", "3")
    run(2, tmp_path / "b", "--generations", "1")
    resumed = run(1, tmp_path / "b", "--generations", "3", "--resume")
    assert resumed["fitness_history"].shape == (3, 6)
    for key in whole.files:
        if key != "__meta__":
            assert np.array_equal(whole[key], resumed[key]), key
    assert len(list(csv.DictReader(open(tmp_path / "b" / "progress.csv")))) == 3


def test_bad_settings_fail_once_on_every_rank(tmp_path):
    bad_flag = run_mpi(2, ["examples/cartpole_ga.py", "--population-size", "0"], timeout=60)
    assert bad_flag.returncode == 2
    assert bad_flag.stderr.count("--population-size: must be >= 1") == 1
    bad_fraction = run_mpi(2, ["examples/cartpole_ga.py", "--elite-fraction", "1.5"], timeout=60)
    assert bad_fraction.returncode == 2
    assert bad_fraction.stderr.count("--elite-fraction: must be in [0, 1), got 1.5") == 1
    too_many_elites = ["--population-size", "4", "--elite-fraction", "0.9"]
    bad_value = run_mpi(
        2, ["examples/cartpole_ga.py", *too_many_elites, "--log-dir", str(tmp_path)], timeout=60
    )
    assert bad_value.returncode == 1
    text = "ConfigError: elite_fraction must be small enough to leave a child in a population of 4"
    assert bad_value.stderr.count(text) == 1, bad_value.stderr
    missing = run_mpi(
        2, ["examples/bipedal_walker.py", "--resume", "--log-dir", str(tmp_path / "no")], timeout=60
    )
    assert missing.returncode == 1 and "no such file" in missing.stderr
