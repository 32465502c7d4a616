"""ParallelPG scaling: measured at 1 and 2 ranks, projected to 1,536 ranks.

    python benchmarks/scaling.py [--updates 6] [--repeats 2] [--checkpoint CHECKPOINT]
    python benchmarks/scaling.py --docs     # also redraw docs/figures/scaling.png and keep
                                            # the result in benchmarks/recordings (tracked)

Measures, in one run, by launching itself under mpirun with the defaults (16 games of 512
steps per update): ``--repeats`` times at 1 and then 2 ranks, keeping the fastest run at
each rank count (a shared machine only ever slows a run down),

* each rank's playing rate, the fraction of time ranks wait at the Allreduce for slower
  ranks, and the Allreduce's own cost (the fastest rank's time in it);
* the gradient seconds per game and the per-update costs that every rank pays whatever the
  rank count (the Adam step, turning the sum back into floats);

then once more at 1 rank:

* the cost of every slot's piece of play, recorded: each of the 16 games plays its 512
  steps alone (as on a rank that holds one game, at 16 ranks and more) and its gradient is
  taken, for ``--slot-updates`` updates (128 pieces by default). Each piece is played
  ``--replays`` times (6) from the same emulator state, stream and network, in passes over
  all pieces, and the fastest kept: the cost of the work, without the host's slow spells.
  What spread is left is mostly timing noise: the covariance of two independent halves of
  the plays gives the work's own spread, printed beside it;
* the seconds per game-step when a rank holds 1, 2, 4, 8 or 16 games (one forward pass per
  step for all of them).

With ``--checkpoint``, all of it is measured from that trained policy, whose games are
longer and vary more than a beginner's.

Then projects, for n = 1 ... 1,536 ranks, the fraction of rank time spent waiting for
other ranks and the speed-up in agent steps per second over 1 rank (slots = the smallest
multiple of n >= 16). A rank's work is
the sum of its games' piece costs, drawn from the recorded ones (a smoothed bootstrap),
their spread about the mean narrowed to the work's own (its upper bound); an update lasts
as long as the slowest rank's work, then the Allreduce and the per-update costs follow.
Two more projections are printed and kept: with the pieces as timed
(what timing noise the fastest of the plays still holds), and with each rank's work also
multiplied by the rank-to-rank spread measured at 2 ranks here, which on this shared
virtual machine comes mostly from the host (other tenants), not from the work (drawn too).

The Allreduce is a ring: 2 (n-1) steps of latency plus 2 (n-1)/n of the buffer over the
link's bandwidth, for the shared memory measured here and for 10 and 100 Gb/s networks
(latencies assumed: 20 and 2 us), and, if benchmarks/results/reduction_2_tcp.json exists
(``benchmarks/reduction.py --tag _tcp`` run over TCP between two namespace hosts;
docs/benchmarks.md, "Scaling"), for that link.
Writes benchmarks/results/scaling.json and the figure to runs/benchmarks/scaling.png
(``--out PATH`` elsewhere; ``--docs``: docs/figures/scaling.png, the tracked one docs/benchmarks.md
and the tutorial show).

The whole-game split of pgmpi 0.1 (10 whole games per update, game e on rank e % n) was
projected here too until 0.2; its last projection, 2026-11-23 on 2 cores: 94% of rank time
waiting and 7.3x over 1 rank at 128 ranks (docs/benchmarks.md, "Scaling").
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402

NETWORKS = {  # name: (bandwidth bytes/s, latency s); shared memory is measured
    "10 Gb/s": (10e9 / 8, 20e-6),
    "100 Gb/s": (100e9 / 8, 2e-6),
}
RANKS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 1536]
FIGURE = "scaling.png"


def worker(args) -> None:
    """Under mpirun: timed updates of the defaults; with ``--costs`` (1 rank), then the
    costs of slot pieces and of steps."""
    from pgmpi import ParallelPG, mpi, rng, rollout
    from pgmpi.games import make_game

    if args.checkpoint:
        agent = ParallelPG.load(args.checkpoint, quiet=True)
        agent.config["seed"] += 1  # new games, not a replay of the run's
    else:
        agent = ParallelPG(seed=0, quiet=True)
    rows = []
    start = agent.update
    agent.train(updates=start + 1)  # warm-up: first games started, first allocations
    steps0 = agent.steps
    agent.train(updates=start + 1 + args.updates, callback=rows.append)
    out = {"ranks": mpi.size(), "rows": rows, "params": agent.net.params.size, "steps0": steps0}
    if args.costs:  # 1 rank
        # Every slot's piece on its own, play and gradient, as on a rank that holds one
        # game. Each is played ``--replays`` times, in passes over all pieces (so that one
        # slow spell of the host does not hit every play of a piece), from the same emulator
        # state, stream and network, and the fastest kept: the cost of the work itself.
        recorded = []
        for u in range(args.slot_updates):
            for k in agent.mine:
                waiting = agent.open_rallies.steps.get(k)
                recorded.append((u, k, agent.games[k].snapshot(), waiting))
                slot_work(agent, k, piece_of(agent, u, k))  # play on: the next piece's state
        costs = np.full((args.replays, len(recorded)), np.inf)
        for r in range(args.replays):
            for i, (u, k, snap, waiting) in enumerate(recorded):
                agent.games[k].restore(snap, seed=0)  # the game is seeded already: not used
                agent.open_rallies.steps.pop(k, None)
                if waiting is not None:
                    agent.open_rallies.steps[k] = waiting
                t = time.perf_counter()
                slot_work(agent, k, piece_of(agent, u, k))
                costs[r, i] = time.perf_counter() - t
        out["slot_s_replays"] = costs.tolist()
        costs = costs.min(axis=0).tolist()
        out["slot_s"] = costs
        out["step_s"] = {}
        for k in (1, 2, 4, 8, 16):
            games = [make_game(agent.config["env"]) for _ in range(k)]
            streams = [rng.stream(0, 99, k, i) for i in range(k)]
            rollout.play(agent.net, games, streams, 50, False)  # past the first frames
            best, steps = float("inf"), 4800 // k  # 4,800 game-steps, whatever k
            for _ in range(max(2, args.replays // 2)):  # on from the last play; the fastest
                t = time.perf_counter()
                rollout.play(agent.net, games, streams, steps, False)
                best = min(best, time.perf_counter() - t)
            out["step_s"][k] = best / (steps * k)
    if mpi.is_root():
        print(json.dumps(out), flush=True)


def slot_work(agent, k: int, piece) -> None:
    """A played piece's work after play, as ParallelPG.step does it: its returns and
    advantages, then its gradient."""
    batch = agent._batch(k, piece)
    if batch is not None:
        agent._gradient(*batch)


def piece_of(agent, u: int, k: int):
    """Game k's 512 steps of the u-th recorded update, alone: a rollout.Piece."""
    from pgmpi import rng, rollout

    stream = rng.stream(agent.config["seed"], rng.EPISODE, agent.update + u, k)
    return rollout.play(agent.net, [agent.games[k]], [stream], 512, False)[0]


