"""Tier 3: PrunedGA's units of work over ranks, launched with mpirun in a subprocess: the same
results on any rank count, however the units fall, and the shared counter hands every
index to exactly one rank (benchmarks/ga_record.py's recording: tests/benchmarks/)."""

import pytest

from tests.helpers.launch import run_mpi

pytestmark = pytest.mark.launcher

# 11 individuals x 3 episodes: 33 units, which divide evenly over none of 2, 3 and 5 ranks.
# SLOW names a rank whose every unit takes 30 ms longer.
SCRIPT = """
import hashlib, sys, time
import numpy as np
from pgmpi import PrunedGA, mpi
slow, settings = int(sys.argv[1]), sys.argv[2:]
ga = PrunedGA(env="CartPole-v1", hidden_sizes=(4,), population_size=11,
              episodes_per_individual=3, seed=2, elite_averaging="averaging" in settings,
              quiet=True)
if mpi.rank() == slow:
    plain = ga._play
    ga._play = lambda *a, **k: time.sleep(0.03) or plain(*a, **k)
played = np.zeros(mpi.size(), dtype=int)
ahead = []
def count(row):
    np.add.at(played, ga.evaluation.ranks.ravel(), 1)
    ahead.append(row["perf/units_played_ahead"])
ga.train(generations=3, callback=count)
state = ga.optimizer.state()
digest = hashlib.sha256(b"".join(state[k].tobytes() for k in sorted(state))).hexdigest()
if mpi.is_root():
    print("HASH", digest, ga.steps)
    print("PLAYED", *played)
    print("AHEAD", *ahead)
"""

COUNTER = """
import numpy as np
from pgmpi import mpi
counter = mpi.shared_counter()
mine = []
for count in (0, 1, 7, 50, 3):
    mine.append(list(counter.take(count)))
    mpi.barrier()  # rounds are separated by a collective, as PrunedGA's Allreduce does
everyone = mpi.gather_object(mine)
if mpi.is_root():
    ok = all(sorted(sum((r[k] for r in everyone), [])) == list(range(c))
             for k, c in enumerate((0, 1, 7, 50, 3)))
    print("COVERED", ok)
"""


def _out(proc, tag: str) -> list[str]:
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [line.split()[1:] for line in proc.stdout.splitlines() if line.startswith(tag)][0]


def test_same_history_and_best_network_on_one_two_three_and_five_ranks():
    runs = {n: run_mpi(n, ["-c", SCRIPT, "-1"], timeout=180) for n in (1, 2, 3, 5)}
    hashes = {n: tuple(_out(proc, "HASH")) for n, proc in runs.items()}
    assert len(set(hashes.values())) == 1, hashes
    played = {n: [int(x) for x in _out(proc, "PLAYED")] for n, proc in runs.items()}
    assert all(sum(p) == 3 * 33 for p in played.values()), played


@pytest.mark.parametrize("settings", [[], ["averaging"]])
def test_a_slowed_rank_gives_the_same_results_and_the_fast_rank_plays_more(settings):
    # with elite_averaging, which individuals are sure to be elites follows the averages
    one = run_mpi(1, ["-c", SCRIPT, "-1", *settings], timeout=180)
    slowed = run_mpi(2, ["-c", SCRIPT, "1", *settings], timeout=180)
    assert _out(slowed, "HASH") == _out(one, "HASH")
    fast, slow = (int(x) for x in _out(slowed, "PLAYED"))
    assert fast + slow == 3 * 33 and fast > 2 * slow, (fast, slow)
    # While the fast rank waits for the slowed one's last unit, it plays the next
    # generation's episodes of individuals already sure to be elites (2 of 11: 6 units)
    assert _out(one, "AHEAD") == ["0", "0", "0"]
    ahead = [int(x) for x in _out(slowed, "AHEAD")]
    assert ahead[0] == 0 and sum(ahead[1:]) >= 1 and max(ahead) <= 6, ahead


def test_the_shared_counter_hands_every_index_to_exactly_one_rank():
    for n in (2, 3):
        assert _out(run_mpi(n, ["-c", COUNTER], timeout=60), "COVERED") == ["True"]


TWO_AGENTS = """
import hashlib, sys, time
from pgmpi import PrunedGA, mpi
def make(p, e):
    ga = PrunedGA(env="CartPole-v1", hidden_sizes=(4,), population_size=p,
                  episodes_per_individual=e, elite_fraction=0.5, seed=3, quiet=True)
    if mpi.rank() == 1:  # slowed: the other rank plays ahead
        plain = ga._play
        ga._play = lambda *a, **k: time.sleep(0.01) or plain(*a, **k)
    return ga
a = make(6, 2)
a.train(generations=2)
if sys.argv[1] == "interleaved":
    make(11, 3).train(generations=2)  # a bigger board replaces a's, which a was playing ahead on
a.train(generations=4)
state = a.optimizer.state()
if mpi.is_root():
    print("HASH", hashlib.sha256(b"".join(state[k].tobytes() for k in sorted(state))).hexdigest())
"""


def test_an_agent_trained_between_another_agents_generations_gives_the_same_results():
    alone = _out(run_mpi(1, ["-c", TWO_AGENTS, "alone"], timeout=120), "HASH")
    for n in (2, 3):
        assert _out(run_mpi(n, ["-c", TWO_AGENTS, "interleaved"], timeout=120), "HASH") == alone
