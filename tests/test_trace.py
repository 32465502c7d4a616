"""Tracing (``trace=True``, ``trace.csv``, ``python -m pgmpi.plot --timeline``) and the
fraction-done / ETA part of progress lines.

The rank-aware test (marker ``mpi``) runs in tier 2, under ``mpirun -n 1`` and ``-n 2``; it
makes every collective call first and asserts last, on every rank. The others are tier 1.
"""

import csv
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pgmpi import ConfigError, ParallelPG, PrunedGA, mpi
from pgmpi.logger import TRACE_COLUMNS
from pgmpi.loop import limits_note

CARTPOLE = dict(
    env="CartPole-v1", hidden_size=16, learning_rate=1e-2, slots=4, steps_per_slot=1, seed=3
)


def _rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _trace_matches_progress(log_dir: Path, updates: int, n: int) -> list[str]:
    """What is wrong with ``log_dir/trace.csv`` against ``progress.csv`` (empty: nothing)."""
    problems = []
    with open(log_dir / "trace.csv", newline="") as f:
        header = next(csv.reader(f))
    if tuple(header) != TRACE_COLUMNS:
        return [f"header {header}"]
    trace, progress = _rows(log_dir / "trace.csv"), _rows(log_dir / "progress.csv")
    keys = [(int(r["update"]), int(r["rank"])) for r in trace]
    if keys != [(u, r) for u in range(1, updates + 1) for r in range(n)]:
        return [f"rows for (update, rank) {keys}"]
    phases = TRACE_COLUMNS[3:]
    steps_before = 0
    for u, row in enumerate(progress, start=1):
        mine = [{k: float(v) for k, v in r.items()} for r in trace if int(r["update"]) == u]
        if any(t[k] < -1e-6 for t in mine for k in TRACE_COLUMNS[2:]):
            problems.append(f"update {u}: a negative time {mine}")
        totals = [sum(t[k] for k in phases) for t in mine]
        wall, cost = max(totals), min(t["wait_s"] for t in mine)
        waited = sum(t["wait_s"] - cost for t in mine) / (n * wall)
        steps = int(row["steps"]) - steps_before
        steps_before = int(row["steps"])
        # rank_figures' columns, recomputed from the trace alone (it is written to 1 us)
        expect = {
            "perf/grad_s": (max(t["gradient_s"] for t in mine), 1e-6),
            "perf/allreduce_s": (cost, 1e-6),
            "perf/wait_fraction": (waited, 4e-6 * n / wall),
            "perf/steps_per_s": (steps / wall, 4e-6 * steps / wall**2),
        }
        for key, (value, tol) in expect.items():
            if abs(float(row[key]) - value) > tol:
                problems.append(f"update {u}: {key} {row[key]} in progress.csv, {value} traced")
        # The root's clock is the one time/elapsed_s is read from.
        if mine[0]["start_s"] + totals[0] > float(row["time/elapsed_s"]) + 1e-6:
            problems.append(f"update {u}: rank 0's update ends after time/elapsed_s")
    for r in range(n):
        mine = [{k: float(v) for k, v in t.items()} for t in trace if int(t["rank"]) == r]
        for a, b in zip(mine, mine[1:], strict=False):  # a new call to train restarts at 0
            if a["start_s"] + sum(a[k] for k in phases) > b["start_s"] + 1e-6 >= a["start_s"]:
                problems.append(f"rank {r}: update {a['update']:.0f} overlaps the next")
    return problems


@pytest.mark.mpi
def test_trace_changes_nothing_and_matches_progress_csv(tmp_path):
    where = Path(mpi.broadcast_object(str(tmp_path)))  # the root's folder, on every rank
    on = ParallelPG(**CARTPOLE, log_dir=where / "on", trace=True, quiet=True).train(updates=5)
    off = ParallelPG(**CARTPOLE, log_dir=where / "off", quiet=True).train(updates=5)
    ok, problems = np.array_equal(on.net.params, off.net.params), []
    if mpi.is_root():  # the logger writes on the root; every rank has finished its updates
        problems = _trace_matches_progress(where / "on", 5, mpi.size())
        if (where / "off" / "trace.csv").exists():
            problems.append("trace.csv written with trace off")
    ok = ok and not problems
    ok = bool(mpi.allreduce_sum_(np.array([0 if ok else 1]))[0] == 0)
    assert ok, problems


