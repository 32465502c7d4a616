"""PrunedGA's best network as a task scores it: when the run found it, and its score.

A generation's ``tell`` may make one of its individuals the best network ever seen.
:class:`BestFound` adds up the run's training seconds and core-seconds, beside the
generations and env steps PrunedGA counts, and notes every count when the best changes: the
generation, env steps, episodes, minutes and core-hours at which the best network was found.
A checkpoint keeps them in its metadata (JSON, never unpickled), so a resumed run reports
what an uninterrupted one would. A generation's seconds are its play, selection and
mutation, as the rank measured them (the root's are printed and saved, and after a load
every rank holds the root's); core-seconds are seconds times the rank count, so a run
resumed on another rank count adds each stretch at its own.

:class:`BestScore` is what ``PrunedGA.evaluate()`` returns: the
:class:`~pgmpi.evaluation.Evaluation` of a network over new episodes (a float, with its 95%
interval ``ci95``), with the connections it keeps and, for the best network, when it was
found. :meth:`BestScore.report` is the line ``examples/bipedal_walker.py`` ends with, e.g.
BipedalWalker's, scored as the mean over 100 episodes (solved at 300).
"""

from __future__ import annotations

from pgmpi import mpi
from pgmpi.evaluation import Evaluation
from pgmpi.settings import is_int, is_real

COUNTS = ("generation", "steps", "episodes")  # ints >= 0 in BestFound.at
TIMES = ("seconds", "core_seconds")  # numbers >= 0, or None where not known


class BestFound:
    """The run's training time, and the counts at which the best network ever seen was found.

    Attributes:
        seconds: training seconds so far, summed over generations and resumes; None after
            loading a checkpoint written before pgmpi kept them.
        core_seconds: each generation's seconds times the rank count, summed (None: as above).
        at: when the best network was found, a dict: ``generation`` (its index, as the
            progress lines number it), ``steps`` and ``episodes`` (the run's, that generation
            included), ``seconds`` and ``core_seconds``; None before any generation (or from
            a checkpoint written before pgmpi kept it).
    """

    def __init__(self):
        self.seconds: float | None = 0.0
        self.core_seconds: float | None = 0.0
        self.at: dict | None = None

    def count(self, generation: int, steps: int, episodes: int, seconds: float, improved: bool):
        """Add generation ``generation`` (index), of ``episodes`` episodes, which took this rank
        ``seconds``; ``steps``: the run's env steps after it; ``improved``: whether it holds a
        new best."""
        episodes *= generation + 1  # the run's, this generation's included
        if self.seconds is not None:
            self.seconds += seconds
            self.core_seconds += seconds * mpi.size()
        if improved:
            times = dict(seconds=self.seconds, core_seconds=self.core_seconds)
            self.at = dict(generation=generation, steps=steps, episodes=episodes, **times)

    def state(self) -> dict:
        """What a checkpoint's metadata keeps: the times and ``at`` (``best_found``)."""
        return dict(train_seconds=self.seconds, train_core_seconds=self.core_seconds,
                    best_found=self.at)  # fmt: skip

    def restore(self, meta: dict, path) -> None:
        """Back from a checkpoint's metadata ``meta`` (one written before pgmpi kept these
        leaves the times and ``at`` unknown: None).

        Raises:
            ConfigError: on every rank alike (every rank holds the same metadata), naming
                the value, if one is not what :meth:`state` writes (a file edited by hand).
        """
        seconds, core, at = (
            meta.get(k) for k in ("train_seconds", "train_core_seconds", "best_found")
        )
        ok_at = at is None or (
            isinstance(at, dict) and set(at) == {*COUNTS, *TIMES}
            and all(is_int(at[k]) and at[k] >= 0 for k in COUNTS)
            and all(_time_ok(at[k]) for k in TIMES)
        )  # fmt: skip
        for name, value, ok in [("train_seconds", seconds, _time_ok(seconds)),
                                ("train_core_seconds", core, _time_ok(core)),
                                ("best_found", at, ok_at)]:  # fmt: skip
            if not ok:
                raise mpi.ConfigError(
                    f"checkpoint {str(path)!r}: its {name} is {value!r}, not what pgmpi writes "
                    "(edited by hand?); nothing was changed"
                )
        self.seconds, self.core_seconds, self.at = seconds, core, at


def _time_ok(value) -> bool:
    return value is None or (is_real(value) and value >= 0)


class BestScore(Evaluation):
    """A network's :class:`~pgmpi.evaluation.Evaluation` (a float: its mean return), with
    its size and, for the best network, when the run found it.

    Attributes (beside the Evaluation's ``ci95``, ``returns`` and ``protocol``):
        kept: connections the network keeps (synapses, where a connection is several).
        connections: connections it could keep (the genome's mask entries).
        unit: what ``kept`` counts, "connections" or "synapses", for :meth:`report`.
        found: :attr:`BestFound.at` for the best network; None for a given mask, before any
            generation, or from a checkpoint written before pgmpi kept it.
    """

    def __new__(
        cls, returns, protocol: str, kept: int, connections: int, found=None, unit="connections"
    ):
        self = super().__new__(cls, returns, protocol)
        self.kept, self.connections, self.found = int(kept), int(connections), found
        self.unit = unit
        return self

    def __reduce__(self):  # pickled (mpi4py's object collectives) from what it is made of
        fields = (self.returns, self.protocol, self.kept, self.connections, self.found, self.unit)
        return BestScore, fields

    def report(self) -> str:
        """One line: the mean over the episodes with its 95% interval, the connections kept
        and when the network was found, e.g. ``best network: +229.1 [+217.1, +241.0] (95%
        CI) over 100 new episodes; keeps 92 of 624 connections; found in generation 17,
        after 16,512,345 env steps, 19,872 episodes, 17.0 minutes, 0.57 core-hours``."""
        n, (low, high) = len(self.returns), self.ci95
        interval = f" [{low:+.1f}, {high:+.1f}] (95% CI)" if n > 1 else ""
        line = (
            f"{self.protocol}: {float(self):+.1f}{interval} over {n:,} new episode"
            f"{'s' if n > 1 else ''}; keeps {self.kept:,} of {self.connections:,} {self.unit}"
        )
        f = self.found
        if f is None:
            return line
        seconds, core = f["seconds"], f["core_seconds"]
        when = (
            "time not recorded (an older checkpoint)"
            if seconds is None
            else f"{seconds / 60:.1f} minutes, {core / 3600:.2f} core-hours"
        )
        return (
            f"{line}; found in generation {f['generation']}, after {f['steps']:,} env steps, "
            f"{f['episodes']:,} episodes, {when}"
        )
