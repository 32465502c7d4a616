"""Shared by the benchmarks: the machine description, the JSON writer and where figures go."""

from __future__ import annotations

import functools
import importlib
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"  # ignored by git
# Figures go under runs/ (ignored by git) unless asked for the tracked ones in docs/figures:
# a benchmark run, the tutorial's small ones included, must not leave a checkout modified.
FIGURES = ROOT / "runs" / "benchmarks"
DOCS_FIGURES = ROOT / "docs" / "figures"
# What the docs' figures are drawn from, kept (tracked): recordings and thinned results.
RECORDINGS = ROOT / "benchmarks" / "recordings"


def example(name: str):
    """examples/NAME.py as a module, for the names it defines (its env ids, its settings)."""
    sys.path.insert(0, str(ROOT / "examples"))
    return importlib.import_module(name)


def example_settings(name: str):
    """(ENV, SETTINGS) of examples/NAME.py: the env and settings its run uses by default."""
    module = example(name)
    return module.ENV, module.SETTINGS


def add_figure_flags(parser, name: str) -> None:
    """Give ``parser`` the flags that place the figure ``name``: ``--out PATH`` (default
    runs/benchmarks/NAME) or ``--docs`` (docs/figures/NAME, the tracked copy the docs show)."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--out",
        type=Path,
        default=FIGURES / name,
        help=f"write the figure here (runs/benchmarks/{name})",
    )
    where.add_argument(
        "--docs",
        action="store_true",
        help=f"write docs/figures/{name} instead: regenerate the figure the docs show (tracked)",
    )


def save_figure(fig, path: Path, rect: tuple = (0, 0, 1, 1)) -> Path:
    """Lay out ``fig``'s axes within ``rect`` (figure fractions), write it to ``path`` (legends
    outside the axes included) and close it. Written whole or not at all: a run killed while
    drawing leaves the figure it had, never an empty file."""
    import matplotlib.pyplot as plt

    fig.tight_layout(rect=rect)
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f".{path.name}.part")
    fig.savefig(part, dpi=100, bbox_inches="tight", format=path.suffix.lstrip(".") or "png")
    plt.close(fig)
    os.replace(part, path)
    return path


def split_extra(argv: list[str]) -> tuple[list[str], list[str]]:
    """A benchmark's own arguments, and those after ``--`` (for examples/pong.py)."""
    if "--" not in argv:
        return argv, []
    return argv[: argv.index("--")], argv[argv.index("--") + 1 :]


def figure_path(args, name: str) -> Path:
    """Where the figure ``name`` goes, from the flags of ``add_figure_flags``."""
    return DOCS_FIGURES / name if args.docs else args.out


def machine() -> dict:
    """CPU model, core count, Python, numpy, BLAS and MPI library, as printed by benchmarks."""
    from pgmpi import mpi, threads

    model = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "blas": threads.blas_info()["blas"],
        "mpi": mpi.library_version(),
    }


def _launcher() -> str:
    here = Path(sys.executable).parent / "mpirun"
    return str(here) if here.exists() else "mpirun"


