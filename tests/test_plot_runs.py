"""Tier 1: ``python -m pgmpi.plot RUN RUN ...`` compares runs on one figure, and says in one
line (exit status 2) what is wrong with a run folder or an output path."""

import csv
import json
import math
import subprocess
import sys

import pytest

from pgmpi import plot

PG_COLUMNS = (  # the header of a ParallelPG progress.csv
    "episodes,update,steps,charts/running_reward,charts/mean_return_100,charts/games,"
    "charts/mean_return,charts/mean_length,charts/capped_games,time/elapsed_s,"
    "perf/steps_per_s,perf/rank_steps_per_s_min,perf/rank_steps_per_s_max,"
    "perf/allreduce_s,perf/wait_fraction,perf/grad_s"
).split(",")
GA_COLUMNS = (  # and of a PrunedGA one
    "generation,steps,charts/best_fitness,charts/mean_fitness,charts/min_fitness,"
    "charts/elite_mean_fitness,charts/best_return,charts/connections_kept,"
    "charts/mutation_rate,perf/env_steps,perf/steps_per_s,perf/wait_s,perf/allreduce_s,"
    "time/generation_s,time/elapsed_s"
).split(",")


def write_pg_run(folder, rate: float, updates: int = 30):
    """A made-up ParallelPG run whose return grows by ``rate`` per update."""
    folder.mkdir(parents=True)
    with open(folder / "progress.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=PG_COLUMNS)
        writer.writeheader()
        for u in range(1, updates + 1):
            ret = min(20 + rate * u, 500)
            row = dict.fromkeys(PG_COLUMNS, 0.001)
            row.update(
                {
                    "episodes": 10 * u,
                    "update": u,
                    "steps": int(10 * u * ret),
                    "charts/running_reward": "nan" if u == 1 else 0.8 * ret,
                    "charts/mean_return_100": ret,
                    "charts/games": 10,
                    "time/elapsed_s": 0.5 * u,
                }
            )
            writer.writerow(row)
    return folder


def write_ga_run(folder, generations: int = 6):
    folder.mkdir(parents=True)
    with open(folder / "progress.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=GA_COLUMNS)
        writer.writeheader()
        for g in range(generations):
            row = dict.fromkeys(GA_COLUMNS, 0.5)
            row.update(
                {
                    "generation": g,
                    "steps": 5000 * (g + 1),
                    "charts/best_fitness": 100 + 80 * g,
                    "charts/mean_fitness": 30 + 60 * g,
                    "time/elapsed_s": 2.0 * (g + 1),
                }
            )
            writer.writerow(row)
    return folder


def run_main(monkeypatch, capsys, *args) -> tuple[int, str, str]:
    """``python -m pgmpi.plot ARGS`` in this process: (exit status, stdout, stderr)."""
    monkeypatch.setattr(sys, "argv", ["pgmpi.plot", *map(str, args)])
    try:
        plot.main()
        code = 0
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def test_two_runs_make_one_png_from_the_command_line(tmp_path):
    a = write_pg_run(tmp_path / "seed0", rate=12)
    b = write_pg_run(tmp_path / "seed1", rate=9)
    out = tmp_path / "figures" / "compare.png"  # its folder is made
    cmd = [sys.executable, "-m", "pgmpi.plot", str(a), str(b), "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert out.stat().st_size > 50_000  # four panels of two lines and a legend (~79 kB)


@pytest.mark.parametrize("x", ["steps", "minutes", "episodes", "update"])
def test_each_x_axis_draws(tmp_path, x):
    runs = [write_pg_run(tmp_path / name, rate) for name, rate in (("a", 5), ("b", 8))]
    out = plot.compare(runs, tmp_path / f"{x}.png", x=x)
    assert out.stat().st_size > 28_000  # two panels (~43 kB)


def test_pg_and_ga_runs_share_a_figure(tmp_path):
    pg, ga = write_pg_run(tmp_path / "pg", rate=10), write_ga_run(tmp_path / "ga")
    assert plot.compare([pg, ga], tmp_path / "mixed.png").stat().st_size > 70_000
    assert plot.compare([ga], tmp_path / "ga.png", x="generation").stat().st_size > 20_000


def drawn(monkeypatch, run, **kwargs):
    """The figure ``plot.plot(run)`` would save, kept open to be read."""
    figures = []
    monkeypatch.setattr(plot, "_save", lambda fig, out: figures.append(fig) or out)
    plot.plot(run, **kwargs)
    return figures[0]


def test_one_run_from_the_command_line(tmp_path, monkeypatch, capsys):
    run = write_pg_run(tmp_path / "run", rate=10)
    code, out, _ = run_main(monkeypatch, capsys, run)
    assert code == 0 and out.strip() == str(run / "progress.png")
    assert (run / "progress.png").stat().st_size > 20_000  # the return and two panels


def test_one_pong_run_shows_the_score_on_pongs_scale_against_steps(tmp_path, monkeypatch):
    """The first panel is the 100-game mean on -21..+21 with 0 marked, against agent steps
    with minutes along the top; the speed comes next; a column that never changes (games
    per update, here) is named in the title, not drawn."""
    run = write_pg_run(tmp_path / "run", rate=0.01)
    (run / "config.json").write_text(json.dumps({"env": "ALE/Pong-v5"}))
    with open(run / "progress.csv") as f:  # the speed varies, as in a real run
        rows = list(csv.DictReader(f))
    for i, row in enumerate(rows):
        row["perf/steps_per_s"] = 1000 + 10 * i
    with open(run / "progress.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=PG_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    fig = drawn(monkeypatch, run)
    first, speed = fig.axes[0], fig.axes[1]
    low, high = first.get_ylim()
    assert low < -21 < 21 < high and high - low < 50
    assert any(list(line.get_ydata()) == [0, 0] for line in first.lines)  # 0 marked
    assert [line.get_label() for line in first.lines[:2]] == [
        "mean of the last 100 games",
        "running reward (the post's)",
    ]
    assert first.get_title().startswith(f"{run} (ALE/Pong-v5)")
    assert "games ended, this update 10" in first.get_title()
    assert speed.get_ylabel() == "agent steps per s"
    assert fig.axes[-1].get_xlabel() == "agent steps (all ranks)"
    assert [ax.get_xlabel() for ax in first.child_axes] == ["minutes of training"]  # on top
    ylabels = [ax.get_ylabel() for ax in fig.axes]
    assert "games ended, this update" not in ylabels and "capped games" not in ylabels


def test_constant_columns_and_game_scales(tmp_path):
    assert plot.constant([1.0, math.nan, 1.0]) == 1.0
    assert plot.constant([1.0, 2.0]) is None
    assert math.isnan(plot.constant([math.nan]))
    assert plot.game_scale(tmp_path) == (None, None)  # no config.json
    (tmp_path / "config.json").write_text(json.dumps({"env": "CartPole-v1"}))
    assert plot.game_scale(tmp_path) == ("CartPole-v1", (0.0, 500.0))


def test_a_ga_run_draws_its_fitness(tmp_path, monkeypatch):
    fig = drawn(monkeypatch, write_ga_run(tmp_path / "ga"))
    assert fig.axes[0].get_ylabel() == "fitness"
    assert fig.axes[0].lines[0].get_label() == "best fitness"


def test_minutes_put_each_call_to_train_after_the_last():
    columns = {"time/elapsed_s": [60.0, 120.0, 30.0, 90.0, math.nan, 150.0]}
    minutes = plot.x_values(columns, "minutes", "run")
    assert minutes[:4] == [1.0, 2.0, 2.5, 3.5] and math.isnan(minutes[4])
    assert minutes[5] == 4.5


def test_labels_are_folder_names_and_tell_runs_apart(tmp_path):
    assert plot.run_labels([tmp_path / "a", tmp_path / "b"]) == ["a", "b"]
    labels = plot.run_labels([tmp_path / "x" / "seed0", tmp_path / "y" / "seed0"])
    assert labels == ["x/seed0", "y/seed0"]


def _one_line_error(code, err, *words):
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("python -m pgmpi.plot: error: "), err
    for word in words:
        assert word in lines[0]


def test_missing_run_folder_is_one_line(tmp_path, monkeypatch, capsys):
    run = write_pg_run(tmp_path / "run", rate=10)
    code, _, err = run_main(monkeypatch, capsys, run, tmp_path / "nope")
    _one_line_error(code, err, "no run folder", "nope")


def test_a_folder_as_out_is_one_line(tmp_path, monkeypatch, capsys):
    a = write_pg_run(tmp_path / "a", rate=10)
    b = write_pg_run(tmp_path / "b", rate=5)
    code, _, err = run_main(monkeypatch, capsys, a, b, "--out", tmp_path)
    _one_line_error(code, err, "is a folder")
    code, _, err = run_main(monkeypatch, capsys, a, "--out", tmp_path)  # one run too
    _one_line_error(code, err, "is a folder")
    assert not list(tmp_path.glob("*.png"))


def test_folder_without_progress_csv_and_empty_csv_are_one_line(tmp_path, monkeypatch, capsys):
    run = write_pg_run(tmp_path / "run", rate=10)
    (tmp_path / "bare").mkdir()
    code, _, err = run_main(monkeypatch, capsys, run, tmp_path / "bare")
    _one_line_error(code, err, "has no progress.csv")
    for name, text in (("header", ",".join(PG_COLUMNS) + "\n"), ("empty", "")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "progress.csv").write_text(text)
        code, _, err = run_main(monkeypatch, capsys, run, tmp_path / name)
        _one_line_error(code, err, "has no rows yet", name)


def test_an_x_axis_a_run_lacks_is_one_line(tmp_path, monkeypatch, capsys):
    pg, ga = write_pg_run(tmp_path / "pg", rate=10), write_ga_run(tmp_path / "ga")
    code, _, err = run_main(monkeypatch, capsys, pg, ga, "--x", "episodes")
    _one_line_error(code, err, "ga", "'episodes'")
