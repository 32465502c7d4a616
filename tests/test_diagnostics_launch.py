"""Tier 3: ParallelPG's diagnostics columns, logged the same bits on 1 and 2 ranks."""

import csv

import pytest

from pgmpi.diagnostics import COLUMNS, ENTROPY, EXPLAINED_VARIANCE, GRADIENT_NORM
from tests.helpers.launch import run_mpi

pytestmark = pytest.mark.launcher
SCRIPT = "tests/scripts/pg_run.py"


def test_the_diagnostics_are_the_same_bits_on_one_and_two_ranks(tmp_path):
    """3 Pong games of 40 steps an update with a learned baseline, 4 updates: every
    diagnostics cell (text, so every bit) is the same on 1 and 2 ranks, and filled."""
    flags = ["--env", "ALE/Pong-v5", "--slots", "3", "--value-baseline", "0.5", "--updates", "4"]
    logs = {}
    for n in (1, 2):
        proc = run_mpi(n, [SCRIPT, *flags, "--log-dir", str(tmp_path / str(n))])
        assert proc.returncode == 0, proc.stderr[-3000:]
        rows = list(csv.DictReader(open(tmp_path / str(n) / "progress.csv")))
        logs[n] = [{c: r[c] for c in COLUMNS} for r in rows]
    assert len(logs[1]) == 4 and logs[1] == logs[2], logs
    assert all(0 < float(r[ENTROPY]) <= 0.6932 for r in logs[1]), logs[1]  # ln 2 at most
    # an update in which no rally ended has no return to learn from: no fit, no gradient
    learned = [r[EXPLAINED_VARIANCE] != "" for r in logs[1]]
    assert [float(r[GRADIENT_NORM]) > 0 for r in logs[1]] == learned and any(learned), logs[1]