def work_spread(replays: np.ndarray) -> tuple[float, float]:
    """How much the pieces' work itself differs, as std / mean: (estimate, 95% upper bound),
    from plays (replays, pieces). Timing noise is independent between plays, so over the
    pieces the covariance of the fastest even play and the fastest odd play is the variance
    of the work alone; the bound adds two standard errors of that covariance."""
    a, b = replays[0::2].min(axis=0), replays[1::2].min(axis=0)
    cov, scale = np.cov(a, b)[0, 1], np.mean(replays.min(axis=0))
    bound = cov + 2 * a.std() * b.std() * np.sqrt((1 + np.corrcoef(a, b)[0, 1] ** 2) / len(a))
    return float(np.sqrt(max(cov, 0.0)) / scale), float(np.sqrt(max(bound, 0.0)) / scale)


def mean(rows: list[dict], key: str) -> float:
    return float(np.mean([r[key] for r in rows]))


def draw_slots(recorded: np.ndarray, shape: tuple, rng) -> np.ndarray:
    """Slot costs drawn from the recorded ones, each plus a normal of Silverman's bandwidth
    (a smoothed bootstrap), so that the slowest of many ranks is not capped at the slowest
    piece that happened to be recorded."""
    width = 1.06 * recorded.std() * len(recorded) ** -0.2
    return rng.choice(recorded, size=shape) + rng.normal(0.0, width, size=shape)


