"""Tier 3: ``benchmarks/figures.py --quick`` end to end (it launches a traced 2-rank Pong run
under mpirun), writing into a temporary folder."""

import subprocess
import sys

import pytest

from tests.helpers.launch import ROOT

pytestmark = pytest.mark.launcher
PNG = b"\x89PNG\r\n\x1a\n"


def test_figures_quick_writes_every_figure_it_has_inputs_for(tmp_path):
    out, runs = tmp_path / "figures", tmp_path / "runs"
    results = tmp_path / "results"  # none: the kept recordings are drawn
    cmd = [sys.executable, str(ROOT / "benchmarks" / "figures.py"), "--quick"]
    cmd += ["--out-dir", str(out), "--runs", str(runs), "--results", str(results)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    # The run it starts: two ranks, two updates, traced.
    trace = (runs / "figures" / "timeline" / "trace.csv").read_text().splitlines()
    assert trace[0] == "update,rank,start_s,play_s,gradient_s,wait_s,update_s"
    assert [row.split(",")[:2] for row in trace[1:]] == [
        ["1", "0"],
        ["1", "1"],
        ["2", "0"],
        ["2", "1"],
    ]
    for name in ("timeline.png", "time_to_score.png"):
        assert f"wrote {out / name}" in lines, lines
        assert (out / name).read_bytes()[:8] == PNG
    # Drawn from what scaling.py --docs and throughput.py --docs kept (tracked).
    for name, source in (("scaling.png", "scaling"), ("oversubscription.png", "throughput")):
        assert (ROOT / "benchmarks" / "recordings" / f"{source}.json").exists()
        assert f"wrote {out / name}" in lines and (out / name).read_bytes()[:8] == PNG
    assert sorted(p.name for p in out.iterdir()) == sorted(
        line.rsplit("/", 1)[-1] for line in lines if line.startswith("wrote ")
    )
