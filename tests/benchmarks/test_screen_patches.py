"""Tier 1: the screens kept as patches (benchmarks/screens/) still apply to today's code, each
switched on by an environment variable that docs/screens.md names, so a section's "git apply,
then these commands" stays true as the code moves on."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PATCHES = sorted((ROOT / "benchmarks" / "screens").glob("*.patch"))
SCREENS = ROOT / "docs" / "screens.md"


def test_there_are_patches_to_check():
    assert len(PATCHES) >= 6, PATCHES


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
@pytest.mark.parametrize("patch", PATCHES, ids=lambda p: p.name)
def test_a_screens_patch_applies_and_its_switch_is_documented(patch):
    check = subprocess.run(
        ["git", "apply", "--check", str(patch)], cwd=ROOT, capture_output=True, text=True
    )
    assert check.returncode == 0, f"{patch.name} no longer applies: {check.stderr}"
    switches = set(re.findall(r'"(PGMPI_[A-Z0-9_]+)"', patch.read_text()))
    assert switches, f"{patch.name} is switched on by no PGMPI_ variable"
    docs = SCREENS.read_text()
    for switch in switches:
        assert switch in docs, f"{patch.name}: docs/screens.md never names {switch}"
    assert f"benchmarks/screens/{patch.name}" in docs, f"docs/screens.md never names {patch.name}"