def rank_figures(work: np.ndarray, slots: int, serial_s: float) -> tuple[float, float, float]:
    """(mean rank work, expected slowest rank's work, agent steps/s of an update) from
    draws of every rank's seconds of work, shape (draws, n); ``serial_s`` is paid after."""
    longest = float(work.max(axis=1).mean())
    return float(work.mean()), longest, slots * 512 / (longest + serial_s)


def project(m: dict, allreduce: dict[str, tuple[float, float]]) -> dict:
    """Waiting fraction and speed-up at every n in RANKS, for each link."""
    rng = np.random.default_rng(0)
    step_s, noise = m["step_s"], m["step_noise"]  # seconds per game-step; per-rank spread
    # Seconds of one slot's piece (play and gradient), as recorded, and with what is left of
    # the timing noise taken out: spread about their mean only as much as the work's own
    # spread (its 95% upper bound).
    timed = np.array(m["slot_s"])
    keep = min(1.0, m["slot_s_work_spread"][1] / max(m["slot_s_spread"], 1e-12))
    slot_s = timed.mean() + (timed - timed.mean()) * keep
    size = m["params"] * 8  # the int64 fixed-point buffer
    fixed_s = m["optimizer_s"]
    base_rate = None
    out = {}
    for link, (bandwidth, latency) in allreduce.items():
        rows = []
        for n in RANKS:
            comm = common.ring_allreduce_s(n, size, bandwidth, latency)
            # Every rank plays k games of exactly 512 steps. A rank's work is the sum
            # of k recorded slot costs, at the speed per step of k games batched together;
            # "host" also multiplies it by the rank-to-rank spread measured at 2 ranks.
            slots = n * -(-16 // n)
            k = slots // n
            batched = step_s[str(min(16, 2 ** int(np.log2(k))))] / step_s["1"]
            work = draw_slots(slot_s, (400, n, k), rng).sum(axis=2) * batched
            host = work * rng.normal(1.0, noise, size=(400, n)).clip(0.5)
            as_timed = draw_slots(timed, (400, n, k), rng).sum(axis=2) * batched
            new, new_host, new_timed = (
                rank_figures(w, slots, comm + fixed_s) for w in (work, host, as_timed)
            )
            base_rate = base_rate or new[2]
            # The "new_" keys name the time-boxed split, as in the JSON of earlier runs
            # (which also held the whole-game split's), so figures.py draws either.
            rows.append({
                "ranks": n, "slots": slots, "allreduce_s": comm,
                "new_wait_fraction": 1 - new[0] / new[1],
                "new_speedup": new[2] / base_rate,
                "new_host_wait_fraction": 1 - new_host[0] / new_host[1],
                "new_timed_wait_fraction": 1 - new_timed[0] / new_timed[1],
                "new_host_speedup": new_host[2] / base_rate,
            })  # fmt: skip
        out[link] = rows
    return out


def plot(projection: dict, path: Path) -> None:
    """The default (time-boxed) split's waiting share on a 0-10% axis and its speed-up,
    against ranks, one line per link, 128 and 1,536 ranks marked; the old whole-game split
    (in JSON of pgmpi 0.1's runs only) in a panel of its own."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    old = "old_wait_fraction" in next(iter(projection.values()))[0]
    fig, axes = plt.subplots(1, 3 if old else 2, figsize=(15 if old else 11, 4.2))
    a, b = axes[:2]
    for i, (link, style) in enumerate(zip(projection, ("-", "--", ":", "-."), strict=False)):
        rows = projection[link]
        n = [r["ranks"] for r in rows]
        splits = [("new", "tab:blue", "default split")]
        if i == 0:  # the first link (shared memory) also with this host's rank-to-rank spread
            splits.append(("new_host", "tab:cyan", "default split + this host's spread"))
        for split, colour, name in splits:
            label = f"{name}, {link}"
            a.plot(n, [100 * r[f"{split}_wait_fraction"] for r in rows], style, c=colour,
                   label=label)  # fmt: skip
            b.plot(n, [r[f"{split}_speedup"] for r in rows], style, c=colour)
        if old:
            axes[2].plot(n, [100 * r["old_wait_fraction"] for r in rows], style, c="tab:red",
                         label=f"old split (pgmpi 0.1), {link}")  # fmt: skip
    b.plot(n, n, c="black", lw=0.8, label="ideal speed-up (n ranks: n times)")
    a.set(xscale="log", xlabel="ranks", ylabel="% of rank time waiting for other ranks",
          ylim=(0, 10))  # fmt: skip
    b.set(xscale="log", yscale="log", xlabel="ranks", ylabel="speed-up over 1 rank")
    a.set_title("Waiting for other ranks, default split (projected)")
    b.set_title("Speed-up over 1 rank, default split (projected)")
    if old:
        axes[2].set(xscale="log", xlabel="ranks", ylabel="% of rank time waiting", ylim=(0, 100))
        axes[2].set_title("The old whole-game split (dated, projected)")
    for ax in axes:
        ax.grid(alpha=0.3, which="both")
        for mark, ls in ((128, "-."), (1536, ":")):
            ax.axvline(mark, c="0.4", lw=0.8, ls=ls, label=f"{mark:,} ranks")
    lines = a.get_lines() + b.get_lines()[-3:-2] + (axes[2].get_lines()[:-2] if old else [])
    fig.legend(lines, [x.get_label() for x in lines], loc="upper center",
               bbox_to_anchor=(0.5, 0.0), ncol=3, fontsize=8)  # fmt: skip
    fig.suptitle("Pong on n ranks: projected from costs measured at 1 and 2 ranks")
    common.save_figure(fig, path)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--updates", type=int, default=6, help="timed updates per rank count (6)")
    p.add_argument("--slot-updates", type=int, default=8,
                   help="times each of the 16 slots' pieces is recorded alone (8)")  # fmt: skip
    p.add_argument(
        "--repeats",
        type=int,
        default=2,
        help="timed runs at each rank count; the fastest is kept (2)",
    )
    p.add_argument(
        "--replays",
        type=int,
        default=6,
        help="plays of each recorded slot piece; the fastest is kept (6)",
    )
    p.add_argument("--costs", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--checkpoint", help="a trained ParallelPG checkpoint to measure with")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    common.add_figure_flags(p, FIGURE)
    args = p.parse_args()
    if args.replays < 2:
        p.error("--replays must be 2 or more (the work's own spread needs two halves)")
    if args.worker:
        return worker(args)

    info = common.machine()
    print("machine:", json.dumps(info))
    extra = ["--checkpoint", args.checkpoint] if args.checkpoint else []
    cmd = [__file__, "--worker", "--updates", str(args.updates), *extra]
    runs = {}
    for _ in range(args.repeats):  # a shared machine only ever slows a run down: keep the fastest
        for n in (1, 2):
            run = common.last_json(common.mpirun(n, cmd))
            if n not in runs or mean(run["rows"], "perf/steps_per_s") > mean(
                runs[n]["rows"], "perf/steps_per_s"
            ):
                runs[n] = run
    costs = [*cmd, "--costs", "--slot-updates", str(args.slot_updates)]
    costs += ["--replays", str(args.replays)]
    cost = common.last_json(common.mpirun(1, costs))  # a third 1-rank run
    one = runs[1]

    measured = {
        n: {
            "steps_per_s": mean(runs[n]["rows"], "perf/steps_per_s"),
            "rank_steps_per_s": mean(runs[n]["rows"], "perf/rank_steps_per_s_min"),
            "wait_fraction": mean(runs[n]["rows"], "perf/wait_fraction"),
            "allreduce_s": mean(runs[n]["rows"], "perf/allreduce_s"),
        }
        for n in (1, 2)
    }
    speedup = measured[2]["steps_per_s"] / measured[1]["steps_per_s"]
    rows = one["rows"]
    # Each row's "steps" counts from the start of the run: an update's are the difference.
    steps = np.diff([one["steps0"]] + [r["steps"] for r in rows])
    wall = steps / np.array([r["perf/steps_per_s"] for r in rows])
    play = steps / np.array([r["perf/rank_steps_per_s_min"] for r in rows])
    grad = np.array([r["perf/grad_s"] for r in rows])
    # The spread that makes ranks wait is between ranks within one update (not the drift of
    # the whole machine from update to update): for two normal draws E|a - b| = 2 sigma /
    # sqrt(pi), so sigma / mean from the 2-rank runs' fastest and slowest rank.
    lo, hi = (
        np.array([r[f"perf/rank_steps_per_s_{m}"] for r in runs[2]["rows"]]) for m in ("min", "max")
    )
    model = {
        "params": one["params"],
        "step_s": cost["step_s"],
        "slot_s": cost["slot_s"],
        "slot_s_spread": float(np.std(cost["slot_s"]) / np.mean(cost["slot_s"])),
        "slot_s_replays": cost["slot_s_replays"],
        "slot_s_work_spread": work_spread(np.array(cost["slot_s_replays"])),
        "step_noise": float(np.mean((hi - lo) / (hi + lo) * 2) * np.sqrt(np.pi) / 2),
        # What an update costs beyond play, gradients and the Allreduce: the Adam step,
        # the fixed-point sum back to floats, sharing the finished games.
        "optimizer_s": max(0.0, float(np.mean(wall - play - grad)) - measured[1]["allreduce_s"]),
    }
    # Shared memory: the 2-rank Allreduce measured here, as a ring's bandwidth.
    shm = (one["params"] * 8 / max(measured[2]["allreduce_s"], 1e-6), 1e-6)
    links = {"shared memory (measured)": shm, **NETWORKS}
    tcp = common.RESULTS / "reduction_2_tcp.json"  # reduction.py on two namespace hosts
    if tcp.exists():  # a kernel TCP link (veth), as a ring's bandwidth; latency assumed 50 us
        t = json.loads(tcp.read_text())["allreduce_s_exact"]
        links["TCP between 2 namespace hosts (measured)"] = (one["params"] * 8 / t, 50e-6)
    projection = project(model, links)
    for n in (1, 2):
        m = measured[n]
        print(
            f"measured, {n} rank(s): {m['steps_per_s']:.0f} steps/s, "
            f"{m['rank_steps_per_s']:.0f} per rank while playing, "
            f"waiting {100 * m['wait_fraction']:.2f}%, Allreduce {1e3 * m['allreduce_s']:.1f} ms"
        )
    print(f"measured 2-rank wall-clock speed-up: {speedup:.3f} (target >= 1.95)")
    print(
        f"a slot's piece alone: {1e3 * np.mean(model['slot_s']):.1f} ms on average, spread "
        f"{100 * model['slot_s_spread']:.2f}% (std / mean, {len(model['slot_s'])} pieces, the "
        f"fastest of {args.replays} plays each; of which the work's own, by split-half "
        f"covariance: {100 * model['slot_s_work_spread'][0]:.2f}%, at most "
        f"{100 * model['slot_s_work_spread'][1]:.2f}%); "
        f"rank-to-rank spread at 2 ranks {100 * model['step_noise']:.1f}%; per-update "
        f"costs outside play {1e3 * model['optimizer_s']:.1f} ms"
    )
    for link, prow in projection.items():
        for r in prow:
            if r["ranks"] in (2, 128, 1536):
                wait, host = 100 * r["new_wait_fraction"], 100 * r["new_host_wait_fraction"]
                timed = 100 * r["new_timed_wait_fraction"]
                print(
                    f"projected, {link}, {r['ranks']} ranks: waiting {wait:.1f}% (pieces as "
                    f"timed {timed:.1f}%; with this host's spread {host:.1f}%),"
                    f" speed-up {r['new_speedup']:.1f}x ({r['new_host_speedup']:.1f}x),"
                    f" Allreduce {1e3 * r['allreduce_s']:.1f} ms"
                )
    figure = common.figure_path(args, FIGURE)
    plot(projection, figure)
    result = {
        "machine": info,
        "measured": measured,
        "speedup_2_ranks_wall": speedup,
        "model": model,
        "projection": projection,
    }
    print("wrote", common.write("scaling", result, keep=args.docs), "and", figure)


if __name__ == "__main__":
    main()
