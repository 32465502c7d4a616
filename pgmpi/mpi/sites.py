"""Where each collective is called from, for the watchdog's mismatch check.

Every collective verb of :mod:`pgmpi.mpi.comm` finds its call site (:func:`call_site`) and
the watchdog sends it to the root with the collective's count (:func:`pack`); the root
compares the ranks' sites (:func:`disagreement`) and, when ranks make different collectives,
names both in one message (:func:`mismatch_text`). Pure Python: nothing here talks to MPI.
"""

from __future__ import annotations

import os
import sys

import numpy as np

# Where a collective was called from, for the watchdog's mismatch check. Files are sorted
# into this package (the verbs), the rest of pgmpi, and the user's; both tables are filled
# once per file and per call site, so a collective pays for a short frame walk and a lookup.
_HERE = os.path.dirname(os.path.abspath(__file__))  # .../pgmpi/mpi
_PGMPI = os.path.dirname(_HERE)  # .../pgmpi
_VERBS, _PACKAGE, _USER = 0, 1, 2
_places: dict[str, tuple[int, str]] = {}  # code file -> (which of the three, path shown)
_sites: dict[tuple, tuple[str, str]] = {}  # frames' code and lines -> (key, text)


def place(filename: str) -> tuple[int, str]:
    """(_VERBS, _PACKAGE or _USER; the path to show) for a code object's file name."""
    found = _places.get(filename)
    if found is None:
        if filename.startswith("<"):  # "<string>" (python -c), "<stdin>", frozen modules
            found = (_USER, filename)
        else:
            path = os.path.abspath(filename)
            if path.startswith(_HERE + os.sep):
                found = (_VERBS, path)
            elif path.startswith(_PGMPI + os.sep):
                found = (_PACKAGE, os.path.relpath(path, os.path.dirname(_PGMPI)))
            else:
                cwd = os.getcwd()
                shown = os.path.relpath(path, cwd) if path.startswith(cwd + os.sep) else path
                found = (_USER, shown if len(shown) < 60 else os.path.basename(path))
        _places[filename] = found
    return found


def call_site() -> tuple[str, str]:
    """(key, text) of the collective the caller of :func:`_arrive` is about to make.

    The text names the verb, the first frame outside this package (a method of pgmpi, or
    the user's line for a verb called directly) and, for a method of pgmpi, the method the
    user called if it is another, and the first user frame: ``mpi.gather_object in
    ParallelPG.save (pgmpi/pg_run.py:146), called from train.py:12``. The key is what must be
    equal on every rank: inside pgmpi, the line (ranks run the same code); outside it, only
    the verb that calls MPI, because the user's ``x = broadcast_object(data) if is_root()
    else broadcast_object(None)`` is correct SPMD code that makes one collective from two
    lines.
    """
    frame = sys._getframe(2)  # the verb that called comm._arrive, which called this
    op = outer = frame.f_code
    while frame is not None and place(frame.f_code.co_filename)[0] == _VERBS:
        outer = frame.f_code
        frame = frame.f_back
    first = entry = frame
    while frame is not None and place(frame.f_code.co_filename)[0] == _PACKAGE:
        entry = frame  # the last one: the method of pgmpi that the user called
        frame = frame.f_back
    user = frame
    where = (
        op,
        outer,
        None if first is None else first.f_code,
        None if first is None else first.f_lineno,
        None if user is None else user.f_code,
        None if user is None else user.f_lineno,
        None if entry is None else entry.f_code,
        _owner(first),
        _owner(entry),
    )
    site = _sites.get(where)
    if site is None:
        site = _sites[where] = describe(*where)
    return site


def _owner(frame) -> str | None:
    """The class of ``self`` in ``frame``, if it runs a method: the object's own class, so
    that a method a base class defines is named as the user called it (``ParallelPG.save``,
    not ``PGRun.save``)."""
    if frame is None or "self" not in frame.f_code.co_varnames[:1]:
        return None
    return type(frame.f_locals.get("self")).__name__


def _named(code, owner: str | None) -> str:
    """``code``'s qualified name, its class replaced by ``owner`` where it has one."""
    name = getattr(code, "co_qualname", code.co_name)  # co_qualname: Python 3.11
    _, dot, method = name.rpartition(".")
    return f"{owner}.{method}" if owner and dot and "<" not in method else name