@pytest.mark.mpi
def test_ga_trace_changes_nothing_and_has_a_row_per_generation_and_rank(tmp_path):
    where = Path(mpi.broadcast_object(str(tmp_path)))
    tiny = dict(env="CartPole-v1", hidden_sizes=[4], population_size=8, seed=5, quiet=True)
    on = PrunedGA(**tiny, log_dir=where / "on", trace=True).train(generations=3)
    off = PrunedGA(**tiny, log_dir=where / "off").train(generations=3)
    ok = np.array_equal(on.optimizer.population, off.optimizer.population)
    problems = []
    if mpi.is_root():
        n, trace = mpi.size(), _rows(where / "on" / "trace.csv")
        progress = _rows(where / "on" / "progress.csv")
        keys = [(int(r["update"]), int(r["rank"])) for r in trace]
        if keys != [(g, r) for g in (1, 2, 3) for r in range(n)]:
            problems.append(f"rows {keys}")
        for g, row in enumerate(progress, start=1):
            mine = [t for t in trace if int(t["update"]) == g]
            play = [float(t["play_s"]) for t in mine]  # what perf/wait_s is made from
            if abs(max(play) - min(play) - float(row["perf/wait_s"])) > 2e-6:
                problems.append(f"generation {g}: perf/wait_s {row['perf/wait_s']}, {play}")
            if any(float(t["gradient_s"]) != 0 or float(t["update_s"]) < -1e-6 for t in mine):
                problems.append(f"generation {g}: {mine}")
            if abs(float(mine[0]["wait_s"]) - float(row["perf/allreduce_s"])) > 1e-6:
                problems.append(f"generation {g}: rank 0's wait is not perf/allreduce_s")
    ok = ok and not problems
    ok = bool(mpi.allreduce_sum_(np.array([0 if ok else 1]))[0] == 0)
    assert ok, problems


def test_trace_needs_a_log_dir():
    with pytest.raises(ConfigError, match="trace"):
        ParallelPG(**CARTPOLE, trace=True, quiet=True)
    with pytest.raises(ConfigError, match="trace"):
        ParallelPG(**CARTPOLE, trace="yes", log_dir="unused", quiet=True)
    with pytest.raises(ConfigError, match="trace"):
        PrunedGA(env="CartPole-v1", trace=True, quiet=True)


def test_resume_keeps_the_trace_of_the_saved_updates(tmp_path):
    agent = ParallelPG(**CARTPOLE, log_dir=tmp_path, trace=True, quiet=True)
    agent.train(updates=2, checkpoint_path=tmp_path / "ck.npz").train(updates=4)
    back = ParallelPG.load(tmp_path / "ck.npz", log_dir=tmp_path, trace=True, quiet=True)
    back.train(updates=3)  # the run died after update 4; the checkpoint holds 2
    assert [int(r["update"]) for r in _rows(tmp_path / "trace.csv")] == [1, 2, 3]
    assert _trace_matches_progress(tmp_path, 3, 1) == []
    ParallelPG(**CARTPOLE, log_dir=tmp_path, quiet=True, overwrite=True).train(updates=1)
    assert not (tmp_path / "trace.csv").exists()  # a new run replacing it: the old trace goes


def test_timeline_plot_writes_a_png(tmp_path):
    ParallelPG(**CARTPOLE, log_dir=tmp_path, trace=True, quiet=True).train(updates=3)
    out = tmp_path / "timeline.png"
    cmd = [sys.executable, "-m", "pgmpi.plot", "--timeline", str(tmp_path), "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 5000
    proc = subprocess.run([*cmd[:3], "--timeline", str(tmp_path / "none")], capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 1 and "train with trace=True" in proc.stderr


def test_limits_note_shows_the_limit_that_stops_first():
    # 10 of 40 updates in 30 s: 90 s left; 300 of 1,000 games from 100: 2 minutes left.
    note = limits_note(30.0, updates=(0, 10, 40), games=(100, 300, 1000))
    assert note == " |  25% of 40 updates, ETA 1m30s"
    note = limits_note(30.0, minutes=0.75, updates=(0, 10, 40))  # time runs out first: 15 s
    assert note == " |  67% of 0.75 min, ETA 15s"
    # Progress towards a return is not linear: named, with no fraction and no ETA.
    assert limits_note(30.0, target_return=10, updates=(0, 1, None)) == " | target 10"
    assert limits_note(7200.0, updates=(0, 1, 3)) == " |  33% of 3 updates, ETA 4h00m"
    assert limits_note(5.0, updates=(0, 0, None), games=(0, 0, 9)) == " |   0% of 9 games, ETA ?"
    assert limits_note(5.0, updates=(0, 3, None)) == ""
    assert limits_note(5.0, minutes=0) == " | 100% of 0 min, ETA 0s"  # one update, then stop


def test_progress_lines_show_the_fraction_done(capsys):
    ParallelPG(**CARTPOLE).train(updates=4, target_return=500)
    lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith("upd")]
    assert len(lines) == 4
    assert lines[0].endswith(" | target 500") and " 25% of 4 updates, ETA " in lines[0]
    assert " 100% of 4 updates, ETA 0s | target 500" in lines[-1]


def test_ga_lines_show_the_fraction_of_generations_done(capsys):
    ga = PrunedGA(env="CartPole-v1", hidden_sizes=[4], population_size=8, seed=1)
    ga.train(generations=2)
    lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith("gen")]
    assert len(lines) == 2
    assert " |  50% of 2 generations, ETA " in lines[0], lines
    assert lines[1].endswith(" | 100% of 2 generations, ETA 0s"), lines
