"""Checkpoints: one ``.npz`` of named arrays plus JSON metadata, written atomically.

The metadata (algorithm, format version, library version, hyperparameters, counters) is
stored inside the same ``.npz`` as a uint8 array of UTF-8 JSON, so one rename publishes both.
Writing goes to a temporary file in the same folder, is fsynced, then renamed over the old
checkpoint: a crash at any moment leaves either the old file or the new one, never half of
one. Loading never unpickles (``allow_pickle=False``) and every failure is a
:class:`~pgmpi.mpi.ConfigError` naming the file and what is wrong, raised on every rank.
"""

from __future__ import annotations

import json
import os
import zipfile
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from pgmpi import mpi, options
from pgmpi.retired import without_retired
from pgmpi.settings import is_int, is_real
from pgmpi.version import __version__

FORMAT = 2  # bump when the layout of checkpoints changes (2: pgmpi 0.2, game slots)
_META = "__meta__"


def save(path: str | os.PathLike, arrays: dict[str, np.ndarray], meta: dict) -> Path:
    """Write ``arrays`` and ``meta`` to ``path`` on the root rank, atomically: a new file
    is written beside it, then renamed over it, so a failure leaves the earlier one whole.

    Raises:
        WriteError: on every rank, if the root could not write the file (a full disk, say),
            naming the error and what is intact.

    Collective: every rank must call this.
    """
    path = Path(path)
    problem = None
    if mpi.is_root():
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            blob = json.dumps(dict(meta, format=FORMAT), sort_keys=True).encode()
            with open(tmp, "wb") as f:
                np.savez(f, **arrays, **{_META: np.frombuffer(blob, dtype=np.uint8)})
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
            dir_fd = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)  # make the rename itself durable
            finally:
                os.close(dir_fd)
        except OSError as e:
            before = _meta_of(path) if path.is_file() else None
            count = ", ".join(
                f"{k} {before[k]}" for k in ("update", "generation") if k in (before or {})
            )
            intact = f"the checkpoint there ({count}) is intact" if before else "none was there"
            problem = f"cannot save {str(path)!r}: {e.strerror or e} (errno {e.errno}); {intact}"
        finally:
            tmp.unlink(missing_ok=True)
    mpi.agree({}, problem, error=mpi.WriteError)
    return path


def save_agent(path: str | os.PathLike, agent, arrays: dict[str, np.ndarray], **counters) -> Path:
    """:func:`save` for an algorithm object: the metadata are its ``algorithm`` and
    ``config``, this pgmpi's version and ``counters`` (``update=12, steps=...``)."""
    meta = dict(algorithm=agent.algorithm, version=__version__, config=agent.config, **counters)
    return save(path, arrays, meta)


def restore_params(path: str | os.PathLike, saved: np.ndarray, params: np.ndarray) -> None:
    """Copy a checkpoint's ``saved`` parameters into ``params``.

    Raises:
        ConfigError: on every rank, naming both sizes, if their shapes differ.

    Collective: every rank must call this.
    """
    problem = f"checkpoint {str(path)!r} has {saved.size} parameters, the network {params.size}"
    mpi.agree({}, None if saved.shape == params.shape else problem)
    params[:] = saved


def writable_problem(
    path: str | os.PathLike | None,
    algorithm: str | None = None,
    config: dict | None = None,
    *,
    fresh: bool = True,
    overwrite: bool = False,
) -> str | None:
    """On the root, why a checkpoint could not be written to ``path`` (its folder is made
    and a file written there and removed); None if it can, if ``path`` is None, or on
    other ranks. Pass the result to :func:`pgmpi.mpi.agree` so every rank stops together.

    With ``algorithm`` and ``config`` (the run's, with its ``env``), pgmpi writes only its
    own files: a file at ``path`` that is not a pgmpi checkpoint is a problem, and so is a
    checkpoint of another algorithm or env (whatever ``overwrite`` says), and one of an
    earlier run of the same kind unless ``overwrite``: a new run (``fresh``), or a run
    whose settings differ, must not replace it silently.
    """
    if path is None or not mpi.is_root():
        return None
    path = Path(path)
    if algorithm is not None and path.is_file():
        meta = _meta_of(path)
        if meta is None:
            return (
                f"{str(path)!r} is not a pgmpi checkpoint, and pgmpi writes only its own "
                "files: choose another log dir or checkpoint path (nothing was changed)"
            )
        env = (config or {}).get("env")
        theirs = (meta.get("algorithm"), meta.get("config", {}).get("env"))
        if theirs != (algorithm, env):
            return (
                f"checkpoint {str(path)!r} holds a {theirs[0]} run on {theirs[1]!r}; this "
                f"{algorithm} run on {env!r} would replace it: choose another log dir or path"
            )
        if not overwrite and (fresh or not _same_run(meta.get("config", {}), config)):
            count = ", ".join(f"{k} {meta[k]}" for k in ("update", "generation") if k in meta)
            return (
                f"checkpoint {str(path)!r} holds an earlier run ({count}): continue it with "
                "--resume (Agent.load), or pass --overwrite (overwrite=True) to replace it; "
                "nothing was changed"
            )
    return unwritable(path, f"checkpoint {str(path)!r}")


