"""Tier 3: benchmarks/ga_record.py, the PrunedGA benchmark's recording of every generation's
units, launched with mpirun in a subprocess."""

import subprocess
import sys
import time

import numpy as np
import pytest

from tests.helpers.launch import ROOT, run_mpi

pytestmark = pytest.mark.launcher


def _record(path, *flags: str) -> list[str]:
    """benchmarks/ga_record.py's recorded run (ga_scaling.py's worker), 6 individuals x 2
    episodes."""
    small = ["--population-size", "6", "--episodes-per-individual", "2", "--genome", "signed-dag"]
    return ["benchmarks/ga_record.py", "--record", str(path), *small, *flags]


def test_the_ga_benchmarks_recording_keeps_every_generation_and_goes_on_from_its_checkpoint(
    tmp_path,
):
    # Uninterrupted, 2 ranks: 4 generations recorded, then 3 and 1 more from the checkpoint
    # the first 3 leave in their log dir: the same steps, and the second starts at 3.
    whole, first, rest = (tmp_path / f"{k}.npz" for k in ("whole", "first", "rest"))
    for path, flags in (
        (whole, ["--generations", "4"]),
        (first, ["--generations", "3", "--log-dir", str(tmp_path / "run")]),
        (rest, ["--generations", "1", "--start", str(tmp_path / "run" / "checkpoint.npz")]),
    ):
        proc = run_mpi(2, _record(path, *flags), timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
    whole, first, rest = (np.load(p) for p in (whole, first, rest))
    assert len(whole["steps"]) == 4 and int(rest["first_generation"]) == 3
    both = np.concatenate([first["steps"], rest["steps"]])
    assert np.array_equal(both, whole["steps"])
    assert np.array_equal(rest["steps_before"], whole["steps"][2])
    # Killed mid-run on 1 rank: the generations recorded so far are on disk, readable
    # (each save replaces the file whole, as a checkpoint is written), nothing else beside it.
    cut = tmp_path / "cut.npz"
    proc = subprocess.Popen([sys.executable, *_record(cut, "--generations", "1000")], cwd=ROOT)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            if cut.exists() and len(np.load(cut)["steps"]) >= 2:
                break
            time.sleep(0.2)
        assert proc.poll() is None, "the recording ended before it was killed"
    finally:
        proc.kill()
        proc.wait(timeout=60)
    kept = np.load(cut)
    assert len(kept["steps"]) >= 2 and len(kept["wall"]) == len(kept["steps"])
    assert np.array_equal(kept["steps"][:2], whole["steps"][:2])
    assert [p.name for p in tmp_path.glob("cut.npz*")] == ["cut.npz"]
