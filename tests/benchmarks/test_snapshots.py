"""Tier 1: benchmarks/snapshots.py, the search for the first snapshot at each level, on known
means, the cache that keeps every evaluation, and where a screen's results go."""

import argparse
import json
from pathlib import Path

import common
from snapshots import Evaluations, add_flags, first_reaching, parse, search, table


def test_search_finds_each_first_crossing_of_a_step_curve_with_few_calls():
    # 60 snapshots of a GA run: the best network changes now and then, so the means are
    # steps; the first crossings of 0, 100 and 200 are at snapshots 13, 29 and 41.
    steps = {0: -90.0, 7: -20.0, 13: 5.0, 20: 60.0, 29: 140.0, 35: 120.0, 41: 230.0, 55: 260.0}
    means, mean = [], None
    for i in range(60):
        mean = steps.get(i, mean)
        means.append(mean)
    gens = [2 * (i + 1) for i in range(60)]
    asked = []

    def score(g):
        asked.append(g)
        return means[g // 2 - 1]

    found = search(gens, score, (0, 100, 200, 300), coarse=5)
    assert found == {0: gens[13], 100: gens[29], 200: gens[41], 300: None}
    # 13 coarse snapshots (0, 5, ..., 55 and 59), then at most log2(5) < 3 a crossing
    assert len(asked) == len(set(asked)) <= 13 + 3 * 3 < len(gens) / 2
    # a dip below a level after crossing it does not move the first crossing
    assert search(gens, score, (130,), coarse=1)[130] == gens[29]


def test_evaluations_are_cached_and_snapshots_sharing_a_network_are_played_once(tmp_path):
    run = tmp_path / "run"
    gens = [1, 2, 3, 4, 5, 6]
    network = {1: 1, 2: 1, 3: 3, 4: 3, 5: 3, 6: 6}  # generation -> the one played for it
    means = {1: -50.0, 3: 40.0, 6: 150.0}
    played = []

    def play(snapshot):
        played.append(snapshot.name)
        g = int(snapshot.stem.removeprefix("gen_"))
        return dict(mean=means[g], ci95=[means[g] - 5, means[g] + 5], episodes=7)

    def path_of(g):
        return run / "snapshots" / f"gen_{network[g]:05d}.npz"

    cache = tmp_path / "cache.json"
    args = argparse.Namespace(levels=[0, 100, 200], coarse=1)
    found, evaluated = first_reaching(gens, path_of, Evaluations(cache, play, 7), args)
    assert found == {"0": 3, "100": 6, "200": None}
    assert sorted(played) == ["gen_00001.npz", "gen_00003.npz", "gen_00006.npz"]
    assert sorted(evaluated) == gens and evaluated[4] == evaluated[3]
    assert len(json.loads(cache.read_text())) == 3
    again = Evaluations(cache, play, 7)  # read back: nothing is played again
    assert first_reaching(gens, path_of, again, args) == (found, evaluated)
    assert again.new == 0 and len(played) == 3
    other = Evaluations(cache, play, 8)  # another episode count is another evaluation
    other(path_of(1))
    assert other.new == 1 and len(played) == 4


def test_table_has_a_row_per_run_and_level():
    row = dict(generation=4, steps=1234, mean=101.25, ci95=[90.0, 112.5])
    result = dict(
        episodes=100,
        runs={"seed0": dict(reached={"0": row, "300": None}, generations=9)},
    )
    lines = table(result, [("generation", lambda r: str(r["generation"]))]).splitlines()
    assert lines[0] == "| run | level | generation | mean of 100 episodes [95% interval] |"
    assert lines[1] == "|---|---|---|---|"
    assert lines[2] == "| seed0 | +0 | 4 | +101.2 [+90.0, +112.5] |"
    assert lines[3] == "| seed0 | +300 | not reached in 9 generations | |"


def test_evaluations_made_before_count_where_the_grid_would_skip_them(tmp_path):
    # a dip: only snapshot 2 of 6 reaches 0 before snapshot 6; coarse=5 asks 1 and 6 only
    gens, means = [1, 2, 3, 4, 5, 6], {1: -50.0, 2: 10.0, 3: -40.0, 4: -40.0, 5: -40.0, 6: 50.0}
    assert search(gens, means.get, (0,), coarse=5) == {0: 6}
    assert search(gens, means.get, (0,), coarse=5, known=[2]) == {0: 2}

    def play(snapshot):
        m = means[int(snapshot.stem.removeprefix("gen_"))]
        return dict(mean=m, ci95=[m - 5, m + 5], episodes=7)

    def path_of(g):
        return tmp_path / "snapshots" / f"gen_{g:05d}.npz"

    evaluations = Evaluations(tmp_path / "cache.json", play, 7)
    evaluations(path_of(2))  # an earlier call's (a screen's, or one a carry kept)
    args = argparse.Namespace(levels=[0], coarse=5)
    found, evaluated = first_reaching(gens, path_of, evaluations, args)
    assert found == {"0": 2} and sorted(evaluated) == [1, 2, 6] and evaluations.new == 3


def test_a_screens_runs_folder_keeps_its_result_and_cache_the_default_one_the_tables(tmp_path):
    p = argparse.ArgumentParser()
    kept = common.RECORDINGS / "x_time_to_score.json"
    add_flags(p, common.ROOT / "runs" / "x-tts", kept, "x_cache.json")
    default = parse(p, [])
    assert (default.json, default.cache) == (kept, common.RESULTS / "x_cache.json")
    screen = parse(p, ["--runs", str(tmp_path)])
    assert (screen.json, screen.cache) == (tmp_path / "time_to_score.json", tmp_path / "cache.json")
    given = parse(p, ["--runs", str(tmp_path), "--json", "a.json", "--cache", "b.json"])
    assert (given.json, given.cache) == (Path("a.json"), Path("b.json"))
