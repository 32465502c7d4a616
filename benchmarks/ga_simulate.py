"""PrunedGA's generations replayed on n ranks, from recorded unit costs: the projection
behind benchmarks/ga_scaling.py and ga_figures.py (:func:`projected`), and its schedules.

A recording (benchmarks/ga_record.py) holds, per generation, every unit's (individual,
episode) steps and seconds, the predictions the units were ordered by and the parents.
:func:`project` replays each generation on n ranks in four ways of sharing it out:

* ``old``: whole individuals, longest-first by the parent's steps (pgmpi before units);
* ``static``: units, longest-first by predicted cost (:func:`balance` over units);
* ``dynamic``: units in predicted order, each taken by the first free rank, plus one fetch
  from the shared counter per unit;
* ``ahead``: the same, and a rank that has run out of units plays the next generation's
  units of individuals sure to be elites (:func:`ahead_schedule`: what PrunedGA does). Its
  generations share one timeline, and a generation's window, from its units' start to its
  last unit's end, counts what was played in it.

A unit costs its recorded seconds (an individual of the old split makes one env, not E).
Every generation also pays the measured selection and a ring Allreduce on a 10 Gb/s network
(20 us latency); a counter fetch costs twice that latency, or as measured if more. Idle share
= 1 - work / (n x makespan), summed over generations. Orders and predictors not adopted:
docs/notes/2026-11-ga-schedules.md.
"""

from __future__ import annotations

import heapq

import numpy as np
from common import ring_allreduce_s

from pgmpi.config import GAConfig
from pgmpi.optimizers import elite_count
from pgmpi.schedule import longest_first, predict

RANKS = [1, 2, 4, 8, 16, 32, 63, 64, 128, 256, 512, 1024, 1536]
LINK = (10e9 / 8, 20e-6)  # bandwidth bytes/s, latency s: a 10 Gb/s network
SPLITS = ("old", "static", "dynamic", "ahead")
AHEAD = "PrunedGA's, playing ahead: the next generation's units of sure elites while waiting"
DYNAMIC = "PrunedGA's order, not playing ahead"
PERFECT = "a perfect order (each unit's recorded cost known beforehand), not playing ahead"
FLOOR = "no order (a lower bound: the mean load, or the costliest units' pigeonholes)"
AHEAD_FLOOR = ("no schedule, playing ahead or not (a lower bound: the mutated children's floor "
               "less what else the ranks could play meanwhile)")  # fmt: skip


def balance(costs: np.ndarray, n_ranks: int) -> np.ndarray:
    """Longest-processing-time-first: int64 (N,) owner rank of each of N jobs (pgmpi's static
    split before self-scheduling).

    In order of decreasing cost (ties: lower index first) each job goes to the rank with the
    least total cost so far (ties: lower rank). Deterministic, so every rank computes the same
    assignment from the same float64 ``costs`` without communicating.
    """
    owner = np.empty(len(costs), dtype=np.int64)
    load = np.zeros(n_ranks)
    for i in longest_first(costs):
        owner[i] = r = int(np.argmin(load))
        load[r] += costs[i]
    return owner