def unwritable(path: Path, what: str) -> str | None:
    """Why a file cannot be written at ``path``, as ``"cannot write WHAT: why"`` (its folder
    is made, and a file written beside it and removed), or None if it can."""
    probe = path.with_name(f".{path.name}.probe-{os.getpid()}")
    try:
        if path.is_dir():
            return f"cannot write {what}: it is a folder"
        above = next(p for p in path.parents if p.exists())
        if not above.is_dir():
            return f"cannot write {what}: {str(above)!r} exists and is not a folder"
        path.parent.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        return f"cannot write {what}: {e.strerror or e}"
    return None


def _same_run(saved: dict, config: dict) -> bool:
    """Whether ``config``, a resumed run's settings, are those of the run ``saved`` came
    from. A checkpoint written before a setting existed lacks it, and loads with the value
    in force before it (``PG_BEFORE`` for ParallelPG): such a setting matches; one written
    with a setting since removed at the value played today (``PG_RETIRED``) matches too."""
    saved, gone = without_retired(saved)
    same = set(saved) <= set(config) and all(saved.get(k, v) == v for k, v in config.items())
    return gone is None and same


def _meta_of(path: Path) -> dict | None:
    """The metadata of the pgmpi checkpoint at ``path``, or None if it is not one."""
    if not zipfile.is_zipfile(path):
        return None
    try:
        with np.load(path, allow_pickle=False) as data:  # reads only the metadata
            return json.loads(data[_META].tobytes().decode())
    except Exception:  # any unreadable or foreign archive: not a pgmpi checkpoint
        return None


def _read(path: Path, algorithm: str | None) -> tuple[dict, dict]:
    if not path.is_file():
        raise ValueError("no such file")
    if not zipfile.is_zipfile(path):  # else np.load would take it for a pickle
        raise ValueError("not a readable .npz file (no zip archive: truncated or another format)")
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    except (zipfile.BadZipFile, EOFError, OSError) as e:
        raise ValueError(f"not a readable .npz file ({e})") from None
    except ValueError as e:  # numpy refuses object arrays without pickle
        raise ValueError(f"contains a pickled object, refused ({e})") from None
    if _META not in arrays:
        raise ValueError("no pgmpi metadata: not a pgmpi checkpoint")
    try:
        meta = json.loads(arrays.pop(_META).tobytes().decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"corrupt metadata ({e})") from None
    if algorithm is not None and meta.get("algorithm") != algorithm:
        raise ValueError(f"written by {meta.get('algorithm')!r}, not {algorithm!r}")
    if meta.get("format") != FORMAT:
        raise ValueError(f"checkpoint format {meta.get('format')!r}, this pgmpi reads {FORMAT}")
    return arrays, meta


def read(path: str | os.PathLike) -> tuple[dict[str, np.ndarray], dict]:
    """Checkpoint ``path``'s arrays and metadata (its ``"algorithm"`` says who wrote it), read
    by this process alone (no collective). Raises ValueError naming the file and what is
    wrong with it."""
    try:
        return _read(Path(path), None)
    except ValueError as e:
        raise ValueError(f"cannot load checkpoint {str(path)!r}: {e}") from None


def load(path: str | os.PathLike, algorithm: str) -> tuple[dict[str, np.ndarray], dict]:
    """Read a checkpoint written by ``save`` for ``algorithm`` on the root; share it.

    The root reads the file (so other nodes need not see it), then broadcasts the metadata
    and each array.

    Returns:
        (arrays by name, metadata dict), identical on every rank.

    Raises:
        ConfigError: on every rank, if the file is missing, truncated, not an npz, holds a
            pickled object, or was written by another algorithm or checkpoint format.

    Collective: every rank must call this.
    """
    path = Path(path)
    arrays = {}
    meta = {}
    problem = None
    if mpi.is_root():
        try:
            arrays, meta = _read(path, algorithm)
        except ValueError as e:
            problem = f"cannot load checkpoint {str(path)!r}: {e}"
    header = mpi.broadcast_object(
        (problem, meta, {k: (v.shape, v.dtype.str) for k, v in arrays.items()})
    )
    problem, meta, layout = header
    mpi.agree({}, problem)
    for name, (shape, dtype) in layout.items():
        if name not in arrays:
            arrays[name] = np.empty(shape, dtype=np.dtype(dtype))
        mpi.broadcast_(arrays[name])  # one buffer per array, once at load time
    return arrays, meta


@contextmanager
def complete(path: str | os.PathLike, algorithm: str):
    """Inside the block, a key missing from a checkpoint's arrays or metadata (a file
    edited by hand, say) is a ConfigError naming it, on every rank alike (every rank holds
    the same arrays and metadata after :func:`load`)."""
    try:
        yield
    except KeyError as e:
        raise mpi.ConfigError(
            f"checkpoint {str(path)!r} lacks {e.args[0]!r}: not a complete {algorithm} "
            "checkpoint (nothing was changed)"
        ) from None


