"""Tier 3: benchmarks/ga_time_to_score.py end to end on a tiny walker: trained in 2 chunks
on 2 ranks with mpirun, a snapshot after each, each network evaluated under mpirun, the
tables and the figure; called again, it trains and plays nothing; with a larger
--generations, it resumes the run for one more chunk, and a branch of it goes on; a time
limit ends a run within a chunk; a --hardcore run resumes on its env; --also tables an
earlier result's run beside."""

import json
import subprocess
import sys

import pytest

from tests.helpers.launch import ROOT

pytestmark = pytest.mark.launcher


def test_the_benchmark_trains_in_chunks_evaluates_each_network_once_and_goes_on(tmp_path):
    runs = tmp_path / "runs"
    files = ["--runs", str(runs), "--cache", str(tmp_path / "cache.json")]
    files += ["--json", str(tmp_path / "result.json"), "--out", str(tmp_path / "figure.png")]
    tiny = ["--", "--population-size", "4", "--episodes-per-individual", "1", "--hidden-sizes", "2"]

    def bench(generations: int, seed: int = 3, *more: str) -> str:
        flags = ["--run", str(seed), "--every", "1", "--generations", str(generations), *more]
        command = [sys.executable, "benchmarks/ga_time_to_score.py", *flags, "--episodes", "5"]
        proc = subprocess.run(
            [*command, *files, *tiny], cwd=ROOT, capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        return proc.stdout

    out = bench(2)
    run = runs / "seed3"
    earlier = tmp_path / "earlier.json"
    earlier.write_text((tmp_path / "result.json").read_text())  # for --also below
    assert sorted(p.name for p in (run / "snapshots").iterdir()) == [
        "gen_00001.npz",
        "gen_00002.npz",
    ]
    assert (run / "chunks.log").read_text().count(" end gen ") == 2
    assert "--resume" not in (run / "train.log").read_text().split("\n")[0]
    result = json.loads((tmp_path / "result.json").read_text())
    seed = result["runs"]["seed3"]
    assert result["episodes"] == 5 and seed["generations"] == 2
    assert 1 <= len(json.loads((tmp_path / "cache.json").read_text())) <= 2
    assert seed["final"]["connections"] > seed["final"]["kept"] > 0
    assert "| seed3 | +0 |" in out and "| seed3 | 2, " in out
    assert (tmp_path / "figure.png").stat().st_size > 0
    # again: nothing trained, nothing played
    out = bench(2)
    assert "0 new evaluation(s)" in out and "training seed3" not in out
    assert (run / "chunks.log").read_text().count(" end gen ") == 2
    # one more generation: the run resumes from its checkpoint
    out = bench(3)
    assert "training seed3 to generation 3" in out
    assert (run / "snapshots" / "gen_00003.npz").exists()
    assert len((run / "progress.csv").read_text().splitlines()) == 1 + 3
    # a branch of it (benchmarks/branch.py, no snapshots folder yet) goes on in the same way
    branch = [sys.executable, "benchmarks/branch.py", str(run), str(runs / "seed7")]
    subprocess.run([*branch, "max_episode_steps=50"], cwd=ROOT, check=True, timeout=60)
    assert "training seed7 to generation 4" in bench(4, 7)
    assert sorted(p.name for p in (runs / "seed7" / "snapshots").iterdir()) == [
        "gen_00003.npz",
        "gen_00004.npz",
    ]
    # a time limit ends a run at the end of the generation under way, even within a chunk
    bench(5, 4, "--every", "3", "--minutes", "0.0001")
    assert [p.name for p in (runs / "seed4" / "snapshots").iterdir()] == ["gen_00001.npz"]
    # an env-step budget ends a run after the chunk that passes it; a screen evaluates only
    # the snapshots within the budget (here none) and draws against env steps only
    bench(10, 5, "--env-steps", "1")
    assert [p.name for p in (runs / "seed5" / "snapshots").iterdir()] == ["gen_00001.npz"]
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["env_steps"] == 1 and result["runs"]["seed5"]["final"] is None
    assert result["runs"]["seed3"]["final"] is None  # its snapshots too are past 1 env step
    assert (tmp_path / "figure.png").stat().st_size > 0
    # a BipedalWalkerHardcore-v3 run: --hardcore after --, given again on resume (else the
    # second chunk would refuse the checkpoint, trained on another env)
    files[1] = str(tmp_path / "hardcore")  # --runs
    tiny.append("--hardcore")
    bench(2, 6, "--also", f"{earlier}:seed3")  # and an earlier result's run beside it
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["runs"]["seed3"] == json.loads(earlier.read_text())["runs"]["seed3"]
    assert result["runs"]["seed6"]["env"] == "BipedalWalkerHardcore-v3"
    assert result["runs"]["seed6"]["generations"] == 2
    log = (tmp_path / "hardcore" / "seed6" / "train.log").read_text()
    assert log.count("env BipedalWalkerHardcore-v3") == 2  # both chunks' headers


def test_a_screens_folder_keeps_its_result_and_cache_and_leaves_the_tables_alone(tmp_path):
    kept = ROOT / "benchmarks" / "results" / "ga_time_to_score.json"
    before = kept.read_bytes() if kept.exists() else None
    runs = tmp_path / "screen"  # no --json, no --cache: both go beside the runs
    flags = ["--run", "3", "--every", "1", "--generations", "1", "--episodes", "5"]
    flags += ["--runs", str(runs), "--out", str(tmp_path / "figure.png")]
    tiny = ["--", "--population-size", "4", "--episodes-per-individual", "1", "--hidden-sizes", "2"]
    command = [sys.executable, "benchmarks/ga_time_to_score.py", *flags, *tiny]
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (
        json.loads((runs / "time_to_score.json").read_text())["runs"]["seed3"]["generations"] == 1
    )
    assert len(json.loads((runs / "cache.json").read_text())) == 1
    assert f"wrote {runs / 'time_to_score.json'}" in proc.stdout
    assert (kept.read_bytes() if kept.exists() else None) == before
