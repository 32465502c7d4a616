"""Tier 1: benchmarks/seed_sweep.py's reading of runs: steps to each level within the budget,
the median and worst over seeds with a seed that never got there; and
benchmarks/seed_diagnostics.py's: the diagnostics' columns and their trailing means."""

import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from seed_diagnostics import diagnosed, smooth  # noqa: E402
from seed_sweep import (  # noqa: E402
    evaluation_of,
    known_within,
    median_and_worst,
    median_seed,
    plot,
    reached,
    runs_of,
    spread,
)


def rows(*pairs):
    return [{"episodes": g, "steps": s, "mean100": m, "minutes": 0} for g, s, m in pairs]


def test_a_level_counts_from_100_games_and_only_within_the_budget():
    run = rows((50, 8192, 1.0), (120, 16384, -3.0), (200, 24576, 0.5), (300, 32768, 12.0))
    assert reached(run, budget=32768) == {0: 24576, 10: 32768, 15: None}
    assert reached(run, budget=30000) == {0: 24576, 10: None, 15: None}


def test_the_spread_is_over_the_steps_every_seed_logged_from_its_100th_game(tmp_path):
    curves = {
        "0": rows((50, 8192, -20.0), (120, 16384, -3.0), (200, 24576, 0.5)),
        "1": rows((110, 16384, -5.0), (190, 24576, 2.5), (260, 32768, 4.0)),
    }
    x, ys = spread(curves, budget=32768)
    assert x.tolist() == [0.016384, 0.024576] and ys.tolist() == [[-3.0, -5.0], [0.5, 2.5]]
    assert spread(curves, budget=20000)[0].tolist() == [0.016384]
    kept = {"title": "Pong, fast-sticky-stdupd, 16 slots: 2 seeds", "curves": curves}
    plot(curves, 32768, tmp_path / "screen.png", "a screen", against=kept)
    assert (tmp_path / "screen.png").stat().st_size > 10_000  # drawn, both sweeps


def test_a_seed_that_never_reached_a_level_is_the_worst_and_can_be_the_median():
    assert median_and_worst([3, 1, None, 2, 5]) == (3, None)
    assert median_and_worst([3, 1, None, None, None]) == (None, None)
    assert median_and_worst([4, 1, 2, 3]) == (2.5, 4)


def test_a_level_missed_is_known_as_far_as_the_seeds_bounds_say():
    seeds = {  # seed 0 stopped at its target of 0 after 1.6 M steps; 1 and 2 played 3 M
        "0": {"reached": {"0": 800, "10": None}, "steps_played": 1_600},
        "1": {"reached": {"0": None, "10": None}, "steps_played": 3_000},
        "2": {"reached": {"0": 2_000, "10": None}, "steps_played": 3_000},
    }
    assert known_within(seeds, 0) == {"median": 2_000, "worst": 3_000}
    # two seeds of three missed +10 within 3 M, so the median of three is past 3 M too
    assert known_within(seeds, 10) == {"median": 3_000, "worst": 3_000}
    seeds["1"]["steps_played"] = 1_000
    assert known_within(seeds, 10) == {"median": 1_600, "worst": 3_000}


def test_the_median_seed_ranks_by_steps_to_0_then_by_the_final_mean():
    seeds = {
        "0": {"reached": {"0": 2}, "final_mean100": 1.0},
        "1": {"reached": {"0": None}, "final_mean100": -4.0},
        "2": {"reached": {"0": None}, "final_mean100": -2.0},
    }
    assert median_seed(seeds) == "2"
    seeds["1"]["reached"]["0"] = 1
    assert median_seed(seeds) == "0"


def test_the_trailing_mean_leaves_empty_cells_out():
    assert smooth([1.0, math.nan, 3.0, 5.0, math.nan], 2) == [1.0, 1.0, 3.0, 4.0, 5.0]
    assert all(math.isnan(v) for v in smooth([math.nan, math.nan], 3))


def test_only_runs_with_the_diagnostics_columns_are_diagnosed(tmp_path):
    head = "steps,charts/mean_return_100,diagnostics/entropy,diagnostics/explained_variance,"
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "progress.csv").write_text(
        head + "diagnostics/gradient_norm,diagnostics/rally_share\n8192,-20.5,0.6,,0.25,0.1\n"
    )
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "progress.csv").write_text("steps,charts/mean_return_100\n8192,-20.5\n")
    columns = diagnosed(tmp_path / "new")
    assert columns["steps"] == [8192.0] and columns["diagnostics/entropy"] == [0.6]
    assert math.isnan(columns["diagnostics/explained_variance"][0])  # an empty cell
    assert diagnosed(tmp_path / "old") is None


