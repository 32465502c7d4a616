"""Tier 1: the package itself: ``import pgmpi`` stays light."""

import subprocess
import sys


def test_import_pgmpi_is_light():
    code = (
        "import sys, pgmpi; bad = [m for m in ('gymnasium', 'ale_py', 'matplotlib') "
        "if m in sys.modules]; assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
