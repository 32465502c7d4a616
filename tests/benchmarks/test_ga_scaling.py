"""Tier 1: benchmarks/ga_scaling.py re-projecting a kept recording, as its command line runs it."""

import json
import subprocess
import sys

import ga_simulate
from ga_figures import recording

from tests.helpers.launch import ROOT


def test_the_benchmarks_phases_split_a_kept_recording_and_weigh_back_to_the_whole(tmp_path):
    # Re-projects the kept signed-dag run in two asked-for parts: the whole run's idle share
    # is the parts' weighted by their rank time, so it lies between them, and each part's
    # share lies within the spread of its single generations.
    args = ["--costs", str(recording("signedrun")), "--tag", "_test_phase"]
    args += ["--phase", "0-11", "--phase", "12-36", "--out", str(tmp_path / "f.png")]
    proc = subprocess.run(
        [sys.executable, "benchmarks/ga_scaling.py", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    written = ROOT / "benchmarks" / "results" / "ga_scaling_test_phase.json"
    result = json.loads(written.read_text())
    written.unlink()
    phases = result["projection"]["138x8"]
    assert set(phases) >= {"all (0-36)", "0-11", "12-36"}
    for n in ("63", "128"):
        before, after, whole = (phases[p]["dynamic"][n][0] for p in ("0-11", "12-36", "all (0-36)"))
        assert after < whole < before
    spread = [line for line in proc.stdout.splitlines() if "single generations of 12-36" in line]
    low, high = (float(x) for x in spread[0].split("63 ranks ")[1].split("%")[0].split("-"))
    assert low <= 100 * phases["12-36"]["ahead"]["63"][0] <= high
    # PrunedGA, playing ahead, meets the targets over this run, and without it does not
    whole = phases["all (0-36)"]
    assert whole["ahead"]["63"][0] < 0.05 < whole["dynamic"]["63"][0]
    assert whole["ahead"]["128"][0] < 0.10 < whole["dynamic"]["128"][0]
    # PrunedGA lies between the floors and its order without playing ahead; no schedule that
    # keeps the results, playing ahead or not, beats the floor of the mutated children: it
    # lies under the floor of any order and under PrunedGA's share
    ways = result["bounds"]
    ahead, alone = ways[ga_simulate.AHEAD], ways[ga_simulate.DYNAMIC]
    floor, anything = ways[ga_simulate.FLOOR], ways[ga_simulate.AHEAD_FLOOR]
    for ph in ahead:
        for n in ("63", "128"):
            assert 0 <= anything[ph][n] <= floor[ph][n] <= alone[ph][n], (ph, n)
            assert ways[ga_simulate.PERFECT][ph][n] >= floor[ph][n], (ph, n)
    for n in ("63", "128"):
        assert anything["all (0-36)"][n] <= ahead["all (0-36)"][n] < alone["all (0-36)"][n]
    assert anything["0-11"]["128"] > 0
