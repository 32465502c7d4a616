"""Tier 1: benchmarks/es_screens.py reads a run as the driver writes it (progress.csv with the
real runs' header, config.json, snapshots/) up to a budget of env steps, checked against
trailing means worked out by hand. Nothing is evaluated: no MPI."""

import json

import pytest
from es_screens import plot, screen, table

# the header of runs/es-tts/seed0/progress.csv, as examples/bipedal_walker_es.py logs it
HEADER = (
    "generation,steps,charts/best_fitness,charts/mean_fitness,charts/min_fitness,"
    "charts/current_return,charts/grad_norm,charts/param_norm,perf/env_steps,perf/steps_per_s,"
    "perf/wait_s,perf/allreduce_bytes,perf/allreduce_s,time/generation_s,time/elapsed_s"
)
# generation i: env steps so far and the current return (4 episodes) logged
STEPS = [1_000_000, 2_500_000, 4_000_000, 5_500_000, 7_000_000, 8_500_000, 10_000_000, 11_500_000]
CURRENT = [-100, -50, 50, 150, 250, 350, -550, 1000]
# their trailing means over 5 generations (fewer at the start), by hand:
# -100, -150/2, -100/3, 50/4, 300/5, (-50+50+150+250+350)/5, (50+150+250+350-550)/5,
# (150+250+350-550+1000)/5
SMOOTH = [-100, -75, -100 / 3, 12.5, 60, 150, 50, 240]
CONFIG = dict(env="BipedalWalker-v3", hidden_sizes=[64, 64], population_size=128,
              noise_std=0.05, learning_rate=0.01, weight_decay=0.005, noise_table_size=25_000_000,
              obs_stat_fraction=0.01, eval_episodes=4, max_episode_steps=27000, seed=0)  # fmt: skip


def _run(folder, **settings):
    """A run folder as the driver leaves it: snapshots after generations 4 and 8."""
    (folder / "snapshots").mkdir(parents=True)
    columns, lines = HEADER.split(","), [HEADER]
    for g, (steps, current) in enumerate(zip(STEPS, CURRENT, strict=True)):
        row = dict.fromkeys(columns, 0.5) | {"generation": g, "steps": steps}
        row["charts/current_return"] = float(current)
        lines.append(",".join(str(row[c]) for c in columns))
    (folder / "progress.csv").write_text("\n".join(lines) + "\n")
    (folder / "config.json").write_text(json.dumps(CONFIG | settings, indent=2))
    for g in (4, 8):
        (folder / "snapshots" / f"gen_{g:05d}.npz").write_bytes(b"")
    return folder


def test_a_screen_is_read_up_to_the_budget(tmp_path):
    run = _run(tmp_path / "sigma0.05")
    s = screen(run, budget=10_000_000)  # generations 0-6: the 7th row is at the budget, in
    assert s["settings"] == {"noise_std": 0.05} and s["words"] == "sigma 0.05"
    assert (s["generations"], s["steps"], s["snapshot"]) == (7, 10_000_000, 4)
    assert s["reached"] == {"0": 5_500_000, "100": 8_500_000, "200": None, "300": None}
    assert s["at_budget"] == pytest.approx(50) and s["best"] == pytest.approx(150)
    assert s["best_steps"] == 8_500_000
    # the curve is the whole run's, past the budget too
    assert [x for x, _ in s["curve"]] == STEPS
    assert [y for _, y in s["curve"]] == pytest.approx(SMOOTH)

    s = screen(run, budget=9_999_999)  # one step short: generation 6's row is out
    assert (s["generations"], s["steps"], s["at_budget"]) == (6, 8_500_000, pytest.approx(150))
    s = screen(run, budget=12_000_000)  # the whole run: +200 at its last row, the best there
    assert s["reached"] == {"0": 5_500_000, "100": 8_500_000, "200": 11_500_000, "300": None}
    assert (s["at_budget"], s["best"]) == (pytest.approx(240), pytest.approx(240))
    assert (s["snapshot"], s["best_steps"]) == (8, 11_500_000)
    assert screen(run, 12_000_000, window=1)["reached"]["300"] == 8_500_000  # no smoothing


def test_the_table_has_a_row_per_run_with_its_settings_in_words(tmp_path):
    runs = {
        "reference": screen(_run(tmp_path / "seed0", noise_std=0.02), 10_000_000),
        "lr0.02": screen(_run(tmp_path / "lr0.02", noise_std=0.02, learning_rate=0.02), 10**7),
    }
    result = dict(budget=10_000_000, window=5, episodes=None, runs=runs)
    text = table(result)
    lines = text.splitlines()
    assert len(lines) == 4 and "env steps to +0 / +100 / +200 / +300" in lines[0]
    assert "smoothed return at 10 M" in lines[0] and "new episodes" not in lines[0]
    row = "generation 7, 10.0 M | 5.5 M / 8.5 M / - / - | +50.0 | +150.0 at 8.5 M |"
    assert lines[2] == f"| reference | today's default | {row}"
    assert lines[3] == f"| lr0.02 | learning rate 0.02 | {row}"
    out = plot(result, tmp_path / "es_screens.png")  # as figures.py --docs draws the kept one
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