def describe(
    op, outer, code, line, user, user_line, entry=None, owner=None, entry_owner=None
) -> tuple[str, str]:
    """The (key, text) of :func:`call_site`, made once per call site; ``entry``, the method
    of pgmpi the user called, is named when it is not ``code`` itself (``mpi.agree in save
    (pgmpi/checkpoint.py:64) under PrunedGA.save``); ``owner`` and ``entry_owner``: the class
    of their ``self``, named in place of the class that defines the method."""
    verb = "mpi." + getattr(outer, "co_qualname", outer.co_name)  # co_qualname: Python 3.11
    if code is None:
        return "=" + op.co_name, verb
    kind, path = place(code.co_filename)
    name = _named(code, owner)
    text = f"{verb} at {path}:{line}" if name == "<module>" else f"{verb} in {name} ({path}:{line})"
    if kind == _USER:
        return "=" + op.co_name, text
    if entry is not None and entry is not code:
        text += f" under {_named(entry, entry_owner)}"
    if user is not None and not user.co_filename.startswith("<frozen"):
        text += f", called from {place(user.co_filename)[1]}:{user_line}"
    return f"{path}:{line}", text


# A rank's message to the root: its collective count (int64), the length of the site's key
# (one byte), then the key and the text of the site in UTF-8, cut to fit, zero-padded.
SIZE = 256
KEY_MAX = 64
END = ("<end>", "the end of the script (MPI_Finalize)")  # the site a rank leaves at exit
NO_SITE = ("", "an unknown place")


_tails: dict[tuple[str, str], bytes] = {}  # site -> its message after the count


def pack(count: int, site: tuple[str, str]) -> np.ndarray:
    """The message (uint8, :data:`SIZE` bytes, read-only) saying this rank reached
    collective ``count`` at ``site`` (key, text)."""
    tail = _tails.get(site)
    if tail is None:
        key = site[0].encode()[:KEY_MAX]
        body = (key + site[1].encode())[: SIZE - 9]
        tail = _tails[site] = bytes([len(key)]) + body.ljust(SIZE - 9, b"\0")
    return np.frombuffer(count.to_bytes(8, sys.byteorder, signed=True) + tail, dtype=np.uint8)


def unpack(buf: np.ndarray) -> tuple[int, str, str]:
    """(count, key, text) of a message made by :func:`pack`."""
    raw = buf.tobytes()
    body = raw[9:].rstrip(b"\0")
    key = body[: raw[8]]
    text = body[raw[8] :]
    # A cut may split a character: drop the broken end rather than fail.
    count = int.from_bytes(raw[:8], sys.byteorder, signed=True)
    return count, key.decode(errors="ignore"), text.decode(errors="ignore")


def disagreement(mine: dict, reports: dict) -> tuple | None:
    """The first rank whose collective differs from the root's at the same count, or None.

    Args:
        mine: the root's own recent collectives, count -> site (key, text); the last one is
            :data:`END` once the root is at exit.
        reports: the last word of each other rank, rank -> (count, key, text).

    Returns:
        (rank, count, the root's site, that rank's site) or None. Only keys are compared.
        A rank behind the root is compared at its own count; one ahead (the root has not
        got there yet) is not. Two ranks at exit agree whatever their counts (a stop signal
        can end ranks one collective apart); a rank still in a collective while the root is
        at exit differs from it.
    """
    last = max(mine, default=None)
    ending = last is not None and mine[last][0] == END[0]
    for r in sorted(reports):
        count, key, text = reports[r]
        if ending and key == END[0]:
            continue
        own = mine.get(count)
        if own is None and ending and count > last:
            own = mine[last]
        if own is not None and own[0] != key:
            return r, count, own, (key, text)
    return None


def mismatch_text(found: tuple, n: int) -> str:
    """The root's one message for a :func:`disagreement`, on a job of ``n`` ranks."""
    r, c, (key0, text0), (key, text) = found
    if key0 == END[0]:
        what = f"rank 0 reached {END[1]}, while rank {r} waits in collective {c}, {text}"
    elif key == END[0]:
        what = (
            f"rank 0 waits in collective {c}, {text0}, while rank {r} reached {END[1]} "
            "instead (it finished, stopped on an error, or a second stop signal stopped it at "
            "once)"
        )
    else:
        what = f"rank 0's collective {c} is {text0}, while rank {r}'s collective {c} is {text}"
    return (
        f"pgmpi: collective mismatch: {what}. Every rank must make the same collective calls "
        "in the same order: a collective (such as a save) called on some ranks only, e.g. "
        "under `if is_root()`, leaves the others waiting: call it on every rank. "
        f"Aborting all {n} ranks."
    )
