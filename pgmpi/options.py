"""The options of a run that change none of its results: where and how it logs, BLAS threads.

An algorithm's constructor takes them as keyword arguments (``ParallelPG(log_dir="runs/a",
trace=True)``), builds one :class:`RunOptions` from them, and hands it on: its fields to
the :class:`~pgmpi.logger.Logger` (``logger_kwargs``, as Spinning Up's), and the object to
the training loop (:func:`pgmpi.loop.train`). Checkpoints keep none of them, so ``load``
may replace any (``NAMES``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path

from pgmpi import mpi, threads
from pgmpi.settings import configure, is_bool, is_int, is_path


@dataclass
class RunOptions:
    """A run's options; every rank must hold the same (the constructor checks them)."""

    log_dir: str | Path | None = None
    """folder for ``progress.csv``, ``config.json`` and the checkpoint; None: print only"""
    blas_threads: int | None = None
    """BLAS threads per rank; None: :func:`pgmpi.threads.default_threads`"""
    quiet: bool = False
    """print nothing (the CSV is still written)"""
    trace: bool = False
    """write each rank's seconds per step phase to ``log_dir/trace.csv`` (playing,
    gradients, waiting at the collective, the rest); costs one small gather a step"""
    tensorboard: bool = False
    """also write every logged row as TensorBoard scalars in ``log_dir``
    (``pip install pgmpi[tensorboard]``)"""
    overwrite: bool = False
    """a new run may replace an earlier run's logs in ``log_dir`` and its checkpoint (else
    refused, naming ``--resume``); pgmpi never replaces a file it did not write"""
    blas: dict | None = field(default=None, init=False, repr=False, compare=False)
    """what :meth:`cap_blas_threads` returned (for the run header); None before"""

    def problem(self) -> str | None:
        """The first problem with these options, or None."""
        b = self.blas_threads
        if not (b is None or (is_int(b) and b >= 1)):
            return f"blas_threads must be None or an int >= 1, got {b!r}"
        for name in ("trace", "quiet", "tensorboard", "overwrite"):
            if not is_bool(getattr(self, name)):
                return f"{name} must be True or False, got {getattr(self, name)!r}"
        if not (self.log_dir is None or is_path(self.log_dir)):
            return f"log_dir must be None or a non-empty path, got {self.log_dir!r}"
        for name in ("trace", "tensorboard"):
            if getattr(self, name) and self.log_dir is None:
                return f"{name}=True needs a log_dir to write to"
        return None

    def start(self, cls, config, settings: dict) -> tuple:
        """An algorithm's constructor begins here, on every rank: MPI's excepthook and
        watchdog (once per process), then its settings of class ``cls`` (``config``, default
        ``cls()``, with ``settings`` replaced) and the first problem: a mismatched launch
        first, then the settings' and these options' (:func:`pgmpi.settings.configure`), or
        None. Collective."""
        mpi.init()
        cfg, problem = configure(cls, config, settings, self)
        return cfg, mpi.launcher_problem() or problem

    def cap_blas_threads(self) -> None:
        """Cap this process's BLAS threads at ``blas_threads`` and keep what
        :func:`pgmpi.threads.cap_blas_threads` returned in ``blas``. Collective."""
        self.blas = threads.cap_blas_threads(self.blas_threads)

    @property
    def logger_kwargs(self) -> dict:
        """The :class:`~pgmpi.logger.Logger`'s keyword arguments among these options."""
        return {k: getattr(self, k) for k in NAMES if k != "blas_threads"}


NAMES = tuple(f.name for f in fields(RunOptions) if f.init)  # the constructors' arguments