def static_makespan(predicted: np.ndarray, cost: np.ndarray, n: int) -> float:
    """The busiest rank's seconds when :func:`balance` shares the jobs out on predictions."""
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
    generation's units of individuals sure to be elites (``ahead.sure_elites``, from
    the individuals finished so far; best first, episodes in order), paused when the
    generation's last unit ends and finished first in the next, where nobody plays them
    again. ``predicted[g]``, ``cost[g]`` (P * E,) are generation g's; ``elites[g]`` lists
    generation g's elites in rank order as (index in g + 1, index in g); ``gap_s``: from a
    generation's last unit to the next one's start (its Allreduce and selection). Returns,
    per generation, (when its units open, when its last ends, the rank seconds spent
    playing between the two, the units of it played ahead)."""
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


def predictions(costs: dict, g: int) -> tuple[np.ndarray, np.ndarray]:
    """Generation g's predicted cost of each individual's units, as PrunedGA predicts it
    (``schedule.predict``: an unchanged elite at its own longest episode, a mutated child at
    no less than the 90th percentile, + 1), and of each whole individual, as the old split
    did (the parent's steps), from the recorded steps and parents; for a first generation
    with no steps before it, or a recording without parents, what was recorded."""
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


def kept(parents: np.ndarray) -> int:
    """How many of a population's first individuals are unchanged elites, from its
    ``parents`` (``PruningOptimizer.mutated``): one more when the best ever, of an earlier
    generation (parent -1), leads them."""
    return elite_count(len(parents), GAConfig.elite_fraction) + int(parents[0] == -1)


def bounds(costs: dict, phases: dict) -> dict:
    """How far PrunedGA's schedule is from the best any could do, from generation 1 of the
    recording on (full population and episodes): the self-scheduled idle share at 63 and
    128 ranks with playing ahead, without it, in a perfect order (the units' recorded
    costs for predictions), and the floors no order (:func:`lower_bound_makespan`) and no
    schedule that keeps the GA's results (:func:`ahead_floor`) can go below: {way: {phase:
    {n: idle}}}, each phase's idle share of its rank time (generations weighted by their
    length)."""
    steps, seconds = costs["steps"], costs["seconds"]
    fetch = max(costs["fetch_s"], 2 * LINK[1])
    G, P, E = seconds.shape
    preds = [np.repeat(predictions(costs, g)[0], E) for g in range(G)]
    units = [seconds[g].ravel() for g in range(G)]
    out = {AHEAD: {}, DYNAMIC: {}, PERFECT: {}, FLOOR: {}, AHEAD_FLOOR: {}}
    for n in (63, 128):
        for name in out:
            out[name][n] = {}
        for g in range(1, len(steps)):
            unit = units[g]
            out[DYNAMIC][n][g] = (unit.sum(), n * dynamic_makespan(preds[g], unit, n, fetch))
            out[PERFECT][n][g] = (unit.sum(), n * dynamic_makespan(unit, unit, n, fetch))
            out[FLOOR][n][g] = (unit.sum(), n * lower_bound_makespan(unit, n))
            out[AHEAD_FLOOR][n][g] = ahead_floor(costs, g, n)
        elites = [run_elites(costs, g, P, E) for g in range(G)]
        run = ahead_schedule(preds, units, elites, E, n, fetch, 0.0)
        out[AHEAD][n] = {g: (busy, n * (last - start)) for g, (start, last, busy, _) in
                         enumerate(run) if g >= 1}  # fmt: skip
    return {
        name: {
            ph: {n: idle_share([v[g] for g in range(G)[w] if g in v]) for n, v in by_n.items()}
            for ph, w in phases.items()
        }  # fmt: skip
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


def phases_of(rec: dict, asked: list) -> dict:
    """{name: slice of the recording's generations}: the first three, the last three, all
    (if more than six) and each asked-for (A, B) generation span."""
    G, g0 = len(rec["steps"]), int(rec.get("first_generation", 0))
    first, last = ("early", "late") if g0 == 0 else ("first", "last")
    # A checkpoint saved without its units' steps starts with an unordered generation: skip it
    s0 = int(g0 > 0 and not np.any(rec.get("steps_before", 0)))
    phases = {
        f"{first} ({g0 + s0}-{g0 + s0 + 2})": slice(s0, s0 + 3),
        f"{last} ({g0 + max(G - 3, 0)}-{g0 + G - 1})": slice(G - 3, G),
    }
    if G - s0 > 6:  # and the whole recording: the share of a run's allocation left idle
        phases[f"all ({g0 + s0}-{g0 + G - 1})"] = slice(s0, G)
    for a, b in asked:  # and the stretches asked for
        if not g0 <= a <= b < g0 + G:
            raise ValueError(f"--phase {a}-{b}: the recording holds generations {g0}-{g0 + G - 1}")
        phases[f"{a}-{b}"] = slice(a - g0, b - g0 + 1)
    return phases


def projected(rec: dict, also: str = "128x8", asked: list = ()) -> tuple[dict, dict, dict]:
    """The recording ``rec`` projected at its own population and episodes and at ``also``
    (PxE, no more than recorded): ({setting: {phase: :func:`summarise`}}, {setting:
    :func:`project`}, the phases)."""
    costs = dict(rec, fetch_s=float(rec["fetch_s"]))
    serial_s = float(np.median(rec["select"]))
    P, E = rec["steps"].shape[1:]
    phases = phases_of(rec, asked)
    results, projections = {}, {}
    also_p, also_e = (int(x) for x in also.split("x"))
    for name, (p_, e_) in {f"{P}x{E}": (P, E), f"{also_p}x{also_e}": (also_p, also_e)}.items():
        projections[name] = proj = project(costs, min(p_, P), min(e_, E), serial_s)
        results[name] = {ph: summarise(proj, w) for ph, w in phases.items()}
    return results, projections, phases


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
