"""Tier 3: benchmarks/es_scaling.py's recording of a tiny ParallelES run on 2 ranks,
launched with mpirun in a subprocess: what it reads off ``agent.evaluation``."""

import numpy as np
import pytest
from es_scaling import buffer_bytes

from tests.helpers.launch import run_mpi

pytestmark = pytest.mark.launcher


def test_the_recording_holds_every_unit_of_every_generation_once(tmp_path):
    path = tmp_path / "rec.npz"
    tiny = [
        "--hidden-sizes",
        "4",
        "--population-size",
        "6",
        "--noise-table-size",
        "20000",
        "--max-episode-steps",
        "60",
    ]
    args = ["benchmarks/es_scaling.py", "--record", str(path), "--generations", "3", *tiny]
    proc = run_mpi(2, args, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rec = np.load(path)
    assert rec["seconds"].shape == rec["steps"].shape == rec["ranks"].shape == (3, 10)
    assert np.all(rec["seconds"] > 0) and np.all((rec["steps"] >= 1) & (rec["steps"] <= 60))
    assert np.all((rec["ranks"] == 0) | (rec["ranks"] == 1))  # each unit played by one rank
    # each rank's busy seconds hold its units' seconds
    for g in range(3):
        for r in (0, 1):
            assert rec["seconds"][g][rec["ranks"][g] == r].sum() <= rec["busy"][g][r] + 1e-9
    assert np.all(rec["bytes"] == buffer_bytes(dict(rec), 10, 6, 2))
    assert np.all(np.diff(rec["wall"]) > 0) and int(rec["ranks_count"]) == 2
