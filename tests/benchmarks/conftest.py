"""benchmarks/ holds scripts, not a package: its folder goes on ``sys.path`` once here, so
that every test in tests/benchmarks/ imports ``common``, ``ga_simulate`` and the rest as the
scripts import each other."""

import sys

from tests.helpers.launch import ROOT

if str(ROOT / "benchmarks") not in sys.path:
    sys.path.insert(0, str(ROOT / "benchmarks"))
