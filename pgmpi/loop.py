"""The training loop ParallelPG and PrunedGA share: limits, progress lines, checkpoints, Ctrl-C.

An algorithm gives :func:`train` its one step (an update, a generation) and its counters;
this module checks the limits, runs steps until one is reached, prints each step's line
with the fraction done and an ETA, saves checkpoints, and stops every rank together on
Ctrl-C (with the checkpoint saved). Every decision here is taken from figures that are the
same on every rank, so every rank leaves the loop at the same step.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from pgmpi import checkpoint, mpi
from pgmpi.config import check_limits
from pgmpi.logger import limits_note, open_log


def train(
    agent,
    step: Callable[[float], tuple[dict, bool]],
    counts: Callable[[], dict[str, int]],
    limits: dict[str, int | None],
    target: Callable[[dict | None], bool],
    line: Callable[[dict], str],
    *,
    minutes: float | None,
    target_return: float | None,
    checkpoint_path: str | Path | None,
    checkpoint_every: int,
    callback: Callable[[dict], None] | None,
):
    """Run ``step`` until a limit is reached; returns ``agent``. Collective.

    Args:
        agent: has ``save(path)`` and what :func:`pgmpi.logger.open_log` reads.
        step: one update or generation, given the ``time.perf_counter()`` of the start of
            this call: (logged row, True if any rank has run past ``minutes``).
        counts: the counters that ``limits`` limit, by the same names, the first one
            counting steps (``{"updates": ..., "episodes": ...}``).
        limits: each counter's limit (None: none), as the user passed them.
        target: whether the target return is reached, given the last row (None before the
            first step of this call).
        line: the progress line of a row (the fraction done and ETA are added here).
        minutes: stop after the first step that ends this many minutes after the call.
        target_return: the algorithm's ``train`` says what reaching it means.
        checkpoint_path: save here every ``checkpoint_every`` steps and at the end.
        callback: called on every rank after every step with the logged row.

    Without limits, trains until interrupted. A limit already reached trains nothing.
    Ctrl-C stops every rank at the end of the step under way: every rank agrees, the
    checkpoint is saved (with ``checkpoint_path``), then KeyboardInterrupt is raised; a
    second Ctrl-C raises at once.

    Raises:
        ConfigError: on every rank, before any file changes, if a limit is not None or a
            valid number, an argument is bad, the checkpoint or log dir cannot be written,
            or another run holds the log dir.
    """
    problem = check_limits(dict(limits, minutes=minutes), target_return, checkpoint_every, callback)
    problem = problem or checkpoint.writable_problem(
        checkpoint_path, agent.algorithm, agent.config["env"]
    )
    mpi.agree(dict(limits, minutes=minutes, target_return=target_return), problem)
    first, unit = counts(), next(iter(limits))
    log = open_log(agent, first[unit], unit.removesuffix("s"))  # "update 12"
    if all(v is None for v in (*limits.values(), minutes, target_return)):
        log.print("no limit given: training until interrupted")
    reached = [
        f"the limit of {v} {k}" for k, v in limits.items() if v is not None and first[k] >= v
    ]
    if reached or (target_return is not None and target(None)):
        log.print(f"{(reached or ['the target return'])[0]} already reached: nothing to train")
        return agent
    start = time.perf_counter()
    with mpi.deferred_interrupts():  # Ctrl-C waits for the end of the step under way
        while True:
            row, stop = step(start)
            now = counts()
            progress = {k: (first[k], now[k], limits[k]) for k in limits}
            log.log(row, line(row) + limits_note(row["time/elapsed_s"], minutes, target_return,
                                                 **progress))  # fmt: skip
            if callback is not None:
                callback(row)
            done = (
                stop
                or any(v is not None and now[k] >= v for k, v in limits.items())
                or (target_return is not None and target(row))
            )
            if checkpoint_path is not None and (done or now[unit] % checkpoint_every == 0):
                agent.save(checkpoint_path)
            if done:
                return agent
            if mpi.interrupt_requested():  # Ctrl-C on any rank: all stop here, together
                if checkpoint_path is not None:
                    agent.save(checkpoint_path)
                    where = f"{unit.removesuffix('s')} {now[unit]}"  # "update 12"
                    log.print(f"interrupted: saved {checkpoint_path} at {where}")
                mpi.barrier()  # the root's write is complete before any rank exits
                raise KeyboardInterrupt
