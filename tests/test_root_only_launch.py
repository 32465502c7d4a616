"""Tier 3: a public collective (``save``, ``evaluate``, ``train``) of either algorithm called
on the root only is named within seconds by the one check every collective makes (the
watchdog's comparison of call sites), instead of hanging until its deadline (1,800 s)."""

import pytest

from tests.helpers.launch import run_mpi

pytestmark = pytest.mark.launcher
SCRIPT = "tests/scripts/root_only_call.py"
LINES = open(SCRIPT).read().splitlines()


@pytest.mark.parametrize("call", ["save", "evaluate", "train"])
@pytest.mark.parametrize("algorithm", ["pg", "ga"])
def test_a_collective_on_the_root_only_is_named_at_once(tmp_path, algorithm, call):
    args = [SCRIPT, "--algorithm", algorithm, "--call", call, "--dir", str(tmp_path)]
    proc = run_mpi(2, args, timeout=120)  # before the fix, PrunedGA's waited 1,800 s
    assert proc.returncode == 1 and proc.seconds < 60, (proc.seconds, proc.stderr[-3000:])
    assert proc.stderr.count("pgmpi: collective mismatch: rank 0 waits in collective") == 1
    line = next(t for t in proc.stderr.splitlines() if "collective mismatch" in t)
    at = max(i for i, t in enumerate(LINES, 1) if f"agent.{call}(" in t)  # the root-only call
    assert f"called from {SCRIPT}:{at}" in line, line
    assert "while rank 1 reached the end of the script" in line, line
    method = f"{'ParallelPG' if algorithm == 'pg' else 'PrunedGA'}.{call}"
    assert f" in {method} (" in line or f" under {method}," in line, line  # the public call
