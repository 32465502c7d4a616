"""``python -m pgmpi.play``: a GIF of a checkpoint's agent, from tiny real checkpoints of
each algorithm, and one clear line (exit status 2) for a file it cannot play."""

import re
import subprocess
import sys

import numpy as np
import pytest

from pgmpi import ParallelES, ParallelPG, PrunedGA

Image = pytest.importorskip("PIL.Image", reason="Pillow is not installed (pip install pgmpi[play])")


def _play(*args, timeout=300):
    cmd = [sys.executable, "-m", "pgmpi.play", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def _gif_frames(path):
    """(total milliseconds, size) of a GIF: Pillow writes identical consecutive frames (a
    balanced pole at rest) as one frame lasting as long as they do together."""
    with Image.open(path) as im:
        total = 0
        for i in range(im.n_frames):
            im.seek(i)
            total += im.info["duration"]
        return total, im.size


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    where = tmp_path_factory.mktemp("ck")
    pg = ParallelPG(env="CartPole-v1", hidden_size=8, slots=2, steps_per_slot=1, quiet=True)
    ga = PrunedGA(env="CartPole-v1", hidden_sizes=[4], population_size=8, quiet=True)
    es = ParallelES(env="CartPole-v1", hidden_sizes=[4], population_size=4, quiet=True,
                    noise_table_size=1000)  # fmt: skip
    return {
        "ParallelPG": pg.train(updates=1).save(where / "pg.npz"),
        "PrunedGA": ga.train(generations=1).save(where / "ga.npz"),
        "ParallelES": es.train(generations=1).save(where / "es.npz"),
    }


@pytest.mark.parametrize("algorithm", ["ParallelPG", "PrunedGA", "ParallelES"])
def test_gif_has_a_frame_per_kept_step(checkpoints, algorithm, tmp_path):
    gif = tmp_path / "a.gif"
    proc = _play(checkpoints[algorithm], "--gif", gif, "--episodes", "2", "--every", "2")
    assert proc.returncode == 0, proc.stderr
    steps = [int(s.replace(",", "")) for s in re.findall(r"in ([\d,]+) steps", proc.stdout)]
    assert len(steps) == 2 and f"{algorithm} on CartPole-v1" in proc.stdout, proc.stdout
    # Frame 0 is the reset, then one per step: every 2nd of them kept, over both episodes.
    kept = (sum(s + 1 for s in steps) + 1) // 2
    assert f"{kept} frames of 40 ms" in proc.stdout
    assert _gif_frames(gif) == (kept * 40, (600, 400))  # 25 fps: 40 ms each
    returns = [float(r) for r in re.findall(r"return ([-+\d.]+) in", proc.stdout)]
    half = 1.96 * np.std(returns, ddof=1) / np.sqrt(2)
    policy = {"ParallelPG": "sampled", "PrunedGA": "best network"}.get(algorithm, "current network")
    score = f"score {np.mean(returns):+.2f} \u00b1 {half:.2f} (95% CI, 2 episodes, env, {policy})"
    assert score in proc.stdout, proc.stdout


def test_pong_is_played_as_trained_and_the_score_says_how(tmp_path):
    agent = ParallelPG(hidden_size=8, slots=1, steps_per_slot=10, frame_skip=[2, 4], quiet=True)
    path = agent.train(updates=1).save(tmp_path / "pong.npz")
    proc = _play(path, "--gif", tmp_path / "p.gif", "--max-frames", "30", "--greedy")
    assert proc.returncode == 0, proc.stderr
    assert "(1 episode, sticky, frame skip 2-4, greedy), ParallelPG on ALE/Pong-v5" in proc.stdout


def test_a_pong_run_past_noop_from_plays_with_its_three_actions(tmp_path):
    agent = ParallelPG(hidden_size=8, slots=1, steps_per_slot=10, noop_from=20, quiet=True)
    path = agent.train(updates=2).save(tmp_path / "pong.npz")  # NOOP joined after update 2
    assert agent.net.n_logits == 3
    proc = _play(path, "--gif", tmp_path / "p.gif", "--max-frames", "300")
    assert proc.returncode == 0, proc.stderr
    assert "(1 episode, sticky, sampled), ParallelPG on ALE/Pong-v5" in proc.stdout


def test_max_frames_cuts_the_game_and_says_so(checkpoints, tmp_path):
    gif = tmp_path / "a.gif"
    proc = _play(checkpoints["ParallelPG"], "--gif", gif, "--max-frames", "5", "--scale", "0.5")
    assert proc.returncode == 0, proc.stderr
    assert "(cut by --max-frames: not finished)" in proc.stdout and "5 frames" in proc.stdout
    assert _gif_frames(gif) == (5 * 40, (300, 200))


def test_a_file_it_cannot_play_is_one_line_and_status_2(tmp_path):
    foreign = tmp_path / "foreign.npz"
    np.savez(foreign, weights=np.zeros(3))
    corrupt = tmp_path / "corrupt.npz"
    corrupt.write_bytes(b"PK\x03\x04 not really a zip")
    cases = {
        tmp_path / "missing.npz": "no such file",
        foreign: "no pgmpi metadata: not a pgmpi checkpoint",
        corrupt: "not a readable .npz file",
    }
    for path, why in cases.items():
        proc = _play(path, "--gif", tmp_path / "x.gif")
        assert proc.returncode == 2 and proc.stdout == "", proc
        lines = proc.stderr.splitlines()
        assert len(lines) == 1, proc.stderr
        assert lines[0].startswith(
            f"pgmpi.play: error: cannot load checkpoint {str(path)!r}: {why}"
        )
        assert not (tmp_path / "x.gif").exists()


def test_a_gif_it_cannot_write_is_one_line_before_any_play(checkpoints, tmp_path):
    (tmp_path / "a-file").write_text("not a folder")
    for gif in ("/sys/x.gif", tmp_path / "a-file" / "x.gif"):
        proc = _play(checkpoints["ParallelPG"], "--gif", gif, "--episodes", "1000")
        assert proc.returncode == 2 and proc.stdout == "", proc  # no episode played first
        lines = proc.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(
            f"pgmpi.play: error: cannot write --gif {gif}: "
        )


def test_a_log_dir_plays_its_checkpoint(checkpoints, tmp_path):
    (tmp_path / "checkpoint.npz").write_bytes(checkpoints["PrunedGA"].read_bytes())
    proc = _play(tmp_path, "--gif", tmp_path / "x.gif")
    assert proc.returncode == 0 and "PrunedGA on CartPole-v1" in proc.stdout, proc.stderr
