"""Tier 1: the call site each collective carries to the root, and the rule that compares them.

The launcher tests (``test_collective_sites_launch.py``) run the misuse itself under mpirun.
"""

import numpy as np

from pgmpi.mpi import sites
from pgmpi.mpi.sites import END, SIZE, disagreement, mismatch_text, pack, unpack
from pgmpi.mpi.watchdog import Watchdog


def _as_if_in(path, function):
    """``function`` with its code moved to the file ``path`` (how call_site sorts frames)."""
    function.__code__ = function.__code__.replace(co_filename=str(path))
    return function


# A verb of the MPI package calling comm._arrive, which calls call_site: the frames that a
# real collective has above the site, without any MPI (the launcher tests run the real one).
_arrive = _as_if_in(sites._HERE + "/comm.py", lambda: sites.call_site())


def allreduce_sum_():
    return _arrive()


allreduce_sum_ = _as_if_in(sites._HERE + "/comm.py", allreduce_sum_)


def test_a_verb_called_here_names_this_function_and_file():
    key, text = allreduce_sum_()
    assert text.startswith("mpi.allreduce_sum_ in test_a_verb_called_here_names_this_function")
    assert "tests/test_collective_sites.py:" in text
    assert key == "=allreduce_sum_"  # outside pgmpi, only the verb must match across ranks


def test_a_verb_called_inside_pgmpi_names_the_method_and_the_line_that_called_it():
    def save():  # stands for a method of pgmpi, as seen from the user's line below
        return allreduce_sum_()

    key, text = _as_if_in(sites._PGMPI + "/pg.py", save)()
    assert key.startswith("pgmpi/pg.py:")
    assert f"(pgmpi/pg.py:{key.split(':')[1]}), called from tests/test_collective_sites.py:" in text


def test_a_method_a_base_class_defines_is_named_by_the_class_the_user_called():
    class Run:  # stands for pgmpi.pg_run.PGRun
        def save(self):
            return allreduce_sum_()

    class ParallelPG(Run):
        pass

    _as_if_in(sites._PGMPI + "/pg_run.py", Run.save)
    key, text = ParallelPG().save()
    assert key.startswith("pgmpi/pg_run.py:")  # what ranks compare: the line, not the name
    assert text.startswith("mpi.allreduce_sum_ in ParallelPG.save (pgmpi/pg_run.py:"), text
    assert "Run.save" not in text.replace("ParallelPG.save", "")


def test_the_same_site_is_found_once_and_cheaply():
    found = [allreduce_sum_() for _ in range(3)]
    assert found[0] is found[1] is found[2]  # cached per call site


def test_a_message_round_trips_count_and_site():
    site = ("pgmpi/pg.py:330", "mpi.gather_object in ParallelPG.save (pgmpi/pg.py:330)")
    buf = pack(57, site)
    assert buf.dtype == np.uint8 and buf.shape == (SIZE,)
    assert unpack(buf) == (57, *site)
    assert unpack(pack(2**40, END)) == (2**40, *END)
    count, key, text = unpack(pack(3, ("k", "é" * 500)))  # cut to fit, mid-character
    assert (count, key) == (3, "k") and set(text) == {"é"} and len(text.encode()) < SIZE


SAVE = ("pgmpi/pg.py:330", "mpi.gather_object in ParallelPG.save (pgmpi/pg.py:330)")
STEP = ("pgmpi/pg.py:204", "mpi.ExactSum.allreduce in ParallelPG.step (pgmpi/pg.py:204)")


def test_the_rule_flags_a_different_site_at_the_same_count():
    mine = {56: STEP, 57: SAVE}
    found = disagreement(mine, {1: (57, *SAVE), 2: (57, *STEP)})
    assert found == (2, 57, SAVE, STEP)
    text = mismatch_text(found, 3)
    assert text.startswith("pgmpi: collective mismatch: rank 0's collective 57 is mpi.gather")
    assert "ParallelPG.save" in text and "ParallelPG.step" in text
    assert "call it on every rank" in text and text.endswith("Aborting all 3 ranks.")


def test_the_rule_passes_equal_sites_ranks_behind_and_ranks_ahead():
    mine = {56: STEP, 57: SAVE}
    assert disagreement(mine, {1: (57, *SAVE), 2: (56, *STEP)}) is None
    assert disagreement(mine, {1: (58, *STEP)}) is None  # ahead: the root is not there yet
    assert disagreement(mine, {1: (3, *STEP)}) is None  # long ago: no longer kept
    assert disagreement({}, {1: (1, *STEP)}) is None


def test_a_rank_at_exit_differs_from_a_waiting_root_and_not_from_a_root_at_exit():
    assert disagreement({57: SAVE}, {1: (57, *END)}) == (1, 57, SAVE, END)
    assert "rank 1 reached the end of the script (MPI_Finalize)" in mismatch_text(
        (1, 57, SAVE, END), 2
    )
    # At exit, counts may differ by one (a stop signal caught mid-collective on one rank).
    assert disagreement({56: STEP, 57: END}, {1: (56, *END), 2: (57, *END)}) is None
    found = disagreement({56: STEP, 57: END}, {1: (57, *SAVE)})
    assert found == (1, 57, END, SAVE)
    assert mismatch_text(found, 2).startswith(
        "pgmpi: collective mismatch: rank 0 reached the end of the script (MPI_Finalize), "
        "while rank 1 waits in collective 57, mpi.gather_object in ParallelPG.save"
    )


def test_a_mismatch_with_a_rank_at_exit_waits_its_grace_and_others_do_not(monkeypatch):
    w = Watchdog()
    ended = []
    monkeypatch.setattr(w, "mismatch", ended.append)
    w.judge((1, 57, SAVE, END))
    assert ended == [] and w.pending is not None
    w.pending = (w.pending[0], w.pending[1] - w.GONE_S)
    w.judge((1, 57, SAVE, END))
    assert ended == [(1, 57, SAVE, END)]
    w.judge(None)
    assert w.pending is None
    w.judge((2, 57, SAVE, STEP))
    assert ended[-1] == (2, 57, SAVE, STEP)
