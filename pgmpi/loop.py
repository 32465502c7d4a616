"""The training loop ParallelPG, PrunedGA and ParallelES share: limits, lines, checkpoints, Ctrl-C.

An algorithm hands :func:`train` itself, as a :class:`Trainable`: its one step (an update,
a generation, which returns the row to log), its counters and its figures. This module
makes the logger from the run's options, checks the limits, runs steps until one is
reached, prints each step's line with the fraction done and an ETA, saves checkpoints,
writes the trace, stops every rank together on Ctrl-C (with the checkpoint saved), and ends
with a summary. Every decision here is taken from figures that are the same on every rank,
so every rank leaves the loop at the same step: each rank's time-limit vote rides, with the
stop signals, on the one small Allreduce the loop makes after every step.
"""

from __future__ import annotations

import os
import signal
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple, Protocol

from pgmpi import checkpoint, mpi
from pgmpi.logger import Logger, run_header
from pgmpi.options import RunOptions
from pgmpi.settings import at_least, first_problem, is_int, is_path, is_real


def check_limits(
    limits: dict, target_return, checkpoint_every, callback, checkpoint_path=None
) -> str | None:
    """The first problem with a ``train`` call's arguments, or None.

    ``limits`` maps each limit's name to its value: None, or > 0 (``minutes`` a finite
    number, the others ints). NaN, negative and zero limits are refused, so a typo cannot
    turn into "no limit" or "train once".
    """

    def limit(k):  # its check: minutes may be a fraction, the other limits count
        real = k == "minutes"
        return (
            k,
            lambda x: x is None or ((is_real(x) if real else is_int(x)) and x > 0),
            "None or a finite number > 0" if real else "None or an int >= 1",
        )

    values = dict(limits, target_return=target_return, checkpoint_every=checkpoint_every,
                  callback=callback, checkpoint_path=checkpoint_path)  # fmt: skip
    return first_problem(values, [
        *map(limit, limits),
        ("target_return", lambda x: x is None or is_real(x), "None or a finite number"),
        ("checkpoint_every", lambda x: at_least(x, 1), "an int >= 1"),
        ("callback", lambda x: x is None or callable(x), "None or a function"),
        ("checkpoint_path", lambda x: x is None or is_path(x), "None or a non-empty path"),
    ])  # fmt: skip


# Episodes a rank needs in a generation to stay busy: PrunedGA's 276 walker episodes leave
# 25% of rank time idle at 63 ranks (4.4 a rank) and its 1,104 leave 7.5% at 128 (8.6 a
# rank), projected (docs/benchmarks.md, PrunedGA at scale).
EPISODES_A_RANK = 8


class Description(NamedTuple):
    """What the run header says of an algorithm (:meth:`Trainable.describe`)."""

    text: str  # its network, work split and optimizer
    units: int  # how many units of work a step shares out over ranks
    what: str  # what they are: "slots", "episodes: 8 individuals x 2 each"
    setting: str  # the setting that sets how many: "slots"
    # units a rank needs in a step to stay busy: 1 for slots, which all play as many steps;
    # more for episodes, whose lengths differ, so that the longest do not leave ranks waiting
    busy: int = 1


class Trainable(Protocol):
    """What :func:`train` needs of an algorithm (ParallelPG, PrunedGA, ParallelES).

    Attributes:
        algorithm: its name (``"ParallelPG"``), as checkpoints record it.
        config: its settings, with ``"env"``; written to ``log_dir/config.json``.
        options: the run's options (log dir, trace, ...), which change no result.
    """

    algorithm: str
    config: dict
    options: RunOptions

    def describe(self) -> Description:
        """The algorithm's part of the run header, and the units of work it shares out."""

    def counts(self) -> dict[str, int]:
        """The counters that limits bound, by name; the first one counts steps."""

    def step(self) -> dict:
        """One update or generation: the row to log, the same on every rank (the loop adds
        ``time/elapsed_s``, seconds since this call to :func:`train`). Two keys are the
        loop's, not logged: ``"_seconds"``, this rank's seconds for the trace
        (``play_s``, ``grad_s``, ``allreduce_s``, ``total_s``), and, if present,
        ``"_note"``, a line to print once in the run. Collective."""

    def line(self, row: dict) -> str:
        """The progress line of a row (the fraction done and ETA are added here)."""

    def reached(self, row: dict | None, target_return: float) -> bool:
        """Whether the target return is reached, given the last row (None before the
        first step of this call)."""

    def save(self, path: str | Path) -> Path:
        """Write a checkpoint. Collective."""