def test_an_evaluation_of_a_checkpoint_the_run_went_on_from_is_left_out(tmp_path):
    assert evaluation_of(tmp_path, 8192) is None
    (tmp_path / "evaluation.json").write_text(json.dumps({"mean": 2.5, "steps": 8192}))
    assert evaluation_of(tmp_path, 8192)["mean"] == 2.5
    assert evaluation_of(tmp_path, 16384) is None  # the run played on since
    (tmp_path / "evaluation.json").write_text(json.dumps({"mean": 2.5}))  # before the steps
    assert evaluation_of(tmp_path, 8192) is None


def test_a_tag_reads_its_own_seeds_not_those_of_a_longer_tag(tmp_path):
    for name in ("fast-sticky-ent3-0", "fast-sticky-ent3-12", "fast-sticky-ent3-decay3-2",
                 "fast-sticky-ent3-x", "fast-sticky-ent3-0.log"):  # fmt: skip
        (tmp_path / name).mkdir()
    found = [d.name for d in runs_of(tmp_path, "fast-sticky-ent3")]
    assert found == ["fast-sticky-ent3-0", "fast-sticky-ent3-12"]


def test_a_kept_sweep_is_redrawn_beside_the_sweep_it_names(tmp_path, monkeypatch):
    """--docs and --screen keep --against's name; draw_kept draws the default beside it, and
    a screen beside its own reference, or the kept default where it names none."""
    import common
    import seed_sweep

    curves = {"0": rows((120, 16384, -3.0), (200, 24576, 0.5))}
    sweep = {"title": "Pong, x, 16 slots: 1 seeds", "budget": 24576, "curves": curves}
    monkeypatch.setattr(common, "RECORDINGS", tmp_path)
    monkeypatch.setattr(seed_sweep, "KEPT", tmp_path / "seed_sweep.json")
    (tmp_path / "before.json").write_text(json.dumps(dict(sweep, label="before")))
    kept = dict(sweep, against="before", label="today")
    (tmp_path / "seed_sweep.json").write_text(json.dumps(kept))
    (tmp_path / "seed_sweep-a.json").write_text(json.dumps(dict(sweep, against="before")))
    (tmp_path / "seed_sweep-b.json").write_text(json.dumps(sweep))
    drawn = {}
    monkeypatch.setattr(seed_sweep, "plot", lambda c, b, out, t, against=None: drawn.update(
        {out.name: against and against["label"]}))  # fmt: skip
    seed_sweep.draw_kept(tmp_path / "figures")
    assert drawn == {"seed_sweep.png": "before", "seed_sweep-a.png": "before",
                     "seed_sweep-b.png": "today"}  # fmt: skip


def test_kept_diagnostics_are_redrawn_with_their_empty_cells_empty(tmp_path, monkeypatch):
    """seed_diagnostics.py --docs keeps an empty cell as null; draw_kept gives it back as NaN,
    and draws nothing where nothing was kept."""
    import seed_diagnostics

    monkeypatch.setattr(seed_diagnostics, "KEPT", tmp_path / "seed_diagnostics.json")
    assert seed_diagnostics.draw_kept(tmp_path) == []
    columns = {"steps": [8192, 16384], "diagnostics/entropy": [0.6, None]}
    kept = {"title": "t", "smooth": 3, "columns": {"0": columns}}
    seed_diagnostics.KEPT.write_text(json.dumps(kept))
    drawn = []
    monkeypatch.setattr(seed_diagnostics, "diagnose", lambda c, n, out, t: drawn.append((c, n)))
    assert seed_diagnostics.draw_kept(tmp_path) == [tmp_path / "seed_diagnostics.png"]
    ((redrawn, n),) = drawn
    assert n == 3 and redrawn["0"]["steps"] == [8192, 16384]
    assert redrawn["0"]["diagnostics/entropy"][0] == 0.6
    assert math.isnan(redrawn["0"]["diagnostics/entropy"][1])
