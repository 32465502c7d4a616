"""Tier 3: examples/bipedal_walker.py under mpirun ends with its best network as the task
scores it, the same after a resume on another rank count; --preset synaptolytic."""

import json
import re

import numpy as np
import pytest

from tests.helpers.launch import run_mpi
from tests.test_ga_report import REPORT

pytestmark = pytest.mark.launcher

SMALL = ["--population-size", "6", "--episodes-per-individual", "1", "--hidden-sizes", "8", "8"]
SMALL += ["--eval-episodes", "3", "--checkpoint-every", "1", "--quiet"]


def _run(n, folder, *extra) -> str:
    args = ["examples/bipedal_walker.py", *SMALL, "--log-dir", str(folder), *extra]
    proc = run_mpi(n, args, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip().splitlines()[-1]


def _meta(folder) -> dict:
    with np.load(folder / "checkpoint.npz", allow_pickle=False) as data:
        return json.loads(data["__meta__"].tobytes().decode())


def test_the_last_line_reports_the_best_network_and_a_resume_keeps_when_it_was_found(tmp_path):
    line = _run(2, tmp_path / "a", "--generations", "3")
    match = REPORT.match(line)
    assert match and line.endswith(f"; saved {tmp_path / 'a' / 'checkpoint.npz'}"), line
    n, kept, of, generation, steps, episodes = (int(g.replace(",", "")) for g in match.groups())
    whole = _meta(tmp_path / "a")
    found = whole["best_found"]
    assert (generation, steps, episodes) == (found["generation"], found["steps"], found["episodes"])
    assert n == 3 and 0 < kept <= of and episodes == (generation + 1) * 6
    assert 0 < found["seconds"] <= whole["train_seconds"]
    _run(2, tmp_path / "b", "--generations", "1")
    first = _meta(tmp_path / "b")
    resumed_line = _run(1, tmp_path / "b", "--generations", "3", "--resume")
    resumed = _meta(tmp_path / "b")
    counts = ("generation", "steps", "episodes")
    assert [resumed["best_found"][k] for k in counts] == [found[k] for k in counts]
    assert resumed["train_seconds"] > first["train_seconds"]
    # 2 ranks, then 1: each stretch's core-seconds at its own rank count
    added = resumed["train_seconds"] - first["train_seconds"]
    assert resumed["train_core_seconds"] == pytest.approx(first["train_core_seconds"] + added)
    assert first["train_core_seconds"] == pytest.approx(2 * first["train_seconds"])
    strip = re.compile(r", \d+\.\d minutes, \d+\.\d\d core-hours; saved .*")  # times differ
    assert strip.sub("", resumed_line) == strip.sub("", line)  # the same best, the same score


def test_the_synaptolytic_preset_sets_the_benchmarks_values_and_flags_replace_them(tmp_path):
    _run(1, tmp_path, "--preset", "synaptolytic", "--generations", "1")
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["population_size"] == 6  # the flag given
    assert (config["prune_rate"], config["mutation_rate"], config["complexity_weight"]) == (
        0.025,
        0.01,
        0.0,
    )
    assert config["genome"] == "signed-dag" and config["max_episode_steps"] == 1600