def train(
    agent: Trainable,
    limits: dict[str, int | None],
    *,
    minutes: float | None,
    target_return: float | None,
    checkpoint_path: str | Path | None,
    checkpoint_every: int,
    callback: Callable[[dict], None] | None,
):
    """Run ``agent``'s steps until a limit is reached; returns ``agent``. Collective.

    Args:
        limits: each counter's limit (None: none), by the names of ``agent.counts()``.
        minutes: stop after the first step that ends this many minutes after the call.
        target_return: the algorithm's ``train`` says what reaching it means.
        checkpoint_path: save here every ``checkpoint_every`` steps and at the end.
        callback: called on every rank after every step with the logged row.

    Without limits, trains until interrupted. A limit already reached trains nothing.
    Ctrl-C, SIGTERM and SIGUSR1 stop every rank at the end of the step under way: every rank
    agrees, the checkpoint is saved (with ``checkpoint_path``), then KeyboardInterrupt is
    raised for Ctrl-C, SystemExit(128 + the signal) for the others; a second one stops at
    once. The last lines say what stopped the run, its final figures, and where the
    checkpoint and logs are.

    Raises:
        ConfigError: on every rank, before any file changes, if a limit is not None or a
            valid number, an argument is bad, the checkpoint or log dir cannot be written,
            another run holds the log dir, or a new run would replace an earlier run's
            files without ``overwrite`` (or a file pgmpi did not write, whatever it says).
        NonFiniteError: on every rank, when a step made the gradients or parameters
            non-finite, before anything is saved, naming the checkpoint that is intact.
        WriteError: on every rank, when the root could not write the checkpoint or a log
            (a full disk), naming the error and the checkpoint that is intact.
    """
    problem = check_limits(
        dict(limits, minutes=minutes), target_return, checkpoint_every, callback, checkpoint_path
    )
    first = agent.counts()
    unit = next(iter(limits))
    step_name = unit.removesuffix("s")  # "update", "generation"
    fresh = first[unit] == 0  # a new run, not one resumed or trained on
    options = agent.options
    problem = problem or checkpoint.writable_problem(
        checkpoint_path, agent.algorithm, agent.config, fresh=fresh, overwrite=options.overwrite
    )
    mpi.agree(dict(limits, minutes=minutes, target_return=target_return), problem)
    log = Logger(**options.logger_kwargs, resume=not fresh, config=agent.config)
    log.truncate(first[unit])  # a resumed run's logs, cut back to its checkpoint
    described = agent.describe()
    details = f"{described.text} | {step_name} {first[unit]}"
    log.print(run_header(agent.algorithm, agent.config["env"], options.blas, details))
    for warning in _warnings(described):
        log.print(warning)
    if all(v is None for v in (*limits.values(), minutes, target_return)):
        log.print("no limit given: training until interrupted")
    reached = [
        f"the limit of {v} {k}" for k, v in limits.items() if v is not None and first[k] >= v
    ]
    if reached or (target_return is not None and agent.reached(None, target_return)):
        log.print(f"{(reached or ['the target return'])[0]} already reached: nothing to train")
        log.close()
        return agent
    start = time.perf_counter()
    saved = None  # where this call's last checkpoint was saved, in words ("update 12")
    try:
        with mpi.deferred_interrupts(step_name):  # a stop signal waits for the step's end
            while True:
                began = time.perf_counter()
                try:
                    row = agent.step()
                except mpi.NonFiniteError as e:  # nothing non-finite is saved
                    intact = _intact(checkpoint_path, saved)
                    raise mpi.NonFiniteError(f"{e}; {intact}") from None
                row["time/elapsed_s"] = elapsed = time.perf_counter() - start
                late = minutes is not None and elapsed >= 60 * minutes  # this rank's vote
                seconds, once = row.pop("_seconds"), row.pop("_note", None)
                now = agent.counts()
                if options.trace:  # every rank's seconds, to the root
                    log.trace(now[unit], mpi.gather_object(dict(seconds, start_s=began - start)))
                if once is not None:
                    log.print_once(once)
                progress = {k: (first[k], now[k], limits[k]) for k in limits}
                note = limits_note(elapsed, minutes, target_return, **progress)
                log.log(row, agent.line(row) + note, step=now[unit])
                if callback is not None:
                    callback(row)
                # A stop signal on any rank, a log the root could not write, or a rank past
                # the time limit: all see it here, in one small Allreduce.
                signum, failed, late = mpi.interrupt_requested(
                    failed=log.problem is not None, late=late
                )
                if failed:
                    intact = _intact(checkpoint_path, saved)
                    raise mpi.WriteError(f"{mpi.broadcast_object(log.problem)}; {intact}")
                why = _stopped_by(limits, now, late, minutes, target_return, agent, row)
                save = why or signum or now[unit] % checkpoint_every == 0
                if checkpoint_path is not None and save:
                    agent.save(checkpoint_path)
                    saved = _where(step_name, unit, now[unit], row.get(step_name))
                if why:
                    summary = _summary(why, agent.line(row), checkpoint_path, saved, options)
                    log.print(summary)
                    return agent
                if signum:  # every rank stops here, together, the checkpoint saved
                    _stop(log, signum, checkpoint_path, saved)
    finally:
        log.close()


def _where(step_name: str, unit: str, count: int, label) -> str:
    """A checkpoint's place in words, as the progress lines count: ``"update 12"`` after
    the line of update 12; where a line is labelled with the step's index, not its count
    (PrunedGA's ``gen 1`` is its second generation), ``"generation 1, 2 generations done"``."""
    if label is None or label == count:
        return f"{step_name} {count}"
    return f"{step_name} {label}, {count} {step_name if count == 1 else unit} done"