@functools.cache
def _launcher_version() -> str:
    """What the launcher's ``--version`` prints ("" if it cannot say), asked once."""
    try:
        return subprocess.run(
            [_launcher(), "--version"], capture_output=True, text=True, timeout=30
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def pin_flags(n: int) -> list[str]:
    """The launcher's flags that bind each of ``n`` ranks to a core of its own, or none
    where the machine has fewer than ``n`` cores or the launcher is not known. MPICH's mpirun
    otherwise leaves every rank free to move between cores (Open MPI binds 2 ranks to cores
    by default; the flag says it anyway). Pinned, a run computes the same bits; whether it
    is faster depends on the machine (``benchmarks/pinning.py``, docs/cluster.md)."""
    if n > (os.cpu_count() or 1):
        return []
    version = _launcher_version()
    if "HYDRA" in version:  # MPICH
        return ["-bind-to", "core"]
    if _is_open_mpi():
        return ["--bind-to", "core"]
    return []


def _is_open_mpi() -> bool:
    version = _launcher_version()
    return "Open MPI" in version or "OpenRTE" in version


def launcher_flags() -> list[str]:
    """The flags every launch needs: none for MPICH; for Open MPI, ``--oversubscribe`` (it
    refuses more ranks than cores without it) and, as root (a container), its
    ``--allow-run-as-root``, as the tests' launcher passes them (tests/helpers/launch.py)."""
    if not _is_open_mpi():
        return []
    return [*(["--allow-run-as-root"] if os.geteuid() == 0 else []), "--oversubscribe"]


def mpirun_command(n: int, args: list[str], pin: bool = False) -> list[str]:
    """``mpirun [launcher flags] -n n [pin flags] python args``."""
    pins = pin_flags(n) if pin else []
    return [_launcher(), *launcher_flags(), "-n", str(n), *pins, sys.executable, *args]


def mpirun(n: int, args: list[str], timeout: float = 900, pin: bool = False) -> str:
    """Run ``mpirun -n n python args`` and return its stdout (raises on failure); ``pin``:
    each rank bound to a core of its own (:func:`pin_flags`)."""
    cmd = mpirun_command(n, args, pin)
    return subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=timeout).stdout


def mpiruns_at_once(jobs: list[tuple[int, list[str]]], timeout: float = 900) -> list[str]:
    """Start every ``(n, args)`` of ``jobs`` as its own ``mpirun -n n python args``, all at
    once, and return their stdouts in order (raises if one fails or runs past ``timeout``)."""
    procs = [
        subprocess.Popen(mpirun_command(n, args), stdout=subprocess.PIPE, text=True)
        for n, args in jobs
    ]
    try:
        outs = [proc.communicate(timeout=timeout)[0] for proc in procs]
    finally:  # on a timeout: mpirun passes SIGTERM on to its ranks
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=30)
    for proc, (n, args) in zip(procs, jobs, strict=True):
        if proc.returncode:
            raise subprocess.CalledProcessError(proc.returncode, mpirun_command(n, args))
    return outs


def last_json(stdout: str):
    """The JSON on the last line of a worker's output (the lines before are its prints)."""
    return json.loads(stdout.strip().splitlines()[-1])


def write(name: str, result: dict, keep: bool = False) -> Path:
    """Write ``result`` to benchmarks/results/NAME.json and return the path; with ``keep``,
    also to benchmarks/recordings/NAME.json, the tracked copy the docs' figures are drawn from."""
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    if keep:
        (RECORDINGS / f"{name}.json").write_text(json.dumps(result, indent=1) + "\n")
    return path


def ring_allreduce_s(n: int, size_bytes: float, bandwidth: float, latency: float) -> float:
    """Seconds of a ring Allreduce of ``size_bytes`` over ``n`` ranks."""
    if n == 1:
        return 0.0
    return 2 * (n - 1) * latency + 2 * (n - 1) / n * size_bytes / bandwidth


WORDS = {
    "fast": "",
    "karpathy": "the post's algorithm",
    "sticky": "sticky actions",
    "deterministic": "deterministic emulator",
    "ent": "the default before the baseline",
    "v05": "the default before the entropy schedule",
    "v05hour": "the default before the entropy schedule, an hour",
    "hour60d": "the default before the entropy schedule, an hour to +15",
    "stdupd": "today's default",
    "noop3m": "today's default",  # NOOP from 3 M: 128 slots, seeds 0 and 1 (2-4 reach 0 first)
    "fs4": "frame skip 4",
    "v0": "Pong-v0's dynamics",
    "b262k": "the 1,536-rank rule (171 steps a slot)",
}


def run_label(name: str) -> str:
    """A run's folder name (``s1536-b262k-v05-0``, ``fast-sticky-v05-0``) in words, for a
    legend: its slot count, settings and seed."""
    *parts, seed = name.split("-")
    words = []
    for part in parts:
        if part[:1] == "s" and part[1:].isdigit():
            words.append(f"{int(part[1:]):,} slots")
        else:
            words.append(WORDS.get(part, part))
    return ", ".join([w for w in words if w] + [f"seed {seed}" if seed.isdigit() else seed])
