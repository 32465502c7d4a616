"""Tier 1: benchmarks/ga_time_to_score.py on a tiny real PrunedGA run made as its driver
makes them (chunks resumed in one log dir, a snapshot after each), evaluated in this
process by the benchmark's own worker."""

import argparse
import json
import shutil

import pytest
from ga_time_to_score import (
    final_table,
    label,
    parse,
    plot,
    record,
    styles,
    table,
    time_to_score,
)
from snapshots import Evaluations, carried, carry, log_chunk, meta, snapshot_path, worker

from pgmpi import PrunedGA

TINY = dict(env="CartPole-v1", hidden_sizes=[3], population_size=6, episodes_per_individual=2)


def _run(folder, seed, chunks, fresh=True):
    """A run as ``train`` makes one: each chunk resumes the checkpoint to G generations."""
    (folder / "snapshots").mkdir(parents=True, exist_ok=not fresh)
    for g in chunks:
        log_chunk(folder, "start", g)
        path = folder / "checkpoint.npz"
        run = dict(log_dir=folder, quiet=True)
        ga = PrunedGA.load(path, **run) if path.exists() else PrunedGA(**TINY, seed=seed, **run)
        ga.train(generations=g, checkpoint_path=path)
        log_chunk(folder, "end", g)
        shutil.copy(path, snapshot_path(folder, g))
    return folder


def test_a_tiny_run_is_evaluated_once_per_network_and_tabled(tmp_path, capsys):
    run = _run(tmp_path / "seed2", seed=2, chunks=range(1, 9))
    played = []

    def play(snapshot):
        played.append(snapshot.name)
        capsys.readouterr()
        worker(PrunedGA, str(snapshot), 5, record)  # as under mpirun, on 1 rank
        return json.loads(capsys.readouterr().out.splitlines()[-1])

    args = argparse.Namespace(levels=[-1e9, 1e9], coarse=1, episodes=5, env_steps=None, rate=None)
    cache = tmp_path / "cache.json"
    out = time_to_score(run, Evaluations(cache, play, 5), args)
    found = [meta(snapshot_path(run, g))["best_found"] for g in range(1, 9)]
    networks = {json.dumps(f, sort_keys=True) for f in found}
    assert len(played) == len(networks) == len(out["evaluations"])  # each network once
    assert len(networks) < 8, "no stall in this run: pick a seed where the best stays"
    first = out["reached"]["-1e+09"]
    assert first["snapshot"] == 1 and first["generation"] == 0  # found in generation 0
    assert first["steps"] == found[0]["steps"] and first["episodes"] == 12
    assert first["minutes"] == pytest.approx(found[0]["seconds"] / 60)
    assert out["reached"]["1e+09"] is None and out["generations"] == 8
    final = out["final"]
    assert final["generations"] == 8 and final["generation"] == found[-1]["generation"]
    assert final["kept"] <= final["connections"] and 0 <= final["above_300"] <= 5
    assert final["wall_minutes"] is not None and len(out["curve"]) == 9  # 8 rows and the last
    # again, from the cache: nothing played twice, the same result
    again = Evaluations(cache, play, 5)
    assert time_to_score(run, again, args) == out and again.new == 0
    result = dict(episodes=5, ranks=1, levels=args.levels, runs={"seed2": out})
    assert "| seed2 | -1e+09 | 0 | " in table(result)
    assert "not reached in 8 generations" in table(result)
    assert f"| seed2 | 8, {final['train_minutes']:.1f} (" in final_table(result)
    assert plot(result, tmp_path / "f.png").stat().st_size > 0
    # --rate: idle minutes, the env steps over the rate (nothing played again)
    rated = time_to_score(run, again, argparse.Namespace(**{**vars(args), "rate": 1000.0}))
    first = rated["reached"]["-1e+09"]
    assert first["minutes"] == pytest.approx(found[0]["steps"] / 1000 / 60) and again.new == 0
    assert first["core_hours"] == pytest.approx(2 * first["minutes"] / 60)
    steps = meta(snapshot_path(run, 8))["steps"]
    assert rated["final"]["train_minutes"] == pytest.approx(steps / 1000 / 60)
    result = dict(result, rate=1000.0, runs={"seed2": rated})
    assert "idle minutes (1,000 env steps/s)" in table(result) and "idle" in final_table(result)
    assert plot(result, tmp_path / "g.png").stat().st_size > 0


