"""Tier 3: the benchmarks' pinned launch (``benchmarks/common.py``, used by
``benchmarks/time_to_score.py``): each of 2 ranks bound to a core of its own, and a pinned
Pong run computing the same bits as a free one."""

import ast
import os
import subprocess

import common
import numpy as np
import pytest

from tests.helpers.launch import ROOT

pytestmark = pytest.mark.launcher

# Each rank writes its cores to a file of its own (two ranks printing to one pipe can
# interleave their lines).
AFFINITY = (
    "import os, sys; open(os.path.join(sys.argv[1], str(os.getpid())), 'w')"
    ".write(repr(sorted(os.sched_getaffinity(0))))"
)


def _run(cmd: list[str]) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def _cores(tmp_path, pin: bool) -> list[list[int]]:
    """The cores each of 2 ranks may run on, launched pinned or free."""
    out = tmp_path / f"pin-{pin}"
    out.mkdir()
    _run(common.mpirun_command(2, ["-c", AFFINITY, str(out)], pin=pin))
    return sorted(ast.literal_eval(f.read_text()) for f in out.iterdir())


def test_pin_flags_bind_each_rank_to_a_core_of_its_own(tmp_path):
    if (os.cpu_count() or 1) < 2 or not common.pin_flags(2):
        pytest.skip("needs 2 cores and MPICH's or Open MPI's mpirun")
    assert common.pin_flags(os.cpu_count() + 1) == []  # more ranks than cores: left free
    cores = _cores(tmp_path, pin=True)
    assert len(cores) == 2 and all(len(c) == 1 for c in cores) and cores[0] != cores[1], cores
    free = _cores(tmp_path, pin=False)
    assert len(free) == 2 and all(len(c) == os.cpu_count() for c in free), free


def test_a_pinned_run_computes_the_same_bits_as_a_free_one(tmp_path):
    pong = [str(ROOT / "examples" / "pong.py"), "--updates", "2", "--slots", "4"]
    pong += ["--steps-per-slot", "64", "--hidden-size", "8"]
    params = []
    for pin in (True, False):
        log = tmp_path / f"pin-{pin}"
        _run(common.mpirun_command(2, [*pong, "--log-dir", str(log)], pin=pin))
        with np.load(log / "checkpoint.npz") as z:
            params.append(z["params"].copy())
    assert params[0].tobytes() == params[1].tobytes()
    assert np.abs(params[0]).sum() > 0
