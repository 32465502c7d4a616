"""PrunedGA scaling: measured at 1 and 2 ranks, projected to 1,536 ranks from recorded unit costs.

    python benchmarks/ga_scaling.py [--minutes 6]           # about 10 minutes on 2 cores
    python benchmarks/ga_scaling.py --costs benchmarks/results/ga_scaling_costs.npz  # re-project
    python benchmarks/ga_scaling.py --start runs/ga-tts/signed-dag-0/checkpoint.npz --tag _late

Runs BipedalWalker-v3 with the example's settings (hidden 8 8, population 138, 8 episodes:
the synaptolytic-learning benchmark's), launching itself under mpirun, one run at a time:

* 1 rank, ``--serial-generations`` generations (1), and 2 ranks with the units shared out
  statically (longest-predicted-first over units, ``schedule.balance``), ``--static-generations``
  (2): the same generations as the start of the next run (checked: same steps and fitness);
* 2 ranks as PrunedGA runs them (self-scheduled units), for ``--minutes`` (6), recording
  every generation's units of work (individual, episode): their predicted cost, steps,
  seconds and the rank that played them, the ranks' busy seconds, the generation's wall time.
  Its measured waiting is PrunedGA's ``perf/wait_s``, which counts a rank's time playing
  ahead as waiting: an upper bound.

Then, from the recorded generations, early (the first three), late (the last three) and,
if more than six were recorded, all of them (the share of a run's allocation), and each
``--phase A-B`` asked for (generations A to B), projects for n = 1 ... 1,536 ranks the
share of rank time spent idle, 1 - work / (n x makespan), summed over the phase's
generations (a long generation weighs more), and the speed-up over 1 rank, for four ways
of sharing out a generation:

* ``old``: whole individuals, longest-first by the parent's steps (pgmpi before units);
* ``static``: units, longest-first by predicted cost (``schedule.balance`` over units);
* ``dynamic``: units in predicted order, each taken by the first free rank, plus one fetch
  from the shared counter per unit (PrunedGA until 2026-11-27);
* ``ahead``: the same, and a rank that has run out of units plays the next generation's
  units of individuals sure to be elites (``ahead_schedule``: what PrunedGA does). Its
  generations share one timeline, and a generation's window, from its units' start to its
  last unit's end, counts what was played in it.

Units are predicted as PrunedGA predicts them (``schedule.predict``: an unchanged elite at
its own longest episode in the generation before, a mutated child at no less than that
generation's 90th percentile), the old split at the parent's steps. A second table gives
the self-scheduled idle share at 63 and 128 ranks under other predictions, under perfect
ones, with the individuals that stand in some episode put first (read off the outcome, in
all or in the first half of their episodes: what a prediction of individuals would need),
the floor no order or split of these units can go below (``lower_bound_makespan``), the
one no schedule that keeps the GA's results can, playing ahead included (``ahead_floor``), an
upper bound on starting the next generation while the last units finish (the ranks out
of units fill their idle time wherever none of the units still playing is an elite's), and
PrunedGA's own schedule, playing ahead.

A unit costs the seconds it was recorded to take (on a shared machine: with its noise); an
individual of the old split pays one env for its episodes, ``(E - 1)`` env makings less.
Every generation also pays the measured selection and mutation and a ring Allreduce of its
buffer on a 10 Gb/s network (20 us latency); a fetch from the counter is costed at twice
that latency, or as measured here if more. Prints the machine and a markdown table
(for docs/benchmarks.md); writes benchmarks/results/ga_scaling.json, the recorded costs to
benchmarks/results/ga_scaling_costs.npz and the figure to runs/benchmarks/ga_scaling.png
(``--out PATH`` elsewhere).

``--by-generation [LABEL=]COSTS[+COSTS...] ...`` only draws, one panel per run, each
generation's projected idle share at 63 and 128 ranks, self-scheduled with and without
playing ahead, the share of the run so far, and its best fitness
(``ga_scaling_generations.png``; docs/benchmarks.md), and prints each run's share, over
all of it, before its first positive best fitness and from it. A run's recordings joined
by ``+`` are stretches of it, a later one recorded ``--start`` from its checkpoint.

``--start CHECKPOINT`` records generations that go on from a PrunedGA checkpoint of
BipedalWalker-v3 instead (its settings and genome replace the flags): late in a run, where
walkers walk, with the genome it trained. Each run's recording is written after every
generation, so a run cut short keeps what it recorded. The recorded 2-rank run keeps its log
and checkpoint (every 5 generations and at the end) in benchmarks/results/ga_scaling{TAG}_run/,
so ``--start benchmarks/results/ga_scaling{TAG}_run/checkpoint.npz`` goes on from where a
recording stopped. ``--tag TAG`` names the results ga_scaling{TAG}.json and
ga_scaling{TAG}_*.npz, so the documented ones are kept.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402

RANKS = [1, 2, 4, 8, 16, 32, 63, 64, 128, 256, 512, 1024, 1536]
FIGURE = "ga_scaling.png"
LINK = (10e9 / 8, 20e-6)  # bandwidth bytes/s, latency s: a 10 Gb/s network
ORIGINAL_S = 3492 / 200  # synaptolytic-learning README: 200 generations in 3,492 s, 63 workers
SIGNAL_STEPS = 100  # signalled_makespan: an episode this long is taken for one that stands
STAND_STEPS = 400  # the predictors' reference rows: an episode longer than this stood


def worker(args) -> None:
    from pgmpi import PrunedGA, checkpoint, mpi, schedule
    from pgmpi.envs import Game

    # the recorded run keeps a log and a checkpoint, so that --start can go on from it
    run = dict(quiet=True) | (dict(log_dir=args.log_dir, overwrite=True) if args.log_dir else {})
    if args.start:  # go on from a checkpoint: late generations of a real run
        agent = PrunedGA.load(args.start, **run)
    else:
        agent = PrunedGA(
            env="BipedalWalker-v3",
            hidden_sizes=[8, 8],
            genome=args.genome,
            population_size=args.population_size,
            episodes_per_individual=args.episodes_per_individual,
            seed=args.seed,
            **run,
        )
    first_generation, steps_before = agent.generation, agent.unit_steps.copy()
    me, n = mpi.rank(), mpi.size()
    keys = ("steps", "seconds", "ranks", "wall", "wait", "fit", "select")
    predicted, parents, rec = [], [], {k: [] for k in keys}
    opt, selecting = agent.optimizer, [0.0]

    def timed(plain):
        def call(*a):
            t = time.perf_counter()
            out = plain(*a)
            selecting[0] += time.perf_counter() - t
            return out

        return call

    # the selection and mutation that every rank pays per generation
    opt.ask, opt.tell = timed(opt.ask), timed(opt.tell)
    if args.mode == "static":  # the comparison: a fixed split of the units
        agent._units = lambda costs: np.flatnonzero(schedule.balance(costs, n) == me)
    plain = agent._units
    agent._units = lambda costs: (
        predicted.append(costs.copy()) or parents.append(opt.parents.copy()) or plain(costs)
    )

    # The cost of one fetch from the shared counter with every rank fetching at once, and
    # of making an env; measured first, so that each generation's save is complete.
    mpi.barrier()
    t = time.perf_counter()
    fetched = sum(1 for _ in mpi.shared_counter().take(2000 * n))
    fetch_s = max(mpi.allgather_object((time.perf_counter() - t) / max(fetched, 1)))
    t = time.perf_counter()
    for _ in range(10):
        Game("BipedalWalker-v3").close()
    make_s = (time.perf_counter() - t) / 10
    t0 = time.perf_counter()

    def record(row):
        rec["steps"].append(agent.unit_steps.copy())
        rec["seconds"].append(agent.unit_seconds.copy())
        rec["ranks"].append(agent.unit_ranks.copy())
        rec["wall"].append(row["time/elapsed_s"])
        rec["wait"].append(row["perf/wait_s"])
        rec["fit"].append([row["charts/best_fitness"], row["charts/mean_fitness"]])
        rec["select"].append(selecting[0])
        selecting[0] = 0.0
        # after every generation, atomically (a checkpoint's write, collective): a run cut
        # short keeps what it recorded
        started = time.perf_counter() - t0 - row["time/elapsed_s"]  # to the first step
        arrays = dict(predicted=predicted, parents=parents, **rec)
        arrays = {k: np.array(v) for k, v in arrays.items()} | dict(
            ranks_count=n,
            fetch_s=fetch_s,
            make_s=make_s,
            started_s=started,
            first_generation=first_generation,
            steps_before=steps_before,
        )
        checkpoint.save(args.record, arrays, dict(recording="benchmarks/ga_scaling.py"))

    limit = (
        dict(minutes=args.run_minutes)
        if args.run_minutes
        else dict(generations=first_generation + args.generations)
    )
    if args.log_dir:
        limit["checkpoint_path"] = Path(args.log_dir) / "checkpoint.npz"
    agent.train(**limit, callback=record)


# ---------------------------------------------------------------- the projection
def ring_allreduce_s(n: int, size_bytes: float, bandwidth: float, latency: float) -> float:
    """Seconds of a ring Allreduce of ``size_bytes`` over ``n`` ranks."""
    if n == 1:
        return 0.0
    return 2 * (n - 1) * latency + 2 * (n - 1) / n * size_bytes / bandwidth


def static_makespan(predicted: np.ndarray, cost: np.ndarray, n: int) -> float:
    """The busiest rank's seconds when ``schedule.balance`` shares the jobs out on predictions."""
    from pgmpi.schedule import balance

    if n >= len(cost):
        return float(cost.max())
    return float(np.bincount(balance(predicted, n), weights=cost, minlength=n).max())