def _stop(log: Logger, signum: int, path, saved: str | None) -> None:
    """End the run after a stop signal: KeyboardInterrupt for Ctrl-C (status 130), else
    SystemExit with status 128 + the signal's number (143 for SIGTERM). Collective."""
    name = signal.Signals(signum).name
    if path is not None:
        prefix = "interrupted" if signum == signal.SIGINT else name
        log.print(f"{prefix}: saved {path} at {saved}")  # "at update 12"
    mpi.barrier()  # the root's write is complete before any rank exits
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    log.print(f"pgmpi: stopped by {name} (exit status {128 + signum})")
    raise SystemExit(128 + signum)


def _warnings(described: Description) -> list[str]:
    """The run header's warning lines: idle ranks, given the units of work a step has, what
    they are and the setting that sets them; ranks with too few units to stay busy; and
    ranks that share cores. Collective."""
    n = mpi.size()
    _, count, what, setting, busy = described
    lines = []
    if count < n:
        lines.append(
            f"warning: {n - count} of {n} ranks idle ({count} {what}): use {setting} >= {n}"
        )
    elif count < busy * n and n > 1:
        lines.append(
            f"warning: {count / n:.1f} units a rank ({count} {what}, {n} ranks): ranks wait "
            f"for the longest episodes; {setting} >= {busy * n} ({busy} a rank) keeps them busy"
        )
    hosts: dict[str, list[int]] = {}
    for host, cores in mpi.allgather_object((socket.gethostname(), usable_cores())):
        hosts.setdefault(host, []).append(cores)
    for host, cores in hosts.items():
        if len(cores) > min(cores):
            lines.append(
                f"warning: {len(cores)} ranks on {host}, which has {min(cores)} cores for them: "
                "ranks share cores and each runs slower (oversubscribed); start at most "
                f"{min(cores)} there"
            )
    return lines


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask, else the machine's)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _intact(path, saved: str | None) -> str:
    """What is safe on disk, for an error message."""
    if path is None:
        return "no checkpoint path was given"
    if saved is not None:
        return f"the checkpoint {path} ({saved}) is intact"
    if Path(path).exists():
        return f"the checkpoint {path} from before this call is intact"
    return "no checkpoint was saved yet"


def _stopped_by(limits, now, late, minutes, target_return, agent, row) -> str | None:
    """What ends the run after this step, in words, or None to go on."""
    for k, v in limits.items():
        if v is not None and now[k] >= v:
            return f"the limit of {v:,} {k}"
    if target_return is not None and agent.reached(row, target_return):
        return f"the target return {target_return:g}"
    if late:
        return f"the time limit of {minutes:g} min"
    return None


def _summary(why: str, line: str, path, where: str | None, options: RunOptions) -> str:
    """The run's last lines: what stopped it, its final figures, where its files are."""
    saved = f"checkpoint {path} ({where})" if path is not None else "no checkpoint"
    logs = f"logs in {options.log_dir}" if options.log_dir is not None else "no log dir"
    return f"done: stopped by {why}\nfinal: {line}\nsaved: {saved}; {logs}"


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def limits_note(
    elapsed: float,
    minutes: float | None = None,
    target_return: float | None = None,
    **counts: tuple[float, float, float | None],
) -> str:
    """The end of a progress line when training has limits: the fraction done and the time
    left, for the limit that will stop the run first, then the target return if any.

    Args:
        elapsed: seconds since this call to ``train``.
        minutes: the time limit, or None.
        target_return: the return that stops training, or None. Progress towards it is not
            linear, so it gets no fraction and no ETA, only a mention.
        counts: per counted limit, by the name printed (``updates``, ``games``,
            ``generations``): (count when this ``train`` call started, count now, limit or
            None). The time left assumes the rate of this call so far.

    Returns:
        e.g. ``" | 40% of 50 updates, ETA 1m30s | target 10"``, or ``""`` with no limit.
    """
    best = None  # (seconds left, fraction done, what the limit is)
    if minutes is not None:
        done = elapsed / (60 * minutes) if minutes > 0 else 1.0  # minutes=0: one update
        best = (max(60 * minutes - elapsed, 0.0), done, f"{minutes:g} min")
    for name, (start, now, limit) in counts.items():
        if limit is None:
            continue
        left = max(limit - now, 0)
        rate = (now - start) / elapsed if elapsed > 0 else 0.0
        eta = left / rate if rate > 0 else float("inf")
        if best is None or eta < best[0]:
            best = (eta, now / limit, f"{limit:,} {name}")
    note = ""
    if best is not None:
        eta = "ETA ?" if best[0] == float("inf") else f"ETA {_duration(best[0])}"
        note = f" | {100 * min(best[1], 1.0):3.0f}% of {best[2]}, {eta}"
    if target_return is not None:
        note += f" | target {target_return:g}"
    return note
