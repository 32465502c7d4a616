"""Tier 3: the examples and the guarantees, launched with mpirun in a subprocess."""

import csv
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from pgmpi import ParallelPG
from tests.helpers.launch import run_mpi, started_mpi, wait_for

pytestmark = pytest.mark.launcher
SCRIPT = "tests/scripts/pg_run.py"


def _hash(proc) -> str:
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [line.split()[1] for line in proc.stdout.splitlines() if line.startswith("HASH")][0]


def test_pong_example_runs_on_two_ranks(tmp_path):
    small = ["--preset", "karpathy", "--slots", "2", "--hidden-size", "8"]
    proc = run_mpi(
        2, ["examples/pong.py", *small, "--episodes", "2", "--log-dir", str(tmp_path)], timeout=240
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ranks 2" in proc.stdout and "upd     1" in proc.stdout
    assert "2 slots (set) of 1 steps, then to the end of a game | rmsprop lr 0.0001" in proc.stdout
    assert ParallelPG.load(tmp_path / "checkpoint.npz", quiet=True).episodes == 2
    resumed = run_mpi(
        2,
        ["examples/pong.py", "--episodes", "4", "--log-dir", str(tmp_path), "--resume"],
        timeout=240,
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "upd     2" in resumed.stdout
    assert ParallelPG.load(tmp_path / "checkpoint.npz", quiet=True).episodes == 4


def _rows(path):
    return list(csv.DictReader(open(path)))


def test_every_rank_plays_in_every_update_on_eight_ranks(tmp_path):
    """The example's defaults on 8 ranks: 16 slots, two per rank, and no rank idle."""
    proc = run_mpi(
        8, ["examples/pong.py", "--updates", "2", "--log-dir", str(tmp_path)], timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ranks 8" in proc.stdout and "16 slots (default for 8 ranks)" in proc.stdout
    rows = _rows(tmp_path / "progress.csv")
    assert len(rows) == 2
    assert all(float(r["perf/rank_steps_per_s_min"]) > 0 for r in rows), rows
    assert all(int(r["steps"]) >= 16 * 512 for r in rows)


def test_fewer_slots_than_ranks_is_a_printed_warning(tmp_path):
    small = ["--preset", "karpathy", "--slots", "2", "--hidden-size", "8", "--updates", "1"]
    proc = run_mpi(3, ["examples/pong.py", *small, "--log-dir", str(tmp_path)], timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()  # the header, then the warning on a line of its own
    assert lines[0].endswith("| update 0"), proc.stdout
    assert lines.count("warning: 1 of 3 ranks idle (2 slots): use slots >= 3") == 1, proc.stdout
    assert float(_rows(tmp_path / "progress.csv")[0]["perf/rank_steps_per_s_min"]) == 0


PONG = ["--env", "ALE/Pong-v5", "--slots", "3"]


def test_same_pong_parameters_on_one_two_and_three_ranks(tmp_path):
    runs = {n: run_mpi(n, [SCRIPT, *PONG, "--updates", "4", "--log-dir", str(tmp_path / str(n))])
            for n in (1, 2, 3)}  # fmt: skip
    hashes = {n: _hash(proc) for n, proc in runs.items()}
    assert len(set(hashes.values())) == 1, hashes
    logs = [_learning_columns(tmp_path / str(n) / "progress.csv") for n in (1, 2, 3)]
    assert len(logs[0]) == 4 and all(log == logs[0] for log in logs)


def test_pong_v0_dynamics_same_parameters_and_evaluation_on_one_two_and_three_ranks(tmp_path):
    """Drawn frame skips (2-4, gym's Pong-v0) and sticky actions come from each game's own
    stream: the rank count changes neither training nor the evaluation's mean and interval."""
    v0 = [*PONG, "--frame-skip", "2-4", "--updates", "3", "--evaluate", "3"]
    runs = {n: run_mpi(n, [SCRIPT, *v0, "--log-dir", str(tmp_path / str(n))], timeout=400)
            for n in (1, 2, 3)}  # fmt: skip
    hashes = {n: _hash(proc) for n, proc in runs.items()}
    assert len(set(hashes.values())) == 1, hashes
    evals = {
        n: [ln for ln in p.stdout.splitlines() if ln.startswith("EVAL")] for n, p in runs.items()
    }
    assert len(evals[1]) == 1 and "95% CI, 3 episodes, sticky, frame skip 2-4" in evals[1][0]
    assert evals[1] == evals[2] == evals[3], evals
    plain = run_mpi(1, [SCRIPT, *PONG, "--updates", "3", "--log-dir", str(tmp_path / "4")])
    assert _hash(plain) != hashes[1]  # the drawn skips changed the games


def test_pong_v0_dynamics_resume_exactly_mid_game_on_another_rank_count(tmp_path):
    v0 = [*PONG, "--frame-skip", "2-4"]
    whole = _hash(run_mpi(1, [SCRIPT, *v0, "--updates", "4", "--log-dir", str(tmp_path / "a")]))
    first = run_mpi(2, [SCRIPT, *v0, "--updates", "2", "--log-dir", str(tmp_path / "b")])
    assert first.returncode == 0, first.stderr[-3000:]
    saved = ParallelPG.load(tmp_path / "b" / "checkpoint.npz", quiet=True)
    assert any(g.live for g in saved.games.values())
    rest = run_mpi(3, [SCRIPT, *v0, "--updates", "4", "--log-dir", str(tmp_path / "b"), "--resume"])
    assert _hash(rest) == whole


def test_a_learned_baseline_resumes_exactly_mid_game_on_another_rank_count(tmp_path):
    """With a value output: 4 updates on 1 rank, or 2 on 2 ranks then 2 more on 3 from the
    checkpoint, give the same parameters, optimizer state and logged scores, and not those
    of the run without the baseline."""
    valued = [*PONG, "--value-baseline", "0.5"]
    whole = run_mpi(1, [SCRIPT, *valued, "--updates", "4", "--log-dir", str(tmp_path / "a")])
    first = run_mpi(2, [SCRIPT, *valued, "--updates", "2", "--log-dir", str(tmp_path / "b")])
    assert first.returncode == 0, first.stderr[-3000:]
    saved = ParallelPG.load(tmp_path / "b" / "checkpoint.npz", quiet=True)
    assert saved.config["value_baseline"] == 0.5 and saved.net.W2[:, 1].any()
    rest = run_mpi(
        3, [SCRIPT, *valued, "--updates", "4", "--log-dir", str(tmp_path / "b"), "--resume"]
    )
    assert _hash(rest) == _hash(whole)
    a, b = (_learning_columns(tmp_path / d / "progress.csv") for d in "ab")
    assert len(a) == 4 and a == b
    plain = run_mpi(1, [SCRIPT, *PONG, "--updates", "4", "--log-dir", str(tmp_path / "c")])
    assert _hash(plain) != _hash(whole)  # the baseline changed the updates


def test_noop_from_grows_alike_on_any_rank_count_and_resumes_exactly_either_side(tmp_path):
    """NOOP joins after update 2 (3 slots of 40 steps an update; noop_from 200): 4 updates on
    1 rank or on 3, 1 on 2 ranks then on to 4 on 3, and 3 on 2 then on to 4 on 1 give the
    same parameters, optimizer state and logged scores, and not those without it."""
    grows = [*PONG, "--noop-from", "200", "--value-baseline", "0.5"]

    def run(n, d, updates, *more):
        return run_mpi(n, [SCRIPT, *grows, "--updates", str(updates), "--log-dir", str(d), *more])

    whole = {n: _hash(run(n, tmp_path / str(n), 4)) for n in (1, 3)}
    assert whole[1] == whole[3], whole
    for first, then, cut in ((2, 3, 1), (2, 1, 3)):
        d = tmp_path / f"cut{cut}"
        assert run(first, d, cut).returncode == 0
        saved = ParallelPG.load(d / "checkpoint.npz", quiet=True)
        assert saved.net.n_logits == (3 if cut >= 2 else 1)
        assert _hash(run(then, d, 4, "--resume")) == whole[1]
        assert _learning_columns(d / "progress.csv") == _learning_columns(
            tmp_path / "1" / "progress.csv"
        )
    plain = [SCRIPT, *PONG, "--value-baseline", "0.5", "--updates", "4"]
    assert _hash(run_mpi(1, [*plain, "--log-dir", str(tmp_path / "plain")])) != whole[1]


def test_pong_resume_is_exact_with_games_in_progress_and_a_new_rank_count(tmp_path):
    """Stop after 2 updates on 2 ranks with games half played, go on to 4 on 3 ranks."""
    whole = _hash(run_mpi(1, [SCRIPT, *PONG, "--updates", "4", "--log-dir", str(tmp_path / "a")]))
    first = run_mpi(2, [SCRIPT, *PONG, "--updates", "2", "--log-dir", str(tmp_path / "b")])
    assert first.returncode == 0, first.stderr[-3000:]
    saved = ParallelPG.load(tmp_path / "b" / "checkpoint.npz", quiet=True)
    assert saved.update == 2 and any(g.live for g in saved.games.values())
    rest = run_mpi(
        3, [SCRIPT, *PONG, "--updates", "4", "--log-dir", str(tmp_path / "b"), "--resume"]
    )
    assert _hash(rest) == whole
    a, b = (_learning_columns(tmp_path / d / "progress.csv") for d in "ab")
    assert len(a) == 4 and a == b


def test_cartpole_example_solves_on_two_ranks(tmp_path):
    proc = run_mpi(2, ["examples/cartpole.py", "--quiet", "--log-dir", str(tmp_path)], timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert proc.stdout.startswith("solved in")
    rows = list(csv.DictReader(open(tmp_path / "progress.csv")))
    assert float(rows[-1]["charts/mean_return_100"]) >= 475


def _learning_columns(path):
    """Each update's logged row without timing columns (those differ from run to run)."""
    return [
        {k: v for k, v in row.items() if not k.startswith(("perf/", "time/"))}
        for row in csv.DictReader(open(path))
    ]


def test_same_parameters_on_any_rank_count(tmp_path):
    hashes = {
        n: _hash(run_mpi(n, [SCRIPT, "--log-dir", str(tmp_path / str(n))], timeout=240))
        for n in (1, 2, 3, 4)
    }
    assert len(set(hashes.values())) == 1, hashes
    # Update by update: every episode's return and length (played with that update's
    # parameters) and the running reward are the same whatever the rank count.
    logs = [_learning_columns(tmp_path / str(n) / "progress.csv") for n in (1, 2, 3, 4)]
    assert len(logs[0]) == 6 and all(log == logs[0] for log in logs)


def test_advantages_standardised_over_the_update_are_the_same_bits_on_any_rank_count(tmp_path):
    """standardise_over='update' pools every game of an update over the ranks (an allgather,
    summed exactly): 1, 2 and 3 ranks give the same parameters, other than 'game''s."""
    flags = [SCRIPT, "--updates", "4", "--standardise-over", "update"]
    hashes = {n: _hash(run_mpi(n, [*flags, "--log-dir", str(tmp_path / str(n))], timeout=240))
              for n in (1, 2, 3)}  # fmt: skip
    assert len(set(hashes.values())) == 1, hashes
    game = ["--standardise-over", "game", "--log-dir", str(tmp_path / "g")]
    per_game = _hash(run_mpi(1, [SCRIPT, "--updates", "4", *game]))
    assert per_game != hashes[1]


def test_exact_resume_matches_an_uninterrupted_run(tmp_path):
    whole = _hash(run_mpi(2, [SCRIPT, "--updates", "6", "--log-dir", str(tmp_path / "a")]))
    first = run_mpi(2, [SCRIPT, "--updates", "3", "--log-dir", str(tmp_path / "b")])
    assert first.returncode == 0, first.stderr[-3000:]
    rest = _hash(
        run_mpi(2, [SCRIPT, "--updates", "6", "--log-dir", str(tmp_path / "b"), "--resume"])
    )
    assert rest == whole

    a, b = (_learning_columns(tmp_path / d / "progress.csv") for d in "ab")
    assert len(a) == 6 and a == b


def test_exception_on_one_rank_ends_the_job(tmp_path):
    proc = run_mpi(
        2,
        [SCRIPT, "--updates", "1000", "--log-dir", str(tmp_path), "--raise-on-rank", "1"],
        timeout=120,
    )
    ended = time.time() - float((tmp_path / "raised_at").read_text())
    assert proc.returncode != 0
    assert ended < 10, ended
    assert proc.stderr.count("RuntimeError: deliberate failure on rank 1") == 1
    assert "[rank 1] Traceback" in proc.stderr
    print(f"job ended {ended:.3f} s after rank 1 raised")


def test_sigkill_of_one_rank_ends_the_job_and_keeps_the_checkpoint(tmp_path):
    args = [SCRIPT, "--updates", "100000", "--log-dir", str(tmp_path), "--pid-file"]
    with started_mpi(2, args) as job:
        wait_for(tmp_path / "checkpoint.npz", job)
        wait_for(tmp_path / "pid.1", job)
        time.sleep(1.0)  # mid-training, checkpoints being written every update
        os.kill(int((tmp_path / "pid.1").read_text()), signal.SIGKILL)
        killed = time.monotonic()
        job.wait(timeout=60)
        ended = time.monotonic() - killed
    assert job.returncode != 0
    assert ended < 30, ended
    agent = ParallelPG.load(tmp_path / "checkpoint.npz", quiet=True)
    assert agent.update >= 1 and np.all(np.isfinite(agent.net.params))
    print(f"job ended {ended:.3f} s after SIGKILL of rank 1")


def test_kill_while_writing_checkpoints_leaves_a_loadable_file(tmp_path):
    """SIGKILL a process that saves a big checkpoint in a loop, at many moments."""
    code = (
        "import sys, numpy as np; from pgmpi import checkpoint\n"
        "big = np.random.default_rng(0).standard_normal(3_000_000)\n"
        "i = 0\n"
        "while True:\n"
        "    i += 1; checkpoint.save(sys.argv[1], {'x': big + i}, {'algorithm': 't', 'i': i})\n"
    )
    path = tmp_path / "ck.npz"
    from pgmpi import checkpoint

    for delay in np.linspace(0.3, 1.5, 8):
        proc = subprocess.Popen([sys.executable, "-c", code, str(path)])
        time.sleep(delay)
        proc.kill()
        proc.wait()
        if path.exists():
            arrays, meta = checkpoint.load(path, "t")
            assert arrays["x"][0] == np.random.default_rng(0).standard_normal(1)[0] + meta["i"]
    assert path.exists()


@pytest.mark.parametrize(
    "flags, text",
    [
        (["--episodes", "0"], "argument --episodes: must be >= 1, got 0"),
        (["--minutes", "soon"], "argument --minutes: expected a number, got 'soon'"),
        (["--learning-rate", "-1"], "argument --learning-rate: must be a finite number > 0"),
        (["--slots", "0"], "argument --slots: must be >= 1, got 0"),
        (["--steps-per-slot", "0"], "argument --steps-per-slot: must be >= 1, got 0"),
        (["--preset", "fastest"], "argument --preset: invalid choice: 'fastest'"),
    ],
)
def test_bad_example_flags_fail_once_on_every_rank(flags, text):
    proc = run_mpi(2, ["examples/pong.py", *flags], timeout=60)
    assert proc.returncode == 2 and proc.stderr.count(text) == 1, proc.stderr


def test_corrupt_checkpoint_on_resume_is_one_clear_error(tmp_path):
    (tmp_path / "checkpoint.npz").write_bytes(b"PK\x03\x04 truncated")
    proc = run_mpi(2, ["examples/pong.py", "--resume", "--log-dir", str(tmp_path)], timeout=60)
    assert proc.returncode != 0
    assert proc.stderr.count("cannot load checkpoint") == 1, proc.stderr
    assert (tmp_path / "checkpoint.npz").read_bytes() == b"PK\x03\x04 truncated"


def test_ctrl_c_ends_every_rank_with_one_message(tmp_path):
    with started_mpi(2, [SCRIPT, "--updates", "100000", "--log-dir", str(tmp_path)]) as job:
        wait_for(tmp_path / "checkpoint.npz", job)
        job.send_signal(signal.SIGINT)  # what Ctrl-C in the terminal sends to mpirun
        _, err = job.communicate(timeout=60)
    assert job.returncode != 0
    assert err.count("pgmpi: interrupted") == 1 and "Traceback" not in err, err


def test_pong_example_is_sticky_unless_deterministic(tmp_path):
    tiny = ["--updates", "1", "--hidden-size", "4", "--slots", "1", "--steps-per-slot", "8"]
    for flags, words in (([], "| sticky actions (0.25)"), (["--deterministic"], "| deterministic")):
        log_dir = tmp_path / (flags[0][2:] if flags else "default")
        proc = run_mpi(1, ["examples/pong.py", *tiny, *flags, "--log-dir", str(log_dir)])
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert words in proc.stdout, proc.stdout[-2000:]
        said = "deterministic" if flags else "sticky"  # the last line: the score and protocol
        assert (
            proc.stdout.splitlines()[-1]
            == f"score: none yet (mean of the last 0 games); protocol: {said}"
        )
        saved = json.loads((log_dir / "config.json").read_text())
        assert saved["sticky_actions"] is (not flags)


def test_the_karpathy_preset_plays_ale_v5s_deterministic_game_with_frame_skip_4(tmp_path):
    tiny = ["--updates", "1", "--hidden-size", "4", "--episodes", "1"]
    flags = ["--preset", "karpathy", "--deterministic", "--frame-skip", "4"]
    proc = run_mpi(1, ["examples/pong.py", *tiny, *flags, "--log-dir", str(tmp_path)])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines()[-1].endswith("protocol: deterministic"), proc.stdout[-2000:]
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["frame_skip"] == 4 and saved["sticky_actions"] is False