def dynamic_makespan(predicted: np.ndarray, cost: np.ndarray, n: int, fetch_s: float) -> float:
    """When the last rank finishes if units go, in predicted order, to the first free rank
    (ties: lower rank), each after one fetch, and every rank makes one last fetch."""
    return dynamic_schedule(predicted, cost, n, fetch_s)[1]


def dynamic_schedule(
    predicted: np.ndarray, cost: np.ndarray, n: int, fetch_s: float
) -> tuple[np.ndarray, float, float]:
    """:func:`dynamic_makespan`'s schedule: (when each unit ends, the makespan, when the
    first rank finds no unit left)."""
    from pgmpi.schedule import longest_first

    free, end = [(0.0, r) for r in range(n)], np.zeros(len(cost))
    for u in longest_first(predicted):
        t, r = heapq.heappop(free)
        end[u] = t + fetch_s + cost[u]
        heapq.heappush(free, (end[u], r))
    return end, max(t for t, _ in free) + fetch_s, min(t for t, _ in free)


def ahead_schedule(
    predicted: list, cost: list, elites: list, steps_E: int, n: int, fetch_s: float, gap_s: float
) -> list[tuple[float, float, float, int]]:
    """PrunedGA's schedule over a run, generation after generation: each generation's units
    self-scheduled in predicted order, and a rank that has run out of them playing the next
    generation's units of individuals sure to be elites (``schedule.sure_elites``, from
    the individuals finished so far; best first, episodes in order), paused when the
    generation's last unit ends and finished first in the next, where nobody plays them
    again. ``predicted[g]``, ``cost[g]`` (P * E,) are generation g's; ``elites[g]`` lists
    generation g's elites in rank order as (index in g + 1, index in g); ``gap_s``: from a
    generation's last unit to the next one's start (its Allreduce and selection). Returns,
    per generation, (when its units open, when its last ends, the rank seconds spent
    playing between the two, the units of it played ahead)."""
    from pgmpi.schedule import longest_first

    out, carry, ahead = [], {}, set()  # carry: rank -> (seconds left, unit) of a paused one
    t0 = 0.0
    for g in range(len(cost)):
        P = len(cost[g]) // steps_E
        end = np.full(len(cost[g]), -np.inf)
        for left, (j, e) in carry.values():
            end[j * steps_E + e] = t0 + left
        free = [(t0 + carry[r][0] if r in carry else t0, r) for r in range(n)]
        heapq.heapify(free)
        busy = sum(left for left, _ in carry.values())
        for u in longest_first(predicted[g]):
            if divmod(int(u), steps_E) in ahead:
                continue
            t, r = heapq.heappop(free)
            end[u] = t + fetch_s + cost[g][u]
            busy += cost[g][u]
            heapq.heappush(free, (end[u], r))
        last = max(t for t, _ in free)
        played, carry, ahead = len(ahead), {}, set()
        if g + 1 < len(cost):
            done = end.reshape(P, steps_E).max(axis=1)  # when each individual finished
            ends = np.sort(done)
            k, left_units = len(elites[g]), len(elites[g]) * steps_E
            while free and len(ahead) < left_units:
                t, r = heapq.heappop(free)
                if t >= last:
                    continue
                unsure = P - int(np.searchsorted(ends, t, side="right"))
                above, take = 0, None
                for j, x in elites[g]:  # best first: sure while above + unsure < k
                    if done[x] > t:
                        continue
                    if above + unsure >= k:
                        break
                    above += 1
                    left = [e for e in range(steps_E) if (j, e) not in ahead]
                    if left:
                        take = (j, left[0])
                        break
                if take is None:  # look again when the next individual finishes
                    if unsure:
                        heapq.heappush(free, (float(ends[P - unsure]), r))
                    continue
                ahead.add(take)
                start = t + fetch_s
                stop = start + cost[g + 1][take[0] * steps_E + take[1]]
                busy += max(0.0, min(stop, last) - start)
                if stop > last:
                    carry[r] = (stop - max(start, last), take)
                else:
                    heapq.heappush(free, (stop, r))
        out.append((t0, last, busy, played))
        t0 = last + gap_s
    return out


