"""TensorBoard scalars from the logger's rows: ``ScalarWriter(log_dir).write(row, step)``.

    pip install pgmpi[tensorboard]
    tensorboard --logdir runs        # each run's folder is one run in TensorBoard

Every number in a row becomes a scalar named by its key, which is already namespaced as
TensorBoard groups them (``charts/mean_return_100``, ``perf/steps_per_s``), so the charts
match ``progress.csv`` column for column. The writer is tensorboardX, chosen as the lightest
well-kept one: an 88 kB wheel needing only protobuf (343 kB) beside numpy, where the
``tensorboard`` package itself is 5.5 MB and brings grpcio, werkzeug and a web server.
It is imported when a writer is made, never by ``import pgmpi``.
"""

from __future__ import annotations

import math
import numbers
from pathlib import Path

import numpy as np

EXTRA = "pip install pgmpi[tensorboard]"


class ScalarWriter:
    """Writes rows of metrics as TensorBoard scalars, to an event file in ``log_dir``.

    Args:
        log_dir: folder for the event file (``events.out.tfevents.*``; made if missing).
            Give each run its own folder: TensorBoard names a run by its folder.
        flush_secs: most seconds a scalar waits in memory before it is on disk, where
            TensorBoard sees it: tensorboardX writes from a background thread, and its own
            ``flush`` does not wait for that thread, so there is none here; :meth:`close`
            writes everything left.

    Raises:
        ImportError: naming the extra to install, if tensorboardX is missing.
    """

    def __init__(self, log_dir: str | Path, flush_secs: float = 10.0):
        try:
            from tensorboardX import SummaryWriter
        except ImportError as e:
            raise ImportError(f"TensorBoard scalars need tensorboardX: {EXTRA}") from e
        self.log_dir = Path(log_dir)
        self._writer = SummaryWriter(logdir=str(self.log_dir), flush_secs=flush_secs)

    def write(self, row: dict, step: int) -> int:
        """Write each number in ``row`` as the scalar named by its key, at ``step`` (the
        x axis TensorBoard draws: the logger passes agent steps, or the generation).

        Values that are not numbers (text, None) are skipped, and so are NaN and infinity
        (e.g. the mean return of an update in which no game ended): TensorBoard has no point
        to draw for them, and tensorboardX would warn at each.

        Args:
            row: metric name -> value; ints, floats, numpy scalars and bools are numbers.
            step: an int >= 0.

        Returns:
            how many scalars were written.

        Raises:
            ValueError: if ``step`` is not an int >= 0.
        """
        if not isinstance(step, numbers.Integral) or isinstance(step, bool) or step < 0:
            raise ValueError(f"step must be an int >= 0, got {step!r}")
        written = 0
        for key, value in row.items():
            if not isinstance(value, (numbers.Real, np.bool_)):  # numpy numbers are Real
                continue
            value = float(value)
            if math.isfinite(value):
                self._writer.add_scalar(str(key), value, int(step))
                written += 1
        return written

    def close(self) -> None:
        """Put every scalar on disk and close the event file; later writes are lost."""
        self._writer.close()

    def __enter__(self) -> ScalarWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
