"""Tier 3: each PrunedGA genome over ranks, launched with mpirun in a subprocess: the same
fitness history and best mask (and, for the signed genome, the best's activity) on 1, 2
and 3 ranks, and a run saved after 2 generations and resumed for 1 more ends as 3
uninterrupted generations do."""

import pytest

from tests.helpers.launch import run_mpi

pytestmark = pytest.mark.launcher

# For each genome and env: a hash of the optimizer's state after 3 generations in one go,
# and after 2 generations, save, load and 1 more.
SCRIPT = """
import hashlib, sys
from pgmpi import PrunedGA, mpi
def digest(ga):
    s = ga.optimizer.state()
    return hashlib.sha256(b"".join(s[k].tobytes() for k in sorted(s))).hexdigest()[:16]
for genome in ("ones", "signed-dag"):
    for env in ("CartPole-v1", "BipedalWalker-v3"):
        settings = dict(env=env, genome=genome, hidden_sizes=[4], population_size=6,
                        episodes_per_individual=2, max_episode_steps=50, seed=7, quiet=True)
        whole = PrunedGA(**settings).train(generations=3)
        path = f"{sys.argv[1]}/{genome}-{env}.npz"
        PrunedGA(**settings).train(generations=2, checkpoint_path=path)
        resumed = PrunedGA.load(path, quiet=True).train(generations=3)
        if mpi.is_root():
            print("HASH", genome, env, digest(whole), digest(resumed), whole.steps)
"""


def _hashes(proc) -> list[list[str]]:
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [line.split()[1:] for line in proc.stdout.splitlines() if line.startswith("HASH")]


def test_each_genome_gives_the_same_results_on_one_two_and_three_ranks_and_resumes(tmp_path):
    runs = {}
    for n in (1, 2, 3):
        (tmp_path / str(n)).mkdir()
        runs[n] = _hashes(run_mpi(n, ["-c", SCRIPT, str(tmp_path / str(n))], timeout=300))
    assert len(runs[1]) == 4, runs
    for genome, env, whole, resumed, _ in runs[1]:
        assert whole == resumed, (genome, env)
    assert runs[1] == runs[2] == runs[3], runs
    assert len({h[2] for h in runs[1]}) == 4  # four different runs
