"""Bytes each rank hands to MPI per generation: ParallelES against ParallelPG and PrunedGA.

    mpirun -n 2 python benchmarks/es_communication.py [--population 128] [--steps 20]

ParallelES sends each episode's return, steps and player, and a few episodes' observation
sums, whatever the network's size; ParallelPG sums its gradient, one int64 per parameter;
PrunedGA sends each episode's results, plus each connection's Hebbian activity per episode
with the signed-dag genome. This counts, on this rank count, the bytes of every buffer each
rank passes to a collective (an Allreduce's whole buffer, a broadcast's, a pickled object's)
and 8 per fetch from the shared counter, over one generation (one update) of each, on
BipedalWalker-v3 (CartPole-v1 for ParallelPG, which needs discrete actions) with networks of
about 6,000, 60,000 and 600,000 parameters: ParallelES at all three sizes (128 perturbations
and 4 unperturbed episodes, as examples/bipedal_walker_es.py), the others at the first
(ParallelPG with 2 slots a rank, PrunedGA with 138 individuals x 8 episodes, as
examples/bipedal_walker.py); episodes are cut to --steps, as their length changes no
byte. Each measured figure must equal the count from the buffers' layout, which then gives
128 and 1,536 ranks. (An Allreduce of B bytes moves about 2B per rank over the wire in a
ring; the watchdog's small messages are not counted.) Prints a table and writes
benchmarks/results/es_communication.json.
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys

import numpy as np
from mpi4py import MPI

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402

from pgmpi import ParallelES, ParallelPG, PrunedGA, mpi  # noqa: E402
from pgmpi.mpi import comm, counter, failure  # noqa: E402

WALKER = "BipedalWalker-v3"
HIDDEN = {"1x": 64, "10x": 230, "100x": 760}  # two tanh layers: 6,020, 59,804, 600,404 params
PG_HIDDEN = {"1x": 1003, "10x": 10_000, "100x": 100_000}  # CartPole: 6 params per unit
FLAGS = 8 * (len(failure.STOP_SIGNALS) + 2)  # loop.train's stop votes, every step


class Counting:
    """MPI.COMM_WORLD, counting the bytes of every buffer this rank passes to a collective."""

    def __init__(self, world):
        self.world, self.bytes = world, 0

    def __getattr__(self, name):
        return getattr(self.world, name)

    def Allreduce(self, send, recv, op=MPI.SUM):
        self.bytes += np.asarray(recv if send is MPI.IN_PLACE else send).nbytes
        return self.world.Allreduce(send, recv, op=op)

    def Bcast(self, buf, root=0):
        self.bytes += np.asarray(buf).nbytes
        return self.world.Bcast(buf, root=root)

    def _object(self, verb, obj, *args, **kwargs):
        self.bytes += len(pickle.dumps(obj))
        return getattr(self.world, verb)(obj, *args, **kwargs)

    def allgather(self, obj):
        return self._object("allgather", obj)

    def gather(self, obj, root=0):
        return self._object("gather", obj, root=root)

    def bcast(self, obj, root=0):
        return self._object("bcast", obj, root=root)


def measured(agent) -> float:
    """Mean over ranks of the bytes each rank passes to MPI in one step of ``agent`` (a
    generation or an update) and the stop vote that follows it in :func:`pgmpi.loop.train`."""
    counting, fetches = Counting(comm._COMM), [0]
    shared = counter.SharedCounter._next

    def fetch(self):
        fetches[0] += 1
        return shared(self)

    comm._COMM, counter.SharedCounter._next = counting, fetch
    try:
        agent.step()
        mpi.interrupt_requested()
    finally:
        comm._COMM, counter.SharedCounter._next = counting.world, shared
    mine = np.array([counting.bytes + 8.0 * fetches[0]])
    return float(mpi.allreduce_sum_(mine)[0]) / mpi.size()


def es_count(es: ParallelES, n: int) -> float:
    """ParallelES's bytes per rank per generation on n ranks, from its buffer's layout."""
    c, d = es.config, es.probe.n_inputs
    units = c["population_size"] + c["eval_episodes"]
    sums = 3 * units + es.stat_units * (2 * d + 1) + n  # returns, steps, ranks; stats; busy
    fetches = (units + n) / n if n > 1 else 0  # a round takes every unit, then one per rank
    return 8 * sums + 8 * fetches + FLAGS


def pg_count(n_params: int, measured_objects: float) -> float:
    """ParallelPG's: the int64 exact sum (and its count of bad terms), the finished games'
    figures (an allgather; measured, a few hundred bytes) and the stop vote."""
    return 8 * (n_params + 1) + measured_objects + FLAGS


def ga_count(ga: PrunedGA, n: int) -> float:
    """PrunedGA's: returns, steps, ranks and activity per unit, busy and played-ahead per
    rank, the counter (ahead's board is not counted: its posts are one-sided)."""
    P, E = ga.config["population_size"], ga.config["episodes_per_individual"]
    W = ga.net.n_weights if ga.net.hebbian else 0
    fetches = (P * E + n) / n if n > 1 else 0
    return 8 * (P * E * (3 + W) + 2 * n) + 8 * fetches + FLAGS


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--population", type=int, default=128, help="ES perturbations (128)")
    p.add_argument("--steps", type=int, default=20, help="steps an episode is cut to (20)")
    args = p.parse_args()
    n, quiet = mpi.size(), dict(quiet=True, max_episode_steps=args.steps)
    rows = []
    for size, h in HIDDEN.items():
        es = ParallelES(env=WALKER, hidden_sizes=[h, h], population_size=args.population, **quiet)
        got = measured(es)
        assert got == es_count(es, n), (size, got, es_count(es, n))
        counts = {f"ranks_{r}": es_count(es, r) for r in (128, 1536)}
        rows.append(dict(algorithm="ParallelES", size=size, params=es.net.n_params,
                         measured=got, **counts))  # fmt: skip
    for size, h in PG_HIDDEN.items():
        pg = ParallelPG(env="CartPole-v1", hidden_size=h, slots=2 * n, steps_per_slot=8, quiet=True)
        if size == "1x":
            got = measured(pg)
            objects = got - pg_count(pg.net.params.size, 0)
        counts = {f"ranks_{r}": pg_count(pg.net.params.size, objects) for r in (128, 1536)}
        rows.append(dict(algorithm="ParallelPG", size=size, params=int(pg.net.params.size),
                         measured=got if size == "1x" else None, **counts))  # fmt: skip
    for genome in ("ones", "signed-dag"):
        for size, h in HIDDEN.items():
            ga = PrunedGA(env=WALKER, hidden_sizes=[h, h], genome=genome, population_size=138,
                          episodes_per_individual=8, **quiet)  # fmt: skip
            got = None
            if size == "1x":
                got = measured(ga)
                assert got == ga_count(ga, n), (genome, got, ga_count(ga, n))
            counts = {f"ranks_{r}": ga_count(ga, r) for r in (128, 1536)}
            rows.append(dict(algorithm=f"PrunedGA {genome}", size=size,
                             params=ga.net.n_weights, measured=got, **counts))  # fmt: skip
    if mpi.is_root():
        print(f"bytes per rank per generation (update): measured on {n} ranks, counted beyond")
        print(f"{'algorithm':20s} {'network':>8s} {'params':>9s} {f'{n} ranks':>12s} "
              f"{'128 ranks':>12s} {'1,536 ranks':>12s}")  # fmt: skip
        for r in rows:
            got = "-" if r["measured"] is None else f"{r['measured']:,.0f}"
            print(f"{r['algorithm']:20s} {r['size']:>8s} {r['params']:>9,d} {got:>12s} "
                  f"{r['ranks_128']:>12,.0f} {r['ranks_1536']:>12,.0f}")  # fmt: skip
        result = dict(machine=common.machine(), ranks=n, population=args.population,
                      ga_population=138, ga_episodes=8, rows=rows)  # fmt: skip
        print("wrote", common.write("es_communication", result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
