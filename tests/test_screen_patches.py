"""Tier 1: the walker screens kept as patches (benchmarks/screens) still apply to this
checkout, so each section's commands in docs/screens.md still run, and each patch is named
there by the section that gives its figures."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PATCHES = sorted((ROOT / "benchmarks" / "screens").glob("*.patch"))


def test_there_are_patches_to_check():
    assert len(PATCHES) >= 10


@pytest.mark.parametrize("patch", PATCHES, ids=lambda p: p.name)
def test_a_kept_screen_applies_and_its_section_names_it(patch):
    assert f"benchmarks/screens/{patch.name}" in (ROOT / "docs" / "screens.md").read_text()
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: docs/screens.md names it; whether it applies is unchecked")
    check = subprocess.run(["git", "apply", "--check", str(patch)], cwd=ROOT,
                           capture_output=True, text=True, timeout=60)  # fmt: skip
    assert check.returncode == 0, f"{patch.name} no longer applies: {check.stderr}"