RUN_OPTIONS = ("env", *options.NAMES)  # what load() may replace: no result depends on them


# The counters the algorithms keep in a checkpoint's metadata, each an int >= 0 (the running
# reward: None before the first game ends, else a finite number).
COUNTER_NAMES = ("update", "generation", "episodes", "steps", "evaluations", "running_reward")


def _counter_ok(name: str, value) -> bool:
    if name == "running_reward":
        return value is None or is_real(value)
    return is_int(value) and value >= 0


def load_settings(path: str | os.PathLike, algorithm: str, overrides: dict):
    """``load`` plus the constructor arguments to rebuild the object that was saved.

    ``overrides`` may replace the arguments that are not learning state (``RUN_OPTIONS``):
    ``env`` (needed if it was a factory) and the run options
    (:class:`pgmpi.options.RunOptions`: ``log_dir``, ``quiet``, ...). An ``env`` given as an
    id must be the one the checkpoint was trained on: a script that expects Pong refuses a
    CartPole checkpoint left in its log dir instead of training on it. A setting since
    retired (``retired.RETIRED``) is dropped at the value today's code plays, and refused at
    another.

    Returns:
        (arrays, metadata, keyword arguments for the algorithm's constructor).

    Collective: every rank must call this.
    """
    arrays, meta = load(path, algorithm)
    with complete(path, algorithm):
        config = meta["config"]
    bad = next((k for k in COUNTER_NAMES if k in meta and not _counter_ok(k, meta[k])), None)
    if bad is not None:  # the same metadata on every rank, so the same error on every rank
        raise mpi.ConfigError(
            f"checkpoint {str(path)!r}: its {bad} is {meta[bad]!r}, not "
            f"{'None or a finite number' if bad == 'running_reward' else 'an int >= 0'} "
            "(edited by hand?); nothing was changed"
        )
    unknown = sorted(set(overrides) - set(RUN_OPTIONS))
    if unknown:  # the same call on every rank, so the same error on every rank
        raise mpi.ConfigError(f"load() cannot override {unknown}")
    env = overrides.get("env")
    trained_on = config.get("env")
    if isinstance(env, str) and env != trained_on:  # the same on every rank, as above
        raise mpi.ConfigError(
            f"checkpoint {str(path)!r} was trained on {trained_on!r}, not {env!r}; "
            "nothing was changed (use another log dir, or the script for that env)"
        )
    config, gone = without_retired(config)
    if gone:  # the same metadata on every rank, so the same error on every rank
        raise mpi.ConfigError(f"checkpoint {str(path)!r}: {gone}; nothing was changed")
    return arrays, meta, dict(config, **overrides)


def pack_ragged(items: list[dict[str, np.ndarray]], prefix: str) -> dict[str, np.ndarray]:
    """Per-item dicts of 1-D arrays (item i may lack a key) as flat arrays for ``save``:
    ``PREFIX.KEY`` holds every item's array one after the other, ``PREFIX.KEY.sizes`` their
    lengths (0 where an item lacks the key) and ``PREFIX.KEY.present`` which items have it, so
    an empty array comes back as one."""
    out = {}
    for key in sorted({k for item in items for k in item}):
        parts = [item[key] for item in items if key in item]
        out[f"{prefix}.{key}.sizes"] = np.array([len(i.get(key, ())) for i in items], np.int64)
        out[f"{prefix}.{key}.present"] = np.array([key in i for i in items], np.int8)
        out[f"{prefix}.{key}"] = np.concatenate(parts)
    return out


def unpack_ragged(arrays: dict[str, np.ndarray], prefix: str, i: int) -> dict[str, np.ndarray]:
    """Item ``i``'s arrays from what :func:`pack_ragged` wrote (keys it lacked are left out;
    checkpoints before ``.present`` left its empty arrays out too)."""
    out = {}
    for name, sizes in arrays.items():
        if name.startswith(f"{prefix}.") and name.endswith(".sizes"):
            stem = name[: -len(".sizes")]
            present = arrays.get(f"{stem}.present")
            if present[i] if present is not None else sizes[i] > 0:
                start = int(sizes[:i].sum())
                out[stem[len(prefix) + 1 :]] = arrays[stem][start : start + sizes[i]]
    return out


def pack_games(parts: list[dict[int, dict]] | None) -> dict[str, np.ndarray]:
    """Every rank's games in progress, ``{slot: snapshot}`` per rank as gathered on the root
    (None elsewhere: then ``{}``), as flat arrays in slot order."""
    if parts is None:
        return {}
    games = {k: snap for part in parts for k, snap in part.items()}
    return pack_ragged([games[k] for k in sorted(games)], "game")


def unpack_games(arrays: dict[str, np.ndarray], mine) -> dict[int, dict[str, np.ndarray]]:
    """The snapshots of games ``mine`` (this rank's game numbers) from what
    :func:`pack_games` wrote."""
    return {k: unpack_ragged(arrays, "game", k) for k in mine}
