"""Tier 1: benchmarks/es_time_to_score.py, its search on known scores and its reading of a
tiny real run made as the driver makes them (chunks resumed in one log dir, a snapshot
after each), evaluated in this process."""

import argparse
import csv
import json
import shutil

import pytest
from es_time_to_score import table, time_to_score
from snapshots import Evaluations, chunk_minutes, search

from pgmpi import ParallelES


def test_search_bisects_to_the_first_snapshot_at_each_level_and_scores_none_twice():
    gens = list(range(20, 420, 20))  # 20 snapshots, scored -100, -80, ..., +280
    means = {g: -100 + 20 * i for i, g in enumerate(gens)}
    asked = []

    def score(g):
        asked.append(g)
        return means[g]

    found = search(gens, score, (0, 100, 200, 300), coarse=5)
    assert found == {0: gens[5], 100: gens[10], 200: gens[15], 300: None}
    # coarse: snapshots 0, 5, 10, 15 and 19; then 3 a level (2, 3, 4; 7, 8, 9; 12, 13, 14)
    assert len(asked) == len(set(asked)) == 5 + 3 * 3
    # not monotone: the bisection lands on a crossing, and what it evaluated decides
    bumpy = dict(zip(gens, [-50, 10, -50, -50, -50, 20, 30, 40, 50, 60] * 2, strict=True))
    assert search(gens, bumpy.get, (0,), coarse=5)[0] == gens[5]  # not gens[1]
    assert search(gens, bumpy.get, (0,), coarse=1)[0] == gens[1]  # every one evaluated
    assert search([], bumpy.get, (0,), coarse=5) == {0: None}


def test_chunk_minutes_sum_the_finished_chunks(tmp_path):
    (tmp_path / "chunks.log").write_text(
        "1000.0 start gen 20\n1600.0 end gen 20\n1700.5 start gen 40\n"
        "chunk failed rc 137\n1800.0 start gen 40\n2400.0 end gen 40\n2500 start gen 60\n"
    )
    assert chunk_minutes(tmp_path) == {20: 10.0, 40: 20.0}  # 60: still running


TINY = dict(
    env="CartPole-v1",
    hidden_sizes=[4],
    population_size=6,
    noise_table_size=20_000,
    eval_episodes=2,
    seed=1,
)


def _run(folder, chunks=(2, 4, 6)):
    """A run as the driver makes one: each chunk resumes the checkpoint to G generations."""
    (folder / "snapshots").mkdir(parents=True)
    log, t = [], 1_000_000.0
    for g in chunks:
        log.append(f"{t} start gen {g}")
        path = folder / "checkpoint.npz"
        run = dict(log_dir=folder, quiet=True)
        es = ParallelES.load(path, **run) if path.exists() else ParallelES(**TINY, **run)
        es.train(generations=g, checkpoint_path=path)
        t += 30.0 * g  # minutes of wall time that the log, not the clock, says
        log.append(f"{t} end gen {g}")
        shutil.copy(path, folder / "snapshots" / f"gen_{g:05d}.npz")
    (folder / "chunks.log").write_text("\n".join(log) + "\n")
    return folder


def test_a_tiny_run_is_read_evaluated_once_and_tabled(tmp_path):
    run = _run(tmp_path / "seed1")
    played = []

    def play(snapshot):
        played.append(snapshot.name)
        score = ParallelES.load(snapshot, quiet=True).evaluate(5)
        return dict(mean=float(score), ci95=list(score.ci95), episodes=5)

    args = argparse.Namespace(levels=[-1e9, 1e9], coarse=2, rate=100.0, episodes=5)
    cache = tmp_path / "cache.json"
    out = time_to_score(run, Evaluations(cache, play, 5), args)
    assert sorted(played) == ["gen_00002.npz", "gen_00006.npz"]  # coarse: 0, 2 and the last
    first = out["reached"]["-1e+09"]
    rows = list(csv.DictReader(open(run / "progress.csv")))
    assert first["generation"] == 2 and first["steps"] == int(rows[1]["steps"])
    assert first["wall_minutes"] == pytest.approx(1.0)  # 60 s: the chunk to generation 2
    assert first["idle_minutes"] == pytest.approx(first["steps"] / 100 / 60)
    assert out["reached"]["1e+09"] is None and out["generations"] == 6
    assert set(out["evaluations"]) == {"2", "6"} and len(out["curve"]) == 6
    # again, from the cache: nothing played twice, the same result
    again = Evaluations(cache, play, 5)
    assert time_to_score(run, again, args) == out and again.new == 0 and len(played) == 2
    assert len(json.loads(cache.read_text())) == 2
    result = dict(rate=100.0, episodes=5, runs={"seed1": out})
    assert "| seed1 | -1e+09 | 2 |" in table(result) and "not reached in 6" in table(result)