def test_run_specs_and_their_names():
    assert parse("0") == ("seed0", None, 0)
    assert parse("synaptolytic:12") == ("synaptolytic-seed12", "synaptolytic", 12)
    for bad in ("x", "nope:1", "synaptolytic:", "-1"):
        with pytest.raises(SystemExit, match="PRESET"):
            parse(bad)
    assert label("seed0") == "seed 0"
    assert label("synaptolytic-seed1") == "synaptolytic preset, seed 1"


def test_a_screens_figure_colours_settings_and_marks_seeds():
    runs = ["seed0", "seed1", "synaptolytic-seed0"]  # a table: a colour and a name per run
    assert styles(runs) == ({r: (f"C{k}", "o", label(r)) for k, r in enumerate(runs)}, {})
    runs = ["mut03-seed0", "mut03-seed2", "h16-seed0", "h16-seed2", "seed0", "seed2"]
    style, seeds = styles(runs)
    assert seeds == {"0": "o", "2": "s"}
    assert style["mut03-seed0"] == ("C0", "o", "mut03") and style["mut03-seed2"] == (
        "C0",
        "s",
        None,
    )
    assert style["h16-seed2"] == ("C1", "s", None) and style["seed0"] == ("C2", "o", "default")


def test_a_carried_run_tables_as_before_and_resumes_playing_only_new_snapshots(tmp_path, capsys):
    run = _run(tmp_path / "runs" / "seed2", seed=2, chunks=range(1, 7))
    played = []

    def play(snapshot):
        played.append(snapshot)
        capsys.readouterr()
        worker(PrunedGA, str(snapshot), 5, record)
        return json.loads(capsys.readouterr().out.splitlines()[-1])

    args = argparse.Namespace(levels=[-1e9, 1e9], coarse=2, episodes=5, env_steps=None, rate=None)
    out = time_to_score(run, Evaluations(tmp_path / "cache.json", play, 5), args)
    dest = carry(run, tmp_path / "kept" / "seed2", tmp_path / "cache.json")
    files = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*.npz"))
    assert files == ["checkpoint.npz", "snapshots/gen_00006.npz"]  # the rest in carried.json
    assert (run / ".lock").exists() and not (dest / ".lock").exists()  # the run's, not the copy's
    n = len(played)
    # the copy, on a new cache: the same result, nothing played again
    copy = Evaluations(tmp_path / "new-cache.json", play, 5)
    assert time_to_score(dest, copy, args) == out and len(played) == n
    # cut at a snapshot carried without its file or an evaluation: the last one played ends it
    cut = max(g for g in range(1, 6) if str(g) not in out["evaluations"])
    before = max(int(g) for g in out["evaluations"] if int(g) < cut)
    steps = carried(dest)[cut]["meta"]["steps"]
    at_cut = time_to_score(dest, copy, argparse.Namespace(**{**vars(args), "env_steps": steps}))
    assert at_cut["final"]["snapshot"] == before and len(played) == n
    # it resumes from its checkpoint; only a new network is played: snapshot 7 keeps the
    # best of 6 (carried, with its evaluation), 8 has a new one
    _run(dest, seed=2, chunks=[7, 8], fresh=False)
    more = time_to_score(dest, copy, args)
    found = [meta(snapshot_path(dest, g))["best_found"]["generation"] for g in (6, 7, 8)]
    assert found == [5, 5, 7], "pick a seed whose best stays at 7 and changes at 8"
    assert [p.name for p in played[n:]] == ["gen_00008.npz"]
    assert more["generations"] == more["final"]["generations"] == 8
    assert more["reached"]["-1e+09"] == out["reached"]["-1e+09"]
    # carried again: what was carried stays carried, and nothing is played
    again = carry(dest, tmp_path / "again" / "seed2", tmp_path / "new-cache.json")
    assert sorted(carried(again)) == list(range(1, 9))
    assert time_to_score(again, copy, args) == more and len(played) == n + 1
