"""Tier 3: what a new user hits with the examples on 2 ranks, each refused or handled cleanly.

Ctrl-C saves a checkpoint at an update boundary; --resume refuses another env's checkpoint
and names the flags it ignores; a log dir that is a file or held by another run is one clear
error on every rank; capped games give the same results on any rank count.
"""

import csv
import os
import signal
import time

import pytest

from pgmpi import ParallelPG, PrunedGA, checkpoint
from tests.helpers.launch import holding_log_dir, run_mpi, started_mpi, wait_for

pytestmark = pytest.mark.launcher
PONG = ["examples/pong.py", "--preset", "karpathy", "--slots", "2", "--hidden-size", "8"]


def _rows(path) -> int:
    return len(list(csv.DictReader(open(path)))) if path.exists() else 0


def _one_clear_error(proc, text: str) -> None:
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    assert proc.stderr.count(text) == 1, proc.stderr
    for noise in ("Traceback", "MPI_Abort", "aborting"):
        assert noise not in proc.stderr, proc.stderr


def test_ctrl_c_saves_a_checkpoint_at_the_next_update_boundary(tmp_path):
    ck, log = tmp_path / "checkpoint.npz", tmp_path / "progress.csv"
    with started_mpi(2, [*PONG, "--checkpoint-every", "3", "--log-dir", str(tmp_path)]) as job:
        wait_for(ck, job, timeout=300)
        periodic = checkpoint.load(ck, "ParallelPG")[1]["update"]
        periodic_mtime = ck.stat().st_mtime_ns
        deadline = time.monotonic() + 120
        while _rows(log) <= periodic:  # an update or more past the periodic checkpoint
            assert job.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        os.killpg(job.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        out, err = job.communicate(timeout=120)
    assert job.returncode == 130, err[-3000:]
    assert err.count("pgmpi: interrupted") == 1 and "Traceback" not in err, err
    saved = [line for line in out.splitlines() if line.startswith("interrupted: saved")]
    assert len(saved) == 1, out
    update = int(saved[0].rsplit(" ", 1)[1])
    assert update > periodic and ck.stat().st_mtime_ns > periodic_mtime
    agent = ParallelPG.load(ck, quiet=True)
    assert agent.update == update == _rows(log) and agent.episodes == 2 * update
    print(f"periodic checkpoint at update {periodic}, saved on interrupt at update {update}")


def test_resume_refuses_a_checkpoint_of_another_env_and_changes_nothing(tmp_path):
    ck = tmp_path / "checkpoint.npz"
    ParallelPG(env="CartPole-v1", hidden_size=8, slots=2, steps_per_slot=1, quiet=True).train(
        updates=1, checkpoint_path=ck
    )
    before = ck.read_bytes()
    proc = run_mpi(2, ["examples/pong.py", "--resume", "--log-dir", str(tmp_path)], timeout=120)
    _one_clear_error(proc, "was trained on 'CartPole-v1', not 'ALE/Pong-v5'")
    assert ck.read_bytes() == before and not (tmp_path / "progress.csv").exists()


def test_cartpole_example_does_not_replace_a_pong_checkpoint(tmp_path):
    ck = tmp_path / "checkpoint.npz"
    ParallelPG(hidden_size=8, slots=1, steps_per_slot=10, quiet=True).train(
        updates=1, checkpoint_path=ck
    )
    before = ck.read_bytes()
    proc = run_mpi(2, ["examples/cartpole.py", "--log-dir", str(tmp_path)], timeout=120)
    _one_clear_error(proc, "holds a ParallelPG run on 'ALE/Pong-v5'; this ParallelPG run on "
                     "'CartPole-v1' would replace it")  # fmt: skip
    assert ck.read_bytes() == before and not (tmp_path / "progress.csv").exists()


def test_resume_names_the_flags_it_ignores(tmp_path):
    first = run_mpi(2, [*PONG, "--updates", "1", "--log-dir", str(tmp_path)], timeout=300)
    assert first.returncode == 0, first.stderr[-3000:]
    args = ["--updates", "2", "--seed", "7", "--slots", "4", "--hidden-size", "8"]
    proc = run_mpi(2, ["examples/pong.py", "--resume", *args, "--log-dir", str(tmp_path)],
                   timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    warning = (
        "warning: --resume continues with the checkpoint's settings; ignored: "
        "--seed 7 (the checkpoint's: 0), --slots 4 (the checkpoint's: 2)"
    )
    assert proc.stdout.count(warning) == 1, proc.stdout  # --hidden-size 8 agrees: not named
    assert ParallelPG.load(tmp_path / "checkpoint.npz", quiet=True).update == 2  # limit applied


def test_bipedal_walker_resume_refuses_cartpole_and_names_ignored_flags(tmp_path):
    ga = PrunedGA(env="CartPole-v1", hidden_sizes=[2], population_size=4,
                  episodes_per_individual=1, quiet=True)  # fmt: skip
    ga.train(generations=1, checkpoint_path=tmp_path / "cartpole" / "checkpoint.npz")
    walker = ["examples/bipedal_walker.py", "--resume", "--log-dir"]
    refused = run_mpi(2, [*walker, str(tmp_path / "cartpole")], timeout=120)
    _one_clear_error(refused, "was trained on 'CartPole-v1', not 'BipedalWalker-v3'")
    small = ["--population-size", "6", "--episodes-per-individual", "1", "--hidden-sizes", "8"]
    first = run_mpi(2, ["examples/bipedal_walker.py", *small, "--generations", "1",
                        "--log-dir", str(tmp_path / "w")], timeout=300)  # fmt: skip
    assert first.returncode == 0, first.stderr[-3000:]
    resumed = run_mpi(2, [*walker, str(tmp_path / "w"), *small, "--seed", "4",
                          "--generations", "2"], timeout=300)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    warning = "ignored: --seed 4 (the checkpoint's: 0)\n"
    assert resumed.stdout.count(warning) == 1, resumed.stdout
    assert PrunedGA.load(tmp_path / "w" / "checkpoint.npz", quiet=True).generation == 2


def test_a_log_dir_that_is_a_file_is_one_clear_error_on_two_ranks(tmp_path):
    path = tmp_path / "runs"
    path.write_text("precious")
    proc = run_mpi(2, [*PONG, "--updates", "1", "--log-dir", str(path)], timeout=120)
    _one_clear_error(proc, f"'{path}' exists and is not a folder")  # checkpoint or log dir
    assert path.read_text() == "precious"


def test_a_second_run_in_the_same_log_dir_is_refused_naming_the_first(tmp_path):
    with holding_log_dir(tmp_path) as first:
        proc = run_mpi(2, [*PONG, "--updates", "1", "--log-dir", str(tmp_path)], timeout=120)
    _one_clear_error(proc, f"is in use by another run (host {os.uname().nodename}, pid {first.pid}")
    assert not (tmp_path / "progress.csv").exists()
    again = run_mpi(2, [*PONG, "--updates", "1", "--log-dir", str(tmp_path)], timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]  # the first run's lock died with it


def test_capped_pong_games_are_the_same_on_one_and_two_ranks(tmp_path):
    script = ["tests/scripts/pg_run.py", "--env", "ALE/Pong-v5", "--slots", "3"]
    cap = ["--max-episode-steps", "70", "--updates", "4"]
    runs = {n: run_mpi(n, [*script, *cap, "--log-dir", str(tmp_path / str(n))]) for n in (1, 2)}
    for proc in runs.values():
        assert proc.returncode == 0, proc.stderr[-3000:]
    hashes = {n: [x for x in p.stdout.split() if len(x) == 64] for n, p in runs.items()}
    assert hashes[1] == hashes[2] and len(hashes[1]) == 1, hashes
    logs = [
        [{k: v for k, v in r.items() if not k.startswith(("perf/", "time/"))}
         for r in csv.DictReader(open(tmp_path / str(n) / "progress.csv"))]
        for n in (1, 2)
    ]  # fmt: skip
    assert logs[0] == logs[1]
    assert [int(r["charts/capped_games"]) for r in logs[0]] == [0, 3, 0, 3]  # 40-step pieces