def lower_bound_makespan(cost: np.ndarray, n: int) -> float:
    """Seconds no order or split of the units ``cost`` on ``n`` ranks can beat: the mean load,
    and for every m, the ceil(m / n) cheapest of the m costliest units, which some rank must
    play in any split (with more units than ranks, two of the n + 1 costliest share a rank)."""
    c = np.sort(np.asarray(cost, dtype=np.float64))[::-1]
    total = np.concatenate([[0.0], np.cumsum(c)])
    m = np.arange(1, len(c) + 1)
    return max(float(np.max(total[m] - total[m - -(-m // n)])), float(c.sum() / n))


def informed_makespan(
    predicted: np.ndarray, cost: np.ndarray, first: np.ndarray, n: int, fetch_s: float
) -> float:
    """When the last rank finishes if, instead of the predicted order, each free rank takes
    first every individual's first episode (longest ``predicted`` first), then an episode of
    one whose first episode is still running (longest predicted first), else of the one whose
    first episode ran the most steps (``first``): an order screened and not adopted
    (docs/benchmarks.md). ``predicted`` and ``first`` are (P,), ``cost`` (P, E) seconds; ties
    go to the lower index and rank."""
    P, E = cost.shape
    taken = np.zeros(P, dtype=np.int64)  # episodes of each individual handed out so far
    shown = np.full(P, np.inf)  # when each individual's first episode ended
    free = [(0.0, r) for r in range(n)]
    for _ in range(P * E):
        t, r = heapq.heappop(free)
        stage = np.where(taken == 0, 0, np.where(shown > t, 1, 2))
        size = np.where(stage == 2, first, predicted)
        i = int(np.lexsort((np.arange(P), -size, stage, taken >= E))[0])
        end = t + fetch_s + cost[i, taken[i]]
        if taken[i] == 0:
            shown[i] = end
        taken[i] += 1
        heapq.heappush(free, (end, r))
    return max(t for t, _ in free) + fetch_s


def signalled_makespan(
    predicted: np.ndarray, cost: np.ndarray, steps: np.ndarray, n: int, fetch_s: float
) -> float:
    """When the last rank finishes if each free rank takes first the episodes of individuals
    one of whose episodes has passed ``SIGNAL_STEPS`` steps (a signal sent mid-episode; the
    earliest signal first), then every individual's first episode (longest ``predicted``
    first), then the rest, the individual whose longest finished episode ran longest first
    (none finished: ``predicted``): an order screened on 2026-11-26 and not adopted.
    ``predicted`` is (P,), ``cost`` (P, E) seconds, ``steps`` (P, E); ties: lower index."""
    P, E = cost.shape
    taken = np.zeros(P, dtype=np.int64)
    signal = np.full(P, np.inf)  # when an episode of each individual passed SIGNAL_STEPS
    seen = np.full(P, -1.0)  # the steps of its longest finished episode (-1: none yet)
    running, free = [], [(0.0, r) for r in range(n)]
    for _ in range(P * E):
        t, r = heapq.heappop(free)
        while running and running[0][0] <= t:
            _, i, s = heapq.heappop(running)
            seen[i] = max(seen[i], s)
        left = taken < E
        if np.any(left & (signal <= t)):
            key, pool = signal, left & (signal <= t)
        elif np.any(left & (taken == 0)):
            key, pool = -predicted, left & (taken == 0)
        else:
            key, pool = -np.where(seen >= 0, seen, predicted), left
        c = np.flatnonzero(pool)
        i = int(c[np.lexsort((c, key[c]))[0]])
        e, start = taken[i], t + fetch_s
        taken[i] += 1
        if steps[i, e] > SIGNAL_STEPS:
            signal[i] = min(signal[i], start + cost[i, e] * SIGNAL_STEPS / steps[i, e])
        heapq.heappush(running, (start + cost[i, e], i, steps[i, e]))
        heapq.heappush(free, (start + cost[i, e], r))
    return max(t for t, _ in free) + fetch_s


def predictions(costs: dict, g: int) -> tuple[np.ndarray, np.ndarray]:
    """Generation g's predicted cost of each individual's units, as PrunedGA predicts it
    (``schedule.predict``: an unchanged elite at its own longest episode, a mutated child at
    no less than the 90th percentile, + 1), and of each whole individual, as the old split
    did (the parent's steps), from the recorded steps and parents; for a first generation
    with no steps before it, or a recording without parents, what was recorded."""
    from pgmpi.schedule import predict

    steps, E = costs["steps"], costs["steps"].shape[2]
    if "parents" not in costs or (g == 0 and not np.any(costs.get("steps_before", 0))):
        recorded = costs["predicted"][g].reshape(-1, E)[:, 0]
        return recorded, recorded * E
    parents = costs["parents"][g]
    mutated = np.arange(len(parents)) >= kept(parents)
    previous = steps[g - 1] if g else costs["steps_before"]  # the generation before
    whole = np.where(
        parents >= 0, previous.sum(axis=1)[np.maximum(parents, 0)], previous.sum(1).mean()
    )
    return predict(previous.max(axis=1), parents, mutated), whole


def project(costs: dict, P: int, E: int, serial_s: float, ranks: list = RANKS) -> dict:
    """What :func:`summarise` needs for the idle share and speed-up, by rank count and split,
    for the population's first ``P`` individuals' first ``E`` episodes in each recorded
    generation: {split: {n: [(seconds per generation, work, rank seconds, 1-rank seconds)
    per generation]}} (work: the units' seconds; rank seconds: n x the makespan), for n in
    ``ranks``."""
    make_s, fetch = costs["make_s"], max(costs["fetch_s"], 2 * LINK[1])
    out = {s: {n: [] for n in ranks} for s in SPLITS}
    size = (4 * P * E + 2) * 8
    units, preds = [], []
    for g in range(len(costs["steps"])):
        unit = costs["seconds"][g][:P, :E].ravel()
        longest, total = predictions(costs, g)
        pred = np.repeat(longest[:P], E)
        whole = unit.reshape(P, E).sum(axis=1) - (E - 1) * make_s  # one env per individual
        whole_pred = total[:P]
        units.append(unit)
        preds.append(pred)
        for n in ranks:
            comm = ring_allreduce_s(n, size + 8 * n, *LINK) + serial_s
            spans = {
                "old": (whole.sum(), static_makespan(whole_pred, whole, n)),
                "static": (unit.sum(), static_makespan(pred, unit, n)),
                "dynamic": (unit.sum(), dynamic_makespan(pred, unit, n, fetch)),
            }
            one = unit.sum() + serial_s
            for split, (work, span) in spans.items():
                out[split][n].append((span + comm, work, n * span, one))
    elites = [run_elites(costs, g, P, E) for g in range(len(units))]
    for n in ranks:  # playing ahead ties each generation to the next: the run at once
        comm = ring_allreduce_s(n, size + 8 * n, *LINK) + serial_s
        run = ahead_schedule(preds, units, elites, E, n, fetch, comm)
        for start, last, busy, _ in run:  # a window's work: what was played in it
            span = last - start
            out["ahead"][n].append((span + comm, busy, n * span, busy + serial_s))
    return out


def run_elites(costs: dict, g: int, P: int, E: int) -> list[tuple[int, int]]:
    """Generation g's elites among the first ``P`` individuals, best first, as (index in
    generation g + 1, index in g), read off g + 1's recorded ``parents`` (none for the last
    generation or a recording without them)."""
    if "parents" not in costs or g + 1 >= len(costs["parents"]):
        return []
    nxt = costs["parents"][g + 1]
    return [(j, int(x)) for j, x in enumerate(nxt[: kept(nxt)]) if 0 <= x < P and j < P]


INFORMED = "PrunedGA's, but first episodes first, then what they showed (not adopted)"
SIGNALLED = (f"first episodes first, an individual's others once one passes {SIGNAL_STEPS} "
             "steps (not adopted)")  # fmt: skip
EARLY = ("PrunedGA's, the next generation started by ranks out of units if no unit still "
         "playing is an elite's (free: an upper bound, not adopted)")  # fmt: skip
SPLITS = ("old", "static", "dynamic", "ahead")
AHEAD = "PrunedGA's, playing ahead: the next generation's units of sure elites while waiting"
FLOOR = "no order (a lower bound: the mean load, or the costliest units' pigeonholes)"
AHEAD_FLOOR = ("no schedule, playing ahead or not (a lower bound: the mutated children's floor "
               "less what else the ranks could play meanwhile)")  # fmt: skip
STANDERS = (f"known beforehand: which individuals stand past {STAND_STEPS} steps in any of "
            "their episodes")  # fmt: skip
HALF = (f"known beforehand: which stand past {STAND_STEPS} steps in one of their first half "
        "of episodes")  # fmt: skip


def kept(parents: np.ndarray) -> int:
    """How many of a population's first individuals are unchanged elites, from its
    ``parents`` (``PruningOptimizer.mutated``): one more when the best ever, of an earlier
    generation (parent -1), leads them."""
    from pgmpi.config import GAConfig
    from pgmpi.optimizers import elite_count

    return elite_count(len(parents), GAConfig.elite_fraction) + int(parents[0] == -1)


def compare_predictors(costs: dict, phases: dict) -> dict:
    """Self-scheduled idle share at 63 and 128 ranks (full population and episodes) with
    other predictions in place of PrunedGA's, from generation 1 of the recording on:
    {predictor: {phase: {n: idle}}}, each phase's idle share of its rank time (generations
    weighted by their length). "perfect" orders the units by their recorded cost."""
    steps, seconds = costs["steps"], costs["seconds"]
    fetch = max(costs["fetch_s"], 2 * LINK[1])
    out = {AHEAD: {}}
    for g in range(1, len(steps)):
        parents, previous = costs["parents"][g], steps[g - 1]

        def pick(v, parents=parents):  # each individual's parent's value
            return np.where(parents >= 0, v[np.maximum(parents, 0)], v.mean())

        E = previous.shape[1]
        ours = predictions(costs, g)[0]
        ways = {
            "parent's mean episode": pick(previous.mean(axis=1)),
            "parent's longest episode": pick(previous.max(axis=1)),
            "PrunedGA (elites: own longest; children: >= 90th percentile)": ours,
        }
        # PrunedGA's order, but the individuals that stand in some episode (in any, or in
        # the first half: read off the outcome, so no prediction can do it) go first
        stands, lift = steps[g] > STAND_STEPS, ours.max() + 1
        ways[STANDERS] = ours + np.where(stands.any(axis=1), lift, 0)
        ways[HALF] = ours + np.where(stands[:, : E // 2].any(axis=1), lift, 0)
        unit = seconds[g].ravel()
        ways = {k: np.repeat(v, E) for k, v in ways.items()} | {"perfect": unit}
        for n in (63, 128):
            spans = {name: dynamic_makespan(p, unit, n, fetch) for name, p in ways.items()}
            # orders screened and not adopted, and the floor no order can beat
            spans[INFORMED] = informed_makespan(ours, seconds[g], steps[g][:, 0], n, fetch)
            spans[SIGNALLED] = signalled_makespan(ours, seconds[g], steps[g], n, fetch)
            spans[FLOOR] = lower_bound_makespan(unit, n)
            # the next generation started by the ranks that run out of units, on the guess
            # that none still being played will be an elite: free and every idle second
            # filled where the guess held (the next generation's unchanged elites, read off
            # its parents), none in the recording's last generation
            end, span, out_of_units = dynamic_schedule(np.repeat(ours, E), unit, n, fetch)
            playing = set(np.flatnonzero(end > out_of_units) // E)
            elites = {x for _, x in run_elites(costs, g, len(parents), E)}
            if g + 1 < len(steps) and not playing & elites:
                span = unit.sum() / n
            spans[EARLY] = span
            for name, span in spans.items():
                out.setdefault(name, {}).setdefault(n, {})[g] = (unit.sum(), n * span)
            out.setdefault(AHEAD_FLOOR, {}).setdefault(n, {})[g] = ahead_floor(costs, g, n)
    P, E = seconds.shape[1:]
    preds = [np.repeat(predictions(costs, g)[0], E) for g in range(len(steps))]
    units = [seconds[g].ravel() for g in range(len(steps))]
    elites = [run_elites(costs, g, P, E) for g in range(len(steps))]
    for n in (63, 128):
        run = ahead_schedule(preds, units, elites, E, n, fetch, 0.0)
        out[AHEAD][n] = {g: (busy, n * (last - start)) for g, (start, last, busy, _) in
                         enumerate(run) if g >= 1}  # fmt: skip
    return {
        name: {
            ph: {
                n: idle_share([v[g] for g in range(len(steps))[w] if g in v])
                for n, v in by_n.items()
            }  # fmt: skip
            for ph, w in phases.items()
        }
        for name, by_n in out.items()
    }


def ahead_floor(costs: dict, g: int, n: int) -> tuple[float, float]:
    """A floor under any schedule of the recording's units on ``n`` ranks that keeps the
    GA's results, playing ahead included, as (work, rank seconds) of generation g, for
    :func:`idle_share`: a generation's mutated children can only start once the generation
    before has ended (its ranking makes them) and all end before the next generation's
    children start, so their windows do not overlap, and each lasts at least the children's
    :func:`lower_bound_makespan`; besides them, what the ranks can play in one is only the
    generation's unchanged elites' units and the next generation's (no individual of the
    next is sure to be an elite before its children have started, as there are more
    children than elites). So the window's idle time is at least n x that floor less all
    three; the work counted beside it is all three (the elites' twice over a run: a weaker
    floor, and one that still holds over any stretch of generations)."""
    seconds, parents = costs["seconds"], costs["parents"]
    k = kept(parents[g]) if g else 0
    children, elites = seconds[g][k:].ravel(), seconds[g][:k].sum()
    after = seconds[g + 1][: kept(parents[g + 1])].sum() if g + 1 < len(seconds) else 0.0
    work = children.sum() + elites + after
    idle = max(0.0, n * lower_bound_makespan(children, n) - work)
    return work, work + idle


def idle_share(spans: list) -> float:
    """The idle share of the rank time of some generations, from their (work, rank seconds):
    one minus the work over the rank time, so that a long generation counts for more."""
    work, rank_s = np.array(spans).reshape(-1, 2).sum(axis=0)
    return float(1 - work / rank_s)


def generation_shares(rows: list) -> np.ndarray:
    """float64 (G,): each generation's idle share, from :func:`project`'s rows of one split
    and rank count."""
    return np.array([idle_share([row[1:3]]) for row in rows])  # (work, rank seconds)


def summarise(proj: dict, which: slice) -> dict:
    """Over the generations ``which``: the idle share of their rank time, the speed-up of
    their total time and the mean seconds per generation, [idle, speed-up, seconds]."""
    out = {}
    for s, by_n in proj.items():
        out[s] = {}
        for n, v in by_n.items():
            seconds, work, rank_s, one = np.array(v[which]).T
            speed_up = float(one.sum() / seconds.sum())
            out[s][n] = [idle_share(np.c_[work, rank_s]), speed_up, float(seconds.mean())]
    return out


def table(results: dict) -> str:
    lines = [
        "| settings | generations | ranks | old split: idle, speed-up | static units | "
        "dynamic units | dynamic, playing ahead (PrunedGA) | s per generation (old / PrunedGA) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, phases in results.items():
        for phase, by_split in phases.items():
            for n in (63, 128):
                cells = [f"{100 * by_split[s][n][0]:.1f}%, {by_split[s][n][1]:.1f}x" for s in
                         SPLITS]  # fmt: skip
                secs = f"{by_split['old'][n][2]:.2f} / {by_split['ahead'][n][2]:.2f}"
                lines.append(f"| {name} | {phase} | {n} | {' | '.join(cells)} | {secs} |")
    return "\n".join(lines)


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    colours = {"old": "tab:red", "static": "tab:orange", "dynamic": "tab:grey", "ahead": "tab:blue"}
    names = {"old": "whole individuals", "static": "units, static", "dynamic": "units, dynamic",
             "ahead": "units, dynamic, playing ahead (PrunedGA)"}  # fmt: skip
    name = next(iter(results))
    for phase, style in zip(results[name], ("-", "--", ":"), strict=False):
        for split, by_n in results[name][phase].items():
            label = f"{names[split]}, {phase}"
            a.plot(RANKS, [100 * by_n[n][0] for n in RANKS], style, c=colours[split], label=label)
            b.plot(RANKS, [by_n[n][1] for n in RANKS], style, c=colours[split], label=label)
    b.plot(RANKS, RANKS, c="grey", lw=0.8, label="ideal")
    a.set(xscale="log", xlabel="ranks", ylabel="% of rank time idle")
    b.set(xscale="log", yscale="log", xlabel="ranks", ylabel="speed-up over 1 rank")
    a.set_title(f"PrunedGA load imbalance, {name} (projected)")
    b.set_title("Speed-up over 1 rank (projected)")
    for ax in (a, b):
        ax.grid(alpha=0.3, which="both")
        ax.axvline(63, c="grey", lw=0.5)
    b.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)


def by_generation(stretches: list, ranks: tuple = (63, 128)) -> dict:
    """Each recorded generation's projected idle share (138 x 8 or whatever was recorded),
    self-scheduled without and with playing ahead: {"dynamic" | "ahead": {n: float64 (G,)}},
    over ``stretches``, recordings of one run one after another (a later one recorded
    ``--start`` from a checkpoint of it; generations between them not recorded are left
    out, and nothing is played ahead across such a gap). A generation's share under playing
    ahead is that of its window (:func:`project`). Also "so far": {n: float64 (G,)}, with
    playing ahead, the share of the run's recorded rank time up to and including each
    generation (what a run stopped there would have left idle), "rank_s": {split: {n:
    float64 (G,)}}, each generation's rank seconds (its share's weight), "generation":
    int64 (G,), their numbers, and "best": float64 (G,), their best fitness."""
    out = {"dynamic": {}, "ahead": {}, "rank_s": {"dynamic": {}, "ahead": {}}, "so far": {}}
    rows = {s: {n: [] for n in ranks} for s in ("dynamic", "ahead")}
    for costs in stretches:
        costs = dict(costs, fetch_s=float(costs["fetch_s"]))
        P, E = costs["steps"].shape[1:]
        proj = project(costs, P, E, float(np.median(costs["select"])), list(ranks))
        for s in rows:
            for n in ranks:
                rows[s][n] += proj[s][n]
    for s in rows:
        for n in ranks:
            out[s][n] = generation_shares(rows[s][n])
            out["rank_s"][s][n] = np.array([row[2] for row in rows[s][n]])
    for n in ranks:
        cumulative = np.cumsum([row[1:3] for row in rows["ahead"][n]], axis=0)
        out["so far"][n] = 1 - cumulative[:, 0] / cumulative[:, 1]
    out["generation"] = np.concatenate(
        [int(c.get("first_generation", 0)) + np.arange(len(c["steps"])) for c in stretches]
    )
    out["best"] = np.concatenate([c["fit"][:, 0] for c in stretches])
    return out


def under_from(so_far: np.ndarray, target: float, generation: np.ndarray) -> int | None:
    """The first generation from which a run's share so far (:func:`by_generation`'s "so
    far") stays under ``target`` to the end (``generation``: their numbers), or None if it
    ends above it."""
    over = np.flatnonzero(so_far >= target)
    if len(over) and over[-1] == len(so_far) - 1:
        return None
    return int(generation[over[-1] + 1 if len(over) else 0])


def run_summary(idle: dict) -> list[str]:
    """Lines that say, from :func:`by_generation`'s ``idle``, the share of generations above
    each target, and the run's share with and without playing ahead, over all of it, before
    its first positive best fitness and from it, and where the run so far stays under each
    target."""
    targets = ((63, 0.05), (128, 0.10))
    above = [f"{100 * np.mean(idle[s][n] > t):.0f}%" for s in ("ahead", "dynamic")
             for n, t in targets]  # fmt: skip
    lines = [f"generations above the target, playing ahead 63 / 128 ranks {above[0]} / "
             f"{above[1]}, without {above[2]} / {above[3]}"]  # fmt: skip
    g, best = idle["generation"], idle["best"]
    first = int(np.argmax(best > 0)) if np.any(best > 0) else len(g)
    parts = {f"all ({g[0]}-{g[-1]}, {len(g)} recorded)": slice(0, len(g))}
    if 0 < first < len(g):
        parts[f"before a positive best ({g[0]}-{g[first - 1]})"] = slice(0, first)
        parts[f"from it ({g[first]}-{g[-1]})"] = slice(first, len(g))
    for name, w in parts.items():
        cells = []
        for s in ("ahead", "dynamic"):
            for n, _ in targets:
                weight = idle["rank_s"][s][n][w]
                cells.append(f"{100 * np.sum(idle[s][n][w] * weight) / weight.sum():.1f}%")
        lines.append(f"{name}: playing ahead {cells[0]} / {cells[1]}, without {cells[2]} / "
                     f"{cells[3]} (63 / 128 ranks)")  # fmt: skip
    for n, t in targets:
        since = under_from(idle["so far"][n], t, g)
        where = f"from generation {since} on" if since is not None else "not at its end"
        lines.append(f"the run so far at {n} ranks: under {100 * t:.0f}% {where}")
    return lines


def plot_generations(recordings: dict, path: Path) -> dict:
    """One panel per recording ({label: list of stretches, as :func:`by_generation` takes}):
    each generation's projected idle share at 63 and 128 ranks, self-scheduled with playing
    ahead (PrunedGA) and without, the share of the run so far at 128 ranks, against the
    targets, and the generation's best fitness on a second axis; generations not recorded
    are shaded. Returns the shares drawn, {label: :func:`by_generation`}."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(recordings), 1, figsize=(10, 2.6 * len(recordings)),
                             squeeze=False)  # fmt: skip
    shares = {}
    for ax, (label, stretches) in zip(axes[:, 0], recordings.items(), strict=True):
        shares[label] = idle = by_generation(stretches)
        x = np.arange(idle["generation"][0], idle["generation"][-1] + 1)
        at = idle["generation"] - x[0]

        def full(v, at=at, x=x):  # NaN where a generation was not recorded: the line breaks
            out = np.full(len(x), np.nan)
            out[at] = v
            return out

        ax.plot(x, full(100 * idle["ahead"][128]), "-o", ms=3, c="tab:blue",
                label="128 ranks, playing ahead (PrunedGA)")  # fmt: skip
        ax.plot(x, full(100 * idle["dynamic"][128]), "--", c="tab:grey",
                label="128 ranks, without")  # fmt: skip
        ax.plot(x, full(100 * idle["ahead"][63]), "-", c="tab:cyan",
                label="63 ranks, playing ahead")  # fmt: skip
        ax.plot(x, full(100 * idle["so far"][128]), "-", lw=2.2, c="tab:purple",
                label="128 ranks, playing ahead, the run so far")  # fmt: skip
        best = full(idle["best"])
        for g in x[np.isnan(best)]:
            ax.axvspan(g - 0.5, g + 0.5, color="0.9", lw=0)
        for target, c in ((10, "tab:red"), (5, "tab:orange")):
            ax.axhline(target, c=c, lw=0.8, ls=":")
        ax.set(ylabel="% of rank time idle", ylim=(0, 100), xlim=(x[0] - 0.5, x[-1] + 0.5))
        ax.set_title(label, fontsize=9)
        ax.grid(alpha=0.3)
        fit = ax.twinx()
        fit.plot(x, best, c="tab:green", lw=1.2, label="best fitness (right)")
        fit.axhline(0, c="tab:green", lw=0.5, ls=":")
        fit.set_ylabel("best fitness", color="tab:green")
        if np.any(best > 0):
            ax.axvline(x[np.argmax(best > 0)] - 0.5, c="tab:green", lw=0.8)
        lines = ax.get_lines()[:4] + fit.get_lines()[:1]
    axes[0, 0].legend(lines, [line.get_label() for line in lines], fontsize=7, loc="upper right")
    axes[-1, 0].set_xlabel("generation (the green line: the first positive best fitness; "
                           "dotted: the targets, 10% at 128 ranks, 5% at 63; shaded: not "
                           "recorded)")  # fmt: skip
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return shares


def generations(spec: str) -> tuple[int, int]:
    """``--phase``'s A-B as (A, B)."""
    try:
        a, b = (int(x) for x in spec.split("-"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{spec!r} is not A-B, two generation numbers") from None
    return a, b


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=6.0, help="the recorded 2-rank run (6)")
    p.add_argument("--serial-generations", type=int, default=1, help="at 1 rank (1)")
    p.add_argument("--static-generations", type=int, default=2, help="static split, 2 ranks (2)")
    p.add_argument("--costs", type=Path, help="project from this recording instead of running")
    p.add_argument(
        "--genome", default="ones", help="PrunedGA genome (ones: as measured in the docs)"
    )
    p.add_argument("--population-size", type=int, default=138)
    p.add_argument("--episodes-per-individual", type=int, default=8)
    p.add_argument("--also", default="128x8", help="settings also projected, PxE (128x8)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--start", type=Path, help="record generations that go on from this checkpoint")
    p.add_argument(
        "--phase",
        action="append",
        default=[],
        type=generations,
        metavar="A-B",
        help="also project generations A to B of the recording (repeatable)",
    )
    p.add_argument("--tag", default="", help="suffix of the result files' names ('')")
    p.add_argument(
        "--by-generation",
        nargs="+",
        metavar="[LABEL=]COSTS[+COSTS...]",
        help="only draw each run's idle share per generation, one panel each (a run's "
        "recordings joined by +, the later ones --start from it), and print its share, to "
        "runs/benchmarks/ga_scaling_generations.png (--docs: docs/figures/; or --out PATH)",
    )
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--mode", default="dynamic", help=argparse.SUPPRESS)
    p.add_argument("--generations", type=int, default=1, help=argparse.SUPPRESS)
    p.add_argument("--record", help=argparse.SUPPRESS)
    p.add_argument("--run-minutes", type=float, help=argparse.SUPPRESS)
    p.add_argument("--log-dir", help=argparse.SUPPRESS)
    common.add_figure_flags(p, FIGURE)
    args = p.parse_args()
    if args.worker:
        return worker(args)

    if args.by_generation:
        recordings = {}
        for spec in args.by_generation:  # LABEL=A.npz or LABEL=A.npz+B.npz (one run's)
            label, _, paths = spec.rpartition("=")
            recordings[label or paths] = [dict(np.load(p)) for p in paths.split("+")]
        out = common.figure_path(args, "ga_scaling_generations.png")
        if out == common.FIGURES / FIGURE:  # --out not given: not over the main figure
            out = common.FIGURES / "ga_scaling_generations.png"
        for label, idle in plot_generations(recordings, out).items():
            print(label)
            for line in run_summary(idle):
                print("  " + line)
        print("figure:", out)
        return None
    info = common.machine()
    print("machine:", json.dumps(info), flush=True)
    P, E = args.population_size, args.episodes_per_individual
    settings = ["--population-size", str(P), "--episodes-per-individual", str(E)]
    settings += ["--seed", str(args.seed)]
    settings += ["--genome", args.genome]
    stem = f"ga_scaling{args.tag}"
    costs_path = common.RESULTS / f"{stem}_costs.npz"
    if args.start:
        settings += ["--start", str(args.start)]
        ck = json.loads((args.start.parent / "config.json").read_text())
        P, E = ck["population_size"], ck["episodes_per_individual"]
        args.genome, args.seed = ck["genome"], ck["seed"]
    result = {
        "machine": info,
        "settings": dict(population_size=P, episodes=E, seed=args.seed, genome=args.genome),
    }
    if args.start:
        result["settings"]["start"] = str(args.start)
    common.RESULTS.mkdir(exist_ok=True)
    if args.costs is None:
        runs = {}
        plan = [("serial", 1, "dynamic", ["--generations", str(args.serial_generations)]),
                ("static", 2, "static", ["--generations", str(args.static_generations)]),
                ("dynamic", 2, "dynamic", ["--run-minutes", str(args.minutes)])]  # fmt: skip
        for name, n, mode, limit in plan:  # one at a time: no two timed runs share the cores
            path = costs_path if name == "dynamic" else common.RESULTS / f"{stem}_{name}.npz"
            flags = [__file__, "--worker", "--mode", mode, "--record", str(path), *settings]
            if name == "dynamic":  # its log and checkpoint: --start goes on from them
                flags += ["--log-dir", str(common.RESULTS / f"{stem}_run")]
            # an hour, and the recorded run's limit on top: its last generation may run long
            extra = 60 * args.minutes if name == "dynamic" else 0
            common.mpirun(n, [*flags, *limit], timeout=3600 + extra)
            runs[name] = dict(np.load(path))
            print(f"recorded {name} ({n} rank(s)): {len(runs[name]['wall'])} generations",
                  flush=True)  # fmt: skip
        rec = runs["dynamic"]
        k = min(len(r["wall"]) for r in runs.values())
        same = all(
            np.array_equal(r["steps"][:k], rec["steps"][:k]) and
            np.array_equal(r["fit"][:k], rec["fit"][:k]) for r in runs.values()
        )  # fmt: skip
        measured = {}
        for name, r in runs.items():
            wall = np.diff(np.concatenate([[0.0], r["wall"]]))[:k]
            measured[name] = {
                "seconds_per_generation": float(wall.mean()),
                "wait_share": float(r["wait"][:k].sum() / wall.sum()),
            }
        gens = np.diff(np.concatenate([[0.0], rec["wall"]]))
        measured["dynamic_all"] = {
            "generations": len(gens),
            "seconds_per_generation": float(gens.mean()),
            "wait_share": float(rec["wait"].sum() / gens.sum()),
        }
        result["measured"] = dict(measured, same_results=bool(same), generations_compared=k)
        print(f"same steps and fitness in the first {k} generation(s) of every run: {same}")
        for name, m in measured.items():
            print(f"measured {name}: {json.dumps(m)}")
    elif (common.RESULTS / f"{stem}.json").exists():  # re-projecting: keep what was measured
        result["measured"] = json.loads((common.RESULTS / f"{stem}.json").read_text()).get(
            "measured"
        )
    rec = dict(np.load(args.costs or costs_path))
    steps, secs = rec["steps"].ravel(), rec["seconds"].ravel()
    serial_s = float(np.median(rec["select"]))
    costs = dict(rec, fetch_s=float(rec["fetch_s"]))
    make_ms, fetch_us = 1e3 * float(rec["make_s"]), 1e6 * float(rec["fetch_s"])
    step_us = 1e6 * secs.sum() / steps.sum()
    print(
        f"units: {len(steps)}, {steps.mean():.0f} steps and {1e3 * secs.mean():.1f} ms on "
        f"average ({step_us:.0f} us per step); env making {make_ms:.2f} ms; fetch "
        f"{fetch_us:.1f} us; selection and mutation {serial_s:.3f} s per generation"
    )
    G, g0 = len(rec["steps"]), int(rec.get("first_generation", 0))
    first, last = ("early", "late") if g0 == 0 else ("first", "last")
    # A checkpoint saved without its units' steps (pgmpi before they were kept) starts with
    # a generation played in no predicted order: the first phase starts after it.
    s0 = int(g0 > 0 and not np.any(rec.get("steps_before", 0)))
    phases = {
        f"{first} ({g0 + s0}-{g0 + s0 + 2})": slice(s0, s0 + 3),
        f"{last} ({g0 + max(G - 3, 0)}-{g0 + G - 1})": slice(G - 3, G),
    }
    if G - s0 > 6:  # and the whole recording: the share of a run's allocation left idle
        phases[f"all ({g0 + s0}-{g0 + G - 1})"] = slice(s0, G)
    for a, b in args.phase:  # and the stretches asked for
        if not g0 <= a <= b < g0 + G:
            p.error(f"--phase {a}-{b}: the recording holds generations {g0}-{g0 + G - 1}")
        phases[f"{a}-{b}"] = slice(a - g0, b - g0 + 1)
    results, projections = {}, {}
    also_p, also_e = (int(x) for x in args.also.split("x"))
    for name, (p_, e_) in {f"{P}x{E}": (P, E), f"{also_p}x{also_e}": (also_p, also_e)}.items():
        projections[name] = proj = project(costs, min(p_, P), min(e_, E), serial_s)
        results[name] = {ph: summarise(proj, w) for ph, w in phases.items()}
    result.update(
        seconds_per_step=float(secs.sum() / steps.sum()),
        serial_s=serial_s,
        fetch_s=float(rec["fetch_s"]),
        make_s=float(rec["make_s"]),
        recorded_generations=G,
        mean_unit_steps={ph: float(rec["steps"][w].mean()) for ph, w in phases.items()},
        projection=results,
        original_s_per_generation_63_workers=ORIGINAL_S,
    )
    md = table(results)
    print(md)
    for ph, w in phases.items():  # the spread behind each phase's share, self-scheduled
        spread = []
        for n in (63, 128):
            rows = projections[f"{P}x{E}"]["ahead"][n][w]
            idle = 100 * generation_shares(rows)
            spread.append(f"{n} ranks {min(idle):.1f}-{max(idle):.1f}%")
        print(f"PrunedGA, single generations of {ph}, {P}x{E}: " + ", ".join(spread))
    if "parents" in rec:
        ways = compare_predictors(costs, phases)
        result["predictors"] = ways
        print(
            "\n| prediction (self-scheduled, idle at 63 / 128 ranks) | " + " | ".join(phases) + " |"
        )
        print("|---|" + "---|" * len(phases))
        for name, by_phase in ways.items():
            cells = [f"{100 * v[63]:.1f}% / {100 * v[128]:.1f}%" for v in by_phase.values()]
            print(f"| {name} | " + " | ".join(cells) + " |")
    for ph in phases:
        at63 = {s: results[f"{P}x{E}"][ph][s][63][2] for s in ("old", "ahead")}
        print(
            f"projected s per generation at 63 ranks, {ph}, {P}x{E}: old {at63['old']:.2f}, "
            f"PrunedGA {at63['ahead']:.2f} (original: {ORIGINAL_S:.1f})"
        )
    out = common.figure_path(args, FIGURE)
    plot(results, out)
    print("figure:", out)
    print("wrote", common.write(stem, result))


if __name__ == "__main__":
    main()
