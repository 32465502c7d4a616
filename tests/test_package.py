"""Tier 1: the package itself: ``import pgmpi`` stays light."""

import subprocess
import sys
from pathlib import Path


def test_import_pgmpi_is_light():
    code = (
        "import sys, pgmpi; bad = [m for m in ('gymnasium', 'ale_py', 'matplotlib') "
        "if m in sys.modules]; assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_the_layout_stays_small():
    """Issue 45's sizes, with a little slack for "about": no module in pgmpi/ over about 350
    lines, the algorithm files about 300, no benchmark or example over about 400."""
    root = Path(__file__).resolve().parents[1]
    caps = {"pgmpi/pg.py": 310, "pgmpi/ga.py": 310, "pgmpi/es.py": 310}
    files = [
        *root.glob("pgmpi/**/*.py"),
        *root.glob("benchmarks/*.py"),
        *root.glob("examples/*.py"),
    ]
    assert len(files) > 40, files
    over = []
    for path in files:
        name = path.relative_to(root).as_posix()
        cap = caps.get(name, 365 if name.startswith("pgmpi/") else 410)
        if (n := len(path.read_text().splitlines())) > cap:
            over.append(f"{name}: {n} lines (at most {cap})")
    assert not over, over
